"""`PostgresAudit`: the audit trail of a PostgreSQL store, a table in the same database.

Many servers on many machines change one store: its record of who changed what belongs with
it, not in each machine's local folder. A record (`memdir.storage.audit_log.AuditRecord`) is
a row of ``audit``, inserted on the connection of the change it describes — `Memory` writes
it before the change's commit point, inside the adapter's transaction, sent with its commit — so the
change and its record commit together or neither does (the directory store can only write its line first).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from memdir.storage.audit_log import AuditRecord
from memdir.storage.postgres.database import Database

_COLUMNS = ("at", "agent", "role", "admin", "action", "path", "owner", "diff", "details")
_INSERT = f"INSERT INTO audit ({', '.join(_COLUMNS)}) VALUES ({', '.join(['%s'] * len(_COLUMNS))})"


class PostgresAudit:
    """The audit trail in the store's database (`memdir.storage.base.AuditTrail`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def append(self, record: AuditRecord) -> None:
        self.append_many([record])

    def append_many(self, records: Iterable[AuditRecord]) -> None:
        """Insert the records on this thread's connection: in the caller's transaction when one is open,
        sent with its commit (nothing waits for their answer)."""
        rows: list[Sequence[Any]] = [
            (*(getattr(record, name) for name in _COLUMNS[:-1]), Jsonb(record.details)) for record in records
        ]
        if rows and not self.db.lock.at_commit(_INSERT, rows):
            with self.db.connection().cursor() as cursor:
                cursor.executemany(_INSERT, rows)

    def records(
        self, *, path: str | None = None, agent: str | None = None, since: datetime | None = None
    ) -> Iterator[AuditRecord]:
        """The records, oldest first: of one entry (``path``), by one agent, at or after ``since``."""
        where, args = [], []
        for column, value in (("path = %s", path), ("agent = %s", agent), ("at >= %s", since)):
            if value is not None:
                where.append(column)
                args.append(value)
        query = f"SELECT {', '.join(_COLUMNS)} FROM audit"
        query += (" WHERE " + " AND ".join(where)) if where else ""
        for row in self.db.connection().execute(query + " ORDER BY id", args):
            at, *rest = row
            yield AuditRecord(at.isoformat(), *rest)


__all__ = ["PostgresAudit"]
