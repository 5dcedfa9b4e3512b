"""`PostgresThreads`: working-memory threads of a PostgreSQL store, one row per event line.

``thread_events`` (id, thread, line): a thread's log is its rows in ``id`` order, and a
cursor is the id of the last row read. Every server on the store sees the same threads.
An append runs under the store's exclusive advisory lock, whose transaction commits the
row when the lock is released: appends from many servers are ordered (ids are drawn and
committed one writer at a time, so a reader never skips a row committed later with a
lower id) and atomic (a line is stored whole or not at all).
"""

from __future__ import annotations

from collections.abc import Iterable

from memdir.storage.postgres.database import AdvisoryLock, Database


class PostgresThreads:
    """Thread event logs in the store's database (`memdir.storage.base.ThreadLogs`)."""

    def __init__(self, db: Database, lock: AdvisoryLock) -> None:
        self.db, self.lock = db, lock

    def ids(self) -> list[str]:
        rows = self.db.connection().execute("SELECT DISTINCT thread FROM thread_events ORDER BY thread")
        return [row[0] for row in rows]

    def exists(self, thread: str) -> bool:
        row = self.db.connection().execute("SELECT 1 FROM thread_events WHERE thread = %s LIMIT 1", (thread,)).fetchone()
        return row is not None

    def read(self, thread: str, cursor: int) -> list[tuple[int, bytes]] | None:
        rows = self.db.connection().execute(
            "SELECT id, line FROM thread_events WHERE thread = %s AND id > %s ORDER BY id", (thread, cursor))
        return [(row_id, line.encode("utf-8") + b"\n") for row_id, line in rows]

    def append(self, thread: str, line: bytes, cursor: int) -> int:
        with self.lock.exclusive():  # the caller holds it: this only joins its transaction
            (row_id,) = self.db.connection().execute(
                "INSERT INTO thread_events (thread, line) VALUES (%s, %s) RETURNING id",
                (thread, line.decode("utf-8").rstrip("\n"))).fetchall()[0]
        return int(row_id)

    def create(self, thread: str, lines: Iterable[bytes]) -> int:
        texts = [line.decode("utf-8").rstrip("\n") for line in lines]
        with self.lock.exclusive():
            (last,) = self.db.connection().execute(
                "WITH added AS (INSERT INTO thread_events (thread, line)"
                " SELECT %s, line FROM unnest(%s::text[]) WITH ORDINALITY AS given (line, n) ORDER BY n RETURNING id)"
                " SELECT max(id) FROM added", (thread, texts)).fetchall()[0]
        return int(last)


__all__ = ["PostgresThreads"]
