"""The semantic strategy (gro's "hnsw" memory, with a real embedder instead of its SHA-256 placeholder).

The most recent turns keep ``thread_recent_share`` of the budget. The rest is filled with
the older units (messages and tool exchanges) most similar to the query — by cosine
between the embedder's vectors, highest first, skipping any unit too big for what is left
(until `MAX_MISSES` in a row were). Compaction hides nothing here: the units are every
original turn, compacted ones included, shown verbatim; summaries are not ranked (their
turns are). Without a query, the last user message is the query. When no embedding model
is available (none installed, disabled, or still loading in a server), units are ranked by
the share of the query's words they contain instead, and the window says so.

Only the older units are ranked (the recent ones are shown anyway), so the message just
appended needs no vector yet; a query that is the last user message is ranked with that
message's vector (the manager embeds a new message in the background when it is appended).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from memdir.core.keywords import extract_keywords
from memdir.core.settings import Settings
from memdir.threads.context.base import Budget, Piece, Unit, Window, assemble, recent_and_older

MAX_MISSES = 64
"""Filling stops once this many candidates in a row were too big for what is left (the window is as full as it gets)."""
Vectors = Callable[[list[str]], np.ndarray]
"""Unit vectors for texts (cached by the caller); None when no model is available."""


def default_query(units: list[Unit]) -> str:
    for unit in reversed(units):
        if unit.chunks[0].role == "user":
            return unit.chunks[0].content
    return units[-1].text if units else ""


def asked_in(units: list[Unit], question: str) -> Unit | None:
    """The newest unit that is ``question`` (the last user message, when the query is that message): its vector,
    made when it was appended, stands for the query's."""
    for unit in reversed(units):
        if len(unit.chunks) == 1 and (unit.chunks[0].content == question or unit.text == question):
            return unit
        if unit.chunks[0].role == "user":
            return None
    return None


def query_vector(units: list[Unit], question: str, vectors: Vectors,
                 embed_query: Callable[[str], np.ndarray] | None) -> np.ndarray:
    """The query's vector: its unit's when the query is the last user message, else embedded."""
    unit = asked_in(units, question)
    if unit is not None:
        return vectors([unit.text])[0]
    return embed_query(question) if embed_query is not None else vectors([question])[0]


def keyword_scores(query: str, units: list[Unit]) -> np.ndarray:
    words = set(extract_keywords(query))
    if not words:
        return np.zeros(len(units))
    return np.array([len(words & set(extract_keywords(unit.text))) / len(words) for unit in units])


def best_first(scores: np.ndarray, head: int = 512) -> Iterator[int]:
    """Positions by descending score: the best ``head`` sorted first (a partition, not a sort of them all), then,
    if the caller wants more, the rest."""
    if len(scores) <= head:
        yield from np.argsort(-scores, kind="stable").tolist()
        return
    top = np.argpartition(-scores, head - 1)[:head]
    yield from top[np.argsort(-scores[top], kind="stable")].tolist()
    rest = np.setdiff1d(np.arange(len(scores)), top, assume_unique=True)
    yield from rest[np.argsort(-scores[rest], kind="stable")].tolist()


def select(units: list[Unit], budget_tokens: int, settings: Settings, query: str | None,
           vectors: Vectors | None, unit_vectors: Callable[[int], np.ndarray] | None = None,
           embed_query: Callable[[str], np.ndarray] | None = None) -> Window:
    """The semantic window for ``query`` within ``budget_tokens``; ``unit_vectors(n)`` gives the first ``n`` units'
    vectors in order, as a caller caches them (default: ``vectors`` of their texts), ``embed_query`` the query's
    (default: ``vectors`` of it). Only the older units are ranked, so the newest turns need no vector."""
    budget = Budget(budget_tokens)
    if budget_tokens <= 0 or not units:
        return assemble("semantic", [])
    pieces, older = recent_and_older(units, budget, settings.threads.recent_share)
    question = query if query and query.strip() else default_query(units)
    notes = []
    if not older:
        scores = np.zeros(0)
    elif vectors is not None:
        known = unit_vectors(len(older)) if unit_vectors is not None else vectors([unit.text for unit in older])
        asked = np.asarray(query_vector(units, question, vectors, embed_query), dtype=np.float32)
        # numpy's own loop, not BLAS's threads, which wake late on a busy machine (as in the entries' vector search)
        scores = np.einsum("ij,j->i", known, asked)
    else:
        scores = keyword_scores(question, older)
        notes.append("no embedding model available: ranked by shared keywords")
    missed = 0
    for position in best_first(scores):
        unit = older[int(position)]
        if unit.tokens <= budget.left:
            pieces.append(Piece.of(unit))
            budget.take(unit.tokens)
            missed = 0
        else:
            missed += 1
        if budget.left < 8 or missed >= MAX_MISSES:
            break
    return assemble("semantic", pieces, notes)


__all__ = ["default_query", "keyword_scores", "select"]
