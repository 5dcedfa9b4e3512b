"""The root's total content size, one figure shared by every process that writes to it.

The total-size limit needs the bytes held by the whole root before each write. Scanning
the root per write is too slow on large roots, and a per-process running total misses
what other processes wrote (two servers on one root could each stay under the limit
and together pass it). So the figure lives in a small file under ``.memdir/``: read
and rewritten by whoever holds the root's exclusive lock for a write, scanned afresh the
first time a process needs it (files may have been edited by hand meanwhile) and
whenever the file is missing or unreadable. Like everything under ``.memdir/`` it is
derived: deleting it loses nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memdir.core.files import replace_file

TOTAL_FILE = Path(".memdir") / "content-bytes"


class SharedTotal:
    """Content bytes of a root (see the module docstring); call its methods under the root lock."""

    def __init__(self, root: Path, scan: Callable[[], int]) -> None:
        self.file = root / TOTAL_FILE
        self._scan = scan
        self._scanned = False

    def get(self) -> int:
        """The current total: the shared figure, or a fresh scan (first use in this process, no file)."""
        if self._scanned:
            shared = self._read()
            if shared is not None:
                return shared
        total = self._scan()
        self.set(total)
        self._scanned = True
        return total

    def set(self, total: int) -> None:
        """Record the total after a write or delete (atomically: readers see the old or the new figure).

        Not fsynced: after a power cut the figure may lag, and the next process scans anyway.
        """
        replace_file(self.file, f"{max(total, 0)}\n".encode("ascii"), durable=False)

    def invalidate(self) -> None:
        """Files changed behind the figure (a recovered transaction): scan again at the next use."""
        self._scanned = False

    def _read(self) -> int | None:
        try:
            return int(self.file.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            return None


__all__ = ["TOTAL_FILE", "SharedTotal"]
