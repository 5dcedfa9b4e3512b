"""Builders for the evolution job tests: entries with chosen ages, reads and links."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memdir.core.entry import importance_on_scale
from memdir.evolution.facts import EntryFacts

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def facts(
    *,
    age_days: float = 100.0,
    reads: int = 0,
    unread_days: float | None = None,
    importance: float | None = None,
    inbound: int = 0,
    outbound: int = 0,
    hidden: bool = False,
    path: str = "concept/x.md",
) -> EntryFacts:
    """An entry written ``age_days`` before `NOW`, read ``reads`` times, last ``unread_days`` ago."""
    last_read = None if unread_days is None else NOW - timedelta(days=unread_days)
    return EntryFacts(path, importance_on_scale(path, importance), reads, NOW - timedelta(days=age_days),
                      last_read, inbound, outbound, hidden)
