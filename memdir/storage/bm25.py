"""The BM25 formula both stores rank keywords with: FTS5's constants and idf, so the directory store's
in-memory postings and the PostgreSQL store's SQL give the same scores."""

from __future__ import annotations

import math

K1 = 1.2

B = 0.75


def bm25_idf(live: int, hits: int) -> float:
    """FTS5's idf of a term found in ``hits`` of ``live`` entries."""
    return math.log((live - hits + 0.5) / (hits + 0.5))
