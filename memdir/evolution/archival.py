"""Automatic archival: unused entries step aside, nothing is deleted.

An entry is archived — ``archived_at`` set in its metadata — when any of these holds:

* it was never read and is older than ``archival_unread_days`` (180);
* its importance is below 3 and it has not been read for 90 days (``archival_low_importance``);
* its importance is below 2 and it has not been read for 30 days (``archival_very_low_importance``);

and never when its importance is at least ``archival_protected_importance`` (7), or when
that is what its metadata states (the importance job may recalibrate a never-read entry
down, but what a person stated as important stays protected): an entry never read but
very important stays. An entry read yesterday stays whatever its importance.

Archived entries leave search and discovery but stay readable, with their content, links,
vector and read count; `unarchive` (``memdir unarchive PATH``) restores one, and the restore
counts as a use (``unarchived_at``), so the next run does not archive it again at once. Each
live run is journaled like a defrag run (`memdir.optimization.journal`): ``memdir evolve
--undo`` reverts the whole run.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memdir.core.errors import InputValidationError, MemdirError
from memdir.core.paths import normalize_path
from memdir.core.settings import Settings
from memdir.evolution.facts import EntryFacts, aware, gather
from memdir.evolution.runner import JobContext, JobOutcome, ScheduledJob
from memdir.optimization.actions import Changer, Outcome
from memdir.optimization.corpus import Corpus, Item
from memdir.optimization.journal import Journal

if TYPE_CHECKING:
    from memdir.core.entry import Entry
    from memdir.memory import Memory

RESTORED_KEY = "unarchived_at"
"""Metadata key `unarchive` sets: the restore counts as a use of the entry."""
WRITE_BATCH = 256
"""Entries archived per change (one journal sync and one commit each)."""


def archival_reason(facts: EntryFacts, settings: Settings, now: datetime, restored: datetime | None = None) -> str | None:
    """Why the entry should be archived now, or None to keep it (``restored``: when it was last unarchived)."""
    protected = settings.evolution.archival_protected_importance
    if facts.hidden or facts.importance >= protected or (facts.stated is not None and facts.stated >= protected):
        return None
    unread = facts.days_unread(now, restored)
    if facts.reads == 0 and unread > settings.evolution.archival_unread_days:
        return f"never read in {unread:.0f} days"
    for below, days in (settings.evolution.archival_very_low_importance, settings.evolution.archival_low_importance):
        if facts.importance < below and unread > days:
            return f"importance {facts.importance:g} < {below:g}, unread for {unread:.0f} days"
    return None


def _restored(entry: Entry) -> datetime | None:
    """When the entry was last unarchived by hand (`unarchive`), if it was."""
    value = (entry.metadata.model_extra or {}).get(RESTORED_KEY)
    try:
        return aware(datetime.fromisoformat(str(value))) if value else None
    except ValueError:
        return None


class ArchivalJob(ScheduledJob):
    """Archive entries nobody uses (see the module docstring)."""

    name = "archival"
    title = "archival"
    interval_setting = "archival_interval_days"

    def run(self, memory: Memory, context: JobContext) -> JobOutcome:
        outcome = JobOutcome()
        with Journal(memory, self.name, {"dry_run": context.dry_run}) as journal:
            chosen: dict[str, tuple[EntryFacts, str]] = {}
            for facts in context.each(gather(memory), lambda facts: facts.path, outcome):
                reason = archival_reason(facts, context.settings, context.now)
                if reason is not None:
                    chosen[facts.path] = (facts, reason)
                if len(chosen) >= WRITE_BATCH:
                    self._archive(memory, context, journal, chosen, outcome)
            self._archive(memory, context, journal, chosen, outcome)
        return outcome

    @staticmethod
    def _archive(memory: Memory, context: JobContext, journal: Journal,
                 chosen: dict[str, tuple[EntryFacts, str]], outcome: JobOutcome) -> None:
        """Read the chosen entries, confirm (a restore by hand is a use), archive them as one change."""
        items: dict[str, Item] = {}
        reasons: dict[str, str] = {}
        for path, (facts, _) in chosen.items():
            try:
                entry = memory.adapter.read_entry(path, follow=False)
            except MemdirError:  # gone meanwhile
                continue
            reason = archival_reason(facts, context.settings, context.now, _restored(entry))
            if reason is not None:
                items[path], reasons[path] = Item.from_entry(entry), reason
        chosen.clear()
        if not items:
            return
        if context.dry_run:
            done = dict.fromkeys(items, Outcome(True))
        else:
            changer = Changer(memory, journal, Corpus(memory, list(items), list(items.values())))
            done = changer.update({path: {"archived_at": context.now.isoformat()} for path in items})
        for path, result in done.items():
            if result.done:
                outcome.changed += 1
                outcome.details.append(f"memory://{path}: archived ({reasons[path]})")
            else:
                outcome.details.append(f"memory://{path}: skipped ({result.reason})")


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
    return memory.update_metadata(logical, {"archived_at": None, RESTORED_KEY: now.isoformat()})


__all__ = ["ArchivalJob", "archival_reason", "unarchive"]
