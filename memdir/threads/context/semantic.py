"""The semantic strategy (gro's "hnsw" memory, with a real embedder instead of its SHA-256 placeholder).

The most recent turns keep ``thread_recent_share`` of the budget. The rest is filled with
the older units (messages, tool exchanges, compacted summaries) most similar to the query
— by cosine between the embedder's vectors, highest first, skipping any unit too big for
what is left. Without a query, the last user message is the query. When no embedding model
is available (none installed, disabled, or still loading in a server), units are ranked by
the share of the query's words they contain instead, and the window says so.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from memdir.core.keywords import extract_keywords
from memdir.core.settings import Settings
from memdir.threads.context.base import Budget, Piece, Unit, Window, assemble, recent_and_older

Vectors = Callable[[list[str]], np.ndarray]
"""Unit vectors for texts (cached by the caller); None when no model is available."""


def default_query(units: list[Unit]) -> str:
    for unit in reversed(units):
        if unit.chunks[0].role == "user":
            return unit.chunks[0].content
    return units[-1].text if units else ""


def keyword_scores(query: str, units: list[Unit]) -> np.ndarray:
    words = set(extract_keywords(query))
    if not words:
        return np.zeros(len(units))
    return np.array([len(words & set(extract_keywords(unit.text))) / len(words) for unit in units])


def select(units: list[Unit], budget_tokens: int, settings: Settings, query: str | None,
           vectors: Vectors | None) -> Window:
    """The semantic window for ``query`` within ``budget_tokens``."""
    budget = Budget(budget_tokens)
    if budget_tokens <= 0 or not units:
        return assemble("semantic", [])
    pieces, older = recent_and_older(units, budget, settings.thread_recent_share)
    question = query if query and query.strip() else default_query(units)
    notes = []
    if vectors is not None:
        matrix = vectors([unit.text for unit in older] + [question])
        scores = matrix[:-1] @ matrix[-1] if older else np.zeros(0)
    else:
        scores = keyword_scores(question, older)
        notes.append("no embedding model available: ranked by shared keywords")
    for position in np.argsort(-scores, kind="stable"):
        unit = older[int(position)]
        if budget.fits(unit.tokens):
            pieces.append(Piece.of(unit))
            budget.take(unit.tokens)
        if budget.left < 8:
            break
    return assemble("semantic", pieces, notes)


__all__ = ["default_query", "keyword_scores", "select"]
