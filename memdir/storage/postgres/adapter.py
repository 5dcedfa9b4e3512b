"""`PostgresAdapter`: entries as rows of one PostgreSQL table (`memdir.storage.base.StorageAdapter`).

The truth the directory store keeps in ``.md``/``.yml``/``.emb`` files is one row here:
content (text), title, metadata (JSON, in the sidecar's key order), ``updated_at``,
the vector with its checksum, model and text hash, or a stub's redirect. Each change runs
under the store's lock (`memdir.storage.postgres.database.AdvisoryLock`): one transaction
in which the entry's row, the search columns the caller's ``with`` block writes, the store's
totals and the change counter commit together, or nothing does. A written entry's row waits
for the index to write it with its search columns (`memdir.storage.postgres.held`).

A row's ``version`` (the change that wrote it) is what `FileStats` carries here (as
``yml_mtime_ns``; ``md_size`` is the content's size), so the index's freshness checks
work unchanged. Its read count and last read time are a row of their own (`memdir.storage.postgres.reads`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from memdir.core.entry import Entry, Metadata, entry_type, utcnow
from memdir.core.errors import EntryNotFoundError, InvalidPathError, ReadOnlyRootError
from memdir.core.paths import normalize_path
from memdir.storage import stubs
from memdir.storage.base import EntryWrite, Redirect
from memdir.storage.credentials import shown
from memdir.storage.entry_input import (
    check_sizes,
    checked_writes,
    encode_content,
    folder_prefix,
    refuse_virtual,
    valid_metadata,
    valid_redirect,
)
from memdir.storage.postgres import pages
from memdir.storage.postgres.audit import PostgresAudit
from memdir.storage.postgres.database import Database, Executes, roll_back, scalar
from memdir.storage.postgres.held import HeldRow, HeldRows, SearchColumns
from memdir.storage.postgres.pages import like_prefix
from memdir.storage.postgres.reads import COUNT_READ, COUNT_STUB_PASSED, HITS, SET_HITS
from memdir.storage.postgres.records import PostgresRecords
from memdir.storage.postgres.threads import PostgresThreads
from memdir.storage.records import EVERY, EntryInfo, FileStats, Listed, Narrowing, ReconcilePlan, Staged, folder_of
from memdir.storage.sidecar import EMBEDDING_DTYPE, embedding_checksum, encode_embedding, fallback_title, metadata_from_yaml
from memdir.storage.virtual import is_virtual, load_virtual, virtual_info, virtual_paths

if TYPE_CHECKING:
    from memdir.storage.base import EntryIndex
    from memdir.storage.records import Stamp

_ENTRY_COLUMNS = (
    f"path, content, title, metadata, updated_at, size, {HITS}, embedding, embedding_checksum,"
    " embedding_model, embedding_text_hash, stub_kind, stub_target"
)
_STUB_KIND = 11  # (its place in `_ENTRY_COLUMNS`)
_ROW = f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE path = %s AND NOT builtin"
_ENTRIES_AT = "FROM entries WHERE path = ANY(%s) AND NOT builtin AND stub_kind IS NULL"
"""The entries (not stubs, not built-ins) at a list of paths: a parameter."""
_TITLES = ("SELECT path, title, stub_kind, CASE WHEN stub_kind IS NOT NULL THEN content END"
           " FROM entries WHERE path = ANY(%s) AND NOT builtin")
"""Each path's title, and a stub's text (its title is made from it)."""
_INFO_COLUMNS = f"path, title, size, updated_at, type, {HITS}, version"
log = logging.getLogger(__name__)


CLAIM_CHANGE = "UPDATE store_state SET change = nextval('changes')"
"""Claims the next change number and records it as the store's last change (committed with the caller's transaction)."""


def next_change(conn: psycopg.Connection) -> int:
    """Claim the next change number (`CLAIM_CHANGE`)."""
    return scalar(conn, CLAIM_CHANGE + " RETURNING change")


def row_stats(size: int, version: int) -> FileStats:
    return FileStats(0, size, version, 0)


def metadata_json(metadata: Metadata) -> str:
    """Metadata as stored: the sidecar's mapping (empty values left out, extras kept, key order kept)."""
    return json.dumps(metadata.to_yaml_dict(), ensure_ascii=False, default=str)


class PostgresAdapter:
    """Entries in PostgreSQL (see the module docstring); arguments as `FilesystemAdapter`'s.

    Args:
        root: a local directory for what stays on each machine (defrag journals, derived caches).
        held: where written rows wait for the index (shared with the store's `PostgresIndex`).
        read_only: None for a writable store, else why it is read-only.
    """

    counts_reads_alone = True  # a read's count: atomic updates in a transaction of its own (`_counted`)

    def __init__(
        self,
        db: Database,
        root: Path,
        *,
        max_entry_size: int,
        max_total_size: int,
        max_redirect_hops: int,
        held: HeldRows,
        read_only: str | None = None,
    ) -> None:
        self.db = db
        self.root = root
        self.held = held
        self.lock = db.lock
        self.audit = PostgresAudit(db)
        self.records = PostgresRecords(db)
        self.threads = PostgresThreads(db, db.lock)
        self.read_only = read_only
        self.max_entry_size = max_entry_size
        self.max_total_size = max_total_size
        self.max_redirect_hops = max_redirect_hops

    def __str__(self) -> str:
        return shown(self.db.url)

    def _writing(self) -> Any:
        if self.read_only is not None:
            raise ReadOnlyRootError(shown(self.db.url), self.read_only)
        return self.lock.exclusive()

    def _conn(self) -> psycopg.Connection:
        return self.db.connection()

    # ----------------------------------------------------------------- writing
    @contextmanager
    def write(
        self,
        path: str,
        content: str,
        *,
        title: str,
        metadata: Metadata | Mapping[str, Any] | None = None,
        embedding: np.ndarray | None = None,
        hits: int | None = None,
        updated_at: datetime | None = None,
        embedding_model: str | None = None,
        embedding_text_hash: str | None = None,
    ) -> Iterator[Staged]:
        """Create or replace the entry at ``path`` in one transaction (see `FilesystemAdapter.write`)."""
        path = normalize_path(path)
        write = EntryWrite(path, content, str(title), valid_metadata(path, metadata), embedding, embedding_model,
                           embedding_text_hash)
        with self._writing():
            conn = self._conn()
            with self._holding(conn, [self._write(conn, write, hits, updated_at)]) as (staged,):
                yield staged

    @contextmanager
    def write_many(self, writes: Sequence[EntryWrite]) -> Iterator[list[Staged]]:
        """Create or replace several entries in ONE transaction (see `FilesystemAdapter.write_many`)."""
        checked = checked_writes(writes)
        if not checked:
            yield []
            return
        with self._writing():
            conn = self._conn()
            with self._holding(conn, [self._write(conn, write, write.hits, write.updated_at) for write in checked]) as staged:
                yield staged

    @contextmanager
    def _holding(self, conn: psycopg.Connection, rows: list[HeldRow]) -> Iterator[list[Staged]]:
        """The caller's ``with`` block over ``rows``, held back for the index (`memdir.storage.postgres.held`);
        those it did not take are written as they are at the block's end (nothing, if it fails)."""
        for row in rows:
            self.held.hold(row)
        paths = [row.entry.path for row in rows]
        try:
            yield [Staged(row.entry, row_stats(row.entry.size, row.version)) for row in rows]
        except BaseException:
            self.held.release(paths)
            raise
        left = self.held.release(paths)
        if left:
            with conn.pipeline():  # no answer awaited: one round trip
                for row in left:
                    upsert_row(conn, row)

    def _write(
        self, conn: psycopg.Connection, write: EntryWrite, hits: int | None = None, updated_at: datetime | None = None
    ) -> HeldRow:
        """One entry's new version, its change number claimed in the caller's transaction (its row not written yet)."""
        path = write.path
        refuse_virtual(path)
        data = encode_content(path, write.content)
        vector, checksum = _vector(path, write.embedding)
        version, old_hits = self._claim(conn, path, len(data))
        entry = Entry(
            path=path, content=write.content, title=write.title, updated_at=updated_at or utcnow(), size=len(data),
            hits=int(hits if hits is not None else old_hits), metadata=write.metadata.model_copy(deep=True),
            embedding=vector, embedding_checksum=checksum,
            embedding_model=write.embedding_model if checksum else None,
            embedding_text_hash=write.embedding_text_hash if checksum else None,
        )
        return HeldRow(entry, version, hits_given=hits is not None)

    def _claim(self, conn: psycopg.Connection, path: str, new_size: int) -> tuple[int, int]:
        """Claim the change number of a write of ``new_size`` bytes to ``path``, count its size in the
        store's total and check both sizes; the change number and the read count of the entry it replaces
        (0 for a new entry), which the write keeps unless it states one.

        The change number first: a read counts itself only once it has claimed one (`_counted`), so
        from here on no count can slip in before the write commits. (Each statement of the pipeline reads what was committed when it starts: one round trip.
        Sizes that break a limit raise, and the caller's transaction is rolled back.)
        """
        with conn.pipeline():
            claimed = conn.execute(
                CLAIM_CHANGE + ", total_size = total_size + %s"
                " - coalesce((SELECT size FROM entries WHERE path = %s AND NOT builtin), 0) RETURNING change, total_size",
                (new_size, path),
            )
            found = conn.execute(f"SELECT {HITS} FROM entries WHERE path = %s AND NOT builtin", (path,))
            (version, total), old = claimed.fetchone() or (0, 0), found.fetchone()
        check_sizes(path, new_size, self.max_entry_size, total, self.max_total_size)
        return version, old[0] if old else 0

    @contextmanager
    def set_embeddings(
        self,
        vectors: Mapping[str, np.ndarray],
        *,
        expected: Mapping[str, Entry] | None = None,
        model_id: str | None = None,
        text_hashes: Mapping[str, str] | None = None,
    ) -> Iterator[list[Staged]]:
        """New vectors for unchanged entries in ONE transaction (see `FilesystemAdapter.set_embeddings`)."""
        updated: list[Staged] = []
        with self._writing():
            conn = self._conn()
            for path, embedding in vectors.items():
                path = normalize_path(path)
                refuse_virtual(path)
                entry = self._load(conn, path)
                if entry is None:
                    continue
                before = expected.get(path) if expected is not None else entry
                if before is None or (before.content, before.title, before.metadata) != (entry.content, entry.title, entry.metadata):
                    continue
                vector, checksum = _vector(path, embedding)
                text_hash = (text_hashes or {}).get(path)
                version = next_change(conn)
                conn.execute(
                    "UPDATE entries SET embedding = %s, embedding_checksum = %s, embedding_model = %s,"
                    " embedding_text_hash = %s, version = %s, indexed = NULL WHERE path = %s",
                    (vector, checksum, model_id, text_hash, version, path),
                )
                new = entry.model_copy(update={
                    "embedding": vector, "embedding_checksum": checksum, "embedding_model": model_id,
                    "embedding_text_hash": text_hash,
                })
                updated.append(Staged(new, row_stats(entry.size, version)))
            yield updated

    @contextmanager
    def set_metadata(self, paths: Sequence[str], decide: Callable[[Entry], Metadata | None]) -> Iterator[list[Staged]]:
        """New metadata (fields not embedded) for existing entries in ONE transaction (see
        `FilesystemAdapter.set_metadata`): every entry read in one statement and decided before
        any row changes; missing entries and stubs are skipped."""
        wanted = [normalize_path(path) for path in paths]
        for path in wanted:
            refuse_virtual(path)
        with self._writing():
            conn = self._conn()
            rows = conn.execute(f"SELECT {_ENTRY_COLUMNS} {_ENTRIES_AT}", (wanted,)).fetchall()
            found = {entry.path: entry for entry in map(entry_of, rows)}
            decided = [(entry, decide(entry)) for entry in (found[path] for path in wanted if path in found)]
            updated: list[Staged] = []
            for entry, metadata in decided:
                if metadata is None:
                    continue
                version = next_change(conn)
                conn.execute(
                    "UPDATE entries SET metadata = %s, type = %s, tags_folded = %s, version = %s, indexed = NULL"
                    " WHERE path = %s",
                    (metadata_json(metadata), entry_type(metadata.type, entry.path), [str(t).casefold() for t in metadata.tags],
                     version, entry.path),
                )
                updated.append(Staged(entry.model_copy(update={"metadata": metadata}), row_stats(entry.size, version)))
            yield updated

    @contextmanager
    def write_stub(self, path: str, redirect: Redirect, *, owner: str | None = None) -> Iterator[None]:
        """Replace the entry at ``path`` with a redirect stub owned by ``owner`` (its vector and search columns go)."""
        path = normalize_path(path)
        refuse_virtual(path)
        redirect = valid_redirect(path, redirect)
        text = stubs.format_stub(redirect)
        size = len(text.encode("utf-8"))
        with self._writing():
            conn = self._conn()
            version, _ = self._claim(conn, path, size)
            stub = Entry(path=path, content=text, title="", size=size, hits=0,  # a new stub starts unread
                         metadata=Metadata(created_by=owner))
            upsert_row(conn, HeldRow(stub, version, hits_given=True), redirect)
            yield

    @contextmanager
    def delete(self, path: str) -> Iterator[None]:
        """Remove the entry (or stub) at ``path``; its postings and links go with it."""
        path = normalize_path(path)
        refuse_virtual(path)
        with self._writing():
            conn = self._conn()
            row = conn.execute("SELECT size FROM entries WHERE path = %s AND NOT builtin", (path,)).fetchone()
            if row is None:
                raise EntryNotFoundError(path)
            next_change(conn)  # (claimed before any row is touched, as every change claims it: `_counted`)
            yield
            conn.execute("DELETE FROM entries WHERE path = %s", (path,))
            conn.execute("UPDATE store_state SET total_size = total_size - %s", (row[0],))

    # ----------------------------------------------------------------- reading
    def will_read(self, path: str) -> None:
        """The change this thread starts next reads the entry at ``path`` first: its row comes in the
        round trip that takes the store's lock (`AdvisoryLock.ask_on_taking`)."""
        path = normalize_path(path)
        self.lock.ask_on_taking(_row_question(path), _ROW, (path,), once=True)

    def exists(self, path: str) -> bool:
        path = normalize_path(path)
        if is_virtual(path):
            return True
        return self._conn().execute("SELECT 1 FROM entries WHERE path = %s AND NOT builtin", (path,)).fetchone() is not None

    def read_redirect(self, path: str) -> Redirect | None:
        """The redirect if ``path`` is a stub, None for a real or built-in entry (`EntryNotFoundError` if none)."""
        path = normalize_path(path)
        if is_virtual(path):
            return None
        row = self._conn().execute(
            "SELECT stub_kind, stub_target FROM entries WHERE path = %s AND NOT builtin", (path,)
        ).fetchone()
        if row is None:
            raise EntryNotFoundError(path)
        return Redirect(row[0], row[1]) if row[0] else None

    def read_entry(self, path: str, *, count_hit: bool = False, follow: bool = True) -> Entry:
        """Read an entry, following stubs when ``follow`` (see `FilesystemAdapter.read_entry`).

        A counted read adds one to the entry's read count (an atomic UPDATE of its ``entry_reads``
        row), and to the stub's when it went through one."""
        path = normalize_path(path)
        if is_virtual(path):
            return load_virtual(path)
        count_hit = count_hit and self.read_only is None
        entry = self._read(path, follow)
        if not count_hit:
            return entry
        return self._counted(entry, [path] if entry.path != path else [])

    def count_hit(self, entry: Entry) -> Entry:
        """Count a read of ``entry`` served without reading its row (a cache hit), as `read_entry` does."""
        if self.read_only is not None or entry.virtual:
            return entry
        return self._counted(entry, [])

    def _counted(self, entry: Entry, stubs_passed: list[str]) -> Entry:
        """``entry`` with its read counted, and its time recorded for ranking's recency (and one read
        counted for each stub the read went through), in one round trip and a transaction of its own.

        Every read is a change (listings show hit counts), but one that needs no store lock: its
        updates are atomic, and the store's change number is claimed first, in the order every writer
        claims it before touching an entry's row (no deadlock). So reads never queue for the writers'
        lock, nor writers behind the readers; a reader waits only for a writer between claiming its
        change number and committing. Its commit does not wait for the disk (``synchronous_commit``
        off for this transaction alone): a crash can lose the last fraction of a second of read counts,
        never an entry, and the next durable commit flushes them anyway. Inside a transaction the
        caller holds (a change of its own), the count joins it.
        """
        conn = self._conn()
        own = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        try:
            with conn.pipeline():
                if own:
                    conn.execute("BEGIN")
                    conn.execute("SELECT set_config('synchronous_commit', 'off', true)")
                conn.execute(CLAIM_CHANGE)
                for path in stubs_passed:
                    conn.execute(COUNT_STUB_PASSED, (path,))
                counted = None if entry.virtual else conn.execute(COUNT_READ, (entry.path,))
                if own:
                    conn.execute("COMMIT")
                row = counted.fetchone() if counted is not None else None
        except BaseException as exc:
            if own:
                roll_back(conn)
            if own and isinstance(exc, psycopg.errors.DeadlockDetected):  # (a change that touched this row first)
                log.info("Not counting a read of %s: it crossed a change of the entry", entry.path)
                return entry
            raise
        return entry if row is None else entry.model_copy(update={"hits": row[0]})  # (a stub read as itself is not counted)

    def _read(self, path: str, follow: bool) -> Entry:
        """The entry at ``path`` in one statement; a stub's target (``follow``) in a few more."""
        row = self._row(self._conn(), path)
        if row is None:
            raise EntryNotFoundError(path)
        if not (follow and row[_STUB_KIND]):
            return entry_of(row)
        target = stubs.follow(self.read_redirect, path, self.max_redirect_hops)
        if is_virtual(target):
            return load_virtual(target)
        entry = self._load(self._conn(), target)
        if entry is None:
            raise EntryNotFoundError(target)
        return entry

    def _load(self, conn: psycopg.Connection, path: str) -> Entry | None:
        row = self._row(conn, path)
        return None if row is None else entry_of(row)

    def _row(self, conn: psycopg.Connection, path: str) -> Sequence[Any] | None:
        """The row of the entry at ``path`` (`_ENTRY_COLUMNS`), as the lock's round trip read it if it did (`will_read`)."""
        taken = self.lock.taken_answer(_row_question(path))
        if taken is not None:
            return taken[0] if taken else None
        return conn.execute(_ROW, (path,)).fetchone()

    def read_entries(self, paths: Sequence[str]) -> list[tuple[Entry, FileStats]]:
        """The entries at ``paths`` with their stats, in one statement (a stats and a row each, a
        stub's test too, were four round trips per entry). Its rows come in binary: parsing ten vectors
        written out as text took three quarters of the read (4 ms of 10 entries at 100K, 1 ms in binary)."""
        rows = self._conn().execute(f"SELECT {_ENTRY_COLUMNS}, version {_ENTRIES_AT}", (list(paths),), binary=True)
        found = {}
        for *columns, version in rows:
            entry = entry_of(columns)
            found[entry.path] = (entry, row_stats(entry.size, version))
        return [found[path] for path in paths if path in found]

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        """In one statement (a whole row read for each path was a round trip each): an entry's title, a
        stub's made from its text as reading it shows."""
        asked: dict[str, str] = {}  # (the stored path of each path as given)
        for path in paths:
            try:
                asked[path] = normalize_path(path)
            except InvalidPathError:  # (a dangling link's text, not a path: shown without a title)
                continue
        stored = sorted({logical for logical in asked.values() if not is_virtual(logical)})
        found = {path: fallback_title(content, path) if stub_kind else title for path, title, stub_kind, content in (
            self._conn().execute(_TITLES, (stored,)).fetchall() if stored else ())}
        for logical in asked.values():
            if is_virtual(logical):
                found[logical] = load_virtual(logical).title
        return {path: found[logical] for path, logical in asked.items() if logical in found}

    def read_contents(self, paths: Sequence[str]) -> list[str]:
        found: dict[str, str] = dict(self._conn().execute(
            "SELECT path, content FROM entries WHERE path = ANY(%s) AND NOT builtin", (list(paths),)
        ).fetchall())
        return [load_virtual(path).content if is_virtual(path) else found.get(path, "") for path in paths]

    # ----------------------------------------------------------------- listing
    def iter_entries(
        self,
        *,
        include_stubs: bool = False,
        include_virtual: bool = False,
        with_metadata: bool = True,
        under: str | None = None,
        folders: dict[str, os.stat_result | None] | None = None,
    ) -> Iterator[EntryInfo]:
        """Every entry in path order (one query; ``with_metadata`` and ``folders`` change nothing here)."""
        prefix = folder_prefix(under)
        where = ["NOT builtin"]
        params: list[Any] = []
        if not include_stubs:
            where.append("stub_kind IS NULL")
        if prefix:
            where.append("path LIKE %s")
            params.append(like_prefix(prefix))
        rows = self._conn().execute(
            f"SELECT {_INFO_COLUMNS} FROM entries WHERE {' AND '.join(where)} ORDER BY path", params
        ).fetchall()
        infos = [info_of(row) for row in rows]
        if include_virtual:
            infos.extend(virtual_info(path) for path in virtual_paths() if path.startswith(prefix))
            infos.sort(key=lambda info: info.path)
        yield from infos

    def describe(self, paths: Sequence[str]) -> list[EntryInfo]:
        rows = self._conn().execute(
            f"SELECT {_INFO_COLUMNS} FROM entries WHERE path = ANY(%s) AND NOT builtin", (list(paths),)
        ).fetchall()
        found = {row[0]: info_of(row) for row in rows}
        return [found[path] for path in paths if path in found]

    def listing(
        self, under: str | None = None, folders: dict[str, os.stat_result | None] | None = None
    ) -> Iterator[tuple[str, FileStats]]:
        for info in self.iter_entries(under=under):
            yield info.path, row_stats(info.size, info.mtime_ns)

    def stats(self, path: str) -> FileStats:
        return self.stats_each([path])[0]

    def stats_each(self, paths: Sequence[str]) -> list[FileStats]:
        found = {path: row_stats(size, version) for path, size, version in self._conn().execute(
            "SELECT path, size, version FROM entries WHERE path = ANY(%s) AND NOT builtin", (list(paths),))}
        return [found.get(path, FileStats()) for path in paths]

    def total_size(self) -> int:
        return scalar(self._conn(), "SELECT total_size FROM store_state")

    def root_listing(self, index: EntryIndex) -> RowListing:
        """What `Memory` lists and plans reconciles with: the rows themselves (no folders to walk)."""
        return RowListing(self)


class RowListing:
    """`memdir.storage.directory.root_listing.RootListing`'s part for a database: a listing is one query, and
    a reconcile has no files to check (the index reconciles its own rows: `PostgresIndex.reconcile`)."""

    def __init__(self, adapter: PostgresAdapter) -> None:
        self.adapter = adapter
        self.stamps: dict[str, Stamp] = {}  # (no folders: nothing to stamp)

    def entries(self, keep: Callable[[str], bool], under: str | None = None) -> list[EntryInfo]:
        return [info for info in self.adapter.iter_entries(under=under) if keep(info.path)]

    def select(self, keep: Callable[[str], bool], under: str | None = None) -> Listed:
        return Listed(None, [], self.entries(keep, under))

    def as_files_say(self, infos: list[EntryInfo]) -> list[EntryInfo]:
        """The rows are the entries (no files to rewrite in place)."""
        return infos

    def warm(self) -> None:
        """Nothing to read ahead: each listing is one query."""

    def newest(self, under: str | None, limit: int, narrow: Narrowing = EVERY) -> Iterator[list[EntryInfo]]:
        return pages.newest(self.adapter._conn(), info_of, under, limit, narrow)

    def in_path_order(self, under: str | None, after: str | None, limit: int, narrow: Narrowing = EVERY) -> Iterator[list[EntryInfo]]:
        return pages.in_path_order(self.adapter._conn(), info_of, under, after, limit, narrow)

    def at_offset(self, under: str | None, offset: int, limit: int) -> list[EntryInfo]:
        return pages.at_offset(self.adapter._conn(), info_of, under, offset, limit)

    def count(self, under: str | None) -> int:
        return pages.count(self.adapter._conn(), under)

    def top_folders(self) -> list[str]:
        return pages.top_folders(self.adapter._conn())

    def plan(self, text_recipe: str, *, in_place_edits: bool) -> ReconcilePlan:
        return ReconcilePlan(files=[], covered=None, known={}, stamps=lambda failed: None)


def upsert_row(conn: Executes, row: HeldRow, stub: Redirect | None = None,
               search: SearchColumns | None = None) -> None:
    """The row of ``row.entry`` (a stub when ``stub``), inserted or replaced; with ``search``, its
    search columns in the same statement (the row then counts as indexed), else marked unindexed.
    The entry's read count is kept, or set to ``entry.hits`` when the write states it."""
    entry, meta = row.entry, row.entry.metadata
    columns: dict[str, Any] = {
        "path": entry.path, "content": entry.content, "title": entry.title, "metadata": metadata_json(meta),
        "updated_at": entry.updated_at, "size": entry.size, "embedding": entry.embedding,
        "embedding_checksum": entry.embedding_checksum, "embedding_model": entry.embedding_model,
        "embedding_text_hash": entry.embedding_text_hash, "stub_kind": stub.kind if stub else None,
        "stub_target": stub.target if stub else None, "type": None if stub else entry.type,
        "tags_folded": [] if stub else [str(tag).casefold() for tag in meta.tags], "folder": folder_of(entry.path),
        "version": row.version, "builtin": False, "indexed": None,
    }
    if search is not None:
        columns.update(
            length=search.length, text_hash=search.text_hash, vector_model=search.vector_model,
            vector_text_hash=search.vector_text_hash, importance=search.importance, hidden=search.hidden, counted=True,
            indexed=row.version,
        )
    names = ", ".join(columns)
    updates = ", ".join(f"{name} = EXCLUDED.{name}" for name in columns if name != "path")
    conn.execute(
        f"INSERT INTO entries ({names}) VALUES ({', '.join(['%s'] * len(columns))}) ON CONFLICT (path) DO UPDATE SET {updates}",
        list(columns.values()),
    )
    if row.hits_given:
        conn.execute(SET_HITS, (entry.hits, entry.path))


def _row_question(path: str) -> str:
    """The name under which the lock's round trip reads the row at ``path`` (`PostgresAdapter.will_read`)."""
    return f"row {path}"


def _vector(path: str, embedding: np.ndarray | None) -> tuple[np.ndarray | None, str | None]:
    """The embedding as stored (validated as the ``.emb`` writer validates it) and its checksum."""
    if embedding is None:
        return None, None
    data = encode_embedding(path, embedding)
    return np.frombuffer(data, EMBEDDING_DTYPE).astype(np.float32), embedding_checksum(data)


def as_array(value: Any) -> np.ndarray:
    """A vector column's value (pgvector's `Vector`) as float32."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def entry_of(row: Sequence[Any]) -> Entry:
    """An `Entry` from the columns `_ENTRY_COLUMNS` names."""
    (path, content, title, metadata, updated_at, size, hits, embedding, checksum, model, text_hash, stub_kind, _) = row
    if stub_kind:  # a stub: its text, and of its metadata only the owner it keeps
        owner = metadata_from_yaml(metadata).created_by
        return Entry(path=path, content=content, title=fallback_title(content, path), updated_at=updated_at, size=size,
                     metadata=Metadata(created_by=owner))
    return Entry(
        path=path, content=content, title=title, updated_at=updated_at, size=size, hits=hits,
        metadata=metadata_from_yaml(metadata), embedding=None if embedding is None else as_array(embedding),
        embedding_checksum=checksum, embedding_model=model, embedding_text_hash=text_hash,
    )


def info_of(row: Sequence[Any]) -> EntryInfo:
    """An `EntryInfo` from the columns `_INFO_COLUMNS` names (``mtime_ns`` carries the row's version)."""
    path, title, size, updated_at, type_, hits, version = row
    return EntryInfo(path=path, title=title, size=size, updated_at=updated_at, type=type_ or entry_type(None, path),
                     hits=hits, mtime_ns=version)
