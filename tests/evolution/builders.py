"""Builders for the evolution job tests: entries with chosen ages, reads and links."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from memdir.core.entry import Entry, Metadata
from memdir.evolution.facts import EntryFacts, importance_of
from memdir.optimization.corpus import Item

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def facts(
    *,
    age_days: float = 100.0,
    reads: int = 0,
    unread_days: float | None = None,
    importance: float | None = None,
    inbound: int = 0,
    outbound: int = 0,
    extra: dict | None = None,
) -> EntryFacts:
    """An entry written ``age_days`` before `NOW`, read ``reads`` times, last ``unread_days`` ago."""
    metadata = Metadata.model_validate({**({"importance": importance} if importance is not None else {}), **(extra or {})})
    entry = Entry(path="concept/x.md", content="x", updated_at=NOW - timedelta(days=age_days), hits=reads, metadata=metadata)
    last_read = None if unread_days is None else NOW - timedelta(days=unread_days)
    return EntryFacts(Item.from_entry(entry), importance_of(metadata), reads, last_read, inbound, outbound)
