"""Entry rows held back until the index writes them with their search columns: one row version per change.

A change writes an entry's row (`memdir.storage.postgres.adapter.PostgresAdapter.write`) and then
its search columns (`memdir.storage.postgres.index.PostgresIndex`), in one transaction. Written as
two statements, the row would get two versions, and each version is a new entry in every index of
the table, the HNSW graph's among them: on a large store, that insert (a walk of the graph, then
its neighbours' pages rewritten) is the costliest part of a write. So the adapter holds the row
back (`HeldRows.hold`), the index takes it (`HeldRows.take`) and writes it in one statement with
its search columns; a row the index did not take is written as it is when the change's block ends
(an adapter write made outside `Memory`: its search columns are left for the next repair).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from memdir.core.entry import Entry


@dataclass(frozen=True, slots=True)
class SearchColumns:
    """What the index keeps in an entry's row beside the entry: its length in words, the hash of its
    searchable text, the model and text its vector was made from, its importance and archival."""

    length: int
    text_hash: str | None
    vector_model: str | None
    vector_text_hash: str | None
    importance: float | None
    hidden: bool


@dataclass(frozen=True, slots=True)
class HeldRow:
    """An entry's new row, not written yet: the entry, the change number it is written with, and whether
    the write states the entry's read count (``entry.hits``; else the count of the entry it replaces stays)."""

    entry: Entry
    version: int
    hits_given: bool = False


class HeldRows:
    """The rows the calling thread's change holds back, by path (each thread has its own transaction)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _rows(self) -> dict[str, HeldRow]:
        rows = getattr(self._local, "rows", None)
        if rows is None:
            rows = self._local.rows = {}
        return rows

    def hold(self, row: HeldRow) -> None:
        self._rows()[row.entry.path] = row

    def take(self, path: str) -> HeldRow | None:
        """The row held for ``path``, now the caller's to write (None: none held)."""
        return self._rows().pop(path, None)

    def release(self, paths: Iterable[str]) -> list[HeldRow]:
        """The rows of ``paths`` still held (nobody took them), no longer held."""
        rows = self._rows()
        return [row for row in (rows.pop(path, None) for path in paths) if row is not None]


__all__ = ["HeldRow", "HeldRows", "SearchColumns"]
