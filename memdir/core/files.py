"""Replacing one file atomically: readers see the old bytes or the new ones, never a prefix.

One implementation for every file memdir rewrites on its own — derived data under
``.memdir/`` (the shared total, the vector snapshot), the cached ONNX graph, files the
workspace tools write. Entries themselves (three files changing together) go through
`memdir.storage.atomic.commit_files`, which journals the change so a killed writer is
rolled forward or back.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from memdir.core.errors import DiskFullError, MemdirError, ReadOnlyRootError

_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def fsync_dir(path: Path) -> None:
    """Make renames and unlinks inside ``path`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # e.g. Windows: folders cannot be opened, and renames are durable there anyway
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _disk_error(exc: OSError, root: object) -> MemdirError | None:
    if exc.errno in _NO_SPACE:
        return DiskFullError(root, os.strerror(exc.errno))
    if exc.errno == errno.EROFS:
        return ReadOnlyRootError(root, "its filesystem is mounted read-only")
    return None


@contextmanager
def disk_errors(root: object) -> Iterator[None]:
    """Raise an OS error that means a full disk (or quota) or a read-only filesystem under
    ``root`` as memdir's `DiskFullError` / `ReadOnlyRootError`; others pass unchanged."""
    try:
        yield
    except OSError as exc:
        translated = _disk_error(exc, root)
        if translated is None:
            raise
        raise translated from exc


@contextmanager
def replacing(path: Path, *, durable: bool = True, keep_mode: bool = False) -> Iterator[BinaryIO]:
    """A binary file whose content replaces ``path`` when the block ends without an error.

    The data goes to a hidden temporary file beside ``path`` (same filesystem, so the
    final rename is atomic); an error, or a kill, leaves ``path`` as it was.

    Args:
        durable: fsync the data and the folder, so the new content survives a power cut;
            derived data that is rebuilt when lost can skip the cost.
        keep_mode: give the new file the permission bits of the one it replaces.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if keep_mode and path.exists() else None
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def replace_file(path: Path, data: bytes, *, durable: bool = True, keep_mode: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically (see `replacing`)."""
    with replacing(path, durable=durable, keep_mode=keep_mode) as handle:
        handle.write(data)


__all__ = ["disk_errors", "fsync_dir", "replace_file", "replacing"]
