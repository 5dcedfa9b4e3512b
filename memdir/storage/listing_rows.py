"""Every entry's listing row, kept in a process and moved on by the index's change numbers.

A listing of 100K entries from SQLite costs ~0.3 s to read and build; kept in memory, a
listing costs only filtering it. After a change, only the rows changed since (``seq``
greater than the one the rows reflect) and the tombstones since are read, as
`memdir.storage.index.DerivedIndex.refresh` does for the search structures. Rows are
immutable snapshots: an update builds new mappings (copying the old ones, ~5 ms at 100K)
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

_COLUMNS = "path, title, md_size, updated_at, type, hits, md_mtime_ns, yml_mtime_ns, yml_size, is_stub"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

StatsTuple = tuple[int, int, int, int]  # `FileStats` as a tuple: md mtime, md size, yml mtime, yml size


@dataclass(frozen=True, slots=True)
class ListingRows:
    """The listing rows of every entry the index holds (stubs and built-ins left out).

    Attributes:
        generation, seq: the index state they reflect.
        files_change: the file change counter that state caught up with
            (`memdir.storage.changes`).
        infos: path -> its listing row.
        stats: path -> its files' stats as the row records them.
        folders: folder prefix -> the paths of the entries directly in it.
        untitled: paths whose row has no title (the listing shows their first heading,
            which only the files have).
    """

    generation: str
    seq: int
    files_change: int
    infos: Mapping[str, EntryInfo]
    stats: Mapping[str, StatsTuple]
    folders: Mapping[str, frozenset[str]]
    untitled: frozenset[str]


def current_rows(db: sqlite3.Connection, rows: ListingRows | None, files_change: int) -> ListingRows:
    """``rows`` brought up to the state of ``db`` (read in the caller's transaction); loaded whole
    when there are none yet, or the index was rebuilt, or it pruned tombstones they would need."""
    generation, seq = sql.meta_text(db, "generation"), sql.meta_int(db, "seq")
    if rows is None or rows.generation != generation or rows.seq < sql.meta_int(db, "tombstone_floor"):
        everything = db.execute(f"SELECT {_COLUMNS} FROM entries").fetchall()
        return _built(generation, seq, files_change, {}, {}, {}, set(), everything, ())
    if rows.seq == seq:
        return rows if rows.files_change == files_change else _with_change(rows, files_change)
    changed = db.execute(f"SELECT {_COLUMNS} FROM entries WHERE seq > ?", (rows.seq,)).fetchall()
    removed = [path for (path,) in db.execute("SELECT path FROM tombstones WHERE seq > ?", (rows.seq,))]
    folders = {folder: set(paths) for folder, paths in _touched(rows.folders, changed, removed).items()}
    return _built(
        generation, seq, files_change, dict(rows.infos), dict(rows.stats), folders, set(rows.untitled), changed,
        removed, untouched=rows.folders,
    )


def _with_change(rows: ListingRows, files_change: int) -> ListingRows:
    return ListingRows(rows.generation, rows.seq, files_change, rows.infos, rows.stats, rows.folders, rows.untitled)


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
    stats: dict[str, StatsTuple],
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
        _drop(path, infos, stats, folders, untitled)
    for path, title, size, updated_at, type_, hits, md_mtime, yml_mtime, yml_size, is_stub in rows:
        if is_stub or is_virtual(path):
            _drop(path, infos, stats, folders, untitled)
            continue
        infos[path] = EntryInfo(path, title, size, parse(updated_at) if updated_at else _EPOCH, type_, hits, md_mtime)
        stats[path] = (md_mtime, size, yml_mtime, yml_size)
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
    return ListingRows(generation, seq, files_change, infos, stats, frozen, frozenset(untitled))


def _drop(
    path: str, infos: dict[str, EntryInfo], stats: dict[str, StatsTuple], folders: dict[str, set[str]], untitled: set[str]
) -> None:
    if infos.pop(path, None) is not None:
        stats.pop(path, None)
        folders.setdefault(parent_of(path), set()).discard(path)
        untitled.discard(path)
