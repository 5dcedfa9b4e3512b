"""Text and vector similarity (SwarmMemory's ``TextSimilarity``), used by defrag and search.

``jaccard`` compares word sets the way SwarmMemory did (lowercase, alphanumeric,
words of at least three characters, stop words removed), so duplicate detection
thresholds carried over from SwarmMemory keep their meaning.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memdir.core.keywords import tokenize

if TYPE_CHECKING:
    import numpy as np

JACCARD_MIN_WORD = 3


def word_set(text: str) -> set[str]:
    """SwarmMemory's ``tokenize``: the set of words of at least 3 characters, stop words removed."""
    return set(tokenize(text, min_len=JACCARD_MIN_WORD))


def jaccard(a: str | Iterable[str], b: str | Iterable[str]) -> float:
    """``|A ∩ B| / |A ∪ B|`` of two texts' word sets (or of two ready-made word collections).

    Two empty texts score 0.0, not 1.0: nothing in common is not a duplicate.
    """
    set_a = word_set(a) if isinstance(a, str) else set(a)
    set_b = word_set(b) if isinstance(b, str) else set(b)
    union = set_a | set_b
    if not union:
        return 0.0
    return len(set_a & set_b) / len(union)


def cosine(u: Iterable[float] | np.ndarray, v: Iterable[float] | np.ndarray) -> float:
    """Cosine of the angle between two vectors; 0.0 when either is all zeros.

    Raises:
        ValueError: the vectors have different lengths.
    """
    import numpy as np  # the word measures above are used where numpy is not otherwise loaded

    x = np.asarray(u, dtype=np.float64).ravel()
    y = np.asarray(v, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"cosine needs vectors of one length, got {x.size} and {y.size}")
    norms = float(np.linalg.norm(x) * np.linalg.norm(y))
    if norms == 0.0:
        return 0.0
    return float(np.clip(np.dot(x, y) / norms, -1.0, 1.0))
