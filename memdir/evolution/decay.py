"""Link strength decay: links nobody follows weaken, then go.

Each run multiplies the strength of every *system* link (made by memdir: defrag's
``link_related``, ingest) by

* 0.25 when it has not been traversed for 180 days,
* else 0.5 when not for 90 days,
* else 0.8 when the link is older than a year and not traversed for 30 days,
* else 1 (a link made or followed lately, one made today, keeps its strength);

a link never traversed counts from when it was made. A link that falls below 0.1
(``link_remove_below``) is removed. Links a person or agent made (``origin: user``, and
SwarmMemory's ``related`` paths) never decay. A link whose target no longer exists (an
orphan that slipped in by hand or by another tool) is removed whatever made it; ``related``
paths are the author's text and stay (`memdir defrag --action analyze` reports them).
Both ends of a two-way link decay independently (each is a link of its own entry). All days
and factors are settings.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memdir.core.errors import MemdirError
from memdir.core.links import Link
from memdir.core.settings import Settings
from memdir.evolution.facts import aware, days_between
from memdir.evolution.runner import JobContext, JobOutcome, ScheduledJob
from memdir.storage.records import Edge

if TYPE_CHECKING:
    from memdir.core.entry import Entry
    from memdir.memory import Memory

WRITE_BATCH = 256
"""Entries whose links change per commit."""


def decay_factor(created_at: datetime, traversed_at: datetime | None, settings: Settings, now: datetime) -> float:
    """The factor a system link's strength is multiplied by in this run (1.0: none)."""
    stale, idle, old_idle = settings.evolution.link_decay_days
    long_factor, mid_factor, old_factor = settings.evolution.link_decay_factors
    unused = days_between(traversed_at or created_at, now)
    if unused > stale:
        return long_factor
    if unused > idle:
        return mid_factor
    if days_between(created_at, now) > settings.evolution.link_decay_old_days and unused > old_idle:
        return old_factor
    return 1.0


def _time(text: str | None) -> datetime | None:
    return aware(datetime.fromisoformat(text)) if text else None


class LinkDecayJob(ScheduledJob):
    """Weaken untraversed system links and remove the weakest and the orphaned (see the module docstring).

    The derived index's link table says which entries hold a link to change; only those are
    read, re-judged from their own ``.yml`` and rewritten, a batch at a time, under the root's lock.
    """

    name = "links"
    title = "link decay"
    interval_setting = "link_decay_interval_days"

    def run(self, memory: Memory, context: JobContext) -> JobOutcome:
        settings, now, outcome = context.settings, context.now, JobOutcome()
        existing = {info.path for info in memory.list(include_virtual=False)}
        held: dict[str, list[Edge]] = defaultdict(list)
        for edge in memory.index.edges(sorted(existing)):
            held[edge.source].append(edge)

        def changes(edge: Edge) -> bool:
            if edge.target not in existing:
                return True
            created = _time(edge.created_at)
            return edge.origin == "system" and created is not None and decay_factor(
                created, _time(edge.traversed_at), settings, now) < 1.0

        pending: list[str] = []
        for source in context.each(held, str, outcome):
            if any(map(changes, held[source])):
                pending.append(source)
            if len(pending) >= WRITE_BATCH:
                self._decay(memory, context, pending, existing, outcome)
        self._decay(memory, context, pending, existing, outcome)
        return outcome

    @staticmethod
    def _decay(memory: Memory, context: JobContext, pending: list[str], existing: set[str], outcome: JobOutcome) -> None:
        """Re-judge the links of ``pending`` entries from their files and store the changes as one."""
        if not pending:
            return
        settings, notes = context.settings, {}

        def judged(entry: Entry) -> dict[str, Any] | None:  # the entry as read under the write lock
            kept, said = _judged(entry.metadata.links, existing, memory, settings, context.now)
            if not said:
                return None
            notes[entry.path] = said
            return {"links": [link.to_yaml() for link in kept]}

        if context.dry_run:
            for path in pending:
                try:
                    judged(memory.adapter.read_entry(path, follow=False))
                except MemdirError:  # gone meanwhile
                    continue
        else:  # judged from each entry as update_metadata_many reads it, under the lock: no traversal in between
            try:
                written = {entry.path for entry in memory.update_metadata_many(dict.fromkeys(pending, judged))}
            except MemdirError as exc:  # refused or failed as a whole: the next run looks again
                outcome.details.append(f"{len(pending)} entries' links not changed: {exc.message}")
                written = set()
            notes = {path: said for path, said in notes.items() if path in written}
        pending.clear()
        for path, said in notes.items():
            outcome.changed += len(said)
            outcome.details.extend(f"memory://{path}: {note}" for note in said)


def _judged(links: list[Link], existing: set[str], memory: Memory, settings: Settings, now: datetime) -> tuple[list[Link], list[str]]:
    """(the links an entry keeps, with their new strengths; what changed, one line each)."""
    kept: list[Link] = []
    notes: list[str] = []
    for link in links:
        if link.target not in existing and not memory.exists(link.target):
            notes.append(f"removed the orphaned {link.kind} link to memory://{link.target}")
            continue
        factor = 1.0 if link.origin == "user" else decay_factor(link.created_at, link.traversed_at, settings, now)
        strength = round(link.strength * factor, 4)
        if strength < settings.evolution.link_remove_below:
            notes.append(f"removed the {link.kind} link to memory://{link.target} ({link.strength:g} → {strength:g})")
            continue
        if strength != link.strength:
            notes.append(f"{link.kind} link to memory://{link.target}: {link.strength:g} → {strength:g}")
            link = link.model_copy(update={"strength": strength})
        kept.append(link)
    return kept, notes


__all__ = ["LinkDecayJob", "decay_factor"]
