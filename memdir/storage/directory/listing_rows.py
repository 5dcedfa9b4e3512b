"""Every entry's listing row, kept in a process and moved on by the index's change numbers.

A listing of 100K entries from SQLite costs ~0.2-0.3 s to read and build; kept in memory, a
listing costs only filtering it. After a change, only the rows changed since (``seq``
greater than the one the rows reflect) and the tombstones since are read, as
`memdir.storage.directory.index.DerivedIndex.refresh` does for the search structures.

The rows are kept as columns (`RowTable`), one list per field, and a row becomes an
`EntryInfo` only when a listing shows it (`ListingRows.info`, kept for the next listing):
MemoryGlob shows the 500 newest of 100K, and building every row's named tuple and datetime
cost more than reading them. A process's first rows come from the listing snapshot beside the index
(`memdir.storage.directory.listing_snapshot`) when there is a usable one, else from SQLite.

Rows are immutable snapshots: an update builds new mappings and appends the rows written
since to copies of the columns (copying them costs ~3 ms at 100K), so that a listing running
on another thread keeps a consistent view; the rows an update replaced stay in the columns,
unreferenced, until they outnumber the live ones and the columns are built anew.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from memdir.storage.directory import index_db as sql
from memdir.storage.directory.folder_stamps import parent_of
from memdir.storage.directory.listing_snapshot import Runs
from memdir.storage.records import EPOCH, EntryInfo, moment_of
from memdir.storage.virtual import is_virtual

_COLUMNS = "path, title, md_size, updated_at, type, hits, md_mtime_ns, is_stub"
# EntryInfo(...) without the named tuple's Python-level __new__ (all eight fields given).
_new_tuple = tuple.__new__
# Columns are built anew once the rows updates left behind outnumber the live ones by this much.
_SPARE_ROWS = 1_024


class RowTable(NamedTuple):
    """Listing rows as columns: row ``n`` is the ``n``-th item of each list.

    ``updated`` is updated_at as the index holds it (ISO text, or None); ``moments`` the same
    instant in microseconds since the epoch (0 for none), the newest-first sort key.
    """

    paths: list[str]
    titles: list[str]
    sizes: list[int]
    updated: list[str | None]
    types: list[str | None]
    hits: list[int]
    mtimes: list[int]
    moments: list[int]

    def taken(self, slots: Iterable[int]) -> RowTable:
        """The rows at ``slots``, in that order, as new columns."""
        slots = list(slots)
        return RowTable._make([column[slot] for slot in slots] for column in self)


def moment(updated_at: str | None) -> int:
    """The sort key of an updated_at as the index holds it: microseconds since the epoch (0 for none)."""
    return moment_of(datetime.fromisoformat(updated_at)) if updated_at else 0


@dataclass(frozen=True, slots=True)
class ListingRows:
    """The listing rows of every entry the index holds (stubs and built-ins left out).

    Attributes:
        generation, seq: the index state they reflect.
        files_change: the file change counter that state caught up with
            (`memdir.storage.directory.changes`).
        table: the rows' columns (also rows no longer live: only ``slots`` says which are).
        slots: path -> its row's place in ``table`` (the files' stats a row records are read per
            folder, when one is listed again: `memdir.storage.directory.index.DerivedIndex.folder_file_stats`).
        folders: folder prefix -> the paths of the entries directly in it.
        untitled: paths whose row has no title (the listing shows their first heading,
            which only the files have).
        built: per row of ``table``, its `EntryInfo` once a listing has asked for it, else None:
            a cache, filled as rows are shown (a row never changes: a changed entry gets a
            new row), so that listing everything again costs no second build.
    """

    generation: str
    seq: int
    files_change: int
    table: RowTable
    slots: Mapping[str, int]
    folders: Mapping[str, frozenset[str]]
    untitled: frozenset[str]
    built: list[EntryInfo | None]

    def info(self, slot: int) -> EntryInfo:
        """The listing row at ``slot`` as an `EntryInfo`."""
        found = self.built[slot]
        if found is None:
            found = self.built[slot] = self._made(slot)
        return found

    def infos(self, slots: list[int]) -> list[EntryInfo]:
        """The listing rows at ``slots``, in that order, as `EntryInfo`."""
        built = self.built
        out: list[EntryInfo] = []
        for slot in slots:
            found = built[slot]
            if found is None:
                found = built[slot] = self._made(slot)
            out.append(found)
        return out

    def _made(self, slot: int) -> EntryInfo:
        table = self.table
        updated = table.updated[slot]
        when = datetime.fromisoformat(updated) if updated else EPOCH
        return _new_tuple(EntryInfo, (
            table.paths[slot], table.titles[slot], table.sizes[slot], when, table.types[slot], table.hits[slot],
            table.mtimes[slot], False,
        ))  # fmt: skip

    def live(self) -> RowTable:
        """The live rows' columns (the table itself when it holds no others)."""
        if len(self.table.paths) == len(self.slots):
            return self.table
        return self.table.taken(sorted(self.slots.values()))


@dataclass(frozen=True, slots=True)
class RowChanges:
    """What the index changed since some listing rows (`changes_since`): read under the index's lock,
    applied to the rows outside it (`moved_on`), so that building 100K rows holds up no search.

    Attributes:
        generation, seq, files_change: the index state read.
        whole: every row is in ``changed`` (the rows are built afresh).
        changed: entries' columns (`_COLUMNS`) of the rows written since.
        removed: paths removed since.
    """

    generation: str
    seq: int
    files_change: int
    whole: bool
    changed: list[tuple]
    removed: list[str]


def changes_since(db: sqlite3.Connection, rows: ListingRows | None, files_change: int) -> RowChanges:
    """What ``rows`` lack of the state of ``db`` (read in the caller's transaction): every row when
    there are none yet, or the index was rebuilt, or it pruned tombstones they would need, or
    they are of a change it has not reached (a snapshot of a newer copy of the file)."""
    generation, seq = sql.meta_text(db, "generation"), sql.meta_int(db, "seq")
    if rows is None or rows.generation != generation or not sql.meta_int(db, "tombstone_floor") <= rows.seq <= seq:
        return RowChanges(generation, seq, files_change, True, db.execute(f"SELECT {_COLUMNS} FROM entries").fetchall(), [])
    if rows.seq == seq:
        return RowChanges(generation, seq, files_change, False, [], [])
    changed = db.execute(f"SELECT {_COLUMNS} FROM entries WHERE seq > ?", (rows.seq,)).fetchall()
    removed = [path for (path,) in db.execute("SELECT path FROM tombstones WHERE seq > ?", (rows.seq,))]
    return RowChanges(generation, seq, files_change, False, changed, removed)


def moved_on(rows: ListingRows | None, changes: RowChanges) -> ListingRows:
    """``rows`` with ``changes`` applied (new rows; ``rows`` is not changed)."""
    generation, seq, files_change = changes.generation, changes.seq, changes.files_change
    if changes.whole or rows is None:
        live = [row for row in changes.changed if not row[7] and not is_virtual(row[0])]
        columns = [list(column) for column in zip(*live)] if live else [[] for _ in range(8)]
        columns[7] = [moment(updated) for updated in columns[3]]  # (is_stub's place)
        return from_table(generation, seq, files_change, RowTable(*columns))
    if not changes.changed and not changes.removed:
        return rows if rows.files_change == files_change else _with_change(rows, files_change)
    moved = _applied(rows, changes)
    if len(moved.table.paths) > 2 * len(moved.slots) + _SPARE_ROWS:
        return from_table(generation, seq, files_change, moved.live())
    return moved


def from_table(generation: str, seq: int, files_change: int, table: RowTable, runs: Runs | None = None) -> ListingRows:
    """The rows of ``table`` (every row live, no path twice); ``runs``: its rows come folder by
    folder, as these runs say (`by_folder`), so the folders need no look at each path."""
    paths, titles, updated = table.paths, table.titles, table.updated
    folders: dict[str, frozenset[str]] = {}
    if runs is not None:
        start = 0
        for folder, count in runs:
            folders[folder] = frozenset(paths[start : start + count])
            start += count
    else:
        grouped: dict[str, list[str]] = {}
        for path in paths:
            folder = path[: path.rfind("/") + 1]
            members = grouped.get(folder)
            if members is None:
                grouped[folder] = [path]
            else:
                members.append(path)
        folders = {folder: frozenset(members) for folder, members in grouped.items()}
    if all(titles) and all(updated):  # (the usual case, checked without a Python loop)
        untitled: frozenset[str] = frozenset()
    else:
        untitled = frozenset(path for path, title, when in zip(paths, titles, updated) if not (title and when))
    slots = dict(zip(paths, range(len(paths))))
    return ListingRows(generation, seq, files_change, table, slots, folders, untitled, [None] * len(paths))


def by_folder(table: RowTable) -> tuple[RowTable, Runs]:
    """``table``'s rows folder by folder, and the runs that say so (what `from_table` reads fastest)."""
    paths = table.paths
    folder_of = [path[: path.rfind("/") + 1] for path in paths]
    order = sorted(range(len(paths)), key=folder_of.__getitem__)
    runs: Runs = []
    for slot in order:
        folder = folder_of[slot]
        if runs and runs[-1][0] == folder:
            runs[-1] = (folder, runs[-1][1] + 1)
        else:
            runs.append((folder, 1))
    return table.taken(order), runs


def _with_change(rows: ListingRows, files_change: int) -> ListingRows:
    return ListingRows(
        rows.generation, rows.seq, files_change, rows.table, rows.slots, rows.folders, rows.untitled, rows.built
    )


def _applied(rows: ListingRows, changes: RowChanges) -> ListingRows:
    """``rows`` with the changed rows appended to copies of its columns and the removed paths dropped;
    the folders the changes touch get new member sets, the others are kept as they are."""
    table = RowTable._make(list(column) for column in rows.table)
    columns: tuple[list[Any], ...] = table  # each column takes its field of a changed row
    slots = dict(rows.slots)
    untitled = set(rows.untitled)
    names = {parent_of(row[0]) for row in changes.changed} | {parent_of(path) for path in changes.removed}
    folders = {name: set(rows.folders.get(name, ())) for name in names}
    for path in changes.removed:
        _drop(path, slots, folders, untitled)
    for path, title, size, updated_at, type_, hits, md_mtime, is_stub in changes.changed:
        if is_stub or is_virtual(path):
            _drop(path, slots, folders, untitled)
            continue
        slots[path] = len(table.paths)
        for column, value in zip(columns, (path, title, size, updated_at, type_, hits, md_mtime, moment(updated_at))):
            column.append(value)
        folders[parent_of(path)].add(path)
        if title and updated_at:
            untitled.discard(path)
        else:
            untitled.add(path)
    kept = dict(rows.folders)
    for name, members in folders.items():
        if members:
            kept[name] = frozenset(members)
        else:
            kept.pop(name, None)
    built = rows.built + [None] * (len(table.paths) - len(rows.built))  # (the rows kept keep their EntryInfo)
    return ListingRows(changes.generation, changes.seq, changes.files_change, table, slots, kept, frozenset(untitled), built)


def _drop(path: str, slots: dict[str, int], folders: dict[str, set[str]], untitled: set[str]) -> None:
    if slots.pop(path, None) is not None:
        folders[parent_of(path)].discard(path)
        untitled.discard(path)
