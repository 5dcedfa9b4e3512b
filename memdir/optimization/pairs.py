"""Pairwise similarity over a whole memory, without Python loops over pairs.

Defrag needs every pair of entries whose similarity passes a threshold. At 10K entries
that is 50M pairs, so nothing here looks at pairs one by one:

* **cosine** — the vectors are one L2-normalised ``(n, dim)`` matrix; the cosines are
  the matrix product ``M · Mᵀ``, computed in row blocks (each block only against the
  rows after it, so the upper triangle only) to bound memory at ``block × n`` floats.
* **word Jaccard** — the exact SwarmMemory measure (`memdir.search.similarity.word_set`)
  found with *prefix filtering* (Bayardo et al., "Scaling up all pairs similarity
  search", WWW 2007): with words ordered rarest first, two sets with
  ``J(A, B) >= t`` must share a word among the first ``|A| - ceil(t·|A|) + 1`` words
  of each. Candidate pairs come from the short posting lists of those rare prefix
  words, are pruned by size (``t·|A| <= |B| <= |A|/t``), and are verified exactly:
  ``|A ∩ B|`` by a sorted-key intersection of their word ids, ``|A ∪ B| = |A| + |B| - |A ∩ B|``.
  The result is the same as comparing every pair, at a fraction of the work.

Duplicates are pairs with ``max(jaccard, cosine) >= threshold`` (SwarmMemory's rule);
related pairs are ``min <= cosine < max``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain

import numpy as np

from memdir.optimization.tokens import sorted_unique, word_id_sets

# Bounds on temporary arrays: rows of the similarity matrix per block, and candidate
# pairs (or gathered word ids) handled per chunk.
DEFAULT_BLOCK_ROWS = 1024
_PAIR_CHUNK = 1_000_000
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class PairArrays:
    """Pairs of row indices ``(i, j)`` with ``i < j`` and their similarity, as parallel arrays."""

    i: np.ndarray
    j: np.ndarray
    similarity: np.ndarray

    def __len__(self) -> int:
        return int(self.i.size)

    @classmethod
    def empty(cls) -> PairArrays:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))


def _exclusive_cumsum(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(counts.size, dtype=np.int64)
    if counts.size > 1:
        np.cumsum(counts[:-1], out=out[1:])
    return out


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated ``range(start, start + length)`` for each pair, and which pair each came from."""
    lengths = lengths.astype(np.int64, copy=False)
    total = int(lengths.sum())
    owner = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(_exclusive_cumsum(lengths), lengths)
    return np.repeat(starts.astype(np.int64, copy=False), lengths) + offsets, owner


class WordSets:
    """Many word sets as one sparse binary matrix (CSR: ``indptr``, ``words``), words ranked rarest first.

    Args:
        sets: one collection of words per document.
    """

    def __init__(self, sets: Sequence[Iterable[str]]) -> None:
        unique = [s if isinstance(s, (set, frozenset)) else set(s) for s in sets]
        sizes = np.fromiter(map(len, unique), dtype=np.int64, count=len(unique))
        every = list(chain.from_iterable(unique))
        vocabulary = {word: index for index, word in enumerate(dict.fromkeys(every))}
        ids = np.fromiter(map(vocabulary.__getitem__, every), dtype=np.int64, count=len(every))
        rows = np.repeat(np.arange(len(unique), dtype=np.int64), sizes)
        self._build(len(unique), rows, ids, len(vocabulary))

    @classmethod
    def from_ids(cls, count: int, rows: np.ndarray, ids: np.ndarray, vocabulary_size: int) -> WordSets:
        """Word sets given as (row, word id) pairs, each pair once, rows sorted."""
        words = cls.__new__(cls)
        words._build(count, rows, ids, vocabulary_size)
        return words

    def _build(self, count: int, rows: np.ndarray, word_ids: np.ndarray, vocabulary_size: int) -> None:
        sizes = np.bincount(rows, minlength=count).astype(np.int64) if rows.size else np.zeros(count, np.int64)
        frequency = np.bincount(word_ids, minlength=vocabulary_size)
        # Rank 0 = the rarest word; prefixes of rarest words make short candidate lists.
        order = np.lexsort((np.arange(vocabulary_size), frequency))
        rank = np.empty(vocabulary_size, dtype=np.int64)
        rank[order] = np.arange(vocabulary_size, dtype=np.int64)
        ranked = rank[word_ids] if word_ids.size else word_ids
        by_row_then_rank = np.lexsort((ranked, rows))
        self.words = ranked[by_row_then_rank]
        self.sizes = sizes
        self.indptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        self.vocabulary_size = max(vocabulary_size, 1)

    @classmethod
    def from_texts(cls, texts: Sequence[str], tokenizer: Callable[[str], set[str]] | None = None) -> WordSets:
        """Word sets of texts, tokenised as SwarmMemory's Jaccard does (`word_set`, in bulk: `word_id_sets`)."""
        if tokenizer is not None:
            return cls([tokenizer(text) for text in texts])
        rows, ids, vocabulary_size = word_id_sets(texts)
        return cls.from_ids(len(texts), rows, ids, vocabulary_size)

    def __len__(self) -> int:
        return int(self.sizes.size)

    # ------------------------------------------------------------------ exact measures
    def _keys(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted keys ``pair_index * V + word`` for the given rows (one pair per row), and their pair index."""
        positions, owner = _ranges(self.indptr[rows], self.sizes[rows])
        return owner * self.vocabulary_size + self.words[positions], owner

    def intersections(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``|A ∩ B|`` for each pair of rows ``(a[k], b[k])``."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        out = np.zeros(a.size, dtype=np.int64)
        # Chunk so the gathered word ids stay around _PAIR_CHUNK elements.
        mean = max(1.0, float(self.sizes.mean()) if self.sizes.size else 1.0)
        step = max(1, int(_PAIR_CHUNK / (2 * mean)))
        for start in range(0, a.size, step):
            stop = min(start + step, a.size)
            keys_a, owner_a = self._keys(a[start:stop])
            keys_b, _ = self._keys(b[start:stop])
            if keys_a.size == 0 or keys_b.size == 0:
                continue
            # Both key arrays are sorted (rows in order, words sorted within a row).
            where = np.searchsorted(keys_b, keys_a)
            where[where == keys_b.size] = 0
            hit = keys_b[where] == keys_a
            out[start:stop] = np.bincount(owner_a[hit], minlength=stop - start)
        return out

    def jaccard(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Exact word Jaccard for each pair of rows (0.0 when both sets are empty)."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        inter = self.intersections(a, b)
        union = self.sizes[a] + self.sizes[b] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            result = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
        return result.astype(np.float64)

    # ------------------------------------------------------------------ all pairs
    def pairs_at_least(self, threshold: float) -> PairArrays:
        """Every pair of rows with ``jaccard >= threshold`` (exact; prefix-filtered candidates).

        Args:
            threshold: in (0, 1]. Lower thresholds make longer prefixes and more candidates.
        """
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"a Jaccard threshold must be in (0, 1], got {threshold}")
        n = len(self)
        if n < 2:
            return PairArrays.empty()
        needed = np.ceil(threshold * self.sizes - _EPS).astype(np.int64)
        prefix = np.where(self.sizes > 0, self.sizes - needed + 1, 0).clip(0, self.sizes)
        positions, rows = _ranges(self.indptr[:-1], prefix)
        words = self.words[positions]
        place = positions - self.indptr[rows]  # each element's position within its row
        order = np.lexsort((rows, words))
        words, rows, place = words[order], rows[order], place[order]
        # Within a run of equal words, every row pairs with the rows after it in the run.
        boundaries = np.flatnonzero(np.diff(words)) + 1
        starts = np.concatenate(([0], boundaries)).astype(np.int64)
        run_length = np.diff(np.concatenate((starts, [words.size])))
        partners = np.repeat(starts + run_length, run_length) - 1 - np.arange(words.size, dtype=np.int64)
        cumulative = np.cumsum(partners)
        keys: list[np.ndarray] = []
        begin = 0
        while begin < words.size:  # slices of elements whose pairs number about _PAIR_CHUNK
            done = int(cumulative[begin - 1]) if begin else 0
            end = max(int(np.searchsorted(cumulative, done + _PAIR_CHUNK, side="right")), begin + 1)
            elements = np.arange(begin, end, dtype=np.int64)
            partner, owner = _ranges(elements + 1, partners[begin:end])
            anchor = elements[owner]
            first, second = rows[anchor], rows[partner]
            size_a, size_b = self.sizes[first], self.sizes[second]
            # Size filter, then positional filter: if this shared word is the pair's first
            # shared word, at most 1 + min(words left after it in each) can be shared; a
            # true pair passes on its first shared word, which lies in both prefixes.
            overlap = np.ceil(threshold / (1.0 + threshold) * (size_a + size_b) - _EPS)
            reachable = 1 + np.minimum(size_a - place[anchor], size_b - place[partner]) - 1
            fits = (np.minimum(size_a, size_b) >= threshold * np.maximum(size_a, size_b) - _EPS) & (
                reachable >= overlap
            )
            lo = np.minimum(first, second)[fits]
            hi = np.maximum(first, second)[fits]
            keys.append(sorted_unique(lo * n + hi))
            begin = end
        if not keys:
            return PairArrays.empty()
        candidates = sorted_unique(np.concatenate(keys))
        i, j = candidates // n, candidates % n
        similarity = self.jaccard(i, j)
        keep = similarity >= threshold - _EPS
        return PairArrays(i[keep], j[keep], similarity[keep])


def cosine_pairs(
    matrix: np.ndarray,
    minimum: float,
    maximum: float | None = None,
    *,
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> PairArrays:
    """Every pair of rows with ``minimum <= cosine < maximum`` (no upper bound when None).

    Args:
        matrix: ``(n, dim)`` float32 rows, each of L2 norm 1 (or all zeros).
        block_rows: rows multiplied at once; memory use is about ``block_rows × n × 4`` bytes.
    """
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    n = matrix.shape[0]
    found_i: list[np.ndarray] = []
    found_j: list[np.ndarray] = []
    found_s: list[np.ndarray] = []
    lower = np.tri(min(block_rows, n), dtype=bool)  # the diagonal and below: pairs (i, j) with j <= i
    for start in range(0, n, block_rows):
        stop = min(start + block_rows, n)
        sims = matrix[start:stop] @ matrix[start:].T  # this block against itself and every later row
        size = stop - start
        sims[:, :size][lower[:size, :size]] = -np.inf  # keep j > i only
        # Most rows have no hit at all (duplicates are rare): look only at rows whose best passes.
        candidates = np.flatnonzero(sims.max(axis=1) >= minimum) if sims.shape[1] else np.zeros(0, np.int64)
        block = sims[candidates]
        hit = block >= minimum
        if maximum is not None:
            hit &= block < maximum
        rows, cols = np.nonzero(hit)
        found_i.append(candidates[rows].astype(np.int64) + start)
        found_j.append(cols.astype(np.int64) + start)
        found_s.append(block[rows, cols].astype(np.float64))
    if not found_i:
        return PairArrays.empty()
    return PairArrays(np.concatenate(found_i), np.concatenate(found_j), np.concatenate(found_s))


def row_cosines(matrix: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of rows ``a[k]`` and ``b[k]`` of an L2-normalised matrix, for each k."""
    out = np.zeros(len(a), dtype=np.float64)
    for start in range(0, len(a), _PAIR_CHUNK // 64):
        stop = min(start + _PAIR_CHUNK // 64, len(a))
        out[start:stop] = np.einsum("ij,ij->i", matrix[a[start:stop]], matrix[b[start:stop]])
    return out


@dataclass(frozen=True, slots=True)
class Similar:
    """Two documents (indices into the caller's list, ``a < b``) and how alike they are.

    ``cosine`` is None when either has no vector.
    """

    a: int
    b: int
    similarity: float
    jaccard: float
    cosine: float | None


def duplicate_pairs(
    words: WordSets | Callable[[], WordSets],
    matrix: np.ndarray,
    rows: Sequence[int] | np.ndarray,
    threshold: float,
    *,
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> list[Similar]:
    """Pairs with ``max(word jaccard, cosine) >= threshold``, most similar first.

    The cosine half (a matrix product, which releases the GIL) runs in a worker thread
    while this thread builds the word sets (when ``words`` is a callable) and finds the
    Jaccard pairs, so the two halves overlap.

    Args:
        words: one word set per document, or a callable that builds them.
        matrix: L2-normalised vectors of the embedded documents.
        rows: for each matrix row, the index of its document in ``words``.
        threshold: in (0, 1].
    """
    rows = np.asarray(rows, dtype=np.int64)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memdir-cosine") as pool:
        cosines = pool.submit(cosine_pairs, matrix, threshold, block_rows=block_rows) if rows.size > 1 else None
        words = words() if callable(words) else words
        by_words = words.pairs_at_least(threshold)
        by_cosine = cosines.result() if cosines is not None else PairArrays.empty()
    n = len(words)
    row_of = np.full(n, -1, dtype=np.int64)
    row_of[rows] = np.arange(rows.size, dtype=np.int64)
    ci, cj = rows[by_cosine.i], rows[by_cosine.j]
    keys = sorted_unique(np.concatenate((np.minimum(ci, cj) * n + np.maximum(ci, cj), by_words.i * n + by_words.j)))
    a, b = keys // n, keys % n
    jac = words.jaccard(a, b)
    cos = np.full(a.size, np.nan)
    both = (row_of[a] >= 0) & (row_of[b] >= 0)
    cos[both] = row_cosines(matrix, row_of[a[both]], row_of[b[both]])
    sim = np.fmax(jac, np.nan_to_num(cos, nan=-1.0))
    order = np.lexsort((b, a, -sim))
    return [
        Similar(int(a[k]), int(b[k]), float(sim[k]), float(jac[k]), None if np.isnan(cos[k]) else float(cos[k]))
        for k in order
    ]


def related_pairs(
    matrix: np.ndarray,
    rows: Sequence[int] | np.ndarray,
    minimum: float,
    maximum: float,
    *,
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> list[Similar]:
    """Pairs with ``minimum <= cosine < maximum`` (related, not duplicates), most similar first.

    ``jaccard`` is left at 0.0: relatedness is purely semantic, as in SwarmMemory.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size < 2:
        return []
    found = cosine_pairs(matrix, minimum, maximum, block_rows=block_rows)
    a, b = rows[found.i], rows[found.j]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((hi, lo, -found.similarity))
    return [Similar(int(lo[k]), int(hi[k]), float(found.similarity[k]), 0.0, float(found.similarity[k])) for k in order]


__all__ = [
    "DEFAULT_BLOCK_ROWS",
    "PairArrays",
    "Similar",
    "WordSets",
    "cosine_pairs",
    "duplicate_pairs",
    "related_pairs",
    "row_cosines",
]
