"""The SQLite file behind the derived index: schema, migrations, row writes and queries.

Why SQLite FTS5 for keyword search (measured, see `memdir.storage.index`): it updates
one row per write inside the same transaction as the metadata, several processes can
share one file (WAL mode: readers never block the writer), and its ``bm25()`` ranks
as well as the dedicated engines on LoCoMo.

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
* ``entry_terms`` — the entry's distinct stemmed words (`memdir.search.keywords.tokenize`),
  space-separated, so hybrid search can tell which query keywords an entry contains
  without re-reading and re-tokenising its content per query.
* ``entries_fts`` — FTS5 over title, tags, domain and content (``porter unicode61``);
  its rowid is ``entries.id``. Content is stored only here.
* ``tombstones`` — (path, seq) of removed entries, so other processes drop them too.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memdir.core.entry import Entry
from memdir.search.keywords import tokenize
from memdir.storage.stubs import SNIFF_BYTES, looks_like_stub

log = logging.getLogger(__name__)

INDEX_DIR = ".memdir"
INDEX_FILE = "index.sqlite3"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 30_000
PAGE_SIZE = 16_384
FTS_COLUMNS = ("title", "tags", "domain", "content")
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


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Run ``;``-separated DDL inside the caller's transaction (``executescript`` would commit it)."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


# Numbered migrations: MIGRATIONS[i] takes the schema from version i to i + 1.
MIGRATIONS: Sequence[Callable[[sqlite3.Connection], None]] = (_migration_1,)
assert len(MIGRATIONS) == SCHEMA_VERSION


class IndexUnusable(Exception):
    """The index file is damaged or from an incompatible memdir; it must be rebuilt."""


def index_path(root: Path) -> Path:
    return Path(root) / INDEX_DIR / INDEX_FILE


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating and migrating if needed) the index database at ``path``.

    Raises:
        IndexUnusable: the file is not a readable index of a version this memdir knows.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # 16 KiB pages (only takes effect on a new file): a 1.5 KB vector row no longer
        # half-fills a 4 KiB page, so loading 100K vectors at open reads ~40% fewer bytes.
        db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        if db.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
            log.warning("the index at %s is not in WAL mode; readers may wait for writers", path)
        # A derived index may lose its last transactions on power loss (they are rebuilt from
        # the files); NORMAL skips the fsync per commit, which dominates a write's cost.
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA temp_store = MEMORY")
        _migrate(db)
        db.execute("SELECT count(*) FROM entries").fetchone()
    except sqlite3.DatabaseError as exc:
        db.close()
        raise IndexUnusable(f"{path}: {exc}") from exc
    return db


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


def fts_query(keywords: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the keywords (each quoted, so no word is read as syntax)."""
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in keywords)


def join_tags(tags: Sequence[str]) -> str:
    return TAG_SEPARATOR.join(tags)


def split_tags(text: str | None) -> list[str]:
    return [tag for tag in (text or "").split(TAG_SEPARATOR) if tag]


def filter_sql(
    *, types: Sequence[str] | None, path_prefix: str | None, tags: Sequence[str] | None
) -> tuple[str, list[object]]:
    """``AND …`` conditions on ``entries e`` for the search filters, with their parameters.

    ``path_prefix`` is a folder (everything under it, at any depth) or one ``.md`` path;
    the folder case is a range scan on the path's unique index (``'/'`` + 1 is ``'0'``).
    """
    clauses: list[str] = []
    params: list[object] = []
    if types is not None:
        clauses.append(f"e.type IN ({','.join('?' * len(types))})" if types else "0")
        params.extend(types)
    if path_prefix:
        if path_prefix.endswith(".md"):
            clauses.append("e.path = ?")
            params.append(path_prefix)
        else:
            folder = path_prefix.strip("/")
            clauses.append("e.path >= ? AND e.path < ?")
            params.extend([folder + "/", folder + "0"])
    if tags is not None:
        lowered = [tag.casefold() for tag in tags]
        clauses.append(
            f"e.id IN (SELECT id FROM entry_tags WHERE tag IN ({','.join('?' * len(lowered))}))" if lowered else "0"
        )
        params.extend(lowered)
    return "".join(f" AND {clause}" for clause in clauses), params


# --------------------------------------------------------------------------- rows

# Characters of content whose words are recorded for keyword coverage (entries are short; this bounds huge ones).
TERMS_MAX_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class FileStats:
    """Modification time and size of an entry's ``.md`` and ``.yml`` (0 when a file is absent)."""

    md_mtime_ns: int = 0
    md_size: int = 0
    yml_mtime_ns: int = 0
    yml_size: int = 0


@dataclass(frozen=True, slots=True)
class EntryRow:
    """What search results show about an entry, read from the index (no file access)."""

    path: str
    title: str
    type: str | None
    tags: tuple[str, ...]
    terms: str = ""  # distinct stemmed words, space-separated (see `entry_terms`)


def entry_terms(title: str, tags: Sequence[str], domain: str, content: str) -> str:
    """The distinct stemmed words of an entry, space-separated (what keyword coverage matches against)."""
    text = "\n".join((title, " ".join(tags), domain, content[:TERMS_MAX_CHARS]))
    return " ".join(sorted(set(tokenize(text, stemmed=True))))


def vector_bytes(vector: np.ndarray) -> bytes:
    """Little-endian float32 bytes of the unit vector (stored normalised, so loading never has to)."""
    v = np.asarray(vector, dtype="<f4").ravel()
    norm = float(np.linalg.norm(v))
    if norm > 0 and abs(norm - 1.0) > 1e-4:
        v = (v / norm).astype("<f4")
    return v.tobytes()


def write_row(
    db: sqlite3.Connection, entry: Entry, stats: FileStats, text_hash: str | None, seq: int
) -> int | None:
    """Write the entry's row, text and tags; returns its id if it should carry a vector, else None."""
    meta = entry.metadata
    tags = [str(tag) for tag in meta.tags]
    is_stub = looks_like_stub(entry.content[:SNIFF_BYTES].encode("utf-8"))
    values = (
        entry.title, meta.type, join_tags(tags), meta.domain or "", entry.size or len(entry.content.encode()),
        stats.md_mtime_ns, stats.md_size, stats.yml_mtime_ns, stats.yml_size,
        entry.updated_at.isoformat(), entry.hits, int(is_stub), text_hash, seq,
    )  # fmt: skip
    found = db.execute("SELECT id FROM entries WHERE path = ?", (entry.path,)).fetchone()
    if found:
        row_id = found[0]
        db.execute(
            "UPDATE entries SET title=?, type=?, tags=?, domain=?, size=?, md_mtime_ns=?, md_size=?,"
            " yml_mtime_ns=?, yml_size=?, updated_at=?, hits=?, is_stub=?, text_hash=?, seq=? WHERE id=?",
            (*values, row_id),
        )
        db.execute("DELETE FROM entries_fts WHERE rowid = ?", (row_id,))
        db.execute("DELETE FROM entry_tags WHERE id = ?", (row_id,))
        db.execute("DELETE FROM entry_terms WHERE id = ?", (row_id,))
    else:
        row_id = db.execute(
            "INSERT INTO entries(path, title, type, tags, domain, size, md_mtime_ns, md_size, yml_mtime_ns,"
            " yml_size, updated_at, hits, is_stub, text_hash, seq) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (entry.path, *values),
        ).lastrowid
    db.execute("DELETE FROM tombstones WHERE path = ?", (entry.path,))
    if not is_stub:
        db.execute(
            "INSERT INTO entries_fts(rowid, title, tags, domain, content) VALUES (?, ?, ?, ?, ?)",
            (row_id, entry.title, " ".join(tags), meta.domain or "", entry.content),
        )
        db.executemany(
            "INSERT OR IGNORE INTO entry_tags(tag, id) VALUES (?, ?)", [(t.casefold(), row_id) for t in tags]
        )
        db.execute(
            "INSERT INTO entry_terms(id, terms) VALUES (?, ?)",
            (row_id, entry_terms(entry.title, tags, meta.domain or "", entry.content)),
        )
    if is_stub or entry.embedding is None:
        db.execute("DELETE FROM vectors WHERE id = ?", (row_id,))
        return None
    return row_id


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
    db.execute("DELETE FROM entries_fts WHERE rowid = ?", (row_id,))
    db.execute("DELETE FROM vectors WHERE id = ?", (row_id,))
    db.execute("DELETE FROM entry_tags WHERE id = ?", (row_id,))
    db.execute("DELETE FROM entry_terms WHERE id = ?", (row_id,))
    db.execute("INSERT OR REPLACE INTO tombstones(path, seq) VALUES (?, ?)", (path, seq))



# --------------------------------------------------------------------------- queries


def keyword_query(
    db: sqlite3.Connection,
    keywords: Sequence[str],
    column_weights: Sequence[float],
    limit: int,
    types: Sequence[str] | None,
    path_prefix: str | None,
    tags: Sequence[str] | None,
) -> list[tuple[str, float]]:
    """(path, positive BM25) of the best ``limit`` entries containing any keyword, filters applied in SQL."""
    if not keywords:
        return []
    where, params = filter_sql(types=types, path_prefix=path_prefix, tags=tags)
    weights = ", ".join(repr(float(w)) for w in column_weights)
    bm25 = f"-bm25(entries_fts, {weights})"
    if where:  # filters need the entry's row for every match, before the cut
        query = (
            f"SELECT e.path, {bm25} AS score FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid"
            f" WHERE entries_fts MATCH ?{where} ORDER BY score DESC LIMIT ?"
        )
    else:  # rank inside FTS5 first, join only the survivors (half the time at 100K entries)
        query = (
            f"SELECT e.path, s.score FROM (SELECT rowid AS id, {bm25} AS score FROM entries_fts"
            " WHERE entries_fts MATCH ? ORDER BY score DESC LIMIT ?) s JOIN entries e ON e.id = s.id"
            " ORDER BY s.score DESC"
        )
    # weights are floats formatted here; everything else is a bound parameter
    return db.execute(query, (fts_query(keywords), *params, limit)).fetchall()  # noqa: S608


def optimize(db: sqlite3.Connection) -> None:
    """Merge the full-text index into one segment (faster queries) and refresh the planner's statistics."""
    db.execute("INSERT INTO entries_fts(entries_fts) VALUES ('optimize')")
    db.execute("PRAGMA optimize")


def entry_rows(db: sqlite3.Connection, paths: Sequence[str]) -> dict[str, EntryRow]:
    """Title, type, tags and words of the given entries (paths without a row are left out)."""
    found: dict[str, EntryRow] = {}
    for start in range(0, len(paths), 500):
        chunk = list(paths[start : start + 500])
        query = (
            "SELECT e.path, e.title, e.type, e.tags, t.terms FROM entries e"
            f" LEFT JOIN entry_terms t ON t.id = e.id WHERE e.path IN ({','.join('?' * len(chunk))})"
        )  # noqa: S608 — placeholders only
        for path, title, type_, tags, terms in db.execute(query, chunk):
            found[path] = EntryRow(path, title, type_, tuple(split_tags(tags)), terms or "")
    return found
