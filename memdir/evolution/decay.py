"""Link strength decay (seed 003, Component 2.3): links nobody follows weaken, then go.

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

from datetime import datetime
from typing import TYPE_CHECKING

from memdir.core.errors import MemdirError
from memdir.core.links import Link
from memdir.core.settings import Settings
from memdir.evolution.facts import days_between
from memdir.evolution.runner import JobContext, JobOutcome, ScheduledJob
from memdir.optimization.corpus import Corpus

if TYPE_CHECKING:
    from memdir.memory import Memory


def decay_factor(link: Link, settings: Settings, now: datetime) -> float:
    """The factor a system link's strength is multiplied by in this run (1.0: none)."""
    stale, idle, old_idle = settings.link_decay_days
    long_factor, mid_factor, old_factor = settings.link_decay_factors
    unused = days_between(link.traversed_at or link.created_at, now)
    if unused > stale:
        return long_factor
    if unused > idle:
        return mid_factor
    if days_between(link.created_at, now) > settings.link_decay_old_days and unused > old_idle:
        return old_factor
    return 1.0


class LinkDecayJob(ScheduledJob):
    """Weaken untraversed system links and remove the weakest and the orphaned (see the module docstring)."""

    name = "links"
    title = "link decay"
    interval_setting = "link_decay_interval_days"

    def run(self, memory: Memory, context: JobContext) -> JobOutcome:
        settings, outcome = context.settings, JobOutcome()
        corpus = Corpus.load(memory, full=True)
        existing = set(corpus.paths)
        holders = [item for item in corpus.items if item.stored.links]
        for item in context.each(holders, lambda item: item.path, outcome):
            kept: list[Link] = []
            notes: list[str] = []
            for link in item.stored.links:
                if link.target not in existing and not memory.exists(link.target):
                    notes.append(f"removed the orphaned {link.kind} link to memory://{link.target}")
                    continue
                factor = 1.0 if link.origin == "user" else decay_factor(link, settings, context.now)
                strength = round(link.strength * factor, 4)
                if strength < settings.link_remove_below:
                    notes.append(f"removed the {link.kind} link to memory://{link.target} ({link.strength:g} → {strength:g})")
                    continue
                if strength != link.strength:
                    notes.append(f"{link.kind} link to memory://{link.target}: {link.strength:g} → {strength:g}")
                    link = link.model_copy(update={"strength": strength})
                kept.append(link)
            if not notes:
                continue
            if not context.dry_run:
                try:
                    memory.update_metadata(item.path, {"links": [link.to_yaml() for link in kept]})
                except MemdirError as exc:  # changed or deleted meanwhile: the next run looks again
                    outcome.details.append(f"memory://{item.path}: skipped ({exc.message})")
                    continue
            outcome.changed += len(notes)
            outcome.details.extend(f"memory://{item.path}: {note}" for note in notes)
        return outcome


__all__ = ["LinkDecayJob", "decay_factor"]
