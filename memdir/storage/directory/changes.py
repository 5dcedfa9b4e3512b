"""The root's change counter: one number that every committed change of entries' files raises.

Two things need to know, cheaply and without the root's lock, whether entries' files changed:

* a reader that reads several files without the lock (`memdir.storage.directory.filesystem`): it reads
  the counter, checks that no committed transaction journal exists, reads, and reads the
  counter again; it trusts what it read only if the number did not move (a seqlock). A
  transaction renames files only after raising the counter and before removing its
  journal, so one that renamed anything during the read either raised the counter after
  the first look or still had its journal at the check;
* the derived index of a process that keeps the root open (`memdir.storage.directory.index`): it
  records, with each of its own changes, the counter it has caught up with. A writer killed
  after its files were committed but before it updated the index leaves the counter ahead
  of that record, which the next reader or writer notices and repairs by a re-scan.

The counter is raised under the root's exclusive lock right after a transaction's commit
point and before its first rename (`memdir.storage.directory.atomic.commit_files`), and again
whenever a killed writer's transaction is finished or undone (`recover`), so no committed
change is missed.

Beside the count, the file holds the root's content bytes as of that count
(`memdir.storage.directory.totals`): written with the count, the figure is current exactly
when the count is, at no cost beyond the counter's own write, and a writer killed between
its commit point and that write leaves no figure behind, only a count that recovery raises.

It lives in ``<root>/.memdir/changes`` as fixed-width decimal text (the count, a space, the
total; -1 when unknown), overwritten in place (no fsync: only processes running now compare
it; after a crash everything reopens and reconciles anyway). A torn or missing file reads
as a different number, which only ever causes a re-check. Like everything under ``.memdir/``
it is derived: deleting it loses nothing.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

CHANGES_FILE = Path(".memdir") / "changes"
_WIDTH = 20  # digits of each number: 64 bits, so the file never changes length
_LINE = 2 * _WIDTH + 2  # "<count> <total>\n"
UNKNOWN = -1


class ChangeCounter:
    """The change counter of one root (see the module docstring)."""

    def __init__(self, root: Path | str) -> None:
        self.file = Path(root) / CHANGES_FILE

    def value(self) -> int:
        """The current count; 0 when the file is missing, -1 when it cannot be read."""
        return self.read()[0]

    def read(self) -> tuple[int, int]:
        """The current count (as `value`) and the content bytes recorded with it (`UNKNOWN`: none)."""
        try:
            fd = os.open(self.file, os.O_RDONLY)
        except FileNotFoundError:
            return 0, UNKNOWN
        except OSError:
            return -1, UNKNOWN
        try:
            text = os.read(fd, _LINE)
        finally:
            os.close(fd)
        try:
            count = int(text[:_WIDTH] or b"0")
        except ValueError:  # caught mid-overwrite, or damaged
            return -1, UNKNOWN
        try:  # (a file of the older layout holds the count alone)
            total = int(text[_WIDTH + 1 :]) if len(text) == _LINE and text[_WIDTH : _WIDTH + 1] == b" " else UNKNOWN
        except ValueError:
            total = UNKNOWN
        return count, max(total, UNKNOWN)

    def prepare(self) -> tuple[int, int]:
        """The current count and total (as `read`), the file created if missing: called before a
        commit point, so that `bump` after it only overwrites bytes in place and cannot fail for
        want of space.

        Raises:
            OSError: the file cannot be created (the change must not go ahead).
        """
        count, total = self.read()
        if count == 0 and not self.file.exists():
            self.file.parent.mkdir(parents=True, exist_ok=True)
            self._write(0, UNKNOWN)
        return count, total

    def bump(self, by: int = 1, *, current: int | None = None, total: int = UNKNOWN) -> None:
        """Raise the count by ``by`` (call under the root's exclusive lock), recording ``total``
        content bytes with it. Never raises: it runs after a commit point; a failure is logged
        (lock-free readers may then retry under the lock).

        Args:
            current: the count `prepare` returned under the same hold of the lock (no other
                writer can have raised it since), so it need not be read again.
            total: the root's content bytes after the change (`UNKNOWN`: every process counts again).
        """
        try:
            self._write(max(self.value() if current is None else current, 0) + by, total)
        except OSError as exc:
            log.warning("could not raise the change counter %s: %s", self.file, exc)

    def _write(self, count: int, total: int) -> None:
        fd = os.open(self.file, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, f"{count:0{_WIDTH}d} {max(total, UNKNOWN):0{_WIDTH}d}\n".encode("ascii"), 0)
        finally:
            os.close(fd)


__all__ = ["CHANGES_FILE", "UNKNOWN", "ChangeCounter"]
