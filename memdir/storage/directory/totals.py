"""The root's total content size, one figure shared by every process that writes to it.

The total-size limit needs the bytes held by the whole root before each write. Scanning
the root per write is too slow on large roots, and a per-process running total misses
what other processes wrote (two servers on one root could each stay under the limit
and together pass it). So the figure travels with the root's change counter
(`memdir.storage.directory.changes`): each change writes the total it leaves with the count it
raises, right after its commit point, and a figure is trusted only beside the count it was
written with. A writer killed before that write leaves no figure (recovery raises the count
and records none), so every process counts again, and a figure is never older than the files.
Each process also scans the root once, the first time it needs the figure (files may have
been edited by hand meanwhile).
"""

from __future__ import annotations

from collections.abc import Callable

from memdir.storage.directory.changes import UNKNOWN


class SharedTotal:
    """Content bytes of a root (see the module docstring); call its methods under the root lock."""

    def __init__(self, scan: Callable[[], int]) -> None:
        self._scan = scan
        self._known: tuple[int, int] | None = None  # (count, our figure as of that count)
        self._scanned = False  # this process has counted once (hand edits seen)

    def get(self, count: int, shared: int) -> int:
        """The total at change ``count``, given the figure recorded with it (``shared``): ours if we
        made it at that count, else the recorded one, else (or the first time) a scan."""
        known = self.carried(count, shared)
        if known != UNKNOWN:
            return known
        total = self._scan()
        self._known, self._scanned = (count, total), True
        return total

    def carried(self, count: int, shared: int) -> int:
        """What `get` returns without scanning (`UNKNOWN`: it would scan): the figure a change that
        does not change any content carries on to the count it raises."""
        if self._known is not None and self._known[0] == count:
            return self._known[1]
        return shared if self._scanned and count >= 0 else UNKNOWN

    def committed(self, count: int, total: int) -> None:
        """A change brought the root to ``total`` bytes (`UNKNOWN`: not known) at change ``count``."""
        self._known = None if total == UNKNOWN else (count, total)

    def invalidate(self) -> None:
        """Files changed behind the figure (a recovered transaction, a rescan): scan again at the next use."""
        self._known, self._scanned = None, False


__all__ = ["SharedTotal"]
