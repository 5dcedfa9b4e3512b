"""How often the PostgreSQL store's vector index has been scanned, as the server's statistics report it."""

from __future__ import annotations

import time
from collections.abc import Iterable

import psycopg

from memdir.storage.postgres.schema import VECTOR_INDEX_NAME


def vector_index_scans(url: str, connections: Iterable[psycopg.Connection] = ()) -> int:
    """Scans of the HNSW index of the store at ``url`` so far, once ``connections`` (a server's, still
    open) have reported theirs.

    A backend reports its statistics when idle again after answering (or when it ends); asked to report
    at once, it still does so only then, which a loaded machine delays: read until two readings agree."""
    for conn in connections:
        if not conn.closed:
            conn.execute("SELECT pg_stat_force_next_flush()")
    last = None
    for _ in range(25):
        time.sleep(0.2)
        with psycopg.connect(url, autocommit=True) as conn:
            seen = conn.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s"
                                " AND schemaname = current_schema()", (VECTOR_INDEX_NAME,)).fetchone()
        if seen is not None and seen[0] == last:
            return last
        last = seen[0] if seen is not None else None
    if last is None:
        raise AssertionError(f"the store has no index {VECTOR_INDEX_NAME}")
    return last
