"""What a read changes on the PostgreSQL store: the ``entry_reads`` table's statements.

An entry's read count and last read time live in a narrow row of their own, one per row of
``entries`` (`memdir.storage.postgres.schema`): a counted read updates that row alone, so the
entry's wide row, and each of its indexes (the HNSW graph's among them), is left as it is. The
orders that rank by recency (last read, else last change) and importance read the same table
through its own indexes; a trigger keeps their keys in step with the entry's row.
"""

from __future__ import annotations

HITS = "coalesce((SELECT r.hits FROM entry_reads r WHERE r.entry = entries.id), 0)"
"""An entry's read count, as a column of a query over ``entries`` (not aliased)."""

COUNT_READ = (
    "UPDATE entry_reads r SET hits = r.hits + 1, read_at = t.now, recency = t.now FROM (SELECT clock_timestamp()) AS t(now)"
    " WHERE r.entry = (SELECT id FROM entries WHERE path = %s AND stub_kind IS NULL) RETURNING r.hits"
)
"""Counts a read of the entry at the path given, its time kept for the recency order; returns the new count."""

COUNT_STUB_PASSED = "UPDATE entry_reads SET hits = hits + 1 WHERE entry = (SELECT id FROM entries WHERE path = %s)"
"""Counts a read that went through the stub at the path given (its time is not a read of an entry)."""

SET_HITS = "UPDATE entry_reads SET hits = %s WHERE entry = (SELECT id FROM entries WHERE path = %s)"
"""Sets the read count of the entry at the path given (a write that states it: a restore, a new stub)."""

LISTED = "r.listed"
"""The rows the orders list (``entry_reads r``): real entries, neither built-in nor hidden."""
