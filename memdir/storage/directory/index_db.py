"""The SQLite file behind the derived index: schema, migrations, row writes and queries.

Why SQLite (measured, see `memdir.storage.directory.index`): it updates an entry's rows inside one
transaction, several processes share one file (WAL mode: readers never block the
writer), and the change counter plus tombstones let each process catch up cheaply.

Tables (schema version `SCHEMA_VERSION`):

* ``meta`` — key/value: ``schema_version``, ``seq`` (the change counter),
  ``tombstone_floor`` (highest seq of pruned tombstones) and ``generation`` (a random
  id, new whenever the file is created or cleared, so other processes notice).
* ``entries`` — one narrow row per entry: path, title, type, tags, domain, size, the
  ``.md``/``.yml`` mtime and size (freshness), updated_at, hits, is_stub,
  ``text_hash`` (of the current searchable text) and ``seq`` (the change that wrote it).
* ``vectors`` — the entry's vector (float32 bytes), the model that made it and the hash
  of the text it was made from. Kept apart from ``entries`` so loading the matrix at
  open reads only vector pages.
* ``entry_tags`` — (tag, id), lowercased, so tag filters run in SQL.
* ``terms`` — (id, term): the vocabulary of Porter-stemmed words
  (`memdir.core.keywords.porter_stem`), ids shared by all processes.
* ``entry_terms`` — per entry its distinct Porter-stemmed content words as term ids, their counts in title/tags/domain/content and the entry's length in
  words: exactly what the in-memory BM25 index (`memdir.storage.directory.postings`) needs, so
  each process builds it at open with numpy alone, without re-tokenising any content.
* (``entries_fts``, the FTS5 table of schema 1-3, held a copy of every entry's text for
  a search that moved in memory; schema 4 drops it. A future migration that needs the
  text reads the files, the source of truth, or clears the index for a reconcile.)
* ``tombstones`` — (path, seq) of removed entries, so other processes drop them too.
* ``links`` — (id, target, kind): every link of each entry (`memdir.core.links`: its typed
  ``links`` and its ``related`` paths, which are ``references``), with strength, origin,
  created_at and traversed_at, so the entries linking to one, and an entry's neighbourhood,
  are found without reading every ``.yml`` (schema 6; typed since schema 7).
* ``entries.importance`` / ``hidden`` / ``accessed_at`` (schema 8): what ranking needs besides
  text and vectors — the metadata's importance (NULL: the default), whether the entry is
  archived or superseded (left out of search unless asked for), and when an agent last read
  it (derived: a rebuilt index falls back to ``updated_at``).
* ``folders`` — (prefix, mtime_ns, ino): the stamp of every folder of the root as the last
  reconcile found it (`memdir.storage.directory.folder_stamps`), so that the next open lists only the
  folders changed since (schema 9).
* ``entry_labels`` — (id, kind, created_by, visible_to): an entry's access labels
  (`memdir.core.identity`), only for entries that have any, so role views and ownership
  filter search results and listings without reading ``.yml`` files (schema 10).
* ``recalibrated`` — (path, importance, stated): the importance job's last recalibration of
  each entry and the importance the entry stated then (schema 11). Not derived from the
  entries but from their importance history (`memdir.storage.evolution_records`), which a new
  index replays; it counts while the entry still states that importance (`EFFECTIVE_IMPORTANCE`),
  so one set by hand later wins. Kept by `clear` (the files do not hold it).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memdir.core.entry import ENTRY_TYPES, Entry, Metadata
from memdir.core.identity import Labels
from memdir.core.paths import disk_stem
from memdir.storage.base import EntryRow
from memdir.storage.directory.postings import KeywordDoc
from memdir.storage.records import Edge, EntryTerms, FileStats, ImportanceChange, RankFacts, entry_terms
from memdir.storage.stubs import SNIFF_BYTES, looks_like_stub, marks_stub

log = logging.getLogger(__name__)

INDEX_DIR = ".memdir"
INDEX_FILE = "index.sqlite3"
SCHEMA_VERSION = 11
BUSY_TIMEOUT_MS = 30_000
PAGE_SIZE = 16_384
DEFAULT_WAL_LIMIT = 4 << 20  # bytes; `Settings.index_wal_limit` sets it
TAG_SEPARATOR = "\n"


def _migration_1(db: sqlite3.Connection) -> None:
    """The first schema."""
    _run_script(
        db,
        """
        CREATE TABLE entries (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL DEFAULT '',
            type TEXT,
            tags TEXT NOT NULL DEFAULT '',
            domain TEXT NOT NULL DEFAULT '',
            size INTEGER NOT NULL DEFAULT 0,
            md_mtime_ns INTEGER NOT NULL DEFAULT 0,
            md_size INTEGER NOT NULL DEFAULT 0,
            yml_mtime_ns INTEGER NOT NULL DEFAULT 0,
            yml_size INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT,
            hits INTEGER NOT NULL DEFAULT 0,
            is_stub INTEGER NOT NULL DEFAULT 0,
            text_hash TEXT,
            seq INTEGER NOT NULL
        );
        CREATE INDEX entries_seq ON entries(seq);
        CREATE TABLE vectors (
            id INTEGER PRIMARY KEY,
            model_id TEXT,
            text_hash TEXT,
            vector BLOB NOT NULL
        );
        CREATE TABLE entry_terms (
            id INTEGER PRIMARY KEY,
            terms TEXT NOT NULL
        );
        CREATE TABLE entry_tags (
            tag TEXT NOT NULL,
            id INTEGER NOT NULL,
            PRIMARY KEY (tag, id)
        ) WITHOUT ROWID;
        CREATE INDEX entry_tags_id ON entry_tags(id);
        CREATE TABLE tombstones (
            path TEXT PRIMARY KEY,
            seq INTEGER NOT NULL
        );
        CREATE INDEX tombstones_seq ON tombstones(seq);
        CREATE VIRTUAL TABLE entries_fts USING fts5(
            title, tags, domain, content,
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        """
    )


def _migration_2(db: sqlite3.Connection) -> None:
    """Term ids and per-column counts instead of a words string: BM25 moved in memory."""
    _run_script(
        db,
        """
        CREATE TABLE terms (
            id INTEGER PRIMARY KEY,
            term TEXT NOT NULL UNIQUE
        );
        DROP TABLE entry_terms;
        CREATE TABLE entry_terms (
            id INTEGER PRIMARY KEY,
            term_ids BLOB NOT NULL,
            counts BLOB NOT NULL,
            length INTEGER NOT NULL
        );
        """
    )
    rows = db.execute(
        "SELECT f.rowid, f.title, f.tags, f.domain, f.content FROM entries_fts f JOIN entries e ON e.id = f.rowid"
    ).fetchall()
    for row_id, title, tags, domain, content in rows:
        _write_terms(db, row_id, entry_terms(title, tags.split(), domain, content))


def _migration_3(db: sqlite3.Connection) -> None:
    """Terms stemmed by Porter instead of memdir's light stemmer: recount every entry's terms."""
    db.execute("DELETE FROM entry_terms")
    db.execute("DELETE FROM terms")
    rows = db.execute(
        "SELECT f.rowid, f.title, f.tags, f.domain, f.content FROM entries_fts f JOIN entries e ON e.id = f.rowid"
    ).fetchall()
    for row_id, title, tags, domain, content in rows:
        _write_terms(db, row_id, entry_terms(title, tags.split(), domain, content))


def _migration_4(db: sqlite3.Connection) -> None:
    """Drop the FTS5 copy of the text: nothing has queried it since schema 2, and every write
    paid for tokenising and storing the content a second time."""
    db.execute("DROP TABLE IF EXISTS entries_fts")


def _migration_links(db: sqlite3.Connection) -> None:
    """The link graph: who links to whom. Existing rows have no links recorded yet, so the
    searchable-text recipe is forgotten too, which makes the next reconcile re-read every entry."""
    _run_script(
        db,
        """
        CREATE TABLE IF NOT EXISTS links (
            id INTEGER NOT NULL,
            target TEXT NOT NULL,
            PRIMARY KEY (id, target)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS links_target ON links(target);
        DELETE FROM meta WHERE key = 'text_recipe'
        """
    )


def _migration_typed_links(db: sqlite3.Connection) -> None:
    """Typed links: kind, strength, origin and times beside each (id, target); a
    source may link one target by several kinds. Rows of schema 6 were ``related`` links, which
    are ``references``; the recipe is forgotten so the next reconcile reads the typed ones."""
    _run_script(
        db,
        """
        CREATE TABLE links_typed (
            id INTEGER NOT NULL,
            target TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'references',
            strength REAL NOT NULL DEFAULT 1.0,
            origin TEXT NOT NULL DEFAULT 'user',
            created_at TEXT,
            traversed_at TEXT,
            PRIMARY KEY (id, target, kind)
        ) WITHOUT ROWID;
        INSERT INTO links_typed(id, target) SELECT id, target FROM links;
        DROP TABLE links;
        ALTER TABLE links_typed RENAME TO links;
        CREATE INDEX IF NOT EXISTS links_target ON links(target);
        DELETE FROM meta WHERE key = 'text_recipe'
        """
    )


def _migration_ranking_facts(db: sqlite3.Connection) -> None:
    """Importance, archived/superseded and last access per entry, for ranking; the recipe is
    forgotten so the next reconcile fills importance and hidden from the files."""
    present = {row[1] for row in db.execute("PRAGMA table_info(entries)")}
    for column, declaration in (("importance", "REAL"), ("hidden", "INTEGER NOT NULL DEFAULT 0"), ("accessed_at", "TEXT")):
        if column not in present:  # (a version number set back by hand re-runs this)
            db.execute(f"ALTER TABLE entries ADD COLUMN {column} {declaration}")
    db.execute("CREATE INDEX IF NOT EXISTS entries_hidden ON entries(path) WHERE hidden = 1")
    db.execute("DELETE FROM meta WHERE key = 'text_recipe'")


def _migration_access_labels(db: sqlite3.Connection) -> None:
    """Access labels (kind, owner, visibility) per entry. Existing rows have none recorded, so the
    searchable-text recipe is forgotten too, which makes the next reconcile re-read every entry."""
    _run_script(
        db,
        """
        CREATE TABLE IF NOT EXISTS entry_labels (
            id INTEGER PRIMARY KEY,
            kind TEXT,
            created_by TEXT,
            visible_to TEXT NOT NULL DEFAULT ''
        );
        DELETE FROM meta WHERE key = 'text_recipe'
        """
    )


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Run ``;``-separated DDL inside the caller's transaction (``executescript`` would commit it)."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _migration_types_from_folders(db: sqlite3.Connection) -> None:
    """Entries without a declared type take their top folder's (`memdir.core.entry.entry_type`);
    rows written before that rule have no type, and type filters missed them."""
    folder = "substr(path, 1, instr(path, '/') - 1)"
    db.execute(
        f"UPDATE entries SET type = {folder} WHERE (type IS NULL OR type = '')"
        f" AND {folder} IN ({', '.join('?' * len(ENTRY_TYPES))})",
        ENTRY_TYPES,
    )


def _migration_folders(db: sqlite3.Connection) -> None:
    """Folder stamps (`memdir.storage.directory.folder_stamps`), so that opening a root lists only the folders
    that changed since the last reconcile. None yet: the next reconcile walks the root and stamps them."""
    db.execute("CREATE TABLE IF NOT EXISTS folders (prefix TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, ino INTEGER NOT NULL)")


def _migration_recalibrated(db: sqlite3.Connection) -> None:
    """Recalibrated importance apart from the files. Recalibrations recorded before were written
    into the entries' ``.yml`` as well, so there is nothing to replay."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS recalibrated (path TEXT PRIMARY KEY, importance REAL NOT NULL, stated REAL) WITHOUT ROWID"
    )


# Numbered migrations: MIGRATIONS[i] takes the schema from version i to i + 1.
MIGRATIONS: Sequence[Callable[[sqlite3.Connection], None]] = (
    _migration_1, _migration_2, _migration_3, _migration_4, _migration_types_from_folders, _migration_links,
    _migration_typed_links, _migration_ranking_facts, _migration_folders, _migration_access_labels,
    _migration_recalibrated,
)
assert len(MIGRATIONS) == SCHEMA_VERSION


class IndexUnusable(Exception):
    """The index file is damaged or from an incompatible memdir; it must be rebuilt."""


class IndexUnwritable(Exception):
    """The index file cannot be created or written here (disk full, read-only filesystem,
    no permission): it is kept in memory instead, and the file is left alone."""


# SQLite's primary result codes that mean "this file cannot be written now", not "it is damaged".
_UNWRITABLE_CODES = {
    sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN,
}


def _cannot_write(exc: sqlite3.Error) -> bool:
    """True if ``exc`` says the database could not be written (full, read-only), not that it is damaged."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _UNWRITABLE_CODES


def index_path(root: Path) -> Path:
    return Path(root) / INDEX_DIR / INDEX_FILE


def connect(path: Path | None, *, wal_limit: int = DEFAULT_WAL_LIMIT) -> sqlite3.Connection:
    """Open (creating and migrating if needed) the index database at ``path`` (None: in memory).

    Args:
        wal_limit: bytes the write-ahead log may grow to before it is checkpointed back
            into the database, and the size it is truncated to after that. SQLite's default
            (1000 pages = 16 MB here, with a file that never shrinks) is far more than a
            derived index needs, and a full disk is often that WAL.

    Raises:
        IndexUnusable: the file is not a readable index of a version this memdir knows.
        IndexUnwritable: the file cannot be created or written (disk full, read-only).
    """
    try:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(
            ":memory:" if path is None else str(path),
            timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False,
        )
    except (OSError, sqlite3.Error) as exc:
        raise IndexUnwritable(f"{path}: {exc}") from exc
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # 16 KiB pages (only takes effect on a new file): a 1.5 KB vector row no longer
        # half-fills a 4 KiB page, so loading 100K vectors at open reads ~40% fewer bytes.
        db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        if path is not None and db.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
            log.warning("the index at %s is not in WAL mode; readers may wait for writers", path)
        db.execute(f"PRAGMA wal_autocheckpoint = {max(1, wal_limit // PAGE_SIZE)}")
        db.execute(f"PRAGMA journal_size_limit = {wal_limit}")
        # A derived index may lose its last transactions on power loss (they are rebuilt from
        # the files); NORMAL skips the fsync per commit, which dominates a write's cost.
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA temp_store = MEMORY")
        _migrate(db)
        db.execute("SELECT count(*) FROM entries").fetchone()
    except sqlite3.DatabaseError as exc:
        db.close()
        if _cannot_write(exc):
            raise IndexUnwritable(f"{path}: {exc}") from exc
        raise IndexUnusable(f"{path}: {exc}") from exc
    return db


def copy_into_memory(path: Path, db: sqlite3.Connection) -> bool:
    """Copy the index file at ``path`` into the in-memory database ``db``, writing nothing
    beside it (a read-only mount, a full disk); False if there is no usable file.

    Opened as immutable, SQLite neither locks the file nor reads its write-ahead log, so
    the copy may miss the newest changes: the reconcile that follows brings those from
    the files, like any change it finds.
    """
    if not path.is_file():
        return False
    try:
        source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            if _version(source) != SCHEMA_VERSION:
                return False
            source.backup(db)
        finally:
            source.close()
    except sqlite3.Error as exc:
        log.warning("not reusing the index file %s: %s", path, exc)
        return False
    return True


def checkpoint(db: sqlite3.Connection) -> None:
    """Move the write-ahead log into the database and truncate it (after large changes).

    Best effort: a reader holding an old snapshot keeps the log's tail for itself.
    """
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as exc:
        log.debug("checkpoint skipped: %s", exc)


def _migrate(db: sqlite3.Connection) -> None:
    """Bring the schema to `SCHEMA_VERSION`, one numbered migration at a time, in one write transaction."""
    version = _version(db)
    if version == SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")  # two processes opening a new root: the second waits, then sees v1
    try:
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        version = _version(db)
        if version > SCHEMA_VERSION:
            raise IndexUnusable(f"schema version {version} is newer than this memdir's {SCHEMA_VERSION}")
        if version == 0:
            db.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                [("seq", "0"), ("tombstone_floor", "0"), ("generation", uuid.uuid4().hex)],
            )
        for step in range(version, SCHEMA_VERSION):
            MIGRATIONS[step](db)
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _version(db: sqlite3.Connection) -> int:
    has_meta = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    if not has_meta:
        return 0
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def remove_files(path: Path) -> None:
    """Delete the index file and its WAL/shared-memory companions (a rebuild follows)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def meta_int(db: sqlite3.Connection, key: str) -> int:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else 0


def meta_text(db: sqlite3.Connection, key: str) -> str:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else ""


def next_seq(db: sqlite3.Connection) -> int:
    """Claim the next change number (inside the caller's write transaction)."""
    return int(db.execute("UPDATE meta SET value = value + 1 WHERE key = 'seq' RETURNING value").fetchone()[0])


def join_tags(tags: Sequence[str]) -> str:
    return TAG_SEPARATOR.join(tags)


def split_tags(text: str | None) -> list[str]:
    return [tag for tag in (text or "").split(TAG_SEPARATOR) if tag]


# --------------------------------------------------------------------------- rows

def stat_or_zero(path: str) -> tuple[int, int]:
    """(mtime ns, size) of a file; (0, 0) when it is missing, or unusable (links that loop: the
    adapter says why when it is read)."""
    try:
        st = os.stat(path)
    except OSError:
        return 0, 0
    return st.st_mtime_ns, st.st_size


def file_stats(root: Path | str, path: str) -> FileStats:
    """The freshness stats of the entry at logical ``path`` under ``root``."""
    stem = os.path.join(root, disk_stem(path))
    return FileStats(*stat_or_zero(stem + ".md"), *stat_or_zero(stem + ".yml"))


def term_ids(db: sqlite3.Connection, terms: Sequence[str]) -> list[int]:
    """The ids of ``terms`` in the shared vocabulary, adding the new ones (inside a write transaction).

    Looked up first: most of an entry's words are in the vocabulary already, so only the new
    ones are inserted.
    """
    found: dict[str, int] = {}
    for start in range(0, len(terms), 500):
        chunk = list(terms[start : start + 500])
        query = f"SELECT term, id FROM terms WHERE term IN ({','.join('?' * len(chunk))})"  # noqa: S608
        found.update(db.execute(query, chunk))
    for term in dict.fromkeys(terms):
        if term not in found:
            found[term] = db.execute("INSERT INTO terms(term) VALUES (?) RETURNING id", (term,)).fetchone()[0]
    return [found[t] for t in terms]


def _write_terms(db: sqlite3.Connection, row_id: int, terms: EntryTerms) -> list[int]:
    ids = term_ids(db, terms.terms)
    db.execute(
        "INSERT OR REPLACE INTO entry_terms(id, term_ids, counts, length) VALUES (?, ?, ?, ?)",
        (row_id, np.asarray(ids, dtype="<u4").tobytes(), terms.counts.astype("<u2").tobytes(), terms.length),
    )
    return ids


def vector_bytes(vector: np.ndarray) -> bytes:
    """Little-endian float32 bytes of the unit vector (stored normalised, so loading never has to)."""
    v = np.asarray(vector, dtype="<f4").ravel()
    norm = float(np.linalg.norm(v))
    if norm > 0 and abs(norm - 1.0) > 1e-4:
        v = (v / norm).astype("<f4")
    return v.tobytes()


def write_row(
    db: sqlite3.Connection, entry: Entry, stats: FileStats, text_hash: str | None, seq: int
) -> tuple[int | None, KeywordDoc | None]:
    """Write the entry's row, text, tags and terms.

    Returns its id if it should carry a vector (else None), and its keyword document
    (None for a stub, which is not searchable) for the in-memory index.
    """
    meta = entry.metadata
    tags = [str(tag) for tag in meta.tags]
    is_stub = looks_like_stub(entry.content[:SNIFF_BYTES].encode("utf-8")) and (
        not stats.yml_mtime_ns or marks_stub(entry.metadata)
    )
    values = (
        entry.title, entry.type, join_tags(tags), meta.domain or "", entry.size or len(entry.content.encode()),
        stats.md_mtime_ns, stats.md_size, stats.yml_mtime_ns, stats.yml_size,
        entry.updated_at.isoformat(), entry.hits, int(is_stub), text_hash, seq, meta.importance,
        int(meta.hidden),
    )  # fmt: skip
    found = db.execute("SELECT id FROM entries WHERE path = ?", (entry.path,)).fetchone()
    if found:
        row_id = found[0]
        db.execute(
            "UPDATE entries SET title=?, type=?, tags=?, domain=?, size=?, md_mtime_ns=?, md_size=?,"
            " yml_mtime_ns=?, yml_size=?, updated_at=?, hits=?, is_stub=?, text_hash=?, seq=?, importance=?,"
            " hidden=? WHERE id=?",
            (*values, row_id),
        )
        db.execute("DELETE FROM entry_tags WHERE id = ?", (row_id,))
        db.execute("DELETE FROM entry_terms WHERE id = ?", (row_id,))
        db.execute("DELETE FROM links WHERE id = ?", (row_id,))
        db.execute("DELETE FROM entry_labels WHERE id = ?", (row_id,))
    else:
        row_id = db.execute(
            "INSERT INTO entries(path, title, type, tags, domain, size, md_mtime_ns, md_size, yml_mtime_ns,"
            " yml_size, updated_at, hits, is_stub, text_hash, seq, importance, hidden)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (entry.path, *values),
        ).lastrowid
    db.execute("DELETE FROM tombstones WHERE path = ?", (entry.path,))
    if not is_stub:
        if tags:
            db.executemany(
                "INSERT OR IGNORE INTO entry_tags(tag, id) VALUES (?, ?)", [(t.casefold(), row_id) for t in tags]
            )
        labels = meta.labels()
        if labels != Labels():
            db.execute(
                "INSERT INTO entry_labels(id, kind, created_by, visible_to) VALUES (?, ?, ?, ?)",
                (row_id, labels.kind, labels.created_by, TAG_SEPARATOR.join(labels.visible_to)),
            )
        _write_links(db, row_id, meta)
        terms = entry_terms(entry.title, tags, meta.domain or "", entry.content)
        ids = _write_terms(db, row_id, terms)
        doc = KeywordDoc(
            entry.path, entry.title, entry.type, tuple(tags), np.asarray(ids, dtype=np.int64), terms.counts,
            terms.length, terms.terms, row_id,
        )  # fmt: skip
    else:
        doc = None
    if is_stub or entry.embedding is None:
        db.execute("DELETE FROM vectors WHERE id = ?", (row_id,))
        return None, doc
    return row_id, doc


def _write_links(db: sqlite3.Connection, row_id: int, meta: Metadata) -> None:
    """The rows of the link table for an entry's links (typed and ``related``)."""
    links = meta.all_links
    if not links:
        return
    db.executemany(
        "INSERT OR IGNORE INTO links(id, target, kind, strength, origin, created_at, traversed_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(row_id, link.target, link.kind, link.strength, link.origin, link.created_at.isoformat(),
          link.traversed_at.isoformat() if link.traversed_at else None) for link in links],
    )  # fmt: skip


def restamp_metadata_row(db: sqlite3.Connection, entry: Entry, stats: FileStats, seq: int) -> bool:
    """New file stats, change number, importance, archived/superseded state and links for an
    entry whose text, tags and vector did not change (`Memory.update_metadata_many`): its terms
    are not rewritten. False if it has no searchable row (the caller writes it whole)."""
    found = db.execute("SELECT id FROM entries WHERE path = ? AND is_stub = 0", (entry.path,)).fetchone()
    if found is None:
        return False
    meta = entry.metadata
    db.execute(
        "UPDATE entries SET md_mtime_ns=?, md_size=?, yml_mtime_ns=?, yml_size=?, seq=?, importance=?, hidden=? WHERE id=?",
        (stats.md_mtime_ns, stats.md_size, stats.yml_mtime_ns, stats.yml_size, seq, meta.importance, int(meta.hidden),
         found[0]),
    )  # fmt: skip
    db.execute("DELETE FROM links WHERE id = ?", (found[0],))
    _write_links(db, found[0], meta)
    return True


def restamp_row(db: sqlite3.Connection, path: str, stats: FileStats, text_hash: str | None, seq: int) -> int | None:
    """New file stats, text hash and change number for an entry whose text did not change
    (a re-embedding rewrote its ``.yml`` and ``.emb``); its id, or None if it has no searchable row."""
    found = db.execute("SELECT id FROM entries WHERE path = ? AND is_stub = 0", (path,)).fetchone()
    if found is None:
        return None
    db.execute(
        "UPDATE entries SET md_mtime_ns=?, md_size=?, yml_mtime_ns=?, yml_size=?, text_hash=?, seq=? WHERE id=?",
        (stats.md_mtime_ns, stats.md_size, stats.yml_mtime_ns, stats.yml_size, text_hash, seq, found[0]),
    )
    return found[0]


def write_vector(
    db: sqlite3.Connection, row_id: int, model_id: str | None, text_hash: str | None, vector: np.ndarray
) -> None:
    """Store an entry's vector with the model that made it and the hash of the text it was made from."""
    db.execute(
        "INSERT OR REPLACE INTO vectors(id, model_id, text_hash, vector) VALUES (?, ?, ?, ?)",
        (row_id, model_id, text_hash, vector_bytes(vector)),
    )


def delete_row(db: sqlite3.Connection, row_id: int, path: str, seq: int) -> None:
    """Delete every trace of an entry and leave a tombstone, so other processes drop it too."""
    db.execute("DELETE FROM entries WHERE id = ?", (row_id,))
    db.execute("DELETE FROM vectors WHERE id = ?", (row_id,))
    db.execute("DELETE FROM entry_tags WHERE id = ?", (row_id,))
    db.execute("DELETE FROM entry_terms WHERE id = ?", (row_id,))
    db.execute("DELETE FROM links WHERE id = ?", (row_id,))
    db.execute("DELETE FROM entry_labels WHERE id = ?", (row_id,))
    db.execute("DELETE FROM recalibrated WHERE path = ?", (path,))  # a new entry there starts from what it states
    db.execute("INSERT OR REPLACE INTO tombstones(path, seq) VALUES (?, ?)", (path, seq))


def recalibrate_rows(db: sqlite3.Connection, changes: Iterable[ImportanceChange]) -> None:
    """Keep each entry's latest recalibrated importance (later changes of one path win)."""
    db.executemany(
        "INSERT OR REPLACE INTO recalibrated(path, importance, stated) VALUES (?, ?, ?)",
        [(change.path, change.new, change.stated) for change in changes],
    )


# --------------------------------------------------------------------------- queries


def optimize(db: sqlite3.Connection) -> None:
    """Refresh the query planner's statistics (after a bulk load)."""
    db.execute("PRAGMA optimize")


def listing_rows(db: sqlite3.Connection, paths: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """(path, title, type, hits, updated_at, md_mtime_ns, md_size, yml_mtime_ns, yml_size) of the
    given entries that have a searchable row."""
    for start in range(0, len(paths), 500):
        chunk = list(paths[start : start + 500])
        yield from db.execute(
            "SELECT path, title, type, hits, updated_at, md_mtime_ns, md_size, yml_mtime_ns, yml_size FROM entries"
            f" WHERE is_stub = 0 AND path IN ({','.join('?' * len(chunk))})",  # noqa: S608 — placeholders only
            chunk,
        )


def label_rows(db: sqlite3.Connection, paths: Sequence[str] | None = None) -> dict[str, Labels]:
    """The access labels of the given entries (None: of every entry); entries without any are left out."""
    query = (
        "SELECT e.path, l.kind, l.created_by, l.visible_to FROM entry_labels l JOIN entries e ON e.id = l.id"
        " WHERE e.is_stub = 0"
    )
    if paths is None:
        rows: Iterator[tuple[Any, ...]] = db.execute(query)
    else:
        rows = (
            row
            for start in range(0, len(paths), 500)
            for row in db.execute(
                query + f" AND e.path IN ({','.join('?' * len(paths[start : start + 500]))})",  # noqa: S608
                list(paths[start : start + 500]),
            )
        )
    return {path: Labels(kind, owner, tuple(split_tags(visible))) for path, kind, owner, visible in rows}


def folder_stats(db: sqlite3.Connection, prefix: str) -> dict[str, tuple[int, int, int, int]]:
    """path -> (md mtime, md size, yml mtime, yml size) of the entries directly in folder ``prefix``
    (``""``: the root), stubs left out: a range of the path index, not a scan of every row."""
    query = (
        "SELECT path, md_mtime_ns, md_size, yml_mtime_ns, yml_size FROM entries"
        " WHERE path >= ? AND path < ? AND instr(substr(path, ?), '/') = 0 AND is_stub = 0"
    )
    return {row[0]: row[1:] for row in db.execute(query, (prefix, prefix + "\U0010ffff", len(prefix) + 1))}


def entry_rows(db: sqlite3.Connection, paths: Sequence[str]) -> dict[str, EntryRow]:
    """Title, type, tags, words and domain of the given entries (paths without a row are left out)."""
    found: dict[str, EntryRow] = {}
    for start in range(0, len(paths), 500):
        chunk = list(paths[start : start + 500])
        query = (
            "SELECT e.path, e.title, e.type, e.tags, t.term_ids, e.domain FROM entries e"
            f" LEFT JOIN entry_terms t ON t.id = e.id WHERE e.path IN ({','.join('?' * len(chunk))})"
        )  # noqa: S608 — placeholders only
        rows = db.execute(query, chunk).fetchall()
        ids = {int(i) for row in rows if row[4] for i in np.frombuffer(row[4], dtype="<u4")}
        names: dict[int, str] = {}
        id_list = sorted(ids)
        for at in range(0, len(id_list), 500):
            part = id_list[at : at + 500]
            names.update(db.execute(f"SELECT id, term FROM terms WHERE id IN ({','.join('?' * len(part))})", part))  # noqa: S608
        for path, title, type_, tags, blob, domain in rows:
            terms = sorted(names[int(i)] for i in np.frombuffer(blob or b"", dtype="<u4"))
            found[path] = EntryRow(path, title, type_, tuple(split_tags(tags)), " ".join(terms), domain or "")
    return found


_LOOKUPS_PER_SCAN = 20
"""Entries looked up by path that cost about what reading every row in order does (a lookup walks the path index)."""


def entry_tags(db: sqlite3.Connection, paths: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The tags of the given entries (paths without a row are left out), without their words: looked
    up by path, or, for a large share of the store (a whole listing), read from every row in order."""
    if len(paths) * _LOOKUPS_PER_SCAN > (db.execute("SELECT max(id) FROM entries").fetchone()[0] or 0):
        wanted = set(paths)
        return {path: tuple(split_tags(tags)) for path, tags in db.execute("SELECT path, tags FROM entries") if path in wanted}
    found: dict[str, tuple[str, ...]] = {}
    for start in range(0, len(paths), 500):
        chunk = list(paths[start : start + 500])
        query = f"SELECT path, tags FROM entries WHERE path IN ({','.join('?' * len(chunk))})"  # noqa: S608 — placeholders only
        found.update((path, tuple(split_tags(tags))) for path, tags in db.execute(query, chunk))
    return found


def edge_rows(db: sqlite3.Connection, paths: Sequence[str], kinds: Sequence[str] | None = None) -> list[Edge]:
    """Every link from or to one of ``paths`` (of ``kinds``, when given), sources with a row only."""
    found: dict[tuple[str, str, str], Edge] = {}
    kind_sql = f" AND l.kind IN ({','.join('?' * len(kinds))})" if kinds else ""
    for start in range(0, len(paths), 400):
        chunk = list(paths[start : start + 400])
        marks = ",".join("?" * len(chunk))
        for column in ("e.path", "l.target"):
            query = (
                "SELECT e.path, l.target, l.kind, l.strength, l.origin, l.created_at, l.traversed_at"
                f" FROM links l JOIN entries e ON e.id = l.id WHERE e.is_stub = 0 AND {column} IN ({marks}){kind_sql}"
            )  # noqa: S608 — placeholders only
            for row in db.execute(query, [*chunk, *(kinds or ())]):
                found.setdefault(row[:3], Edge(*row))
    return list(found.values())


EFFECTIVE_IMPORTANCE = "CASE WHEN r.path IS NOT NULL AND r.stated IS e.importance THEN r.importance ELSE e.importance END"
"""An entry's importance in SQL over ``entries e LEFT JOIN recalibrated r ON r.path = e.path``."""


def rank_rows(db: sqlite3.Connection, paths: Sequence[str]) -> dict[str, RankFacts]:
    """`RankFacts` of the given entries (paths without a searchable row are left out)."""
    found: dict[str, RankFacts] = {}
    for start in range(0, len(paths), 500):
        chunk = list(paths[start : start + 500])
        query = (
            f"SELECT e.path, e.type, {EFFECTIVE_IMPORTANCE}, e.hits, coalesce(e.accessed_at, e.updated_at), e.hidden,"
            " l.kind, e.importance FROM entries e LEFT JOIN entry_labels l ON l.id = e.id"
            " LEFT JOIN recalibrated r ON r.path = e.path"
            f" WHERE e.is_stub = 0 AND e.path IN ({','.join('?' * len(chunk))})"
        )  # noqa: S608 — placeholders only
        for path, type_, importance, hits, accessed, hidden, kind, stated in db.execute(query, chunk):
            found[path] = RankFacts(path, type_, importance, hits, accessed, bool(hidden), kind, stated)
    return found
