"""Picking the ``k`` best of many precomputed scores without sorting them all."""

from __future__ import annotations

import numpy as np


def top_of(scores: np.ndarray, k: int, mask: np.ndarray | None = None) -> np.ndarray:
    """The rows of the ``k`` best of precomputed ``scores`` among the rows ``mask`` keeps, best first
    (equal scores by row)."""
    if not len(scores) or k <= 0:
        return np.zeros(0, dtype=np.int64)
    candidates = mask.nonzero()[0] if mask is not None else None
    scores_c = scores if candidates is None else scores[candidates]
    k = min(k, len(scores_c))
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    part = at_least_kth(scores_c, k) if k < len(scores_c) else np.arange(len(scores_c))
    order = part[(-scores_c[part]).argsort(kind="stable")][:k]
    return order if candidates is None else candidates[order]


SAMPLE_STRIDE = 16
"""`at_least_kth` guesses a bound from every 16th score."""


def at_least_kth(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of ``scores`` holding the ``k`` best and every score equal to the ``k``-th best (so
    ties can be broken by position), and perhaps a few more, in ascending order.

    The positions are those at or above a bound: the score of the sample's ``2k / SAMPLE_STRIDE + 4``-th
    best, which about twice ``k`` scores pass; when at least ``k`` do, the ``k`` best are among them
    (none below the bound can beat ``k`` above it). Comparing every score with one number costs a
    small part of partitioning them all (an ``argpartition`` of 100K scores costs most of a
    millisecond). Too few passing (scores sorted against the sample's stride, a small array) takes
    the ``k``-th best score itself as the bound.
    """
    rank = 2 * k // SAMPLE_STRIDE + 4
    sample = scores[::SAMPLE_STRIDE]
    if len(sample) > 2 * rank:
        passing = np.flatnonzero(scores >= np.partition(sample, len(sample) - rank)[len(sample) - rank])
        if len(passing) >= k:
            return passing
    passing = np.flatnonzero(scores >= np.partition(scores, len(scores) - k)[len(scores) - k])
    return passing if len(passing) >= k else np.sort(scores.argpartition(len(scores) - k)[len(scores) - k :])  # (NaN)
