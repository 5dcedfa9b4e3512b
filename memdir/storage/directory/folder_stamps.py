"""Folder stamps: one ``stat`` per folder tells which folders must be listed again.

Listing a root by walking it stats every ``.md`` and ``.yml`` and sniffs every ``.md`` for
stubs (4-9 s at 100K entries). The derived index already holds every entry's row with its
files' stats. What a change to the files always changes is a folder: creating, removing or
renaming a file changes its folder's mtime — memdir's own writes too, which stage a
temporary file beside their target and rename it into place. So each folder that a listing
found exactly as the index has it gets a stamp — its mtime (taken before it was listed) and
inode — and later the stamps alone say which folders changed (`find_changes`): only those are
listed again, and every other folder's entries are the index's rows.

Where stamps live: the derived index keeps them (``folders`` table), written by each
reconcile, so that opening a root lists only the folders changed since the last process had
it open; a `Memory` keeps its own copy, moved on by its listings.

A folder changed less than `RACY_NS` before it was listed is not trusted: a change within
the filesystem's timestamp granularity may leave its mtime as it was (git's "racy" files).
It is stamped `UNTRUSTED` and listed again every time until it has settled.

What stamps cannot see: a file rewritten in place (``echo >> x.md``, an editor that writes
into the file instead of renaming a new one over it) changes no folder. Opening a root
checks every entry's files for that (two ``stat`` per entry, `Memory.reconcile`); a
listing in a process that has the root open shows such an entry as its row had it
(title, size, hits) until memdir writes it or the root is opened again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from memdir.storage.directory.index_db import FileStats
from memdir.storage.records import Stamp

# Folder mtimes this recent are not trusted: Linux's coarse clock ticks every 1-10 ms, while
# FAT, SMB and some network filesystems keep 1-2 s; 2 s covers them all.
RACY_NS = 2_000_000_000
UNTRUSTED = -1  # the mtime of a stamp that vouches for nothing: its folder is listed every time


def stamp_of(st: os.stat_result, settled_before: int) -> Stamp:
    """The stamp of a folder whose ``stat`` was taken before listing it; trusted only if its
    mtime is older than ``settled_before`` (`settled_now`)."""
    return Stamp(st.st_mtime_ns if st.st_mtime_ns <= settled_before else UNTRUSTED, st.st_ino)


def settled_now() -> int:
    """Mtimes up to this instant (ns) are old enough to trust (`RACY_NS`)."""
    return time.time_ns() - RACY_NS


def stamps_of_walk(folders: Mapping[str, os.stat_result | None]) -> dict[str, Stamp] | None:
    """Stamps for every folder a whole walk listed (`memdir.storage.directory.scan.scan_entries`); None
    if it went through a link to a folder: only a whole walk lists such a folder once."""
    if any(st is None for st in folders.values()):
        return None
    settled = settled_now()
    return {prefix: stamp_of(st, settled) for prefix, st in folders.items() if st is not None}


def parent_of(prefix: str) -> str:
    """``"concept/"`` for ``"concept/ruby/"``, ``""`` for ``"concept/"`` (and for an entry path, its folder)."""
    return prefix[: prefix.rstrip("/").rfind("/") + 1]


@dataclass(frozen=True, slots=True)
class ListedFolder:
    """One folder as listing it found it.

    Attributes:
        stamp: taken before it was listed.
        entries: its entries (stubs left out): logical path -> their files' stats.
        subfolders: the logical prefixes of its folders.
        linked: it holds a link to a folder (only a whole walk lists such folders, once).
    """

    stamp: Stamp
    entries: dict[str, FileStats]
    subfolders: list[str]
    linked: bool


@dataclass(frozen=True, slots=True)
class FolderChanges:
    """The folders that changed since their stamps: listed again, or gone.

    Attributes:
        listed: prefix -> the folder as listed now (changed, new, or not stamped yet).
        gone: prefixes of folders that are no longer there (or no longer reached), and of
            every folder under them.
    """

    listed: dict[str, ListedFolder]
    gone: frozenset[str]

    def covers(self, path: str) -> bool:
        """True if what the files say of entry ``path``'s folder is in these changes (listed or gone)."""
        folder = parent_of(path)
        return folder in self.listed or folder in self.gone

    def restamped(self, stamps: Mapping[str, Stamp], agrees: Callable[[str, ListedFolder], bool]) -> dict[str, Stamp]:
        """``stamps`` moved on: gone folders dropped, listed ones stamped anew — trusted only where
        ``agrees(prefix, folder)`` (the index's rows are what the folder holds)."""
        fresh = {prefix: stamp for prefix, stamp in stamps.items() if prefix not in self.gone}
        for prefix, folder in self.listed.items():
            fresh[prefix] = folder.stamp if agrees(prefix, folder) else Stamp(UNTRUSTED, folder.stamp.ino)
        return fresh


def unchanged(root: str, prefix: str, stamp: Stamp) -> bool:
    """True if the folder ``prefix`` is still the one stamped, with the stamped (trusted) mtime."""
    if stamp.mtime_ns == UNTRUSTED:
        return False
    try:
        st = os.stat(os.path.join(root, prefix))
    except OSError:  # removed (or unusable): listed again, which finds it gone
        return False
    return st.st_mtime_ns == stamp.mtime_ns and st.st_ino == stamp.ino


def find_changes(
    root: str,
    stamps: Mapping[str, Stamp],
    row_folders: Collection[str],
    list_folder: Callable[[str], ListedFolder | None],
) -> FolderChanges | None:
    """List again every folder whose stamp no longer holds, and every folder new since.

    Args:
        root: the memory root.
        stamps: prefix -> stamp of every folder listed before (the root is ``""``).
        row_folders: the folders the index has entries in (one without a stamp is listed).
        list_folder: lists one folder (None if it is gone or not a folder).

    Returns:
        The changes; None when the stamps cannot tell (none yet, or a changed folder holds a
        link to a folder): the caller walks the whole root.
    """
    if "" not in stamps:
        return None
    queue = [prefix for prefix, stamp in stamps.items() if not unchanged(root, prefix, stamp)]
    queue += [prefix for prefix in row_folders if prefix not in stamps]
    known = set(stamps).union(row_folders)
    children: dict[str, list[str]] = {}
    for prefix in known:
        if prefix:
            children.setdefault(parent_of(prefix), []).append(prefix)
    listed: dict[str, ListedFolder] = {}
    gone: set[str] = set()
    while queue:
        prefix = queue.pop()
        if prefix in listed or prefix in gone:
            continue
        folder = list_folder(prefix)
        if folder is None:
            gone.add(prefix)
            continue
        if folder.linked:
            return None
        listed[prefix] = folder
        now = set(folder.subfolders)
        gone.update(child for child in children.get(prefix, ()) if child not in now)  # removed, renamed away
        queue.extend(child for child in now if child not in known)  # new: listed whatever its mtime
    if gone:
        gone.update(prefix for prefix in known if any(prefix.startswith(top) for top in gone))
    for prefix in gone:
        listed.pop(prefix, None)
    return FolderChanges(listed, frozenset(gone))
