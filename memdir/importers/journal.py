"""The import journal: an import stopped halfway is rolled back, so no import is ever left half-written.

An import writes in batches. Before each batch it appends to its journal,
``<root>/.memdir/imports/<run id>.jsonl``, the prior state of every entry the batch will write
(`memdir.optimization.journal.capture`: missing, a redirect stub, or the whole entry), one JSON
record per line, fsynced; the first line names the run (format, source, who, when), a last ``end``
line says it finished. While it runs, the import holds an exclusive lock on its journal. An import that finishes (records skipped
included) deletes its journal; one stopped by an exception (Ctrl-C) is rolled back at once.

An import killed on the way (SIGKILL, a crash, the machine going down) leaves its journal. The
next import, before it reads its source, takes the lock of every journal it finds (a journal
still locked belongs to an import running now and is left alone) and puts every entry the
stopped import wrote back as it was, the last batch first; then deletes the journal and says so
in its report. An entry changed since by someone else (another agent: its ``modified_by`` is not
the import's) is left as they made it. A journal that cannot be read as the import wrote it (cut
short by the kill mid-line: that last line is dropped; planted or edited by hand: nothing is
done) is moved to ``.memdir/imports/quarantine/``.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import portalocker

from memdir.core.errors import MemdirError
from memdir.core.files import append_regular, fsync_dir, open_regular, private_folder, quarantine
from memdir.core.paths import normalize_path
from memdir.optimization.corpus import fingerprint
from memdir.optimization.journal import capture, restore

if TYPE_CHECKING:
    from memdir.memory import Memory

log = logging.getLogger(__name__)

JOURNAL_DIR = Path(".memdir") / "imports"
QUARANTINE_DIR = JOURNAL_DIR / "quarantine"
STATES = ("missing", "stub", "entry")


@dataclass
class RolledBack:
    """An import that was stopped halfway and has been undone."""

    source_format: str
    source: str
    started: str
    restored: int
    kept: list[str] = field(default_factory=list)
    """Entries changed by someone else since: left as they are."""

    def describe(self) -> str:
        line = (f"An earlier {self.source_format} import of {self.source} (started {self.started}) was stopped "
                f"halfway; what it wrote was undone ({self.restored} entries put back as they were).")
        return "\n".join([line, *(f"  kept memory://{path}: changed by someone else since" for path in self.kept)])


class ImportJournal:
    """One running import's journal (see the module docstring); a context manager."""

    def __init__(self, memory: Memory, source_format: str, source: str) -> None:
        self.memory = memory
        self.run = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        self.path = private_folder(memory.root, JOURNAL_DIR) / f"{self.run}.jsonl"
        self._handle: BinaryIO | None = None
        self._header = {"type": "run", "format": source_format, "source": source, "agent": memory.actor.name,
                        "started": datetime.now(UTC).isoformat(timespec="seconds")}
        self._written: set[str] = set()

    def __enter__(self) -> ImportJournal:
        self._handle = append_regular(self.memory.root, self.path)
        portalocker.lock(self._handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        self._append([self._header])
        return self

    def before(self, paths: list[str]) -> None:
        """Record the state of ``paths`` before a batch writes them (write-ahead, fsynced)."""
        records = [{"type": "before", "path": path, "state": capture(self.memory, path)}
                   for path in paths if path not in self._written]
        self._written.update(paths)
        self._append(records)

    def _append(self, records: list[dict[str, Any]]) -> None:
        assert self._handle is not None, "the journal is open only inside `with`"
        data = "".join(json.dumps(record, ensure_ascii=False, default=str) + "\n" for record in records)
        if data:
            self._handle.write(data.encode("utf-8"))
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: object) -> None:
        assert self._handle is not None
        try:
            if kind is None:
                self._append([{"type": "end"}])  # finished: a journal left behind now is only deleted
            else:
                _roll_back(self.memory, _read(self.path))  # stopped by an error: undo now, not at the next import
            self.path.unlink(missing_ok=True)
            fsync_dir(self.path.parent)
        except Exception:  # (the import's own error is what the caller sees)
            log.exception("The import's journal %s could not be settled now; the next import settles it.", self.path)
        finally:
            self._handle.close()  # releases the lock


def roll_back_stopped(memory: Memory) -> list[RolledBack]:
    """Undo every import whose journal is left and whose process is gone (see the module docstring)."""
    try:
        folder = private_folder(memory.root, JOURNAL_DIR, create=False)
    except FileNotFoundError:
        return []
    undone = []
    for path in sorted(folder.glob("*.jsonl")):
        with open_regular(memory.root, path) as handle:
            try:
                portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
            except portalocker.exceptions.AlreadyLocked:
                continue  # an import running now
            try:
                records = _read(path)
            except ValueError as exc:
                where = quarantine(memory.root, path, QUARANTINE_DIR)
                log.warning("An import journal that cannot be read was set aside in %s: %s", where, exc)
                continue
            if records[-1]["type"] != "end":
                undone.append(_roll_back(memory, records))
            path.unlink()
    return undone


def _read(path: Path) -> list[dict[str, Any]]:
    """The journal's records, checked; a last line cut short by a kill is dropped.

    Raises:
        ValueError: not a journal as an import writes it.
    """
    lines = path.read_bytes().split(b"\n")
    if lines[-1]:
        lines = lines[:-1]  # torn: the batch it began was never written
    records: list[dict[str, Any]] = []
    for number, line in enumerate(filter(None, lines), start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number} is not JSON") from exc
        if records and records[-1]["type"] == "end":
            raise ValueError(f"line {number} follows the end")
        expected = ("run",) if number == 1 else ("before", "end")
        if not isinstance(record, dict) or record.get("type") not in expected:
            raise ValueError(f"line {number} is not a {' or '.join(expected)} record")
        if record["type"] == "before":
            state = record.get("state")
            if not isinstance(state, dict) or state.get("state") not in STATES or not isinstance(record.get("path"), str):
                raise ValueError(f"line {number} holds no state to restore")
            try:
                record["path"] = normalize_path(record["path"])
            except MemdirError as exc:
                raise ValueError(f"line {number} names no memory path: {exc.message}") from exc
        records.append(record)
    if not records:
        raise ValueError("it is empty")
    return records


def _roll_back(memory: Memory, records: list[dict[str, Any]]) -> RolledBack:
    """Put back every entry the journal's import wrote, the last first, unless someone else changed it since."""
    run = records[0]
    done = RolledBack(str(run.get("format")), str(run.get("source")), str(run.get("started")), 0)
    for record in reversed(records[1:]):
        path, state = record["path"], record["state"]
        current = memory.adapter.read_entry(path, follow=False) if memory.exists(path) else None
        if current is None and state["state"] == "missing" or (
                current is not None and state.get("fingerprint") == fingerprint(current)):
            continue  # the import was stopped before it wrote this one
        if current is not None and current.metadata.modified_by != run.get("agent"):
            done.kept.append(path)
            continue
        restore(memory, path, state)
        done.restored += 1
    return done


__all__ = ["ImportJournal", "RolledBack", "roll_back_stopped"]
