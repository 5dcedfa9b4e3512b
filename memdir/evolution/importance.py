"""Importance recalibration: importance follows use.

    new = 0.3 base + 0.4 access + 0.2 recency + 0.1 links, held to [1, 10]

* base — the entry's importance now (absent: 5);
* access — 10 x reads per day of age, held to [3, 10] (age at least one day: an entry
  written today divides by 1, not by 0);
* recency — ``10 x 0.5 ^ (days unread / 30)``: 10 for an entry read today, towards 0 for
  one long unread (never read: counted from when it was written);
* links — ``(2 x inbound + outbound) / 3``, at most 10 (no links: 0).

An entry never read has no access factor: its score is base, recency and links with
their weights scaled up to sum to 1 (the design's "use only base + recency + links").
The new value is stored only when it moved by at least ``importance_min_change`` (1.0),
so importance does not thrash; each stored change is appended to the store's importance
history (``<root>/evolution/importance.jsonl``, rows in PostgreSQL) with the factors that made it, and the derived index
holds the latest (`Memory.recalibrate_importance`): the entries' files keep the importance
they state, which overrides a recalibration when set again later. Weights, ranges and
the half-life are settings. Episodes keep their own 0-1 importance and are left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.core.entry import IMPORTANCE_RANGE
from memdir.core.errors import MemdirError
from memdir.core.settings import Settings
from memdir.evolution.facts import EntryFacts, days_between, gather, is_episode
from memdir.evolution.runner import JobContext, JobOutcome, ScheduledJob
from memdir.storage.records import ImportanceChange

if TYPE_CHECKING:
    from datetime import datetime

    from memdir.memory import Memory

WRITE_BATCH = 256
"""Changes stored at once: one record append and index transaction each, so a timeout waits for at most one batch."""


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def recalibrated(facts: EntryFacts, settings: Settings, now: datetime) -> tuple[float, str]:
    """(the new importance, rounded to 0.01, and the factors that made it, for the history)."""
    w_base, w_access, w_recency, w_links = settings.evolution.importance_weights
    age = max(days_between(facts.written, now), 1.0)
    unread = facts.days_unread(now)
    recency = 10.0 * 0.5 ** (unread / settings.evolution.importance_recency_half_life_days)
    links = min((2 * facts.inbound + facts.outbound) / 3.0, 10.0)
    parts = [(w_base, facts.importance), (w_recency, recency), (w_links, links)]
    reason = f"base {facts.importance:g}, recency {recency:.2f} ({unread:.0f} d unread), links {links:.2f}"
    if facts.reads > 0:
        access = _clamp(facts.reads / age * 10.0, *settings.evolution.importance_access_range)
        parts.append((w_access, access))
        reason += f", access {access:.2f} ({facts.reads} reads in {age:.0f} d)"
    else:
        reason += ", never read"
    weight = sum(w for w, _ in parts)
    score = sum(w * value for w, value in parts) / weight if weight > 0 else facts.importance
    return round(_clamp(score, *IMPORTANCE_RANGE), 2), reason


class ImportanceJob(ScheduledJob):
    """Recalibrate every entry's importance from its use (see the module docstring)."""

    name = "importance"
    title = "importance recalibration"
    interval_setting = "importance_interval_days"

    def run(self, memory: Memory, context: JobContext) -> JobOutcome:
        settings, outcome = context.settings, JobOutcome()
        pending: dict[str, ImportanceChange] = {}
        for facts in context.each(gather(memory), lambda facts: facts.path, outcome):
            if is_episode(facts.path):
                continue
            new, reason = recalibrated(facts, settings, context.now)
            if abs(new - facts.importance) < settings.evolution.importance_min_change:
                continue
            pending[facts.path] = ImportanceChange(facts.path, context.now.isoformat(), facts.importance, new, reason)
            if len(pending) >= WRITE_BATCH:
                self._store(memory, context, pending, outcome)
        self._store(memory, context, pending, outcome)
        return outcome

    @staticmethod
    def _store(memory: Memory, context: JobContext, pending: dict[str, ImportanceChange], outcome: JobOutcome) -> None:
        """Store a batch of changes (dry: only say them)."""
        if not pending:
            return
        done = set(pending)
        if not context.dry_run:
            try:
                written = memory.recalibrate_importance(pending.values())
            except MemdirError as exc:  # refused or failed as a whole: the next run decides again
                outcome.details.append(f"{len(pending)} changes not stored: {exc.message}")
                pending.clear()
                return
            done = {change.path for change in written}
        for path, change in pending.items():
            if path in done:
                outcome.details.append(f"memory://{path}: importance {change.old:g} → {change.new:g} ({change.reason})")
            else:
                outcome.details.append(f"memory://{path}: skipped (changed or deleted meanwhile)")
        outcome.changed += len(done)
        pending.clear()


__all__ = ["ImportanceJob", "recalibrated"]
