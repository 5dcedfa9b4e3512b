"""Context coverage: the query words an entry lacks that the entries written around it hold.

A memory written piece by piece — a conversation turn by turn, a meeting's notes point
by point — splits what belongs together over several entries. A question's words then
spread over neighbours: "Where did Caroline move from 4 years ago?" is answered by a turn
saying "since I moved from my home country" next to one that names the friends of four
years. Each entry on its own covers part of the question; keyword coverage, BM25 and the
cosine judge each alone.

This signal gives a candidate the (idf-)weighted share of the query terms it does *not*
hold itself that one of its neighbours does: entries of the same folder written just
before or after it (up to ``context_window`` on each side, in the order entries were
first written; `memdir.storage.directory.postings.KeywordIndex.neighbours`). An entry that already
covers the whole query gains nothing from it, and an entry written alone in its folder
neither. It is one more weighted signal of the fusion (``context_weight``), not part of
``relevance``: it ranks, it never makes an entry look relevant to discovery.

Measured on LoCoMo (``bench/bench_recall_locomo.py``; figures in `memdir.search.hybrid`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from memdir.storage.base import SearchIndex, SearchKey


def context_coverage(
    index: SearchIndex,
    keys: Sequence[SearchKey],
    found: Mapping[str, np.ndarray],
    weights: Mapping[str, float],
    window: int,
) -> np.ndarray:
    """Per candidate, the summed weight of the query terms it lacks that a neighbour holds.

    Args:
        index: the store's search index (inside its ``reading()``).
        keys: the candidates (`memdir.storage.base.SearchKey`).
        found: per query term (Porter stem), whether each candidate holds it.
        weights: per query term, its weight (idf, or 1 each).
        window: neighbours looked at on each side; 0 turns the signal off.
    """
    covered = np.zeros(len(keys))
    if window <= 0 or not len(keys) or not weights:
        return covered
    owner, neighbour = index.neighbours(keys, window)
    if not len(neighbour):
        return covered
    wanted = [term for term, weight in weights.items() if weight and not found[term].all()]
    if not wanted:
        return covered
    held = index.holding(wanted, neighbour)
    rows, at = np.array([held[term] for term in wanted]).nonzero()  # (term, neighbour) pairs that hold it
    gained = np.zeros((len(wanted), len(keys)), dtype=bool)
    gained[rows, owner[at]] = True  # per term, the candidates one of whose neighbours holds it
    gained &= ~np.array([found[term] for term in wanted])
    return weighted_sum([weights[term] for term in wanted], gained)


def weighted_sum(weights: Sequence[float], rows: np.ndarray) -> np.ndarray:
    """``weights[0] * rows[0] + weights[1] * rows[1] + ...``, added in that order (so each sum is
    the same float as adding the rows one by one), in three numpy calls however many rows."""
    if not len(weights):
        return np.zeros(rows.shape[1] if rows.ndim == 2 else 0)
    return (np.asarray(weights, dtype=np.float64)[:, None] * rows).cumsum(axis=0)[-1]
