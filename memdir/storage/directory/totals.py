"""The root's total content size, one figure shared by every process that writes to it.

The total-size limit needs the bytes held by the whole root before each write. Scanning
the root per write is too slow on large roots, and a per-process running total misses
what other processes wrote (two servers on one root could each stay under the limit
and together pass it). So the figure lives in a small file under ``.memdir/``, written
in the same transaction as the change it follows (`staged`): a killed writer leaves the
old files and the old figure, or the new ones, and nothing else behind. Each process scans
the root once, the first time it needs the figure (files may have been edited by hand
meanwhile), and afterwards reads the file only when another process has replaced it since.
So the file is not flushed to disk with the change (`commit_files`'s ``derived``): after a
power cut, no process that could read a stale figure is left. Like everything under
``.memdir/`` it is derived: deleting it loses nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from memdir.core.errors import UnsafeFileError
from memdir.core.files import read_regular

TOTAL_FILE = Path(".memdir") / "content-bytes"

FileState = tuple[int, int, int] | None  # (inode, mtime, size) of the file; None when absent


def file_state(path: Path) -> FileState:
    """What tells whether a small file under ``.memdir/`` was replaced since it was last read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class SharedTotal:
    """Content bytes of a root (see the module docstring); call its methods under the root lock."""

    def __init__(self, root: Path, scan: Callable[[], int]) -> None:
        self.root = root
        self.file = root / TOTAL_FILE
        self._scan = scan
        self._known: tuple[int, FileState] | None = None  # our figure, and the file as it was then

    def get(self) -> int:
        """The current total: ours while nobody replaced the file since, else the file's, else a scan."""
        state = self._state()
        if self._known is not None:
            total, seen = self._known
            if state == seen:
                return total
            shared = self._read()
            if shared is not None:
                self._known = (shared, state)
                return shared
        total = self._scan()
        self._known = (total, state)
        return total

    def staged(self, total: int) -> dict[Path, bytes]:
        """The file's new content, for the transaction (`commit_files`) that brings the root to ``total``."""
        return {self.file: f"{max(total, 0)}\n".encode("ascii")}

    def committed(self, total: int) -> None:
        """The transaction holding `staged(total)` is done: ``total`` is the figure now."""
        self._known = (total, self._state())

    def invalidate(self) -> None:
        """Files changed behind the figure (a recovered transaction): scan again at the next use."""
        self._known = None

    def _state(self) -> FileState:
        return file_state(self.file)

    def _read(self) -> int | None:
        try:
            return int(read_regular(self.root, self.file).decode("ascii").strip())
        except (OSError, ValueError, UnsafeFileError):  # UnicodeDecodeError is a ValueError
            return None


__all__ = ["TOTAL_FILE", "FileState", "SharedTotal", "file_state"]
