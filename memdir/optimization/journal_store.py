"""Where the defrag journals (`memdir.optimization.journal`) are kept: with the store's other records.

* The directory store: files of the root, ``<root>/.memdir/defrag/<run id>.jsonl``, one JSON
  record per line, appended and fsynced before each change (`JournalFiles`). They are read and
  appended to only as regular files inside the root (`memdir.core.files`); one that must not be
  replayed is moved to ``.memdir/defrag/quarantine/``.
* A store that keeps its records elsewhere (PostgreSQL: rows of its ``records`` table) keeps the
  journals there too, as the log ``defrag``, each record tagged with its run's id
  (`JournalRecords`): every server on one database sees one history of runs, and any of them can
  undo one. A record is written on the caller's connection, so inside the change's transaction
  when the store's exclusive lock holds one: the run's changes and their journal commit together.
  A run that must not be replayed gets a ``quarantined`` record and is read no more.

Both keep a run's records in the order they were written and list runs oldest first (a run's id
starts with the time it started).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Protocol

from memdir.core.files import append_regular, private_folder, quarantine, read_regular
from memdir.storage.base import JsonRecord, RecordLog
from memdir.storage.evolution_records import RecordFiles

JOURNAL_DIR = Path(".memdir") / "defrag"
QUARANTINE_DIR = JOURNAL_DIR / "quarantine"
JOURNAL_SUFFIX = ".jsonl"
JOURNAL_LOG = "defrag"
"""The log of a store's `RecordLog` that holds its journals' records."""


def journal_dir(root: Path) -> Path:
    """Where a directory store's defrag journals live."""
    return Path(root) / JOURNAL_DIR


class JournalWriter(Protocol):
    """One run's journal, open for appending."""

    def write(self, record: dict[str, Any]) -> None:
        """Add ``record`` (kept once `sync` returns)."""

    def sync(self) -> None:
        """Keep every record written so far (durably, before the change they describe)."""

    def close(self) -> None: ...


class JournalStore(Protocol):
    """Where one store's journals live (see the module docstring)."""

    def open(self, run_id: str) -> JournalWriter:
        """The journal of the run ``run_id``, open for appending (created on the first write)."""

    def runs(self) -> list[tuple[str, list[dict[str, Any]]]]:
        """Every run's id and records, oldest run first."""

    def append(self, run_id: str, record: dict[str, Any]) -> None:
        """Add one record to the journal of ``run_id`` (e.g. that it was undone), kept on return."""

    def quarantine(self, run_id: str) -> str:
        """Set the journal of ``run_id`` aside, never to be read as a run again; says where, for the log."""

    def where(self) -> str:
        """Where the journals are, for a person."""


def journal_store(root: Path, records: RecordLog) -> JournalStore:
    """The journals of a store whose records are ``records`` (its root's files when those are files)."""
    return JournalFiles(root) if isinstance(records, RecordFiles) else JournalRecords(records)


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")


class _FileWriter:
    def __init__(self, root: Path, file: Path) -> None:
        self.root, self.file = root, file
        self._files = ExitStack()
        self._handle: Any = None

    def write(self, record: dict[str, Any]) -> None:
        if self._handle is None:
            private_folder(self.root, JOURNAL_DIR)
            self._handle = self._files.enter_context(append_regular(self.root, self.file))
        self._handle.write(_line(record))

    def sync(self) -> None:
        if self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._files.close()
        self._handle = None


class JournalFiles:
    """The journals of a directory store: files of its root (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _file(self, run_id: str) -> Path:
        return journal_dir(self.root) / f"{run_id}{JOURNAL_SUFFIX}"

    def open(self, run_id: str) -> JournalWriter:
        return _FileWriter(self.root, self._file(run_id))

    def runs(self) -> list[tuple[str, list[dict[str, Any]]]]:
        if not os.path.lexists(journal_dir(self.root)):
            return []
        folder = private_folder(self.root, JOURNAL_DIR)
        return [(file.stem, list(self._records(file))) for file in sorted(folder.glob(f"*{JOURNAL_SUFFIX}"))]

    def _records(self, file: Path) -> Iterator[dict[str, Any]]:
        for line in read_regular(self.root, file).splitlines():
            try:
                record = json.loads(line)
            except ValueError:  # a torn last line from a killed run (or bytes that are not UTF-8)
                continue
            if isinstance(record, dict):
                yield record

    def append(self, run_id: str, record: dict[str, Any]) -> None:
        writer = self.open(run_id)
        try:
            writer.write(record)
            writer.sync()
        finally:
            writer.close()

    def quarantine(self, run_id: str) -> str:
        return quarantine(self.root, self._file(run_id), QUARANTINE_DIR)

    def where(self) -> str:
        return f"{JOURNAL_DIR.as_posix()}/"


class _RecordWriter:
    def __init__(self, records: RecordLog, run_id: str) -> None:
        self.records, self.run_id = records, run_id
        self._pending: list[JsonRecord] = []

    def write(self, record: dict[str, Any]) -> None:
        self._pending.append(json.loads(json.dumps({**record, "run": self.run_id}, default=str)))

    def sync(self) -> None:
        pending, self._pending = self._pending, []
        self.records.append(JOURNAL_LOG, pending)

    def close(self) -> None:
        self.sync()


class JournalRecords:
    """The journals of a store that keeps its records in a `RecordLog` of its own (see the module docstring)."""

    def __init__(self, records: RecordLog) -> None:
        self.records = records

    def open(self, run_id: str) -> JournalWriter:
        return _RecordWriter(self.records, run_id)

    def runs(self) -> list[tuple[str, list[dict[str, Any]]]]:
        found: dict[str, list[dict[str, Any]]] = {}
        set_aside: set[str] = set()
        for record in self.records.read(JOURNAL_LOG):
            run = record.get("run")
            if not isinstance(run, str):
                continue
            if record.get("type") == "quarantined":
                set_aside.add(run)
            found.setdefault(run, []).append(dict(record))
        return [(run, found[run]) for run in sorted(found) if run not in set_aside]

    def append(self, run_id: str, record: dict[str, Any]) -> None:
        writer = self.open(run_id)
        writer.write(record)
        writer.close()

    def quarantine(self, run_id: str) -> str:
        self.append(run_id, {"type": "quarantined"})
        return "marked in the store's database, never read again"

    def where(self) -> str:
        return "the store's database"


__all__ = [
    "JOURNAL_DIR", "JOURNAL_LOG", "JOURNAL_SUFFIX", "QUARANTINE_DIR", "JournalFiles", "JournalRecords", "JournalStore",
    "JournalWriter", "journal_dir", "journal_store",
]
