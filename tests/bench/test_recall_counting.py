"""How the vector-search recall benches count a found entry (`bench/bench_hnsw_list.py`'s `recalls`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_hnsw_list import TIE, recalls  # noqa: E402

WANTED = {f"fact/{i}.md" for i in range(10)}
TENTH = 0.61  # exact search's 10th nearest, its cosine


def found(last: tuple[str, float]) -> list[tuple[str, float]]:
    """A walk's top 10: exact search's first nine, then ``last``."""
    return [(f"fact/{i}.md", 0.9 - i / 100) for i in range(9)] + [last]


@pytest.mark.parametrize(("last", "strict", "ties"), [
    (("fact/9.md", TENTH), 1.0, 1.0),  # exact search's 10th itself
    (("fact/other.md", TENTH), 0.9, 1.0),  # another entry exactly as near: a tie, not a miss
    (("fact/other.md", TENTH - TIE / 2), 0.9, 1.0),  # nearer than ann-benchmarks' 1e-3 of distance
    (("fact/other.md", TENTH - 2 * TIE), 0.9, 0.9),  # farther: a miss both ways
])
def test_an_entry_as_near_as_the_tenth_counts_when_ties_count(last: tuple[str, float], strict: float, ties: float) -> None:
    assert recalls(found(last), WANTED, TENTH) == (pytest.approx(strict), pytest.approx(ties))
