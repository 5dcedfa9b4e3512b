"""`ThreadFiles`: the directory store's working-memory threads, one event log file per thread.

``<root>/threads/<id>/events.jsonl``: the thread's events as JSON lines, append only, a
record of the root (like the audit log), never derived data. A cursor is a byte offset.
Appends are one ``write`` on an ``O_APPEND`` descriptor, then synced (``fdatasync``), under
the root's lock; a new log is written whole (a temporary file, synced, renamed; then the
folders whose entries changed are synced); reads take no lock and stop at the last newline,
so a line being written (or half written by a writer killed mid-write) is never read, and
the next append cuts it off.
Every file operation goes through `memdir.core.files` (confined to the root, regular
files only, never blocking): a log or folder swapped for a link or a pipe is refused.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from memdir.core.errors import UnsafeFileError
from memdir.core.files import (
    append_bytes,
    open_regular,
    private_folder,
    replacing,
    stat_regular,
)
from memdir.storage.base import StoreLock

THREADS_FOLDER = "threads"
LOG_NAME = "events.jsonl"


class ThreadFiles:
    """Thread event logs as files of the root (`memdir.storage.base.ThreadLogs`)."""

    def __init__(self, root: Path, lock: StoreLock) -> None:
        self.root, self.lock = Path(root), lock
        self.folder = self.root / THREADS_FOLDER

    def path(self, thread: str) -> Path:
        return self.folder / thread / LOG_NAME

    def exists(self, thread: str) -> bool:
        return stat_regular(self.root, self.path(thread)) is not None

    def ids(self) -> list[str]:
        """Folders of ``threads/`` holding a log (a log that is a link out of the root or a pipe is left out)."""
        try:
            names = os.listdir(private_folder(self.root, THREADS_FOLDER, create=False))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(name for name in names if not name.startswith(".") and self._has_log(name))

    def _has_log(self, thread: str) -> bool:
        try:
            return self.exists(thread)
        except UnsafeFileError:
            return False

    def read(self, thread: str, cursor: int) -> list[tuple[int, bytes]] | None:
        """The complete lines after byte ``cursor``, each with the offset after it; None when the file is shorter
        than ``cursor`` (replaced or cut by hand: read it again from 0).

        A log that is still ``cursor`` bytes long holds nothing new: its ``lstat`` answers that without opening it
        (nothing is read, so a file that is not the log's cannot leak through).
        """
        try:
            st = os.lstat(self.path(thread))
        except OSError:
            st = None  # missing, or a path the open below reports clearly
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_size == cursor:
            return []
        try:
            with open_regular(self.root, self.path(thread)) as handle:
                if os.fstat(handle.fileno()).st_size < cursor:
                    return None
                handle.seek(cursor)
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError):
            return [] if cursor == 0 else None
        lines: list[tuple[int, bytes]] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:  # a tail without newline: being written, or left by a killed writer
            lines.append((cursor + end + 1, data[start:end + 1]))
            start = end + 1
        return lines

    def append(self, thread: str, line: bytes, cursor: int) -> int:
        """Append one line after byte ``cursor`` (what the caller read to; past it: a killed writer's tail, cut off);
        the caller holds the lock. Returns the new cursor."""
        return append_bytes(self.root, self.path(thread), line, cut=lambda size: min(size, cursor))

    def create(self, thread: str, lines: Iterable[bytes]) -> int:
        """A new thread's log holding ``lines`` (the caller holds the lock and checked that there is none); the
        cursor after them."""
        target = self.path(thread)
        private_folder(self.root, target.parent.relative_to(self.root), durable=True)
        size = 0
        with replacing(target, root=self.root) as out:  # synced, and so is its folder
            for line in lines:
                size += out.write(line)
        return size


__all__ = ["LOG_NAME", "THREADS_FOLDER", "ThreadFiles"]
