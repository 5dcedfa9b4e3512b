"""Every entry's listing row, kept in a process and moved on by the index's change numbers.

A listing of 100K entries from SQLite costs ~0.2-0.3 s to read and build; kept in memory, a
listing costs only filtering it. After a change, only the rows changed since (``seq``
greater than the one the rows reflect) and the tombstones since are read, as
`memdir.storage.index.DerivedIndex.refresh` does for the search structures. Rows are
immutable snapshots: an update builds new mappings (copying the old ones, ~3 ms at 100K)
so that a listing running on another thread keeps a consistent view.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from memdir.storage import index_db as sql
from memdir.storage.base import EntryInfo
from memdir.storage.folder_stamps import parent_of
from memdir.storage.virtual import is_virtual

_COLUMNS = "path, title, md_size, updated_at, type, hits, md_mtime_ns, is_stub"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# EntryInfo(...) without the named tuple's Python-level __new__ (all eight fields given): a third
# of what building 100K rows costs.
_new_tuple = tuple.__new__


@dataclass(frozen=True, slots=True)
class ListingRows:
    """The listing rows of every entry the index holds (stubs and built-ins left out).

    Attributes:
        generation, seq: the index state they reflect.
        files_change: the file change counter that state caught up with
            (`memdir.storage.changes`).
        infos: path -> its listing row (the files' stats a row records are read per folder,
            when one is listed again: `memdir.storage.index.DerivedIndex.folder_file_stats`).
        folders: folder prefix -> the paths of the entries directly in it.
        untitled: paths whose row has no title (the listing shows their first heading,
            which only the files have).
    """

    generation: str
    seq: int
    files_change: int
    infos: Mapping[str, EntryInfo]
    folders: Mapping[str, frozenset[str]]
    untitled: frozenset[str]


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
    there are none yet, or the index was rebuilt, or it pruned tombstones they would need."""
    generation, seq = sql.meta_text(db, "generation"), sql.meta_int(db, "seq")
    if rows is None or rows.generation != generation or rows.seq < sql.meta_int(db, "tombstone_floor"):
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
        return _built(generation, seq, files_change, {}, {}, set(), changes.changed, ())
    if not changes.changed and not changes.removed:
        return rows if rows.files_change == files_change else _with_change(rows, files_change)
    touched = _touched(rows.folders, changes.changed, changes.removed)
    return _built(
        generation, seq, files_change, dict(rows.infos), {folder: set(paths) for folder, paths in touched.items()},
        set(rows.untitled), changes.changed, changes.removed, untouched=rows.folders,
    )


def _with_change(rows: ListingRows, files_change: int) -> ListingRows:
    return ListingRows(rows.generation, rows.seq, files_change, rows.infos, rows.folders, rows.untitled)


def _touched(
    folders: Mapping[str, frozenset[str]], changed: list[tuple], removed: list[str]
) -> dict[str, frozenset[str]]:
    """The folders the changed and removed paths are in, with their current members."""
    names = {parent_of(row[0]) for row in changed} | {parent_of(path) for path in removed}
    return {name: folders.get(name, frozenset()) for name in names}


def _built(
    generation: str,
    seq: int,
    files_change: int,
    infos: dict[str, EntryInfo],
    folders: dict[str, set[str]],
    untitled: set[str],
    rows: Iterable[tuple],
    removed: Iterable[str],
    untouched: Mapping[str, frozenset[str]] | None = None,
) -> ListingRows:
    """Apply ``rows`` (entries' columns, `_COLUMNS`) and ``removed`` paths to the mutable
    mappings, then freeze them; ``untouched`` folders (not in ``folders``) are kept as they are."""
    parse = datetime.fromisoformat
    for path in removed:
        _drop(path, infos, folders, untitled)
    for path, title, size, updated_at, type_, hits, md_mtime, is_stub in rows:
        if is_stub or is_virtual(path):
            _drop(path, infos, folders, untitled)
            continue
        when = parse(updated_at) if updated_at else _EPOCH
        infos[path] = _new_tuple(EntryInfo, (path, title, size, when, type_, hits, md_mtime, False))
        folder = path[: path.rfind("/") + 1]
        members = folders.get(folder)
        if members is None:
            members = folders[folder] = set()
        members.add(path)
        if not (title and updated_at):
            untitled.add(path)
        elif untitled:
            untitled.discard(path)
    frozen = dict(untouched or {})
    frozen.update((folder, frozenset(paths)) for folder, paths in folders.items() if paths)
    for folder, paths in folders.items():
        if not paths:
            frozen.pop(folder, None)
    return ListingRows(generation, seq, files_change, infos, frozen, frozenset(untitled))


def _drop(path: str, infos: dict[str, EntryInfo], folders: dict[str, set[str]], untitled: set[str]) -> None:
    if infos.pop(path, None) is not None:
        folders.setdefault(parent_of(path), set()).discard(path)
        untitled.discard(path)
