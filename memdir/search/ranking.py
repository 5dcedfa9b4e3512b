"""Ranking signals beyond the text: graph expansion, importance and recency.

The hybrid searcher (`memdir.search.hybrid`) first fuses the text signals (semantic, BM25,
keyword coverage, tags) into one score per candidate. These three are then added to that
weighted mean, each with its own weight (a setting; 0 turns it off):

    score = (text_total * text_score + w_graph * graph + w_imp * importance + w_rec * recency)
            / (text_total + w_graph + w_imp + w_rec)

* **graph** — the `graph_seeds` best hits by text score spread along their links (either
  direction, any kind, `graph_hops` <= 2): a neighbour gets ``seed_score / best_score *
  strength`` (times ``graph_hop_decay * strength`` for the second hop), the best over all
  paths; entries reached that were no candidate join the candidates. So an entry that says
  little about the query's words but is linked to ones that do (a reply to a question, the
  next step of a procedure) can still be found.
* **importance** — an `ImportanceScorer` maps an entry's `RankFacts` (its metadata's
  importance, reads, last access, kind) to [0, 1]; without a role it is ``(importance - 1) / 9``
  with importance 5 when the metadata gives none, weighted ``importance_weight``. When the
  searching agent has a role (``--role``, or its HTTP token's) it is `RoleImportance`, the
  seed's Component 3.3 — the role's own mix of importance, reads, recency and whether the
  entry is of one of the role's kinds — weighted ``role_importance_weight``.
* **recency** — ``exp(-ln 2 * days / recency_half_life_days)`` since the entry was last
  read by an agent (the derived index's ``accessed_at``), else since it was written.

The defaults were chosen by measurement (``bench/bench_ranking_signals.py``; bench/RESULTS.md's
figures): a signal stays on by default only where it did not lower LoCoMo recall.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from memdir.core.entry import IMPORTANCE_RANGE, importance_on_scale
from memdir.core.identity import ROLE_KINDS, Role
from memdir.core.settings import Settings

if TYPE_CHECKING:
    from memdir.storage.base import SearchIndex
    from memdir.storage.records import RankFacts

MAX_GRAPH_HOPS = 2
SECONDS_PER_DAY = 86_400.0


class ImportanceScorer(Protocol):
    """Maps what the index knows of an entry to an importance in [0, 1] (1 = most important)."""

    def __call__(self, facts: RankFacts, now: datetime) -> float: ...


def metadata_importance(facts: RankFacts, now: datetime) -> float:
    """The default scorer: the metadata's importance (5 when absent; `importance_on_scale`) scaled from 1-10 to 0-1."""
    low, high = IMPORTANCE_RANGE
    return (importance_on_scale(facts.path, facts.importance) - low) / (high - low)


IN_ROLE_RELEVANCE = 0.8
OUT_OF_ROLE_RELEVANCE = 0.3  # the design: an entry of another kind is less relevant to the role, never irrelevant
ACCESS_SATURATION = 10.0  # reads at which the access term reaches 1 (the design's ``count / 10``, clamped)
ROLE_RECENCY_DAYS = 30.0  # days since the last read at which the recency term is 1/2 (``1 / (1 + days / 30)``)


@dataclass(frozen=True)
class RoleImportance:
    """A role's importance, in [0, 1]:

        w_base * importance / 10 + w_access * min(reads / 10, 1)
        + w_recency / (1 + days since the last read / 30) + w_relevance * (0.8 in the role's kinds, else 0.3)

    The weights are the role's ``role_weights_<role>`` setting (they sum to 1, so the score
    stays in [0, 1]); an entry without a kind counts as of another kind. Deterministic: the
    same facts and time give the same score.
    """

    role: Role
    weights: tuple[float, float, float, float]

    @classmethod
    def of(cls, settings: Settings, role: Role | None) -> RoleImportance | None:
        """The scorer of ``role`` with the settings' weights, None without a role."""
        if role is None:
            return None
        return cls(role, getattr(settings.roles, f"role_weights_{role.value}"))

    def __call__(self, facts: RankFacts, now: datetime) -> float:
        w_base, w_access, w_recency, w_relevance = self.weights
        importance = importance_on_scale(facts.path, facts.importance)
        access = min(max(facts.hits, 0) / ACCESS_SATURATION, 1.0)
        days = days_since(facts.accessed_at, now)
        recency = 0.0 if days is None else 1.0 / (1.0 + days / ROLE_RECENCY_DAYS)
        relevance = IN_ROLE_RELEVANCE if facts.kind in ROLE_KINDS[self.role] else OUT_OF_ROLE_RELEVANCE
        return w_base * importance / IMPORTANCE_RANGE[1] + w_access * access + w_recency * recency + w_relevance * relevance


def days_since(when: str | None, now: datetime) -> float | None:
    """Days from the ISO time ``when`` to ``now`` (never negative), None when unknown."""
    if not when:
        return None
    try:
        then = datetime.fromisoformat(when)
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max((now - then).total_seconds() / SECONDS_PER_DAY, 0.0)


def recency(facts: RankFacts, now: datetime, half_life_days: float) -> float:
    """``exp(-ln 2 * age / half_life)`` of the entry's last access (or write); 1.0 just now, 0.5 one half-life ago."""
    age = days_since(facts.accessed_at, now)
    if age is None or half_life_days <= 0:
        return 0.0
    return math.exp(-math.log(2.0) * age / half_life_days)


def graph_expansion(
    index: SearchIndex, seeds: Sequence[tuple[str, float]], hops: int, hop_decay: float, limit: int = 50
) -> dict[str, float]:
    """Path -> graph score in [0, 1] of the (at most ``limit``) best entries linked within ``hops`` to a seed.

    ``seeds`` are (path, text score), best first; a seed's weight is its score over the best.
    A link is followed from either end; a path's score is the best over the ways it is reached.
    Each hop goes on from its ``limit`` best entries only: a densely linked store (defrag's
    ``link_related`` links most entries of a conversation) must not make a search read and
    rank thousands of neighbours.
    """
    best = max((score for _, score in seeds), default=0.0)
    if best <= 0:
        return {}
    reach = {path: score / best for path, score in seeds}
    found: dict[str, float] = {}
    frontier = dict(reach)
    for hop in range(1, min(hops, MAX_GRAPH_HOPS) + 1):
        factor = 1.0 if hop == 1 else hop_decay
        nxt: dict[str, float] = {}
        for edge in index.edges(list(frontier)):
            for near, far in ((edge.source, edge.target), (edge.target, edge.source)):
                if near in frontier and far != near:
                    value = frontier[near] * edge.strength * factor
                    if value > nxt.get(far, 0.0):
                        nxt[far] = value
        for path, value in nxt.items():
            if value > found.get(path, 0.0):
                found[path] = value
        frontier = dict(_best(((p, v) for p, v in nxt.items() if p not in reach), limit))
        if not frontier:
            break
    return dict(_best(found.items(), limit))


def _best(items: Iterable[tuple[str, float]], limit: int) -> list[tuple[str, float]]:
    """The ``limit`` highest-valued (path, value) pairs (ties by path, so results do not depend on order)."""
    return sorted(items, key=lambda item: (-item[1], item[0]))[:limit]


class RankingSignals:
    """The graph, importance and recency signals of one search, and how they join the text score.

    Args:
        settings: the weights, seeds, hops and half-life.
        role: the searching agent's role (None: none); with one, importance is the role's.
    """

    def __init__(self, settings: Settings, role: Role | None = None) -> None:
        self.settings = settings
        scorer = RoleImportance.of(settings, role)
        self.importance: ImportanceScorer = scorer or metadata_importance
        self.importance_weight = settings.search.importance_weight if scorer is None else settings.roles.role_importance_weight
        if settings.swarm_formula:
            self.importance_weight = 0.0

    @property
    def weights(self) -> dict[str, float]:
        s = self.settings.search
        return {"graph": s.graph_weight, "importance": self.importance_weight, "recency": s.recency_weight}

    @property
    def active(self) -> bool:
        return any(weight > 0 for weight in self.weights.values())

    def expand(self, index: SearchIndex, ranked: Iterable[tuple[str, float]]) -> dict[str, float]:
        """Graph scores from the best ``graph_seeds`` of ``ranked`` ((path, text score), any order)."""
        if self.settings.search.graph_weight <= 0 or self.settings.search.graph_seeds <= 0:
            return {}
        seeds = sorted(ranked, key=lambda item: -item[1])[: self.settings.search.graph_seeds]
        s = self.settings.search
        return graph_expansion(index, seeds, s.graph_hops, s.graph_hop_decay, limit=s.candidates)

    def extras(self, facts: RankFacts | None, graph: float, now: datetime) -> dict[str, float | None]:
        """One candidate's signals (importance and recency None when the index has no facts of it)."""
        if facts is None:
            return {"graph": graph, "importance": None, "recency": None}
        return {
            "graph": graph,
            "importance": float(self.importance(facts, now)),
            "recency": recency(facts, now, self.settings.search.recency_half_life_days),
        }

    def combine(self, text_score: float, text_total: float, extras: dict[str, float | None]) -> float:
        """The text score's weighted mean widened by the active signals (see the module docstring)."""
        total, fused = text_total, text_score * text_total
        for name, weight in self.weights.items():
            if weight > 0:
                fused += weight * (extras.get(name) or 0.0)
                total += weight
        return fused / total if total else 0.0


__all__ = [
    "ImportanceScorer",
    "RankingSignals",
    "RoleImportance",
    "days_since",
    "graph_expansion",
    "metadata_importance",
    "recency",
]
