"""Listing a root, and planning its reconcile, from the index's rows plus the folders that changed.

A walk of a 100K-entry root takes 4-9 s; the derived index has every entry's row, and a
folder's stamp tells whether the folder changed since its entries were last found to be
the rows (`memdir.storage.directory.folder_stamps`). So:

* a listing (`RootListing.entries`) is the index's rows (`memdir.storage.directory.listing_rows`),
  with the folders whose stamps no longer hold listed again: entries there whose files'
  stats are those of their row are the row, others are read from their files. Folders
  found as the rows have them are stamped anew (in this process);
* a reconcile (`RootListing.plan`) lists the same changed folders, and at open also
  stats every other entry's two files (edits made in place change no folder); it walks the
  whole root only when there are no stamps (a new index), when the searchable-text recipe
  changed (every entry is re-read), or when a changed folder holds a link to a folder.

memdir's own writes, deletes and counted reads update their rows before they commit
their files, and the rename that commits them changes their folder's mtime: the next
listing lists that one folder again (for `RACY_NS` after the change, until its mtime can be
trusted), finds its files as the rows have them, and stamps it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from memdir.storage.directory.folder_stamps import UNTRUSTED, FolderChanges, ListedFolder, find_changes, parent_of, stamps_of_walk
from memdir.storage.directory.index import EntryWalk, listing
from memdir.storage.directory.index_db import FileStats, file_stats
from memdir.storage.directory.listing_rows import ListingRows
from memdir.storage.records import EntryInfo, Listed, ReconcilePlan, Stamp
from memdir.storage.virtual import is_virtual

if TYPE_CHECKING:
    from memdir.storage.directory.index import DerivedIndex

log = logging.getLogger(__name__)


class EntryFiles(EntryWalk, Protocol):
    """What a listing reads of the root's files (`memdir.storage.directory.filesystem.FilesystemAdapter`)."""

    root: Path

    def list_folder(self, prefix: str, known: Callable[[str, FileStats], bool]) -> ListedFolder | None: ...

    def describe(self, paths: Sequence[str]) -> list[EntryInfo]: ...

# Tries of a listing that memdir commits kept overlapping (each a few ms apart) before the caller walks.
_TRIES = 4
_PAUSE = 0.002

Known = Callable[[str, FileStats], bool]


def _as_tuple(stats: FileStats) -> tuple[int, int, int, int]:
    return stats.md_mtime_ns, stats.md_size, stats.yml_mtime_ns, stats.yml_size


class _RecordedStats:
    """The files' stats the index's rows record, read one folder at a time, as a listing asks
    (only the folders listed again need them); called, whether an entry's files are as its row says."""

    def __init__(self, index: DerivedIndex) -> None:
        self.index = index
        self.folders: dict[str, dict[str, tuple[int, int, int, int]]] = {}

    def __call__(self, path: str, stats: FileStats) -> bool:
        folder = path[: path.rfind("/") + 1]
        recorded = self.folders.get(folder)
        if recorded is None:
            recorded = self.folders[folder] = self.index.folder_file_stats(folder)
        return recorded.get(path) == _as_tuple(stats)


class RootListing:
    """Listings and reconcile plans of one root (see the module docstring).

    ``stamps`` is this process's copy of the folder stamps: replaced whole, never changed in
    place, so listings on several threads each see one version.
    """

    def __init__(self, adapter: EntryFiles, index: DerivedIndex) -> None:
        self.adapter = adapter
        self.index = index
        self.stamps: dict[str, Stamp] = {}

    def warm(self) -> None:
        """Read and build the index's listing rows now (a server, right after opening); best effort."""
        try:
            self.index.listing()
        except Exception:  # closed meanwhile, or anything else: the first listing reads them itself
            log.debug("the listing rows were not built ahead", exc_info=True)

    def entries(self, keep: Callable[[str], bool], under: str | None = None) -> list[EntryInfo] | None:
        """The entries whose path ``keep`` accepts (built-ins left out); None if only a whole walk can tell.

        ``under``: a folder holding every entry ``keep`` accepts (only its rows are looked at).
        """
        listed = self.select(keep, under)
        return None if listed is None else listed.infos()

    def select(self, keep: Callable[[str], bool], under: str | None = None) -> Listed | None:
        """`entries`, with the rows not yet made into `EntryInfo` (`Listed`).

        A folder ``under`` that is not there holds no entries: the answer needs no rows (a cold
        process's first listing builds every entry's, to find the episodes a root may not have)."""
        if under and not os.path.isdir(os.path.join(self.adapter.root, under)):
            return Listed(None, [], [])
        for attempt in range(_TRIES):
            if attempt:
                time.sleep(_PAUSE * attempt)
            change = self.index.changes.value()
            rows = self.index.listing()
            if rows.files_change != change:
                continue  # a writer between its index update and its files' commit point
            stamps = self.stamps
            knows = _RecordedStats(self.index)
            changes = find_changes(
                str(self.adapter.root), stamps, rows.folders,
                lambda prefix: self.adapter.list_folder(prefix, knows),  # noqa: B023 — called before the next attempt
            )
            if changes is None:
                return None
            listed = self._from_rows(rows, changes, keep, knows, under)
            if self.index.changes.value() != change:
                continue  # a commit overlapped: what was listed may be half of it
            self.stamps = changes.restamped(stamps, lambda prefix, folder: _agrees(rows, prefix, folder, knows))  # noqa: B023 — called here
            return listed
        return None

    def _from_rows(
        self, rows: ListingRows, changes: FolderChanges, keep: Callable[[str], bool], knows: Known, under: str | None
    ) -> Listed:
        """The rows of the unchanged folders, and the listed folders' entries: their row where it is
        as fresh as their files, else read from the files (as are entries whose row has no title)."""
        replaced = [rows.folders.get(prefix, frozenset()) for prefix in (*changes.listed, *changes.gone)]
        skip = frozenset().union(*replaced, rows.untitled)
        slot_of = rows.slots
        if under is None:
            candidates: Iterable[tuple[str, int]] = slot_of.items()
        else:
            inside = f"{under}/"
            candidates = [
                (path, slot_of[path]) for folder, paths in rows.folders.items() if folder.startswith(inside) for path in paths
            ]
        if skip:
            slots = [slot for path, slot in candidates if keep(path) and path not in skip]
        else:
            slots = [slot for path, slot in candidates if keep(path)]
        from_files = [path for path in rows.untitled if keep(path) and not changes.covers(path)]
        for folder in changes.listed.values():
            for path, stats in folder.entries.items():
                if not keep(path):
                    continue
                slot = slot_of.get(path)  # (None: written since the rows were read: its files tell)
                if slot is not None and knows(path, stats) and path not in rows.untitled:
                    slots.append(slot)
                else:
                    from_files.append(path)
        return Listed(rows, slots, self.adapter.describe(from_files))

    def as_files_say(self, infos: list[EntryInfo]) -> list[EntryInfo]:
        """``infos`` (a listing's rows, say the entries a glob shows), with each entry whose files
        were rewritten in place since its row was written read from its files instead.

        Such a rewrite changes no folder (`memdir.storage.directory.folder_stamps`); two ``stat`` per entry
        here (~3 ms for MemoryGlob's 500) catch it for the entries shown, where checking every
        entry of a 100K root costs about a second (only opening does that). An entry gone
        meanwhile is left out.
        """
        root = str(self.adapter.root)
        recorded = self.index.recorded_stats([info.path for info in infos if not info.virtual])
        edited = {path for path, stats in recorded.items() if _as_tuple(file_stats(root, path)) != stats}
        if not edited:
            return infos
        fresh = {info.path: info for info in self.adapter.describe(sorted(edited))}
        return [fresh.get(info.path, info) for info in infos if info.path not in edited or info.path in fresh]

    def plan(self, text_recipe: str, *, in_place_edits: bool) -> ReconcilePlan:
        """What to reconcile (caller holds the root's lock): the folders changed since the recorded
        stamps and, with ``in_place_edits``, every other entry whose files' stats differ from its row."""
        index = self.index
        try:
            known: dict[str, tuple[int, tuple[int, ...]]] | None = index.freshness()
            stamps = index.folder_stamps() if not index.recipe_changed(text_recipe) else {}
        except sqlite3.DatabaseError:  # damaged since it was opened: the reconcile rebuilds it, from a walk
            known, stamps = None, {}
        changes = None
        by_folder: dict[str, list[str]] = {}
        for path in known or ():
            if not is_virtual(path):  # (built-in entries have no files)
                by_folder.setdefault(path[: path.rfind("/") + 1], []).append(path)
        if stamps and known is not None:

            def knows(path: str, stats: FileStats) -> bool:
                row = known.get(path)
                return row is not None and row[1] == _as_tuple(stats)

            changes = find_changes(
                str(self.adapter.root), stamps, by_folder, lambda prefix: self.adapter.list_folder(prefix, knows)
            )
        if changes is None:
            walked: dict[str, os.stat_result | None] = {}
            files = list(listing(self.adapter, folders=walked))
            return ReconcilePlan(files, None, known, lambda failed: _untrusting(stamps_of_walk(walked), failed))
        files = [(path, stats) for folder in changes.listed.values() for path, stats in folder.entries.items()]
        if in_place_edits and known is not None:  # (folders were compared only when the rows were read)
            files.extend(_edited_in_place(str(self.adapter.root), known, by_folder, changes))
        covered = changes.covers if changes.listed or changes.gone else _covers_nothing  # (asked of every row)
        return ReconcilePlan(
            files, covered, known,
            lambda failed: _untrusting(changes.restamped(stamps, lambda prefix, folder: True), failed),
        )  # fmt: skip


def _covers_nothing(path: str) -> bool:
    return False


def _agrees(rows: ListingRows, prefix: str, folder: ListedFolder, knows: Known) -> bool:
    """True if the folder holds exactly the entries the rows have in it, each as fresh as its row."""
    return set(folder.entries) == rows.folders.get(prefix, frozenset()) and all(
        knows(path, stats) for path, stats in folder.entries.items()
    )


def _edited_in_place(
    root: str, known: Mapping[str, tuple[int, tuple[int, ...]]], by_folder: Mapping[str, list[str]], changes: FolderChanges
) -> Iterator[tuple[str, FileStats]]:
    """(path, stats) of each entry in an unchanged folder whose ``.md`` or ``.yml`` stats differ from
    its row. Two ``stat`` per entry, each relative to its open folder (the kernel resolves no path)."""
    for folder, paths in by_folder.items():
        if folder in changes.listed or folder in changes.gone:
            continue
        try:
            fd = os.open(os.path.join(root, folder), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:  # gone meanwhile: the next listing finds out
            continue
        try:
            for path in paths:
                name = path[len(folder) :]
                stats = (*_stat_in(fd, name), *_stat_in(fd, name[: -len(".md")] + ".yml"))
                if stats != known[path][1]:
                    yield path, FileStats(*stats)
        finally:
            os.close(fd)


def _stat_in(folder_fd: int, name: str) -> tuple[int, int]:
    """(mtime ns, size) of ``name`` in an open folder; (0, 0) if it is missing or unusable."""
    try:
        st = os.stat(name, dir_fd=folder_fd)
    except OSError:
        return 0, 0
    return st.st_mtime_ns, st.st_size


def _untrusting(stamps: dict[str, Stamp] | None, failed: list[str]) -> dict[str, Stamp] | None:
    """``stamps`` with the folders of entries that could not be indexed untrusted (listed again next time)."""
    if stamps is None or not failed:
        return stamps
    for folder in {parent_of(path) for path in failed} & stamps.keys():
        stamps[folder] = Stamp(UNTRUSTED, stamps[folder].ino)
    return stamps
