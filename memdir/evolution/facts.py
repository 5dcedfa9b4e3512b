"""What the evolution jobs know of each entry: importance, reads, last read, links in and out.

One snapshot of the store per run (`gather`), from the derived index alone — its rows
(``updated_at``, reads), its ranking facts (importance, last read, archived or superseded)
and its link table — so deciding what to change reads no entry file; the jobs read (and
re-check) only the entries they change.

Conventions the jobs share:

* an entry's *age* is measured from its ``updated_at``: memdir keeps no separate creation
  time, and an entry rewritten is, for these rules, a new one;
* an entry never read has no last read: the rules count from when it was written;
* an episode (`memdir.episodes`, under ``experience/episodes/``) keeps its own 0-1
  ``importance``: the jobs read it on the 1-10 scale (``1 + 9 x``) and never rewrite it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memdir.core.entry import EPISODES_PREFIX, importance_on_scale
from memdir.optimization.corpus import SECONDS_PER_DAY

if TYPE_CHECKING:
    from memdir.memory import Memory


def aware(moment: datetime) -> datetime:
    """Naive times (hand-edited files) are UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def days_between(earlier: datetime, later: datetime) -> float:
    """Days from ``earlier`` to ``later``; never negative."""
    return max(0.0, (aware(later) - aware(earlier)).total_seconds() / SECONDS_PER_DAY)


def is_episode(path: str) -> bool:
    return path.startswith(EPISODES_PREFIX)


@dataclass(frozen=True, slots=True)
class EntryFacts:
    """One entry as the jobs see it.

    Attributes:
        path: the entry.
        importance: as ranking sees it (recalibrated, else stated), on the 1-10 scale
            (`memdir.core.entry.importance_on_scale`).
        reads: how often an agent read it (the ``.yml``'s ``hits``).
        written: its ``updated_at``.
        last_read: the last read the derived index saw (None: never read; a rebuilt index
            knows only that it was read, and says ``updated_at``).
        inbound / outbound: entries linking to it / it links to (typed links and ``related``).
        hidden: archived or superseded.
        stated: the importance a person or agent stated in the metadata, on the same scale
            (None: none stated); a job's recalibration never lowers what protects an entry.
    """

    path: str
    importance: float
    reads: int
    written: datetime
    last_read: datetime | None
    inbound: int
    outbound: int
    hidden: bool = False
    stated: float | None = None

    def days_unread(self, now: datetime, restored: datetime | None = None) -> float:
        """Days since the last read (since written, when never read), or since ``restored``
        (unarchived by hand: a use) when that is later."""
        since = max(aware(self.last_read or self.written), aware(restored)) if restored else self.last_read or self.written
        return days_between(since, now)


def gather(memory: Memory) -> list[EntryFacts]:
    """Facts of every entry of the store (built-in ones and stubs left out), in path order."""
    infos = memory.list(include_virtual=False)
    paths = [info.path for info in infos]
    ranking = memory.index.rank_facts(paths)
    inbound: dict[str, set[str]] = defaultdict(set)
    outbound: dict[str, set[str]] = defaultdict(set)
    for edge in memory.index.edges(paths):
        if edge.source != edge.target:
            inbound[edge.target].add(edge.source)
            outbound[edge.source].add(edge.target)
    found = []
    for info in infos:
        row = ranking.get(info.path)
        last_read = None
        if info.hits > 0:
            last_read = aware(datetime.fromisoformat(row.accessed_at)) if row and row.accessed_at else info.updated_at
        found.append(EntryFacts(
            path=info.path, importance=importance_on_scale(info.path, row.importance if row else None), reads=info.hits,
            written=aware(info.updated_at), last_read=last_read, inbound=len(inbound[info.path]),
            outbound=len(outbound[info.path]), hidden=bool(row and row.hidden),
            stated=importance_on_scale(info.path, row.stated) if row and row.stated is not None else None,
        ))  # fmt: skip
    return found


__all__ = ["EntryFacts", "aware", "days_between", "gather", "is_episode"]
