"""How often each redirect stub was read through, kept beside the root, not in the stubs.

Defrag's ``cleanup_stubs`` deletes old stubs nobody reads any more, so reads through a
stub are counted. Writing the count into the stub itself rewrote a file only to count a
read: a stub written by SwarmMemory then no longer matched the ``size`` in its ``.yml``,
and a user's versioned directory changed on every read. The counts therefore live in one
small JSON file under ``.memdir/`` (path -> reads), written atomically under the root's
exclusive lock and dropped in the transaction that deletes or replaces the stub
(`staged_forget`).
Like everything under ``.memdir/`` it may be deleted; stubs then count from zero again.
Older memdir stubs that carry a "Reads through this redirect: N" line keep that count
(`memdir.storage.stubs.stub_hits`), added to this one.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from memdir.core.errors import UnsafeFileError
from memdir.core.files import read_regular

log = logging.getLogger(__name__)

READS_FILE = Path(".memdir") / "stub-reads.json"

FileState = tuple[int, int, int] | None  # (inode, mtime, size) of the file; None when absent


def file_state(path: Path) -> FileState:
    """What tells whether the file was replaced since it was last read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class StubReads:
    """Read counts of a root's stubs; change them under the root's exclusive lock."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.file = root / READS_FILE
        self._cache: tuple[FileState, dict[str, int]] = (None, {})

    def count(self, path: str) -> int:
        """Reads counted through the stub at ``path`` (0 if none)."""
        return self._counts().get(path, 0)

    def staged_add(self, path: str) -> dict[Path, bytes]:
        """The file's new bytes with one more read of ``path``, for `commit_files`."""
        counts = dict(self._counts())
        counts[path] = counts.get(path, 0) + 1
        return {self.file: _encode(counts)}

    def staged_forget(self, paths: Iterable[str]) -> dict[Path, bytes]:
        """The file's new bytes without ``paths`` (a stub deleted or replaced); {} when none is counted."""
        counts = self._counts()
        gone = [path for path in paths if path in counts]
        if not gone:
            return {}
        return {self.file: _encode({path: n for path, n in counts.items() if path not in gone})}

    def _counts(self) -> dict[str, int]:
        """The counts on disk, re-read only when the file changed since this process last read it."""
        state = file_state(self.file)
        if state is None:
            return {}
        if self._cache[0] == state:
            return self._cache[1]
        try:
            data = json.loads(read_regular(self.root, self.file))  # confined: never a link out of the root
        except (OSError, ValueError, UnsafeFileError) as exc:
            log.warning("ignoring unreadable %s (%s): stubs count their reads from zero", self.file, exc)
            data = {}
        counts = {str(k): int(v) for k, v in data.items() if isinstance(v, int) and v > 0} if isinstance(data, dict) else {}
        self._cache = (state, counts)
        return counts


def _encode(counts: dict[str, int]) -> bytes:
    return json.dumps(dict(sorted(counts.items())), indent=0).encode("utf-8")


__all__ = ["READS_FILE", "StubReads"]
