"""What the evolution jobs know of each entry: importance, reads, last read, links in and out.

One snapshot of the store per run (`gather`): the entries as defrag reads them
(`memdir.optimization.corpus`), with the derived index's access facts (last read) and the
link counts computed over the whole snapshot.

Two conventions the jobs share:

* an entry's *age* is measured from its ``updated_at``: memdir keeps no separate creation
  time, and an entry rewritten is, for these rules, a new one;
* an episode (`memdir.episodes`) keeps its own 0-1 ``importance``; the jobs read it on the
  1-10 scale (``1 + 9 x``) and never rewrite it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from memdir.core.entry import DEFAULT_IMPORTANCE, IMPORTANCE_RANGE, Metadata
from memdir.optimization.corpus import SECONDS_PER_DAY, Corpus, Item

if TYPE_CHECKING:
    from memdir.memory import Memory

EPISODE_KEY = "episode"
"""The metadata key every episode entry carries (`memdir.episodes.store`)."""


def days_between(earlier: datetime, later: datetime) -> float:
    """Days from ``earlier`` to ``later`` (naive times are UTC); never negative."""
    earlier = earlier if earlier.tzinfo else earlier.replace(tzinfo=timezone.utc)
    return max(0.0, (later - earlier).total_seconds() / SECONDS_PER_DAY)


def is_episode(metadata: Metadata) -> bool:
    return EPISODE_KEY in (metadata.model_extra or {})


def importance_of(metadata: Metadata) -> float:
    """The entry's importance on the 1-10 scale (absent: the default; an episode's 0-1 scaled)."""
    low, high = IMPORTANCE_RANGE
    value = metadata.importance
    if value is None:
        return DEFAULT_IMPORTANCE
    if is_episode(metadata):
        value = low + (high - low) * min(max(float(value), 0.0), 1.0)
    return min(max(float(value), low), high)


@dataclass(frozen=True, slots=True)
class EntryFacts:
    """One entry as the jobs see it.

    Attributes:
        item: the entry (content, stored metadata, fingerprint) as defrag's snapshot has it.
        importance: its importance on the 1-10 scale (`importance_of`).
        reads: how often an agent read it (the ``.yml``'s ``hits``).
        last_read: the last read the derived index saw (None: never read; a rebuilt index
            knows only that it was read, and says ``updated_at``).
        inbound / outbound: links to it from other entries / from it (typed and ``related``).
    """

    item: Item
    importance: float
    reads: int
    last_read: datetime | None
    inbound: int
    outbound: int

    @property
    def path(self) -> str:
        return self.item.path

    @property
    def metadata(self) -> Metadata:
        return self.item.stored

    @property
    def written(self) -> datetime:
        return self.item.updated_at

    def days_unread(self, now: datetime) -> float:
        """Days since the last read, since it was written when never read, or since it was
        unarchived by hand (a restore counts as a use: the next archival run keeps it)."""
        since = self.last_read or self.written
        restored = (self.metadata.model_extra or {}).get("unarchived_at")
        if restored:
            try:
                since = max(since, _aware(datetime.fromisoformat(str(restored))))
            except ValueError:
                pass
        return days_between(since, now)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def gather(memory: Memory, corpus: Corpus | None = None) -> list[EntryFacts]:
    """Facts of every entry of the store (built-in ones and stubs left out), in path order."""
    corpus = corpus or Corpus.load(memory, full=True)
    items = corpus.items
    access = memory.index.rank_facts([item.path for item in items])
    inbound = Counter(target for item in items for target in item.related if target != item.path)
    found = []
    for item in items:
        row = access.get(item.path)
        last_read = None
        if item.hits > 0:
            last_read = _aware(datetime.fromisoformat(row.accessed_at)) if row and row.accessed_at else item.updated_at
        found.append(EntryFacts(
            item=item, importance=importance_of(item.stored), reads=item.hits, last_read=last_read,
            inbound=inbound[item.path], outbound=len(item.related - {item.path}),
        ))  # fmt: skip
    return found


__all__ = ["EntryFacts", "days_between", "gather", "importance_of", "is_episode"]
