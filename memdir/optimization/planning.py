"""What each defrag action would act on: pure decisions over a `Corpus` (and the stubs on disk).

Nothing here changes memory; `memdir.optimization.defragmenter` turns these plans into
reports, and, for live runs, into changes through `memdir.optimization.actions.Changer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memdir.core.entry import EPISODES_PREFIX
from memdir.core.errors import EntryNotFoundError, MemdirError, RedirectError
from memdir.optimization.actions import choose_keeper
from memdir.optimization.corpus import SECONDS_PER_DAY, Corpus, Item
from memdir.optimization.pairs import Similar, duplicate_pairs, related_pairs

if TYPE_CHECKING:
    from memdir.memory import Memory

LINK_WORDS = {
    "both": "linked both ways",
    "a_to_b": "linked one way (→)",
    "b_to_a": "linked one way (←)",
    "none": "not linked",
}


def duplicates(corpus: Corpus, threshold: float) -> list[Similar]:
    """Pairs with ``max(word jaccard, cosine) >= threshold``, most similar first."""
    # The word sets are built while the cosine half runs (see `duplicate_pairs`).
    return duplicate_pairs(lambda: corpus.words, corpus.matrix, corpus.rows, threshold)


def link_status(a: Item, b: Item) -> str:
    """``both``, ``a_to_b``, ``b_to_a`` or ``none``: which of the two already links to the other."""
    forward, backward = b.path in a.related, a.path in b.related
    if forward and backward:
        return "both"
    return "a_to_b" if forward else "b_to_a" if backward else "none"


@dataclass(frozen=True, slots=True)
class RelatedPair:
    a: Item
    b: Item
    similarity: float
    link: str


def related(corpus: Corpus, low: float, high: float) -> list[RelatedPair]:
    """Pairs with ``low <= cosine < high`` and their current link status, most similar first."""
    found = []
    for pair in related_pairs(corpus.matrix, corpus.rows, low, high):
        a, b = corpus.item(pair.a), corpus.item(pair.b)
        if a is not None and b is not None:  # both still exist
            found.append(RelatedPair(a, b, pair.similarity, link_status(a, b)))
    return found


@dataclass(frozen=True, slots=True)
class Merge:
    keeper: Item
    other: Item
    similarity: float


def unmergeable(a: Item, b: Item) -> str | None:
    """Why a duplicate pair is never merged, or None when it may be.

    An episode is cut from a conversation and keeps its own record (outcome, task, time):
    nothing is merged into or out of one. Entries of different types (a curated fact and
    an experience) say different kinds of things, however alike their words.
    """
    if a.path.startswith(EPISODES_PREFIX) or b.path.startswith(EPISODES_PREFIX):
        return "episodes are never merged"
    if a.type != b.type:
        return f"a {a.type or 'untyped'} entry and a {b.type or 'untyped'} entry are never merged"
    return None


def merge_plan(corpus: Corpus, threshold: float, strategy: str) -> tuple[list[Merge], list[tuple[Merge, str]]]:
    """Merges for the duplicate pairs, most similar first, and the pairs left alone with why (`unmergeable`).

    Greedy: an entry is merged away at most once, and an entry that keeps another is
    never merged away in the same run, so every stub points straight at a live entry.
    """
    merged_away: set[str] = set()
    keepers: set[str] = set()
    plan = []
    left: list[tuple[Merge, str]] = []
    for pair in duplicates(corpus, threshold):
        a, b = corpus.item(pair.a), corpus.item(pair.b)
        if a is None or b is None:
            continue
        if (reason := unmergeable(a, b)) is not None:
            left.append((Merge(a, b, pair.similarity), reason))
            continue
        keeper, other = choose_keeper(a, b, strategy)
        if keeper.path in merged_away or other.path in merged_away or other.path in keepers:
            continue
        plan.append(Merge(keeper, other, pair.similarity))
        merged_away.add(other.path)
        keepers.add(keeper.path)
    return plan, left


@dataclass(frozen=True, slots=True)
class StubInfo:
    """A redirect stub on disk, and where its chain of redirects ends (None if broken)."""

    path: str
    kind: str
    target: str
    final: str | None
    age_days: float
    hits: int


def final_target(memory: Memory, path: str) -> str | None:
    """Where a chain of stubs starting at ``path`` ends, or None if it is broken or too long."""
    for _ in range(memory.settings.storage.max_redirect_hops + 1):
        try:
            redirect = memory.redirect_of(path)
        except (EntryNotFoundError, RedirectError):
            return None
        if redirect is None:
            return path
        path = redirect.target
    return None


def stale_stubs(memory: Memory, now: datetime, age_days: float, max_hits: int) -> list[StubInfo]:
    """Stubs (from `Memory.list_stubs`) at least ``age_days`` old and read at most ``max_hits`` times."""
    found = []
    for info in memory.list_stubs():
        try:
            redirect = memory.redirect_of(info.path)
        except MemdirError:
            continue
        if redirect is None:
            continue
        updated = info.updated_at if info.updated_at.tzinfo else info.updated_at.replace(tzinfo=UTC)
        age = (now - updated).total_seconds() / SECONDS_PER_DAY
        if age >= age_days and info.hits <= max_hits:
            final = final_target(memory, redirect.target)
            found.append(StubInfo(info.path, redirect.kind, redirect.target, final, age, info.hits))
    return found


def stub_targets(memory: Memory) -> set[str]:
    """Every path some stub redirects to."""
    targets = set()
    for info in memory.list_stubs():
        try:
            redirect = memory.redirect_of(info.path)
        except MemdirError:
            continue
        if redirect is not None:
            targets.add(redirect.target)
    return targets


def compact_candidates(corpus: Corpus, now: datetime, min_quality: int, min_age_days: float, max_hits: int) -> list[Item]:
    """Entries that are low quality AND old AND rarely read (all three)."""
    return [
        item for item in corpus.items
        if item.quality < min_quality and item.age_days(now) >= min_age_days and item.hits <= max_hits
    ]


__all__ = [
    "LINK_WORDS",
    "Merge",
    "RelatedPair",
    "StubInfo",
    "compact_candidates",
    "duplicates",
    "final_target",
    "link_status",
    "merge_plan",
    "related",
    "stale_stubs",
    "stub_targets",
]
