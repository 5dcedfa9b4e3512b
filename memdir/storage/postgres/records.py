"""`PostgresRecords`: the record logs of a PostgreSQL store (the evolution jobs' runs, the importance
history), rows of one table in the store's database.

Two servers on one database run the same jobs over the same entries: their history is one, kept
with the entries, not in each machine's local folder. A record is a row of ``records`` (its log's
name, its JSON body), inserted on the connection of the caller: inside the change's transaction
when the caller has one open (the importance job records its changes with them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from psycopg.types.json import Jsonb

from memdir.storage.base import JsonRecord
from memdir.storage.postgres.database import Database


class PostgresRecords:
    """The record logs in the store's database (`memdir.storage.base.RecordLog`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def append(self, name: str, records: Iterable[JsonRecord]) -> None:
        rows = [(name, Jsonb(record)) for record in records]
        if rows:
            with self.db.connection().cursor() as cursor:
                cursor.executemany("INSERT INTO records (log, body) VALUES (%s, %s)", rows)

    def read(self, name: str) -> Iterator[JsonRecord]:
        for (body,) in self.db.connection().execute("SELECT body FROM records WHERE log = %s ORDER BY id", (name,)):
            if isinstance(body, dict):
                yield body


__all__ = ["PostgresRecords"]
