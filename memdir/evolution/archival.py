"""Automatic archival (seed 003, Component 2.4): unused entries step aside, nothing is deleted.

An entry is archived — ``archived_at`` set in its metadata — when any of these holds:

* it was never read and is older than ``archival_unread_days`` (180);
* its importance is below 3 and it has not been read for 90 days (``archival_low_importance``);
* its importance is below 2 and it has not been read for 30 days (``archival_very_low_importance``);

and never when its importance is at least ``archival_protected_importance`` (7): an entry
never read but very important stays. An entry read yesterday stays whatever its importance.

Archived entries leave search and discovery but stay readable, with their content, links,
vector and read count; `unarchive` (``memdir unarchive PATH``) restores one, and the restore
counts as a use (``unarchived_at``), so the next run does not archive it again at once. Each
live run is journaled like a defrag run (`memdir.optimization.journal`): ``memdir evolve
--undo`` reverts the whole run.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memdir.core.errors import InputValidationError
from memdir.core.paths import normalize_path
from memdir.core.settings import Settings
from memdir.evolution.facts import EntryFacts, gather
from memdir.evolution.runner import JobContext, JobOutcome, ScheduledJob
from memdir.optimization.actions import Changer
from memdir.optimization.corpus import Corpus
from memdir.optimization.journal import Journal

if TYPE_CHECKING:
    from memdir.core.entry import Entry
    from memdir.memory import Memory


def archival_reason(facts: EntryFacts, settings: Settings, now: datetime) -> str | None:
    """Why the entry should be archived now, or None to keep it."""
    if facts.metadata.hidden or facts.importance >= settings.archival_protected_importance:
        return None
    unread = facts.days_unread(now)
    if facts.reads == 0 and unread > settings.archival_unread_days:
        return f"never read in {unread:.0f} days"
    for below, days in (settings.archival_very_low_importance, settings.archival_low_importance):
        if facts.importance < below and unread > days:
            return f"importance {facts.importance:g} < {below:g}, unread for {unread:.0f} days"
    return None


class ArchivalJob(ScheduledJob):
    """Archive entries nobody uses (see the module docstring)."""

    name = "archival"
    title = "archival"
    interval_setting = "archival_interval_days"

    def run(self, memory: Memory, context: JobContext) -> JobOutcome:
        outcome = JobOutcome()
        corpus = Corpus.load(memory, full=True)
        with Journal(memory, self.name, {"dry_run": context.dry_run}) as journal:
            changer = Changer(memory, journal, corpus)
            for facts in context.each(gather(memory, corpus), lambda facts: facts.path, outcome):
                reason = archival_reason(facts, context.settings, context.now)
                if reason is None:
                    continue
                if not context.dry_run:
                    done = changer.update(facts.item, {"archived_at": context.now.isoformat()})
                    if not done.done:
                        outcome.details.append(f"memory://{facts.path}: skipped ({done.reason})")
                        continue
                outcome.changed += 1
                outcome.details.append(f"memory://{facts.path}: archived ({reason})")
        return outcome


def unarchive(memory: Memory, path: str, *, now: datetime) -> Entry:
    """Bring an archived entry back into search and discovery.

    Raises:
        EntryNotFoundError: no entry at ``path``.
        InputValidationError: the entry is not archived.
    """
    logical = normalize_path(path)
    entry = memory.adapter.read_entry(logical, follow=False)
    if entry.metadata.archived_at is None:
        raise InputValidationError(
            f"memory://{logical} is not archived.",
            "`memdir evolve --history` shows the archival runs; `memdir evolve archival --dry-run` what they would archive.",
        )
    return memory.update_metadata(logical, {"archived_at": None, "unarchived_at": now.isoformat()})


__all__ = ["ArchivalJob", "archival_reason", "unarchive"]
