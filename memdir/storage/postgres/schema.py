"""The PostgreSQL store's schema: named migrations, applied in order, each once, recorded in a table.

Every server that opens the store runs `migrate`; the migrations take a transaction-level
advisory lock first, so two servers starting at once never apply one twice, and a
migration that fails leaves the schema as it was (DDL is transactional in PostgreSQL).
A migration is never edited once released: a schema change is a new one at the end.

Tables (after every migration):

* ``entries`` — one row per entry, stub or built-in: the truth (``content``, ``title``,
  ``metadata`` as JSON in the sidecar's key order, ``updated_at``, the vector
  and its provenance as the ``.yml`` records it) and what search reads of it: ``type``,
  ``tags_folded`` (case-folded, for tag filters), ``length`` (words, for BM25), the vector in an HNSW
  index in half precision (`VECTOR_INDEX`),
  ``vector_model`` / ``vector_text_hash`` (the model and text the vector is known to
  come from; NULL: re-embed), ``text_hash`` (of the current searchable text). ``version``
  is the change that last wrote the row, ``indexed`` the change its search columns
  reflect (NULL from an adapter write until the index has written them: what
  `PostgresIndex.behind_files` looks for); ``importance`` and ``hidden`` are what ranking reads besides the
  text and the reads, with ``recalibrated`` / ``recalibrated_from`` (the importance job's value, and the importance stated when it was
  made: it counts while the entry states that) (`memdir.storage.directory.index_db.RankFacts`); ``counted`` tells whether its
  words are in ``term_stats``. Built-in entries (package data) have a row for their vector only (``builtin``).
* ``entry_reads`` — per row of ``entries``, what a read changes: ``hits`` and ``read_at``, and the keys the
  recently-used and most-important orders sort by (``recency``: the last read, else the last change;
  ``ranked_importance``; ``listed``: a real entry, neither built-in nor hidden; ``path``), kept by a trigger on
  ``entries`` (`memdir.storage.postgres.reads`).
* ``postings`` — (term, entry, tf, length): per entry its Porter-stemmed words with their
  field-weighted frequency (title, tags, domain, content; `memdir.storage.directory.index_db.entry_terms`)
  and the entry's length, what BM25 is computed from (an index-only scan per query term).
* ``term_stats`` — per term the number of entries holding it (BM25's idf), kept in each
  entry's own transaction.
* ``links`` — every link each entry holds (`memdir.core.links`: typed ``links`` and ``related``
  paths), with kind, strength, origin and times.
* ``store_state`` — one row: entries, total length and total content bytes, and
  ``change``, the last committed change (what cached listings are checked against).
* ``changes`` — the sequence change numbers are drawn from.
* ``audit`` — the audit trail: who changed what, when, with a short diff (`memdir.storage.postgres.audit`).
* ``records`` — records that are not entries: the evolution jobs' runs and the importance history
  (`memdir.storage.postgres.records`).
* ``thread_events`` — working-memory threads: one row per event line (`memdir.storage.postgres.threads`).
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from memdir.core.errors import StoreTooNewError, VectorExtensionTooOldError
from memdir.storage.postgres.database import scalar
from memdir.storage.sidecar import EMBEDDING_DIM

MIGRATION_LOCK = 0x6D656D64_6972_0001 & 0x7FFF_FFFF_FFFF_FFFF  # advisory key: "memdir" schema changes

_ENTRIES = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SEQUENCE changes;
CREATE TABLE entries (
    id bigserial PRIMARY KEY,
    path text NOT NULL UNIQUE,
    content text NOT NULL,
    title text NOT NULL DEFAULT '',
    metadata json NOT NULL DEFAULT '{}',
    updated_at timestamptz NOT NULL,
    size integer NOT NULL,
    hits integer NOT NULL DEFAULT 0,
    stub_kind text,
    stub_target text,
    builtin boolean NOT NULL DEFAULT false,
    embedding vector(384),
    embedding_checksum text,
    embedding_model text,
    embedding_text_hash text,
    type text,
    tags_folded text[] NOT NULL DEFAULT '{}',
    folder text NOT NULL DEFAULT '',
    length integer NOT NULL DEFAULT 0,
    vector_model text,
    vector_text_hash text,
    text_hash text,
    importance real,
    hidden boolean NOT NULL DEFAULT false,
    accessed_at timestamptz,
    counted boolean NOT NULL DEFAULT false,
    version bigint NOT NULL,
    indexed bigint
);
CREATE INDEX entries_path_prefix ON entries (path text_pattern_ops);
CREATE INDEX entries_unindexed ON entries (path) WHERE indexed IS NULL;
CREATE INDEX entries_tags ON entries USING gin (tags_folded);
CREATE INDEX entries_folder ON entries (folder, id);
CREATE TABLE postings (
    term text NOT NULL,
    entry bigint NOT NULL REFERENCES entries ON DELETE CASCADE,
    tf real NOT NULL,
    length integer NOT NULL,
    PRIMARY KEY (term, entry) INCLUDE (tf, length)
);
CREATE INDEX postings_entry ON postings (entry, term);  -- which of a search's words its candidates hold
CREATE TABLE term_stats (term text PRIMARY KEY, entries integer NOT NULL);
CREATE TABLE links (
    entry bigint NOT NULL REFERENCES entries ON DELETE CASCADE,
    target text NOT NULL,
    kind text NOT NULL,
    strength real NOT NULL,
    origin text NOT NULL,
    created_at text,
    traversed_at text,
    PRIMARY KEY (entry, target, kind)
);
CREATE INDEX links_target ON links (target);
CREATE TABLE store_state (
    id integer PRIMARY KEY CHECK (id = 1),
    entries integer NOT NULL DEFAULT 0,
    total_length bigint NOT NULL DEFAULT 0,
    total_size bigint NOT NULL DEFAULT 0,
    change bigint NOT NULL DEFAULT 0,
    text_recipe text
);
INSERT INTO store_state (id) VALUES (1);
"""

_FIRST_VECTOR_INDEX = """
CREATE INDEX entries_embedding ON entries USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
"""

# The HNSW graph as built now. ef_construction 64 (pgvector's default) made a graph that needed
# ef_search 400 for recall@10 0.93-0.96 at 100K (`bench/bench_postgres.py`); built with 200, the
# same recall takes ef_search 150-200, half the scan (m = 24 was no better per millisecond).
HNSW_OPTIONS = {"m": 16, "ef_construction": 200}
_HNSW_WITH = f"WITH (m = {HNSW_OPTIONS['m']}, ef_construction = {HNSW_OPTIONS['ef_construction']})"
_FLOAT_VECTOR_INDEX = f"CREATE INDEX entries_embedding ON entries USING hnsw (embedding vector_cosine_ops) {_HNSW_WITH}"
# (the graph is built in memory when it fits: ~2 KB an entry; 64 MB, the default, holds 30K)
_BUILD_MEMORY = "SET LOCAL maintenance_work_mem = '1GB';"
_REBUILT_VECTOR_INDEX = f"{_BUILD_MEMORY} DROP INDEX entries_embedding; {_FLOAT_VECTOR_INDEX};"

HALF_VECTOR = f"halfvec({EMBEDDING_DIM})"
"""What the HNSW graph holds of each vector: its half-precision copy (2 bytes a value, not 4)."""
VECTOR_INDEX_NAME = "entries_embedding_half"
VECTOR_INDEX = (
    f"CREATE INDEX {VECTOR_INDEX_NAME} ON entries USING hnsw ((embedding::{HALF_VECTOR}) halfvec_cosine_ops) {_HNSW_WITH}"
)
"""The vector index a search walks: HNSW over the vectors in half precision, about half the size of a graph
of the float vectors, so that more of it stays in PostgreSQL's shared buffers (a stock configuration's
128 MB held little of the float graph past 100K entries, and a walk read its pages from outside them).
A walk orders by the half-precision distance, and a search ranks what it found by the cosine of the float
vectors in the rows (`memdir.storage.postgres.search.WALK_ORDER`). It replaces the float index: both
would take more of the buffers than the float one alone."""
_SIZED_BUILD_MEMORY = (
    "SELECT set_config('maintenance_work_mem', least(2097152, greatest(65536,"
    " (SELECT reltuples FROM pg_class WHERE oid = 'entries'::regclass)::bigint * 2)) || 'kB', true);"
)
"""The build's memory for the half-precision graph, by the store's size (the graph takes ~1.4 KB an entry,
and is built far faster in memory than on disk once it outgrows it): 2 KB an entry, at least PostgreSQL's
default 64 MB, at most 2 GB (1.4M entries; a parallel build reserves it in shared memory at once)."""
_HALF_VECTOR_INDEX = f"{_SIZED_BUILD_MEMORY} {VECTOR_INDEX}; DROP INDEX entries_embedding;"
# (built before the float index is dropped: the build blocks writes, not reads, and dropping would block both
# until the migration's end)

# What a search reads besides its hits, each found through a small index of its own: the hidden
# entries (a search leaves them out; a sequential scan of every row took 60 ms at 100K), and each
# candidate's folder neighbours among the counted entries (context coverage).
_SEARCH_INDEXES = """
CREATE INDEX entries_hidden ON entries (path) WHERE hidden AND stub_kind IS NULL;
CREATE INDEX entries_counted_folder ON entries (folder, id) WHERE counted;
DROP INDEX entries_folder;
"""

# The audit trail (`memdir.storage.postgres.audit`): one row per change, in the change's transaction.
_AUDIT = """
CREATE TABLE audit (
    id bigserial PRIMARY KEY,
    at timestamptz NOT NULL,
    agent text,
    role text,
    admin boolean NOT NULL DEFAULT false,
    action text NOT NULL,
    path text NOT NULL,
    owner text,
    diff text NOT NULL DEFAULT '',
    details jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_path ON audit (path, id);
CREATE INDEX audit_agent ON audit (agent, id);
"""

# Recalibrated importance (`PostgresIndex.recalibrate`): the importance job's value and the importance
# the entry stated when it was made; it counts while the entry still states that (`EFFECTIVE_IMPORTANCE`).
_RECALIBRATED = """
ALTER TABLE entries ADD COLUMN recalibrated real, ADD COLUMN recalibrated_from real;
"""

# What a call reads in place of every row: the newest entries first (MemoryGlob's page), the entries in
# path order (code points, as the directory store sorts them; a folder's are one range), the recently
# used and the most important (what a server prefetches when it opens), the built-in entries' rows,
# the entries whose vector is missing or stale, and the model of each vector (counted for `memdir status`).
_LISTING_INDEXES = """
CREATE INDEX entries_newest ON entries (updated_at DESC, path COLLATE "C") WHERE stub_kind IS NULL;
CREATE INDEX entries_path_order ON entries (path COLLATE "C") WHERE stub_kind IS NULL;
CREATE INDEX entries_builtin ON entries (path) WHERE builtin;
CREATE INDEX entries_recent ON entries ((coalesce(accessed_at, updated_at)) DESC, path)
    WHERE stub_kind IS NULL AND NOT builtin AND NOT hidden;
CREATE INDEX entries_important ON entries (
    (CASE WHEN recalibrated IS NOT NULL AND recalibrated_from IS NOT DISTINCT FROM importance
     THEN recalibrated ELSE importance END) DESC, (coalesce(accessed_at, updated_at)) DESC, path
) WHERE stub_kind IS NULL AND NOT builtin AND NOT hidden;
CREATE INDEX entries_unembedded ON entries (path)
    WHERE stub_kind IS NULL AND (embedding IS NULL OR vector_text_hash IS DISTINCT FROM text_hash);
CREATE INDEX entries_vector_model ON entries (vector_model) WHERE stub_kind IS NULL;
"""

# Records that are not entries (`memdir.storage.postgres.records`): the evolution jobs' runs and
# the importance history, one row each, read by log in the order they were kept.
_RECORDS = """
CREATE TABLE records (id bigserial PRIMARY KEY, log text NOT NULL, body jsonb NOT NULL);
CREATE INDEX records_log ON records (log, id);
"""

# Working-memory threads (`memdir.storage.postgres.threads`): one row per event line, a thread's log in id order.
_THREAD_EVENTS = """
CREATE TABLE thread_events (
    id bigserial PRIMARY KEY,
    thread text NOT NULL,
    line text NOT NULL
);
CREATE INDEX thread_events_thread ON thread_events (thread, id);
"""

# A listing narrowed to one entry type (the web view's), in path order or newest first: an entry's type is
# mostly its folder's, so the plain path-order index would pass every other folder before the first one.
_TYPE_LISTING_INDEXES = """
CREATE INDEX entries_type_path_order ON entries (type, path COLLATE "C") WHERE stub_kind IS NULL;
CREATE INDEX entries_type_newest ON entries (type, updated_at DESC, path COLLATE "C") WHERE stub_kind IS NULL;
"""

# What a read changes, in a narrow table of its own (`memdir.storage.postgres.reads`). Kept in the entry's row,
# a read's update changed ``accessed_at``, which the recency and importance orders' indexes held: never a HOT
# update, so each read made a new version of the wide row and a new entry in each of its indexes (an insert into
# the HNSW graph among them). Here a read updates one small row; the orders' keys follow the entry's row by trigger
# (the importance as `memdir.storage.postgres.index.EFFECTIVE_IMPORTANCE` computes it).
_ENTRY_READS = """
CREATE TABLE entry_reads (
    entry bigint PRIMARY KEY,
    path text NOT NULL,
    hits integer NOT NULL DEFAULT 0,
    read_at timestamptz,
    recency timestamptz NOT NULL,
    ranked_importance real,
    listed boolean NOT NULL
);
INSERT INTO entry_reads (entry, path, hits, read_at, recency, ranked_importance, listed)
    SELECT id, path, hits, accessed_at, coalesce(accessed_at, updated_at),
        CASE WHEN recalibrated IS NOT NULL AND recalibrated_from IS NOT DISTINCT FROM importance
        THEN recalibrated ELSE importance END,
        stub_kind IS NULL AND NOT builtin AND NOT hidden
    FROM entries;
ALTER TABLE entry_reads ADD FOREIGN KEY (entry) REFERENCES entries ON DELETE CASCADE;  -- (checked once, not per row copied)
DROP INDEX entries_recent;
DROP INDEX entries_important;
ALTER TABLE entries DROP COLUMN hits, DROP COLUMN accessed_at;
CREATE INDEX entry_reads_recent ON entry_reads (recency DESC, path) WHERE listed;
CREATE INDEX entry_reads_important ON entry_reads (ranked_importance DESC, recency DESC, path) WHERE listed;
CREATE FUNCTION entry_reads_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO entry_reads AS r (entry, path, recency, ranked_importance, listed)
    VALUES (NEW.id, NEW.path, NEW.updated_at,
            CASE WHEN NEW.recalibrated IS NOT NULL AND NEW.recalibrated_from IS NOT DISTINCT FROM NEW.importance
            THEN NEW.recalibrated ELSE NEW.importance END,
            NEW.stub_kind IS NULL AND NOT NEW.builtin AND NOT NEW.hidden)
    ON CONFLICT (entry) DO UPDATE SET recency = coalesce(r.read_at, EXCLUDED.recency),
        ranked_importance = EXCLUDED.ranked_importance, listed = EXCLUDED.listed;
    RETURN NULL;
END $$;
CREATE TRIGGER entries_read_keys_new AFTER INSERT ON entries FOR EACH ROW EXECUTE FUNCTION entry_reads_follow();
CREATE TRIGGER entries_read_keys AFTER UPDATE OF updated_at, importance, recalibrated, recalibrated_from, hidden,
    stub_kind, builtin ON entries FOR EACH ROW
    WHEN ((OLD.updated_at, OLD.importance, OLD.recalibrated, OLD.recalibrated_from, OLD.hidden, OLD.stub_kind, OLD.builtin)
          IS DISTINCT FROM
          (NEW.updated_at, NEW.importance, NEW.recalibrated, NEW.recalibrated_from, NEW.hidden, NEW.stub_kind, NEW.builtin))
    EXECUTE FUNCTION entry_reads_follow();
"""

MIGRATIONS: list[tuple[str, str]] = [
    ("0001_entries_postings_links", _ENTRIES),
    ("0002_hnsw_vector_index", _FIRST_VECTOR_INDEX),
    ("0003_hidden_and_neighbour_indexes", _SEARCH_INDEXES),
    ("0004_hnsw_ef_construction_200", _REBUILT_VECTOR_INDEX),
    ("0005_audit", _AUDIT),
    ("0006_recalibrated_importance", _RECALIBRATED),
    ("0007_listing_indexes", _LISTING_INDEXES),
    ("0008_records", _RECORDS),
    ("0009_thread_events", _THREAD_EVENTS),
    ("0010_type_listing_indexes", _TYPE_LISTING_INDEXES),
    ("0011_entry_reads", _ENTRY_READS),
    ("0012_half_precision_vector_index", _HALF_VECTOR_INDEX),
]


def check_known(applied: set[str]) -> None:
    """Refuse a store that a newer memdir has migrated: this version's statements would fail on its
    layout (a column moved to another table) with errors that say nothing of the cause.

    Raises:
        StoreTooNewError: ``applied`` names a migration this version does not have.
    """
    unknown = sorted(applied - {name for name, _ in MIGRATIONS})
    if unknown:
        raise StoreTooNewError(unknown)


HALF_VECTORS_SINCE = "0.7.0"
"""The first pgvector with ``halfvec`` (what `VECTOR_INDEX` holds)."""


def check_vector_version(version: str | None) -> None:
    """Refuse a pgvector without half-precision vectors before any migration runs: the one that builds
    `VECTOR_INDEX` would fail on it with an error that does not say what to install (None: not installed
    nor available, which the first migration's ``CREATE EXTENSION`` reports).

    Raises:
        VectorExtensionTooOldError: ``version`` is older than `HALF_VECTORS_SINCE`.
    """
    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split(".") if part.isdigit())

    if version is not None and parts(version) < parts(HALF_VECTORS_SINCE):
        raise VectorExtensionTooOldError(version, HALF_VECTORS_SINCE)


def applied_migrations(conn: psycopg.Connection) -> set[str]:
    """The migrations the store at ``conn`` has had (none before its first)."""
    if scalar(conn, "SELECT to_regclass('memdir_migrations')") is None:
        return set()
    return {row[0] for row in conn.execute("SELECT name FROM memdir_migrations")}


def migrate(conn: psycopg.Connection, log: Callable[[str], None] | None = None) -> list[str]:
    """Apply the migrations this database lacks, in order; returns the names applied."""
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS memdir_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in conn.execute("SELECT name FROM memdir_migrations")}
        check_known(done)
        if any(name not in done for name, _ in MIGRATIONS):
            check_vector_version(scalar(conn, "SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
                                              " (SELECT default_version FROM pg_available_extensions WHERE name = 'vector'))"))
        for name, script in MIGRATIONS:
            if name in done:
                continue
            conn.execute(script)
            conn.execute("INSERT INTO memdir_migrations (name) VALUES (%s)", (name,))
            applied.append(name)
            if log:
                log(name)
    return applied
