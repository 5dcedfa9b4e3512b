"""Pages of the PostgreSQL store's entries, read in index order until the page is full.

A listing an agent or a person asks for shows a page (MemoryGlob's newest 500, the web view's 50,
``resources/list``'s page), so only that page is read: rows come in the order of an index
(``entries_newest`` for newest first, ``entries_path_order`` for path order) in chunks, each row is
narrowed by what SQL can say (a folder, an entry type, a tag: a tag few of the entries carry is read
through the tag index instead, `_sparse_tag`) and tested by what it cannot (a glob, an agent's view), and reading stops once one match more
than the page holds was found (so the caller knows more match without counting them all).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg

from memdir.storage.entry_input import folder_prefix
from memdir.storage.postgres.database import scalar
from memdir.storage.postgres.reads import HITS
from memdir.storage.records import EVERY, EntryInfo, Narrowing

_INFO = f"path, title, size, updated_at, type, {HITS}, version"
_PATH = 'path COLLATE "C"'  # code point order, as the directory store sorts; its own index (``entries_path_order``)
_LISTED = "stub_kind IS NULL"  # (built-in entries included: each has its row once the store was opened for writing)
_FIRST_CHUNK = 64


def like_prefix(prefix: str) -> str:
    """A LIKE pattern matching paths that start with ``prefix`` literally."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _under(under: str | None, narrow: Narrowing = EVERY) -> tuple[str, list[Any]]:
    """The conditions of a folder and a narrowing (an entry type, a tag by the tag index), and their parameters."""
    prefix = folder_prefix(under)
    conditions: list[tuple[str, Any]] = []
    if prefix:
        conditions.append((f"{_PATH} LIKE %s", like_prefix(prefix)))
    if narrow.type is not None:
        conditions.append(("type = %s", narrow.type))
    if narrow.tag is not None:
        conditions.append(("tags_folded @> %s", [narrow.tag.casefold()]))
    return "".join(f" AND {condition}" for condition, _ in conditions), [param for _, param in conditions]


def _sparse_tag(conn: psycopg.Connection, info_of: Callable[[Sequence[Any]], EntryInfo], under: str | None,
                narrow: Narrowing, order: str, limit: int) -> list[EntryInfo] | None:
    """Every entry of a narrowing by tag, read through the tag index, when the tag is sparse; None when it is not.

    The first rows in the listing's ``order`` are a sample: when fewer of them carry the tag than the page
    needs, the tag is sparse and its entries are read through the tag index (a walk in order would read most
    of the store to fill the page); else a walk in order fills the page soon. The sample is about the square
    root of (store size x page), so either way far fewer rows are read than the store holds, unless many
    entries carry the tag and none of them come early in the order (a tag of one folder, in path order):
    then the tag index gives every one of them (never the rest of the store).
    """
    if narrow.tag is None:
        return None
    few = max(_FIRST_CHUNK, int((scalar(conn, "SELECT entries FROM store_state") * (limit + 1)) ** 0.5))
    where, params = _under(under, Narrowing(narrow.type))
    tag = [narrow.tag.casefold()]
    sampled = scalar(conn, f"SELECT count(*) FROM (SELECT tags_folded FROM entries WHERE {_LISTED}{where}"
                           f" ORDER BY {order} LIMIT %s) sample WHERE tags_folded @> %s", (*params, few, tag))
    if sampled > limit:
        return None
    rows = conn.execute(f"SELECT {_INFO} FROM entries WHERE {_LISTED}{where} AND tags_folded @> %s", (*params, tag))
    return [info_of(row) for row in rows.fetchall()]


def _chunked(infos: list[EntryInfo]) -> Iterator[list[EntryInfo]]:
    """``infos`` in chunks, so that the caller (which may read more of each entry) sees only as many as fill its page."""
    for start in range(0, len(infos), _FIRST_CHUNK):
        yield infos[start:start + _FIRST_CHUNK]


def newest(conn: psycopg.Connection, info_of: Callable[[Sequence[Any]], EntryInfo], under: str | None, limit: int,
           narrow: Narrowing = EVERY) -> Iterator[list[EntryInfo]]:
    """The entries under ``under`` (and ``narrow``), newest first (same moment: path order), in chunks read as the
    caller asks for them: the first sized for a page of ``limit``, each next one twice as large."""
    where, params = _under(under, narrow)
    sparse = _sparse_tag(conn, info_of, under, narrow, f"updated_at DESC, {_PATH}", limit)
    if sparse is not None:
        sparse.sort(key=lambda info: info.path)
        sparse.sort(key=lambda info: info.updated_at, reverse=True)
        yield from _chunked(sparse)
        return
    size = max(_FIRST_CHUNK, limit + 1)
    rows = conn.execute(
        f"SELECT {_INFO} FROM entries WHERE {_LISTED}{where} ORDER BY updated_at DESC, {_PATH} LIMIT %s", (*params, size),
    ).fetchall()
    while rows:
        yield [info_of(row) for row in rows]
        if len(rows) < size:
            return
        size *= 2
        at, last = rows[-1][3], rows[-1][0]
        # The rest of the last moment (path order), then the older ones: each an index range.
        rows = conn.execute(
            f"(SELECT {_INFO} FROM entries WHERE {_LISTED}{where} AND updated_at = %s AND {_PATH} > %s"
            f" ORDER BY {_PATH} LIMIT %s) UNION ALL (SELECT {_INFO} FROM entries WHERE {_LISTED}{where}"
            f" AND updated_at < %s ORDER BY updated_at DESC, {_PATH} LIMIT %s)",
            (*params, at, last, size, *params, at, size),
        ).fetchall()[:size]


def in_path_order(conn: psycopg.Connection, info_of: Callable[[Sequence[Any]], EntryInfo], under: str | None,
                  after: str | None, limit: int, narrow: Narrowing = EVERY) -> Iterator[list[EntryInfo]]:
    """The entries under ``under`` (and ``narrow``) after the path ``after`` (None: from the first), in path
    order, in chunks read as the caller asks for them (as `newest`)."""
    where, params = _under(under, narrow)
    sparse = _sparse_tag(conn, info_of, under, narrow, _PATH, limit) if after is None else None
    if sparse is not None:
        yield from _chunked(sorted(sparse, key=lambda info: info.path))
        return
    size, last = max(_FIRST_CHUNK, limit + 1), after
    while True:
        rows = conn.execute(
            f"SELECT {_INFO} FROM entries WHERE {_LISTED}{where}" + (f" AND {_PATH} > %s" if last is not None else "")
            + f" ORDER BY {_PATH} LIMIT %s", (*params, *([last] if last is not None else []), size),
        ).fetchall()
        if rows:
            yield [info_of(row) for row in rows]
        if len(rows) < size:
            return
        last, size = rows[-1][0], size * 2


def at_offset(conn: psycopg.Connection, info_of: Callable[[Sequence[Any]], EntryInfo], under: str | None,
              offset: int, limit: int) -> list[EntryInfo]:
    """Entries ``offset`` to ``offset + limit`` under ``under`` in path order (a numbered page)."""
    where, params = _under(under)
    rows = conn.execute(
        f"SELECT {_INFO} FROM entries WHERE {_LISTED}{where} ORDER BY {_PATH} LIMIT %s OFFSET %s", (*params, limit, offset),
    ).fetchall()
    return [info_of(row) for row in rows]


def count(conn: psycopg.Connection, under: str | None) -> int:
    """How many entries are under ``under`` (the store's own count for the whole store)."""
    where, params = _under(under)
    if not where:
        return int(scalar(conn, "SELECT entries FROM store_state"))
    return int(scalar(conn, f"SELECT count(*) FROM entries WHERE {_LISTED}{where}", params))


def top_folders(conn: psycopg.Connection) -> list[str]:
    """The top-level folders holding entries: one probe of the path index per folder (a skip scan)."""
    rows = conn.execute(
        "WITH RECURSIVE folder(name) AS ("
        f" SELECT split_part(min({_PATH}), '/', 1) FROM entries WHERE {_LISTED} AND path LIKE '%%/%%'"
        f" UNION ALL SELECT (SELECT split_part(min({_PATH}), '/', 1) FROM entries"
        f"  WHERE {_LISTED} AND path LIKE '%%/%%' AND {_PATH} > f.name || '0')"
        " FROM folder f WHERE f.name IS NOT NULL)"
        " SELECT name FROM folder WHERE name IS NOT NULL"
    ).fetchall()
    return [row[0] for row in rows]
