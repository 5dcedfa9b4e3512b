"""The derived index of a memory root: keyword index, vector matrix and freshness data.

It lives in ``<root>/.memdir/index.sqlite3`` and is never the source of truth: every
row is rebuilt from the ``.md``/``.yml``/``.emb`` files when the file is missing,
damaged or stale (`DerivedIndex.reconcile`).

Keyword search runs on an in-memory inverted index (`memdir.storage.directory.postings`, FTS5's
BM25 formula) that also holds each entry's title, type and tags: SQLite FTS5 answers too slowly at
100K entries for a search's budget, and in-process BM25 libraries keep no index that several
processes can share and update one write at a time. SQLite remains the shared, persistent source:
``entry_terms`` stores each entry's term ids and per-column counts, written in the entry's
transaction, so opening builds the postings with numpy alone (the vectors come from a flat snapshot,
`memdir.storage.directory.snapshot`) and `refresh` applies other processes' changes to it exactly as
to the vector matrix.

Multi-process consistency: every change (upsert, remove) takes the next number of a
counter in ``meta`` and stamps it on the row (or, for removals, on a tombstone). Each
process keeps its own in-memory `VectorMatrix` and `KeywordIndex`; `refresh` asks SQLite whether anyone
else committed (``PRAGMA data_version``, no I/O when nothing changed) and, if so,
applies only the rows and tombstones newer than the last change it saw.

Callers change the index while holding the root's exclusive write lock (the same lock
that guards the files), so the files and the index change together. Each change also
records the root's file change counter (`memdir.storage.directory.changes`) it has caught up with, in
``meta``; a writer killed between committing its files and updating the index leaves the
counter ahead of that record, which `behind_files` reports to whoever must re-scan.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import astuple, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

import numpy as np

from memdir.core.entry import Entry
from memdir.core.errors import DiskFullError, ReadOnlyRootError, UnsafeFileError
from memdir.core.identity import Labels
from memdir.core.keywords import porter_stem, tokenize
from memdir.core.paths import disk_stem
from memdir.storage.base import Candidates, EntryRow, IndexBehindFiles, IndexStats
from memdir.storage.directory import index_db as sql
from memdir.storage.directory import listing_snapshot as listing_snapshots
from memdir.storage.directory import snapshot as snapshots
from memdir.storage.directory.changes import ChangeCounter
from memdir.storage.directory.index_db import stat_or_zero
from memdir.storage.directory.listing_rows import (
    ListingRows,
    RowChanges,
    RowTable,
    by_folder,
    changes_since,
    from_table,
    moved_on,
)
from memdir.storage.directory.postings import KeywordDoc, KeywordIndex
from memdir.storage.directory.vectors import Ranked, VectorMatrix
from memdir.storage.evolution_records import RecordFiles, latest_importance
from memdir.storage.records import Edge, EntryInfo, FileStats, ImportanceChange, RankFacts, Stamp

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)
T = TypeVar("T")

# BM25 column weights (FTS5's weighting, kept when the scoring moved into memory) for title,
# tags, domain, content: a word in the title says more about what an entry is about than
# the same word deep in its content.
DEFAULT_COLUMN_WEIGHTS = (4.0, 3.0, 2.0, 1.0)
# Tombstones kept for processes that lag behind; one further behind reloads everything.
TOMBSTONES_KEPT = 10_000
_RECONCILE_BATCH = 500
# A reconcile that changed this many rows (a rebuild, a bulk import) ends by optimising the keyword index.
OPTIMIZE_AFTER_CHANGES = 1_000
_LOAD_CHUNK = 4096
_FILES_CHANGE = "files_change"  # the meta key holding the file change counter the index reflects


class EntryWalk(Protocol):
    """What `listing` reads of a root's files (`memdir.storage.directory.filesystem.FilesystemAdapter`)."""

    root: Path

    def iter_entries(
        self, *, include_stubs: bool = False, include_virtual: bool = False, with_metadata: bool = True,
        under: str | None = None, folders: dict[str, os.stat_result | None] | None = None,
    ) -> Iterator[EntryInfo]: ...


def listing(
    adapter: EntryWalk, under: str | None = None, folders: dict[str, os.stat_result | None] | None = None
) -> Iterator[tuple[str, FileStats]]:
    """(path, stats) of every real entry of a filesystem adapter (or of its folder ``under``), stubs and built-ins left out.

    Uses the adapter's fast listing (one ``stat`` per ``.md``) plus one ``stat`` of the ``.yml``;
    ``folders`` receives the listed folders' mtimes (`memdir.storage.directory.scan.scan_entries`).
    """
    root = str(adapter.root)
    for info in adapter.iter_entries(with_metadata=False, under=under, folders=folders):
        yml = stat_or_zero(os.path.join(root, disk_stem(info.path)) + ".yml")
        yield info.path, FileStats(info.mtime_ns, info.size, yml[0], yml[1])


@dataclass(slots=True)
class ReconcileReport:
    """What `DerivedIndex.reconcile` did.

    Attributes:
        rebuilt: the index file was missing or unusable and was created afresh.
    """

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: list[str] = field(default_factory=list)
    rebuilt: bool = False


class DerivedIndex:
    """The derived index of one root (see the module docstring).

    Args:
        root: the memory root; the index lives in ``root/.memdir/``.
        column_weights: BM25 weights of title, tags, domain and content.
        in_memory: keep the index in this process's memory (seeded from the file when there
            is one) and never write under the root: a root opened read-only. A writable
            index whose file cannot be opened for writing (disk full, read-only mount) falls
            back to this too, so the root still opens.
        wal_limit: bytes the SQLite write-ahead log is kept under (`index_db.connect`).
        context_window: neighbours each side that a search's context coverage reads (0: off), found
            with its candidates (`candidates`).

    Attributes:
        vectors: the in-memory matrix of this process (read it under `lock`).
        keywords: the in-memory BM25 index and per-entry title/type/tags (under `lock`).
        rebuilt: True if opening found no usable index and started an empty one.
        in_memory: True if the index lives in this process only (see ``in_memory`` above).
        lock: serialises this process's threads; held by every public method.
    """

    def __init__(
        self,
        root: Path | str,
        *,
        column_weights: Sequence[float] = DEFAULT_COLUMN_WEIGHTS,
        in_memory: bool = False,
        wal_limit: int = sql.DEFAULT_WAL_LIMIT,
        context_window: int = 0,
    ) -> None:
        self.root = Path(root)
        self.context_window = context_window
        self._near: _Near | None = None  # see `candidates`
        self.path = sql.index_path(self.root)
        self.in_memory = in_memory
        self.wal_limit = wal_limit
        self.column_weights = tuple(float(w) for w in column_weights)
        self.lock = threading.RLock()
        self.vectors = VectorMatrix()
        self.keywords = KeywordIndex(self.column_weights, renumbered=self.vectors.renumber_keys)
        self.rebuilt = False
        self._db: sqlite3.Connection | None = None
        self._ino: int | None = None
        self._seq = 0
        self._generation = ""
        self._data_version: int | None = None
        self.changes = ChangeCounter(self.root)
        self._files_change = 0  # the file change counter the index has caught up with
        self._ahead = threading.local()  # .commits: file commits this thread's index changes anticipate
        self._listing: ListingRows | None = None  # see `listing`
        self._hidden: tuple[tuple[str, int] | None, frozenset[str]] = (None, frozenset())  # see `hidden`
        self._open()

    # ------------------------------------------------------------------ opening
    def _open(self, *, seed: bool = True) -> None:
        """Connect, rebuilding from scratch if the file is unusable, and load the vector matrix."""
        if not self.in_memory:
            try:
                self._open_file()
                return
            except sql.IndexUnwritable as exc:
                log.warning("keeping the derived index in memory (the file cannot be written: %s)", exc)
                self.in_memory = True
        db = sql.connect(None)
        existed = seed and sql.copy_into_memory(self.path, db)
        self._db, self._ino = db, None
        self._start(existed)

    def _open_file(self) -> None:
        existed = self.path.exists()
        try:
            db = sql.connect(self.path, wal_limit=self.wal_limit)
        except sql.IndexUnusable as exc:
            log.warning("rebuilding the derived index: %s", exc)
            sql.remove_files(self.path)
            db = sql.connect(self.path, wal_limit=self.wal_limit)
            existed = False
        self._db = db
        self._ino = os.stat(self.path).st_ino
        self._start(existed)

    def _start(self, existed: bool) -> None:
        """Load the opened index; a new one (``existed`` False) is rebuilt from the files and
        takes the recorded recalibrations."""
        self.rebuilt = self.rebuilt or not existed
        self._load_all()
        if not existed:
            self._replay_importance()

    def _reopen(self, *, discard: bool = False) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if discard:
            if not self.in_memory:
                sql.remove_files(self.path)
            self.rebuilt = True
        self._open(seed=not discard)

    def keep_in_memory(self) -> None:
        """Go on in memory, seeded from the file, which is no longer written (it could not be:
        a full disk, a read-only mount). The files stay the truth; a later open writes it again."""
        with self.lock:
            self.in_memory = True
            self._reopen()

    def close(self) -> None:
        with self.lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> DerivedIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("the derived index is closed")
        return self._db

    def _load_all(self, *, in_transaction: bool = False) -> None:
        """Fill the keyword index and the vector matrix from SQLite, in one read transaction."""
        db = self.db
        if not in_transaction:
            db.execute("BEGIN")  # one snapshot for the counter and the rows
        try:
            self._seq = sql.meta_int(db, "seq")
            self._generation = sql.meta_text(db, "generation")
            self._files_change = sql.meta_int(db, _FILES_CHANGE)
            self.keywords.clear()
            self.keywords.learn(db.execute("SELECT term, id FROM terms"))
            rows = db.execute(
                "SELECT e.id, e.path, e.title, e.type, e.tags, t.term_ids, t.counts, t.length FROM entries e"
                " JOIN entry_terms t ON t.id = e.id WHERE e.is_stub = 0 ORDER BY e.id"
            ).fetchall()
            ids, paths, titles, types, tags, term_ids, counts, lengths = (
                (list(column) for column in zip(*rows)) if rows else ([],) * 8
            )
            del rows  # the term blobs are ~100 MB at 100K entries: free them before the vectors come in
            self.keywords.load(paths, titles, types, tags, term_ids, counts, lengths, ids)
            del term_ids, counts
            self._load_vectors(db, np.asarray(ids, dtype=np.int64), paths, types, tags)
        finally:
            if not in_transaction:
                db.execute("COMMIT")
            self._data_version = db.execute("PRAGMA data_version").fetchone()[0]

    def _load_vectors(
        self, db: sqlite3.Connection, ids: np.ndarray, paths: list[str], types: list[str | None], tags: list[str]
    ) -> None:
        """Fill the matrix: from the vector snapshot plus the rows changed since it, or all from SQLite.

        Every vector belongs to a non-stub entry, whose path, type and tags the keyword rows
        (``ids`` ascending, with the parallel lists) already hold, so vectors are read alone
        and matched to those rows by id (no second join over ``entries``). Vectors of
        another dimension than the newest one (a model change half done) are left out: they
        cannot be compared with current queries and need re-embedding.
        """
        newest = db.execute(
            "SELECT length(v.vector) FROM vectors v JOIN entries e ON e.id = v.id"
            " WHERE e.is_stub = 0 ORDER BY e.seq DESC LIMIT 1"
        ).fetchone()
        if newest is None or newest[0] < 4 or not len(ids):
            self.vectors.clear()
            return
        size = newest[0]
        loaded = self._vectors_from_snapshot(db, size)
        if loaded is None:
            vector_ids, models, matrix = self._read_vectors(
                db, "SELECT id, model_id, vector FROM vectors WHERE length(vector) = ?", (size,), len(ids)
            )
            stale = len(vector_ids) >= snapshots.MIN_ROWS
            if not stale and not self.in_memory:  # a small root (again): a snapshot left from bigger days is dead weight
                snapshots.snapshot_path(self.path).unlink(missing_ok=True)
        else:
            vector_ids, models, matrix, stale = loaded
        at = np.minimum(np.searchsorted(ids, vector_ids), len(ids) - 1)
        known = ids[at] == vector_ids
        if not known.all():  # a vector whose entry is a stub or gone: leave it out
            matrix, vector_ids = matrix[known], vector_ids[known]
            models = [model for model, keep in zip(models, known.tolist()) if keep]
        rows = at[known].tolist()
        self.vectors.load(  # (an entry's key is its keyword slot: its place among the rows read)
            [paths[i] for i in rows], matrix, [types[i] for i in rows], [tags[i] for i in rows], models, keys=at[known]
        )
        if stale and not self.in_memory:  # an index kept in memory writes nothing under the root
            snapshot = snapshots.VectorSnapshot(self._generation, self._seq, vector_ids, models, matrix)
            snapshots.write_snapshot(snapshots.snapshot_path(self.path), snapshot)

    @staticmethod
    def _read_vectors(
        db: sqlite3.Connection, query: str, params: tuple[Any, ...], capacity: int
    ) -> tuple[np.ndarray, list[str | None], np.ndarray]:
        """(ids, models, matrix) of the (id, model_id, vector) rows ``query`` returns, streamed in chunks
        into one preallocated array of ``capacity`` rows (the caller's bound on the row count)."""
        cursor = db.execute(query, params)
        matrix: np.ndarray | None = None
        vector_ids: list[int] = []
        models: list[str | None] = []
        filled = 0
        while chunk := cursor.fetchmany(_LOAD_CHUNK):
            chunk = chunk[: capacity - filled]
            if not chunk:
                break
            flat = np.frombuffer(b"".join([row[2] for row in chunk]), dtype="<f4")
            if matrix is None:
                matrix = np.empty((capacity, flat.size // len(chunk)), dtype=np.float32)
            matrix[filled : filled + len(chunk)] = flat.reshape(len(chunk), -1)
            vector_ids.extend([row[0] for row in chunk])
            models.extend([row[1] for row in chunk])
            filled += len(chunk)
        if matrix is None:
            return np.zeros(0, dtype=np.int64), [], np.zeros((0, 0), dtype=np.float32)
        return np.asarray(vector_ids, dtype=np.int64), models, matrix[:filled]

    def _vectors_from_snapshot(
        self, db: sqlite3.Connection, size: int
    ) -> tuple[np.ndarray, list[str | None], np.ndarray, bool] | None:
        """(ids, models, matrix, worth re-snapshotting) from a usable snapshot plus the rows changed
        since it; None when there is no usable snapshot (see `memdir.storage.directory.snapshot`)."""
        snap = snapshots.read_snapshot(snapshots.snapshot_path(self.path))
        if (
            snap is None
            or snap.generation != self._generation
            or snap.seq > self._seq
            or snap.matrix.shape[1] * 4 != size
        ):
            return None
        changed = np.fromiter(
            (row[0] for row in db.execute("SELECT id FROM entries WHERE seq > ?", (snap.seq,))), dtype=np.int64
        )
        fresh_ids, fresh_models, fresh = self._read_vectors(
            db,
            "SELECT v.id, v.model_id, v.vector FROM vectors v JOIN entries e ON e.id = v.id"
            " WHERE e.seq > ? AND length(v.vector) = ?",
            (snap.seq, size),
            len(changed),
        )
        stale = snapshots.is_stale(len(changed), len(snap.ids))
        keep = ~np.isin(snap.ids, changed)
        if keep.all() and not len(fresh_ids):
            return snap.ids, snap.models, snap.matrix, stale  # nothing changed: no copy at all
        kept = int(keep.sum())
        matrix = np.empty((kept + len(fresh_ids), snap.matrix.shape[1]), dtype=np.float32)
        np.compress(keep, snap.matrix, axis=0, out=matrix[:kept])
        matrix[kept:] = fresh.reshape(len(fresh_ids), -1)
        models = [*(model for model, k in zip(snap.models, keep.tolist()) if k), *fresh_models]
        return np.concatenate([snap.ids[keep], fresh_ids]), models, matrix, stale

    # ------------------------------------------------------------------ other processes
    def _file_replaced(self) -> bool:
        """True if the index file on disk is no longer the one this process has open."""
        if self.in_memory:
            return False
        try:
            return os.stat(self.path).st_ino != self._ino
        except FileNotFoundError:
            return True

    def refresh(self) -> bool:
        """Apply other processes' changes to the in-memory matrix; True if anything changed.

        Costs one ``PRAGMA data_version`` (and one ``stat``) when nothing changed.
        If the index file was deleted, this process keeps its current view until
        `reconcile` rebuilds it; if another process replaced it, it is reopened.
        """
        with self.lock:
            if self.in_memory:  # only this process changes it
                return False
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                return False
            if st.st_ino != self._ino:
                self._reopen()
                return True
            version = self.db.execute("PRAGMA data_version").fetchone()[0]
            if version == self._data_version:
                return False
            self._data_version = version
            db = self.db
            db.execute("BEGIN")
            try:
                return self._catch_up(db)
            finally:
                db.execute("COMMIT")

    def _catch_up(self, db: sqlite3.Connection) -> bool:
        """Apply rows and tombstones newer than ``self._seq`` (inside a transaction, for one snapshot)."""
        seq = sql.meta_int(db, "seq")
        if sql.meta_text(db, "generation") != self._generation or self._seq < sql.meta_int(db, "tombstone_floor"):
            self._load_all(in_transaction=True)
            return True
        if seq == self._seq:
            return False
        self._files_change = sql.meta_int(db, _FILES_CHANGE)
        for (path,) in db.execute("SELECT path FROM tombstones WHERE seq > ?", (self._seq,)):
            self.vectors.remove(path)
            self.keywords.remove(path)
        self.keywords.learn(db.execute("SELECT term, id FROM terms WHERE id > ?", (self.keywords.vocab_max,)))
        changed = db.execute(
            "SELECT e.id, e.path, e.title, e.type, e.tags, e.is_stub, v.model_id, v.vector, t.term_ids, t.counts,"
            " t.length"
            " FROM entries e LEFT JOIN vectors v ON v.id = e.id LEFT JOIN entry_terms t ON t.id = e.id"
            " WHERE e.seq > ? ORDER BY e.seq",
            (self._seq,),
        )
        for row_id, path, title, type_, tags, is_stub, model_id, blob, ids, counts, length in changed:
            if is_stub or ids is None:
                self.keywords.remove(path)
            else:
                self.keywords.add(
                    KeywordDoc(
                        path, title, type_, tuple(sql.split_tags(tags)), np.frombuffer(ids, dtype="<u4"),
                        np.frombuffer(counts, dtype="<u2").reshape(-1, 4), length, row_id=row_id,
                    )
                )  # fmt: skip
            if blob is None or is_stub:
                self.vectors.remove(path)
            else:
                self.vectors.upsert(
                    path, np.frombuffer(blob, dtype="<f4"), type=type_, tags=sql.split_tags(tags), model=model_id,
                    key=self._key_of(path),
                )
        self._seq = seq
        return True

    def behind_files(self) -> bool:
        """True if entries' files changed in a way no index change has recorded since.

        That is a writer between committing its files and updating the index, or one killed
        there: the caller re-scans (`reconcile`) once no writer holds the root's lock. Costs
        a `refresh` and one small file read.
        """
        with self.lock:
            self.refresh()
            return self.changes.value() != self._files_change

    @contextmanager
    def _writing(self, *, files_seen: bool = True) -> Iterator[tuple[sqlite3.Connection, int]]:
        """One write transaction: catch up with others first, claim a change number, commit.

        ``files_seen``: once committed, the index reflects every file change so far, so the
        current file change counter is recorded with it (a reconcile's batches pass False
        until its last step: a re-scan killed half-way must stay visible as one).
        """
        with self.lock, self._translated_errors():
            if self._file_replaced():
                self._reopen()
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            try:
                self._catch_up(db)
                seq = sql.next_seq(db)
                yield db, seq
                if files_seen:
                    files_change = self.changes.value() + getattr(self._ahead, "commits", 0)
                    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (_FILES_CHANGE, str(files_change)))
                else:
                    files_change = self._files_change
                db.execute("COMMIT")  # may fail too (a full disk fails here): rolled back then
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            self._seq, self._files_change = seq, files_change
            self._data_version = db.execute("PRAGMA data_version").fetchone()[0]

    @contextmanager
    def ahead_of_files(self) -> Iterator[None]:
        """Index changes made here belong to a file change about to be committed: `Memory`
        updates the index between staging the files and the commit point (so a full disk
        changes neither), and the commit then raises the change counter by one. They record
        that raised value, so the index does not read as lagging behind its own change;
        should the commit never come, the counter is not at that value (and recovery raises
        it by two), so `behind_files` still reports it."""
        self._ahead.commits = 1
        try:
            yield
        finally:
            self._ahead.commits = 0

    @contextmanager
    def _translated_errors(self) -> Iterator[None]:
        """SQLite's "database or disk is full" and "attempt to write a readonly database" as
        memdir's `DiskFullError` and `ReadOnlyRootError`; other errors pass unchanged."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            if code == sqlite3.SQLITE_FULL:
                raise DiskFullError(self.root, "the derived index could not grow") from exc
            if code == sqlite3.SQLITE_READONLY:
                raise ReadOnlyRootError(self.root, "its derived index cannot be written") from exc
            raise

    # ------------------------------------------------------------------ changes
    def upsert(
        self,
        entry: Entry,
        stats: FileStats,
        text_hash: str | None,
        model_id: str | None = None,
        *,
        vector_text_hash: str | None = None,
    ) -> None:
        """Insert or replace the row of ``entry`` (caller holds the root's write lock).

        Args:
            entry: the entry as just written (its ``embedding`` becomes the row's vector).
            stats: the entry's file stats after the write (`memdir.storage.directory.filesystem.file_stats`).
            text_hash: hash of the entry's current searchable text.
            model_id: the model that made ``entry.embedding`` (None: unknown).
            vector_text_hash: hash of the text the vector was made from, if not ``text_hash``.
        """
        self._upsert_rows([(entry, stats, text_hash, model_id, vector_text_hash or text_hash)])

    def upsert_many(self, items: Iterable[tuple[Entry, FileStats, str | None, str | None]]) -> int:
        """`upsert` of many (entry, stats, text_hash, model_id) in one transaction (bulk loads, rebuilds)."""
        return self._upsert_rows([(entry, stats, h, model, h) for entry, stats, h, model in items])

    def restamp_metadata(self, items: Sequence[tuple[Entry, FileStats, str | None, str | None, str | None]]) -> None:
        """Rows of entries whose ``.yml`` alone was rewritten — importance, archived or superseded
        state, links (`Memory.update_metadata_many`) — in one transaction: their terms, tags and
        vectors stay. Items are (entry, stats, text_hash, model_id, vector_text_hash), as `upsert`
        takes them for an entry without a searchable row yet."""
        items = list(items)
        with self._writing() as (db, seq):
            whole = [item for item in items if not sql.restamp_metadata_row(db, item[0], item[1], seq)]
        if whole:
            self._upsert_rows(whole)

    def set_vectors(self, items: Iterable[tuple[Entry, FileStats, str | None, str | None]]) -> int:
        """New vectors for entries whose text is unchanged (re-embedding), in one transaction.

        Like `upsert_many` for (entry, stats, text_hash, model_id), but an entry the index
        already holds keeps its keyword row: only its file stats, change number and vector
        are written, so a rebuild does not re-tokenise every entry. Entries without a
        searchable row get the full `upsert`.
        """
        with self.lock:  # readers see the rows and the in-memory indexes change together
            items = list(items)
            full: list[tuple[Entry, FileStats, str | None, str | None, str | None]] = []
            with self._writing() as (db, seq):
                for entry, stats, text_hash, model_id in items:
                    vector = entry.embedding
                    row_id = sql.restamp_row(db, entry.path, stats, text_hash, seq) if vector is not None else None
                    if row_id is None or vector is None:
                        full.append((entry, stats, text_hash, model_id, text_hash))
                        continue
                    sql.write_vector(db, row_id, model_id, text_hash, vector)
            needs_full = {entry.path for entry, *_ in full}
            for entry, _, _, model_id in items:
                if entry.path not in needs_full and entry.embedding is not None:  # (restamped: it has one)
                    self.vectors.upsert(entry.path, entry.embedding, type=entry.type, tags=entry.metadata.tags,
                                        model=model_id, key=self._key_of(entry.path))
            if full:
                self._upsert_rows(full)
            return len(items)

    def _upsert_rows(self, items: list[tuple[Entry, FileStats, str | None, str | None, str | None]]) -> int:
        with self.lock:  # readers see the rows and the in-memory indexes change together
            docs: list[KeywordDoc | None] = []
            with self._writing() as (db, seq):
                for entry, stats, text_hash, model_id, vector_hash in items:
                    row_id, doc = sql.write_row(db, entry, stats, text_hash, seq)
                    docs.append(doc)
                    if row_id is not None and entry.embedding is not None:  # (a row id comes only with a vector)
                        sql.write_vector(db, row_id, model_id, vector_hash, entry.embedding)
            for (entry, _, _, model_id, _), doc in zip(items, docs):
                self._apply(entry, model_id, doc)
            return len(items)

    def _key_of(self, path: str) -> int:
        """The key search knows the entry ``path`` by: its keyword slot (-1: none)."""
        slot = self.keywords.slot_of(path)
        return -1 if slot is None else slot

    def _apply(self, entry: Entry, model_id: str | None, doc: KeywordDoc | None) -> None:
        """Mirror a committed row in the matrix and the keyword index (``doc`` None: a stub)."""
        if doc is None:
            self.keywords.remove(entry.path)
        else:
            self.keywords.add(doc)
        is_stub = doc is None
        if entry.embedding is None or is_stub:
            self.vectors.remove(entry.path)
        else:
            self.vectors.upsert(
                entry.path, entry.embedding, type=entry.type, tags=entry.metadata.tags, model=model_id,
                key=self._key_of(entry.path),
            )

    def record_hits(
        self, path: str, hits: int, before: FileStats, after: FileStats, at: datetime | None = None
    ) -> None:
        """A counted read rewrote the ``.yml`` of ``path`` (its files' stats went from ``before`` to
        ``after``): a row that was fresh before takes the new count and stats; any other stays stale.
        Either way the row records ``at`` (now) as its last access, for ranking's recency."""
        at = at or datetime.now(UTC)
        with self._writing() as (db, seq):
            db.execute(
                "UPDATE entries SET hits = ?, yml_mtime_ns = ?, yml_size = ?, seq = ? WHERE path = ?"
                " AND md_mtime_ns = ? AND md_size = ? AND yml_mtime_ns = ? AND yml_size = ?",
                (hits, after.yml_mtime_ns, after.yml_size, seq, path, *astuple(before)),
            )
            db.execute("UPDATE entries SET accessed_at = ? WHERE path = ?", (at.isoformat(), path))

    def remove(self, path: str) -> bool:
        """Drop the row of ``path``, leaving a tombstone for other processes; False if it had none."""
        with self.lock:  # readers see the rows and the in-memory indexes change together
            with self._writing() as (db, seq):
                found = db.execute("SELECT id FROM entries WHERE path = ?", (path,)).fetchone()
                if found:
                    sql.delete_row(db, found[0], path, seq)
            self.vectors.remove(path)
            self.keywords.remove(path)
            return found is not None

    # ------------------------------------------------------------------ reconcile with the files
    def reconcile(
        self,
        files: Iterable[tuple[str, FileStats]],
        load: Callable[[str], Entry],
        text_hash_of: Callable[[Entry], str],
        *,
        text_recipe: str | None = None,
        covered: Callable[[str], bool] | None = None,
        known: Mapping[str, tuple[int, tuple[int, ...]]] | None = None,
    ) -> ReconcileReport:
        """Bring the index in line with the files (at open; caller holds the root's write lock).

        Entries whose ``.md``/``.yml`` mtime or size differ from their row are re-read
        with ``load``; rows of vanished files are dropped. A missing, replaced or
        damaged index file is rebuilt from scratch first. When ``text_recipe`` differs
        from the one the rows were hashed with, every entry is re-read, so that vectors
        whose searchable text the new recipe changes count as needing re-embedding
        (``files`` must then name every entry: `recipe_changed` tells).

        Args:
            files: (path, `FileStats`) of every entry on disk (see `listing`), or of those
                in the folders ``covered`` says were listed, plus any others to check.
            load: reads one entry (with its embedding) from the files.
            text_hash_of: hash of an entry's searchable text (it depends on settings).
            text_recipe: `memdir.embeddings.text.text_recipe` of the caller's settings.
            covered: True for a row whose entry ``files`` would name if it still existed (its
                folder was listed); rows it is False for are kept when ``files`` leaves them out.
                None: ``files`` names every entry.
            known: `freshness` as the caller read it under the same lock (saves reading it again).
        """
        report = ReconcileReport()
        with self.lock:
            if self._file_replaced():
                self._reopen()
                known = None
            try:
                known = self.freshness() if known is None or self.rebuilt else known
            except sqlite3.DatabaseError as exc:  # damaged after opening: start again from the files
                log.warning("rebuilding the derived index: %s", exc)
                self._reopen(discard=True)
                known = self.freshness()
            report.rebuilt = self.rebuilt
            rehash = text_recipe is not None and sql.meta_text(self.db, "text_recipe") != text_recipe
            changed: list[tuple[str, FileStats]] = []
            seen: set[str] = set()
            for path, stats in files:
                seen.add(path)
                row = known.get(path)
                fresh = row is not None and row[1] == (stats.md_mtime_ns, stats.md_size, stats.yml_mtime_ns, stats.yml_size)
                if fresh and not rehash:
                    report.unchanged += 1
                else:
                    changed.append((path, stats))
            vanished = [
                (path, row[0]) for path, row in known.items() if path not in seen and (covered is None or covered(path))
            ]
            if vanished:
                with self.lock:  # readers see the rows and the in-memory indexes change together
                    with self._writing(files_seen=False) as (db, seq):
                        for path, row_id in vanished:
                            sql.delete_row(db, row_id, path, seq)
                    for path, _ in vanished:
                        self.vectors.remove(path)
                        self.keywords.remove(path)
                report.removed = len(vanished)
            for start in range(0, len(changed), _RECONCILE_BATCH):
                self._reload(changed[start : start + _RECONCILE_BATCH], known, load, text_hash_of, report)
            if rehash:
                with self._writing() as (db, _):
                    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('text_recipe', ?)", (text_recipe,))
            self._prune_tombstones()
            if report.added + report.updated + report.removed >= OPTIMIZE_AFTER_CHANGES:
                self.optimize()
                sql.checkpoint(self.db)  # a bulk load's log need not wait for the next writer
            if self.changes.value() != self._files_change:
                with self._writing():  # every file change is in now: record the counter
                    pass
            self.rebuilt = False
        return report

    def freshness(self) -> dict[str, tuple[int, tuple[int, ...]]]:
        """path -> (row id, (md mtime, md size, yml mtime, yml size)) of every row."""
        query = "SELECT path, id, md_mtime_ns, md_size, yml_mtime_ns, yml_size FROM entries"
        with self.lock:
            return {row[0]: (row[1], row[2:]) for row in self.db.execute(query)}

    def recipe_changed(self, text_recipe: str) -> bool:
        """True if the rows were hashed with another searchable-text recipe: a reconcile must re-read every entry."""
        with self.lock:
            return sql.meta_text(self.db, "text_recipe") != text_recipe

    def folder_stamps(self) -> dict[str, Stamp]:
        """The folder stamps the last reconcile recorded (`memdir.storage.directory.folder_stamps`); empty if none."""
        with self.lock:
            return {prefix: Stamp(mtime, ino) for prefix, mtime, ino in self.db.execute("SELECT prefix, mtime_ns, ino FROM folders")}

    def record_folder_stamps(self, stamps: Mapping[str, Stamp] | None) -> None:
        """Replace the recorded folder stamps (caller holds the root's write lock); None forgets them
        (the next reconcile walks the whole root). Nothing is written when they are unchanged."""
        stamps = dict(stamps or {})
        if stamps == self.folder_stamps():
            return
        with self._writing(files_seen=False) as (db, _):
            db.execute("DELETE FROM folders")
            db.executemany("INSERT INTO folders(prefix, mtime_ns, ino) VALUES (?, ?, ?)", [(p, *s) for p, s in stamps.items()])

    def _reload(
        self,
        batch: list[tuple[str, FileStats]],
        known: Mapping[str, tuple[int, tuple[int, ...]]],
        load: Callable[[str], Entry],
        text_hash_of: Callable[[Entry], str],
        report: ReconcileReport,
    ) -> None:
        loaded: list[tuple[Entry, FileStats, str]] = []
        for path, stats in batch:
            try:
                entry = load(path)
                loaded.append((entry, stats, text_hash_of(entry)))
            except Exception as exc:  # vanished meanwhile, unreadable: leave it out, say so
                log.warning("not indexing %s: %s", path, exc)
                report.failed.append(path)
        applied: list[tuple[Entry, str | None, KeywordDoc | None]] = []
        with self._writing(files_seen=False) as (db, seq):
            for entry, stats, current_hash in loaded:
                old = db.execute(
                    "SELECT v.vector, v.model_id, v.text_hash FROM vectors v JOIN entries e ON e.id = v.id"
                    " WHERE e.path = ?",
                    (entry.path,),
                ).fetchone()
                if entry.virtual and old is not None:  # a built-in's vector lives in this index alone: keep it
                    vector = np.frombuffer(old[0], dtype="<f4").copy()
                    kept = {"embedding": vector, "embedding_model": old[1], "embedding_text_hash": old[2]}
                    entry = entry.model_copy(update=kept)
                row_id, doc = sql.write_row(db, entry, stats, current_hash, seq)
                vector_model = None
                if row_id is not None and entry.embedding is not None:  # (a row id comes only with a vector)
                    if entry.embedding_model is not None:  # its .yml says which model made it, from what text
                        vector_model, vector_hash = entry.embedding_model, entry.embedding_text_hash
                    elif old is not None and old[0] == sql.vector_bytes(entry.embedding):  # as before: keep our record
                        vector_model, vector_hash = old[1], old[2]
                    else:  # of unknown origin (SwarmMemory's, copied by hand): never compared, re-embedded
                        vector_model, vector_hash = None, None
                    sql.write_vector(db, row_id, vector_model, vector_hash, entry.embedding)
                applied.append((entry, vector_model, doc))
                if entry.path in known:
                    report.updated += 1
                else:
                    report.added += 1
        for entry, vector_model, doc in applied:
            self._apply(entry, vector_model, doc)

    def _prune_tombstones(self) -> None:
        """Keep the newest `TOMBSTONES_KEPT` tombstones; a process older than the rest reloads fully."""
        count = self.db.execute("SELECT count(*) FROM tombstones").fetchone()[0]
        if count <= TOMBSTONES_KEPT:
            return
        with self._writing(files_seen=False) as (db, _):
            floor = db.execute(
                "SELECT seq FROM tombstones ORDER BY seq DESC LIMIT 1 OFFSET ?", (TOMBSTONES_KEPT,)
            ).fetchone()[0]
            db.execute("DELETE FROM tombstones WHERE seq <= ?", (floor,))
            db.execute("UPDATE meta SET value = ? WHERE key = 'tombstone_floor'", (str(floor),))

    def optimize(self) -> None:
        """Refresh SQLite's planner statistics after a reconcile that changed many rows."""
        with self._writing(files_seen=False) as (db, _):
            sql.optimize(db)

    def clear(self) -> None:
        """Drop every row (a full rebuild follows); other processes notice and reload."""
        with self.lock:  # readers see the rows and the in-memory indexes change together
            with self._writing(files_seen=False) as (db, _):
                for table in ("entries", "vectors", "entry_tags", "entry_terms", "links", "tombstones", "folders"):
                    db.execute(f"DELETE FROM {table}")  # noqa: S608 — fixed table names
                db.execute("UPDATE meta SET value = lower(hex(randomblob(16))) WHERE key = 'generation'")
                self._generation = sql.meta_text(db, "generation")
            self.vectors.clear()
            self.keywords.load(*([],) * 7)

    # ------------------------------------------------------------------ queries
    def keyword_search(
        self,
        keywords: Sequence[str],
        *,
        limit: int = 50,
        types: Sequence[str] | None = None,
        path_prefix: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 over title, tags, domain and content for entries containing any keyword.

        Filters apply before the ``limit`` cut. Returns (path, score), best first; scores
        are positive and unbounded (FTS5's ``bm25()``, see `memdir.storage.directory.postings`).
        """
        terms = [porter_stem(term) for word in keywords for term in tokenize(word, min_len=1)]
        with self.lock:
            slots, scores = self.keywords.search(terms, limit, types=types, path_prefix=path_prefix, tags=tags)
            paths = self.keywords.paths
            return [(paths[slot], score) for slot, score in zip(slots.tolist(), scores.tolist())]

    def rows(self, paths: Sequence[str]) -> dict[str, EntryRow]:
        """Title, type, tags and words of the given entries (paths without a row are left out)."""
        with self.lock:
            return sql.entry_rows(self.db, paths)

    def tags(self, paths: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The tags of the given entries (paths without a row are left out)."""
        with self.lock:
            return sql.entry_tags(self.db, paths)

    def recorded_stats(self, paths: Sequence[str]) -> dict[str, tuple[int, int, int, int]]:
        """path -> (md mtime, md size, yml mtime, yml size) the rows of ``paths`` record (no row: left out)."""
        with self.lock:
            return {row[0]: tuple(row[5:]) for row in sql.listing_rows(self.db, paths)}

    def describe(self, stats: Mapping[str, FileStats]) -> dict[str, EntryInfo]:
        """Listing rows (title, type, hits, updated_at) for the entries whose row is as fresh as
        their files (``stats``, see `listing`); the others are left out, to be read from the files.

        A read that counts a hit rewrites the ``.yml`` without touching the index, so a row
        never serves a hit count that is out of date: its stats no longer match.
        """
        found: dict[str, EntryInfo] = {}
        with self.lock:
            for path, title, type_, hits, updated_at, *row_stats in sql.listing_rows(self.db, list(stats)):
                st = stats[path]
                if not title or not updated_at or tuple(row_stats) != (st.md_mtime_ns, st.md_size, st.yml_mtime_ns, st.yml_size):
                    continue
                found[path] = EntryInfo(
                    path=path, title=title, size=st.md_size, updated_at=datetime.fromisoformat(updated_at),
                    type=type_, hits=hits, mtime_ns=st.md_mtime_ns,
                )
        return found

    def listing(self) -> ListingRows:
        """The listing rows of every entry (stubs and built-ins left out), brought up to date
        with every process's changes (`memdir.storage.directory.listing_rows`).

        Read in one transaction, so the rows and the file change counter they record are of
        one state. A writer's rows staged ahead of its files' commit point (`ahead_of_files`)
        record the counter value that commit will raise it to: a caller compares that with
        the counter on disk to know the files are there. Whether the files changed by hand
        since is the caller's to check (`memdir.storage.directory.folder_stamps`). The rows are built
        outside the index's lock (100K of them take ~0.15 s), so searches meanwhile do not wait.
        A process's first rows start from the listing snapshot when it has a usable one
        (`memdir.storage.directory.listing_snapshot`), which this writes anew when it is missing or stale.
        """
        with self.lock:
            self.refresh()  # (reopens an index file another process replaced)
            rows = self._listing
        snapshot = self._listing_snapshot() if rows is None else None
        with self.lock:
            db = self.db
            db.execute("BEGIN")
            try:
                changes = changes_since(db, rows or snapshot, sql.meta_int(db, _FILES_CHANGE))
            finally:
                db.execute("COMMIT")
        current = moved_on(rows or snapshot, changes)
        if rows is None and not self.in_memory:
            self._keep_listing_snapshot(current, changes, snapshot is not None)
        with self.lock:  # kept unless another thread meanwhile kept newer rows
            kept = self._listing
            if kept is None or kept.generation != current.generation or kept.seq <= current.seq:
                self._listing = current
        return current

    def _keep_listing_snapshot(self, rows: ListingRows, changes: RowChanges, had_one: bool) -> None:
        """Write the listing snapshot anew if a large root had none, or one far behind ``rows``;
        remove it once the root is small (a snapshot never rewritten would only fall behind)."""
        path = self._listing_snapshot_path()
        if len(rows.slots) < snapshots.MIN_ROWS:
            if had_one:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
            return
        applied = len(changes.changed) + len(changes.removed)
        if not had_one or changes.whole or snapshots.is_stale(applied, len(rows.slots)):
            table, runs = by_folder(rows.live())
            listing_snapshots.write_listing_snapshot(path, rows.generation, rows.seq, table._asdict(), runs)

    def _listing_snapshot_path(self) -> Path:
        return listing_snapshots.snapshot_path(self.path)

    def _listing_snapshot(self) -> ListingRows | None:
        """The rows of the listing snapshot, as of its own change (None: none that can be read)."""
        if self.in_memory:
            return None
        read = listing_snapshots.read_listing_snapshot(self._listing_snapshot_path())
        if read is None:
            return None
        generation, seq, columns, runs = read
        return from_table(generation, seq, -1, RowTable(**columns), runs)

    def folder_file_stats(self, prefix: str) -> dict[str, tuple[int, int, int, int]]:
        """The files' stats the rows of the entries directly in folder ``prefix`` record (`index_db.folder_stats`)."""
        with self.lock:
            return sql.folder_stats(self.db, prefix)

    # ------------------------------------------------------------------ search (`memdir.storage.base.SearchIndex`)
    def reading(self, *, one_query: bool = False, caught_up_for: Sequence[str] | None = None) -> threading.RLock:
        """The matrix and the keyword index hold still while this process's lock is held (each
        search compares every vector: ``one_query`` changes nothing; ``caught_up_for``: only the check)."""
        if caught_up_for is not None and self.behind_files():
            raise IndexBehindFiles
        return self.lock

    def keyword_hits(
        self, terms: Sequence[str], limit: int, *, types: Sequence[str] | None = None,
        path_prefix: str | None = None, tags: Sequence[str] | None = None,
    ) -> dict[int, float]:
        """(Keys are keyword slots.)"""
        with self.lock:
            slots, scores = self.keywords.search(terms, limit, types=types, path_prefix=path_prefix, tags=tags)
            return dict(zip(slots.tolist(), scores.tolist()))

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        with self.lock:
            return self.keywords.idf(terms)

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        with self.lock:
            return {term: self.keywords.document_frequency(term) for term in terms}

    def semantic_hits(
        self, vector: np.ndarray, model: str | None, limit: int, *, types: Sequence[str] | None = None,
        path_prefix: str | None = None, tags: Sequence[str] | None = None, ef_search: int | None = None,
    ) -> _MatrixHits | None:
        """(``ef_search`` does not apply: the matrix sizes its first pass's pool itself, `VectorMatrix.ranked`.)"""
        with self.lock:
            matrix = self.vectors
            if matrix.dim != np.asarray(vector).shape[-1] or not len(matrix):
                return None
            if model is not None and not matrix.has_model(model):
                return None  # nothing embedded by this model yet (e.g. just switched): keyword mode
            mask = matrix.mask(types=types, path_prefix=path_prefix, tags=tags, model=model)
            ranked = matrix.ranked(vector, limit, mask)
            return _MatrixHits(matrix.keys_at(ranked.rows).tolist(), ranked.rows.tolist(), matrix.paths, ranked, mask,
                               matrix.rows_of_keys)

    def keys_of(self, paths: Sequence[str]) -> list[int]:
        """(Keys are keyword slots.)"""
        with self.lock:
            return self.keywords.slots_of(paths).tolist()

    def candidates(self, keys: Sequence[int], terms: Sequence[str]) -> Candidates:
        """(Paths, titles and types are read when asked for: a search shows a few of its candidates. With
        ``context_window`` and ``terms``, the candidates' neighbours, and which of them hold each term, are
        found with them, in one search of the postings, and kept for `neighbours` and `holding`.)"""
        with self.lock:
            kw = self.keywords
            slot_array = np.asarray(keys, dtype=np.int64)
            known = slot_array >= 0
            if not known.all():
                slot_array = slot_array[known]
            slots = slot_array.tolist()
            window = self.context_window if terms else 0
            if window:
                owner, near = kw.neighbours(slot_array, window)
                both = kw.holding(terms, np.concatenate([slot_array, near]))
                count = len(slots)
                contains = {term: held[:count] for term, held in both.items()}
                self._near = _Near(kw.changes, slots, window, owner, near, {term: held[count:] for term, held in both.items()})
            else:
                contains = kw.holding(terms, slot_array)
            return Candidates(
                keys=slots,
                paths=_Column(kw.paths, slots),
                titles=_Column(kw.titles, slots),
                types=_Column(kw.types, slots),
                tags=kw.tags_at(slots),
                contains=contains,
            )

    def neighbours(self, keys: Sequence[int], window: int) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            near = self._near
            if near is not None and near.changes == self.keywords.changes and keys is near.keys and window == near.window:
                return near.owner, near.near
            return self.keywords.neighbours(np.asarray(keys, dtype=np.int64), window)

    def holding(self, terms: Sequence[str], keys: np.ndarray) -> dict[str, np.ndarray]:
        with self.lock:
            near = self._near
            if (near is not None and near.changes == self.keywords.changes and keys is near.near
                    and all(term in near.held for term in terms)):
                return {term: near.held[term] for term in terms}
            return self.keywords.holding(terms, keys)

    def vector_snapshot(self, model_id: str | None) -> tuple[list[str], np.ndarray]:
        with self.lock:
            paths, matrix = self.vectors.snapshot()
            keep = [row for row, path in enumerate(paths) if self.vectors.model_of(path) == model_id]
        if len(keep) == len(paths):
            return paths, matrix
        return [paths[row] for row in keep], matrix[keep]

    def recently_used(self, limit: int) -> list[str]:
        """The ``limit`` entries an agent read last (never read: by when they were written), newest first."""
        query = ("SELECT path FROM entries WHERE is_stub = 0 AND hidden = 0"
                 " ORDER BY coalesce(accessed_at, updated_at) DESC, path LIMIT ?")
        with self.lock:
            return [row[0] for row in self.db.execute(query, (max(0, limit),))]

    def most_important(self, at_least: float, limit: int) -> list[str]:
        """The ``limit`` most important entries of importance ``at_least`` (as `rank_facts` says), most important first."""
        importance = sql.EFFECTIVE_IMPORTANCE
        query = (f"SELECT e.path FROM entries e LEFT JOIN recalibrated r ON r.path = e.path"
                 f" WHERE e.is_stub = 0 AND e.hidden = 0 AND {importance} >= ?"
                 f" ORDER BY {importance} DESC, coalesce(e.accessed_at, e.updated_at) DESC, e.path LIMIT ?")  # noqa: S608
        with self.lock:
            return [row[0] for row in self.db.execute(query, (at_least, max(0, limit)))]

    def labels(self, paths: Sequence[str] | None = None) -> dict[str, Labels]:
        """The access labels of the given entries (None: all); entries without labels are left out."""
        with self.lock:
            return sql.label_rows(self.db, paths)

    def linking_to(self, target: str) -> list[str]:
        """The entries whose ``related`` metadata links to the normalised path ``target``, in path order."""
        with self.lock:
            query = "SELECT e.path FROM links l JOIN entries e ON e.id = l.id WHERE l.target = ? ORDER BY e.path"
            return [row[0] for row in self.db.execute(query, (target,))]

    def edges(self, paths: Sequence[str], kinds: Sequence[str] | None = None) -> list[Edge]:
        """Every link from or to one of ``paths`` (of ``kinds``, when given): one hop of the graph."""
        with self.lock:
            return sql.edge_rows(self.db, paths, kinds)

    def hidden(self) -> frozenset[str]:
        """Archived and superseded entries (left out of search unless asked for): read again only
        after a change (a partial index keeps that query small however large the root)."""
        with self.lock:
            if self._hidden[0] != (self._generation, self._seq):
                paths = frozenset(row[0] for row in self.db.execute("SELECT path FROM entries WHERE hidden = 1"))
                self._hidden = ((self._generation, self._seq), paths)
            return self._hidden[1]

    def recalibrate(self, changes: Sequence[ImportanceChange]) -> None:
        """Keep recalibrated importance (`Memory.recalibrate_importance`, after recording it)."""
        with self._writing(files_seen=False) as (db, _):
            sql.recalibrate_rows(db, changes)

    def _replay_importance(self) -> None:
        """A new index holds no recalibration yet: take the last recorded one of each entry.
        A record memdir will not read (a link planted there, no permission) leaves the stated
        importance in force, and the root opens."""
        try:
            latest = latest_importance(RecordFiles(self.root))
        except (OSError, UnsafeFileError) as exc:
            log.warning("Recalibrated importance not restored from the importance history: %s", getattr(exc, "message", exc))
            return
        if latest:
            self.recalibrate(latest)

    def rank_facts(self, paths: Sequence[str]) -> dict[str, RankFacts]:
        """Importance, reads, last access and archived/superseded state of ``paths`` (`RankFacts`)."""
        with self.lock:
            return sql.rank_rows(self.db, paths)

    def needs_embedding(self, model_id: str | None) -> list[str]:
        """Entries to (re-)embed: no vector, a vector made from other text, or by another model.

        ``model_id=None`` checks only the first two (the model is not known yet).
        """
        query = (
            "SELECT e.path FROM entries e LEFT JOIN vectors v ON v.id = e.id WHERE e.is_stub = 0 AND"
            " (v.id IS NULL OR v.text_hash IS NOT e.text_hash"
            + (" OR v.model_id IS NOT ?)" if model_id is not None else ")")
        )  # (in row order, sorted here: walking the path index instead read the rows in random order, 10x slower at 100K)
        with self.lock:
            return sorted(row[0] for row in self.db.execute(query, (model_id,) if model_id is not None else ()))

    def stats(self, model_id: str | None = None) -> IndexStats:
        """Entry counts (stubs excluded); ``embedded`` counts current vectors of ``model_id``."""
        with self.lock:
            entries = self.db.execute("SELECT count(*) FROM entries WHERE is_stub = 0").fetchone()[0]
        stale = len(self.needs_embedding(model_id))
        return IndexStats(entries=entries, embedded=entries - stale, stale=stale)

    def __len__(self) -> int:
        with self.lock:
            return self.db.execute("SELECT count(*) FROM entries WHERE is_stub = 0").fetchone()[0]

    @property
    def seq(self) -> int:
        """The last change this process has seen."""
        return self._seq


@dataclass(frozen=True, slots=True)
class _Near:
    """The neighbours of a search's candidates (`DerivedIndex.candidates`), and which of them hold each
    of its terms, as of the keyword index's ``changes``."""

    changes: int
    keys: list[int]
    window: int
    owner: np.ndarray
    near: np.ndarray
    held: dict[str, np.ndarray]


class _Column(Sequence[T]):
    """The values of a per-slot list at some slots, each read when asked for."""

    __slots__ = ("_values", "_slots")

    def __init__(self, values: list[T], slots: list[int]) -> None:
        self._values, self._slots = values, slots

    def __len__(self) -> int:
        return len(self._slots)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self._values[slot] for slot in self._slots[i]]
        return self._values[self._slots[i]]


@dataclass(frozen=True, slots=True)
class _MatrixHits:
    """`memdir.storage.base.SemanticHits` over the in-memory matrix: the exact cosine of any candidate
    (`Ranked.cosines`). Keys are keyword slots (`VectorMatrix.keys_at`); the paths of the top rows and
    the cosines are read when asked for, inside the search's ``reading()``."""

    keys: list[int]
    rows: list[int]
    paths: Sequence[str]
    ranked: Ranked
    mask: np.ndarray | None
    rows_of: Callable[[np.ndarray], np.ndarray]

    @property
    def top(self) -> list[str]:
        return [self.paths[row] for row in self.rows]

    def cosines(self, keys: Sequence[int]) -> np.ndarray:
        rows = self.rows_of(np.asarray(keys, dtype=np.int64))
        known = rows >= 0
        if self.mask is not None:
            known[known] = self.mask[rows[known]]
        out = np.zeros(len(rows))
        out[known] = self.ranked.cosines(rows[known])
        return out
