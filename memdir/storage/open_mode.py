"""How a memory root is opened: for writing (created when missing) or read-only, and why.

Read-only is what a command that only looks asks for (``memdir status``, ``search``, the
discover hook: they must not create a root, a ``.lock`` or a ``.memdir/`` in a directory
that was never one), and what a root that cannot be written gets whatever was asked
(a read-only mount, a directory this user may not write): it still reads and searches.
"""

from __future__ import annotations

import os
from pathlib import Path

from memdir.core.errors import RootNotFoundError
from memdir.core.files import disk_errors
from memdir.storage.directory.atomic import has_pending
from memdir.storage.directory.index_db import index_path


def read_only_reason(root: Path, read_only: bool) -> str | None:
    """Why ``root`` must be opened read-only (None: open it for writing, creating it if needed).

    Args:
        read_only: the caller only reads: then the root must exist.

    Raises:
        RootNotFoundError: ``read_only`` and ``root`` is no directory.
        DiskFullError, ReadOnlyRootError, OSError: ``root`` is missing and cannot be created.
    """
    if read_only:
        if not root.is_dir():
            raise RootNotFoundError(root)
        return "opened for reading only"
    with disk_errors(root):
        root.mkdir(parents=True, exist_ok=True)
    if os.access(root, os.W_OK):
        return None
    try:
        mounted_read_only = bool(os.statvfs(root).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        mounted_read_only = False
    return "its filesystem is mounted read-only" if mounted_read_only else "this user may not write to it"


def can_update_index(root: Path) -> bool:
    """True if a read-only open may keep ``root``'s derived index up to date (else it keeps one
    in memory): the index exists, this process may write it, and no killed writer's transaction
    waits for recovery (a read-only open does not recover, and must not index half a change)."""
    path = index_path(root)
    return (
        path.is_file() and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK) and not has_pending(root)
    )


__all__ = ["can_update_index", "read_only_reason"]
