"""`PostgresIndex`: what search and listings read in the PostgreSQL store (`memdir.storage.base.EntryIndex`).

It is no separate copy: it writes the search columns of the entries' own rows (words and
their field-weighted frequencies, length, text hash, which model made the vector), the
``postings``, ``term_stats`` and ``links`` tables, in the transaction of the entry's
change (`Memory` does it inside the adapter change's ``with`` block), and reads them back.

Keyword search is BM25 as the directory store computes it (`memdir.storage.directory.postings`:
FTS5's formula, k1 = 1.2, b = 0.75, the same Porter-stemmed terms from the same four
fields with the same weights, ``bm25_column_weights``), summed in SQL over ``postings``.
PostgreSQL's own ``ts_rank`` was not used: it has no idf, so a rare word counts no more
than a common one, and the two stores would rank differently.

Vector search is pgvector's HNSW index (cosine distance) with iterative scans, so a
filtered search is not cut short by the filter. The index holds the vectors in half precision
(`memdir.storage.postgres.schema.VECTOR_INDEX`); the hits are ranked by the float vectors' cosines.

A search's reads take four round trips, not one per question the searcher asks: what is sent
together and what is read ahead or cached is in `memdir.storage.postgres.search`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from memdir.core.entry import Entry, Metadata
from memdir.core.identity import Labels
from memdir.storage.base import Candidates, EntryRow, IndexBehindFiles, IndexStats
from memdir.storage.bm25 import K1, B, bm25_idf
from memdir.storage.postgres.adapter import as_array, metadata_json, next_change, row_stats, upsert_row
from memdir.storage.postgres.database import AtCommit, Database, Executes, scalar
from memdir.storage.postgres.held import HeldRows, SearchColumns
from memdir.storage.postgres.reads import HITS, LISTED
from memdir.storage.postgres.schema import VECTOR_INDEX_NAME
from memdir.storage.postgres.search import (
    BEGIN,
    COSINE,
    HIDDEN,
    KEYWORD_OVERFETCH,
    WALK_ORDER,
    HiddenCache,
    KeywordAsked,
    KeywordRanking,
    Neighbours,
    ReadCandidates,
    RowHits,
    SearchState,
    TypedWalk,
    WalkPlans,
    candidates_params,
    candidates_sql,
    filters,
    keyword_sql,
    neighbour_ids,
    ranking_sql,
    typed_walk_sql,
    walk_candidates_sql,
)
from memdir.storage.records import Edge, EntryInfo, FileStats, ImportanceChange, RankFacts, entry_terms, folder_of
from memdir.storage.sidecar import EMBEDDING_DIM
from memdir.storage.virtual import is_virtual, virtual_paths

log = logging.getLogger(__name__)

_RECONCILE_BATCH = 500
_TERM_BYTES = 256  # longer words are stored as a prefix plus a digest: a btree row must fit a third of a page
EFFECTIVE_IMPORTANCE = (
    "CASE WHEN recalibrated IS NOT NULL AND recalibrated_from IS NOT DISTINCT FROM importance"
    " THEN recalibrated ELSE importance END"
)
"""An entry's importance: the importance job's while the entry states what it stated then (as the directory store)."""
WALK_OPERATOR_COST = 0.05
"""``cpu_operator_cost`` while the planner chooses how a vector search reads (20 times PostgreSQL's default; the
connection's own is back after it). The planner prices a cosine like any operator, and reading a row's vector like
reading the row: but the vector is 384 numbers stored out of line (TOAST), more pages per row. By default it read
every entry's vector below ~100K entries, and the entries of a type at any size: 14,000 pages for a search of
2,000 entries (9-16 ms) and 115,000 at 20K (~100 ms), where the HNSW walk reads 2,000-3,000. Priced so, it walks
the graph, and a filter that selects a few hundred entries (a folder) still reads just those through its index.
A store written one row version per entry is smaller than that estimate was made on, and there the planner still
chose to read every vector below a few thousand entries: an unfiltered search therefore always walks (sequential
scans and sorts off for its one statement), and a filtered one is left to the pricing above."""
WALK_PLANNER = (("cpu_operator_cost", str(WALK_OPERATOR_COST)), ("enable_seqscan", "off"), ("enable_sort", "off"))
"""The planner settings of a vector search's one statement (a filtered search's: the first alone, see
`WALK_OPERATOR_COST`). Set for the transaction, then put back by one statement after it: ``set_config``
with a NULL value does what ``RESET`` does (the connection's own value again), for all three at once."""
STOPPING_WINDOWS = 150_000
"""The first PostgreSQL (15) that stops a scan where a window count passes a limit (`typed_walk_sql`):
before it, that walk would read on to pgvector's ``hnsw.max_scan_tuples``, and no walk is shared."""
EF_SEARCH_SIZE = 100_000
MAX_EF_SEARCH = 1000  # pgvector's upper bound
EF_SEARCH = (
    f"least({MAX_EF_SEARCH}, greatest(%s::int, ceil(%s::int * sqrt(entries::float8 / {EF_SEARCH_SIZE})), %s::int))"
)
"""The HNSW scan's candidate list for a search of the store (one row of ``store_state``; parameters:
the configured ``ef_search`` twice, then the search's limit): the setting holds up to 100K entries;
beyond, a list of fixed length finds fewer of the true nearest entries as the graph grows, so the
list grows with the square root of the size (about 950 at 1M), up to pgvector's limit; never
shorter than the search asks for (`bench/bench_postgres.py` and, on held-out queries, `bench/bench_hnsw_list.py`
measure recall by list length)."""


def _stale(model_id: str | None, what: str) -> tuple[str, tuple[Any, ...]]:
    """``SELECT what`` over the entries `PostgresIndex.needs_embedding` lists, as statements each of
    which an index answers with those rows alone: the rows without a current vector
    (``entries_unembedded``), then those whose vector another model made, below and above the
    current model's name and without one (``entries_vector_model``: none, in a store of one model)."""
    unembedded = "stub_kind IS NULL AND (embedding IS NULL OR vector_text_hash IS DISTINCT FROM text_hash)"
    query = f"SELECT {what} FROM entries WHERE {unembedded}"
    if model_id is None:
        return query, ()
    others = [f"SELECT {what} FROM entries WHERE stub_kind IS NULL AND vector_model {test} AND NOT ({unembedded})"
              for test in ("< %s", "> %s", "IS NULL")]
    return " UNION ALL ".join([query, *others]), (model_id, model_id)


def stored_term(term: str) -> str:
    """The form a word takes in ``postings`` and ``term_stats`` (one-to-one: long words stay distinct)."""
    if len(term.encode("utf-8")) <= _TERM_BYTES:
        return term
    return term[:64] + "#" + hashlib.sha256(term.encode("utf-8")).hexdigest()


BEHIND_FILES = "SELECT EXISTS (SELECT 1 FROM entries WHERE indexed IS NULL)"
"""Whether a row changed without its search columns (`PostgresIndex.behind_files`)."""


class _Changes:
    """The store's change counter: the last committed change (`memdir.storage.base.ChangeSource`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def value(self) -> int:
        return scalar(self.db.connection(), "SELECT change FROM store_state")


class PostgresIndex:
    """The search side of the PostgreSQL store (see the module docstring).

    Args:
        column_weights: BM25 weights of title, tags, domain and content.
        hnsw_ef_search: candidates the HNSW scan keeps up to 100K entries (more beyond: `EF_SEARCH`).
        context_window: neighbours each side that a search's context coverage reads (0: off);
            `candidates` reads them with the candidates.
        held: the rows the store's adapter holds back for their search columns (`memdir.storage.postgres.held`).
    """

    in_memory = False

    def __init__(
        self, db: Database, *, column_weights: Sequence[float], hnsw_ef_search: int, context_window: int = 0,
        read_only: bool, held: HeldRows,
    ) -> None:
        self.db = db
        self.held = held
        self.context_window = context_window
        self.weights = np.asarray(column_weights, dtype=np.float32)
        self.ef_search = hnsw_ef_search
        self.read_only = read_only
        self.changes = _Changes(db)
        self._seq = 0
        self._cache = threading.local()  # .search: the `SearchState` of the calling thread's `reading`
        self._hidden = HiddenCache()
        self._walk_plans = WalkPlans()
        db.lock.ask_on_taking(BEHIND_FILES, BEHIND_FILES)  # (every change asks it first: `behind_files`)

    def _conn(self) -> psycopg.Connection:
        return self.db.connection()

    @property
    def seq(self) -> int:
        """Index changes this process has made."""
        return self._seq

    def close(self) -> None:
        self.db.close()

    def keep_in_memory(self) -> None:
        """Nothing to do: the database is the one place this index lives."""

    def behind_files(self) -> bool:
        """True if a row changed without its search columns (an adapter write made outside `Memory`); right
        after a change took the store's lock, as that lock's round trip found it."""
        answer = self.db.lock.taken_answer(BEHIND_FILES)
        return bool(answer[0][0]) if answer is not None else scalar(self._conn(), BEHIND_FILES)

    def ahead_of_files(self) -> Any:
        """Nothing to anticipate: the entry and its search columns commit in one transaction."""
        return nullcontext()

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
        with self.db.lock.exclusive():
            self._index(self._conn(), entry, text_hash, model_id, vector_text_hash or text_hash)

    def upsert_many(self, items: Iterable[tuple[Entry, FileStats, str | None, str | None]]) -> int:
        """`upsert` of many (entry, stats, text_hash, model_id) in the caller's transaction."""
        count = 0
        with self.db.lock.exclusive():
            conn = self._conn()
            for entry, _, text_hash, model_id in items:
                self._index(conn, entry, text_hash, model_id, text_hash)
                count += 1
        return count

    def restamp_metadata(self, items: Iterable[tuple[Entry, FileStats, str | None, str | None, str | None]]) -> None:
        """Search columns of entries whose metadata alone changed (importance, archival, links), as
        (entry, stats, text_hash, model_id, vector_text_hash), in the caller's transaction. (Their
        words are indexed again too: in a database that is the same few statements.)"""
        with self.db.lock.exclusive():
            conn = self._conn()
            for entry, _, text_hash, model_id, vector_hash in items:
                self._index(conn, entry, text_hash, model_id, vector_hash or text_hash)

    def set_vectors(self, items: Iterable[tuple[Entry, FileStats, str | None, str | None]]) -> int:
        count = 0
        with self.db.lock.exclusive():
            conn = self._conn()
            for entry, _, text_hash, model_id in items:
                done = conn.execute(
                    "UPDATE entries SET vector_model = %s, vector_text_hash = %s, text_hash = %s, indexed = version"
                    " WHERE path = %s AND counted RETURNING id",
                    (model_id if entry.embedding is not None else None, text_hash, text_hash, entry.path),
                ).fetchone()
                if done is None:
                    self._index(conn, entry, text_hash, model_id, text_hash)
                count += 1
            self._seq += 1
        return count

    def record_folder_stamps(self, stamps: Mapping[str, Any] | None) -> None:
        """Nothing to record: a database has no folders whose changes listings must notice."""

    def record_hits(
        self, path: str, hits: int, before: FileStats, after: FileStats, at: datetime | None = None
    ) -> None:
        """Nothing to record: the adapter's count of the read stored its time, for ranking's recency (`memdir.storage.postgres.reads`)."""

    def remove(self, path: str) -> bool:
        with self.db.lock.exclusive():
            conn = self._conn()
            with conn.pipeline():
                self._unindex(conn, path)
                removed = conn.execute(
                    "UPDATE entries SET indexed = version, length = 0, text_hash = NULL, vector_model = NULL,"
                    " vector_text_hash = NULL, counted = false WHERE path = %s RETURNING id", (path,),
                )
                if removed.fetchone() is None:
                    return False
            self._seq += 1
            return True

    def _index(
        self, conn: psycopg.Connection, entry: Entry, text_hash: str | None, model_id: str | None,
        vector_hash: str | None,
    ) -> None:
        """Write the search columns, postings, term counts and links of ``entry``'s row, with the row
        itself when the adapter held it back for them (`memdir.storage.postgres.held`); a stub's row
        is marked indexed, nothing more."""
        if entry.virtual:
            self._store_builtin(conn, entry)
        held = self.held.take(entry.path)
        if held is None:
            row = conn.execute("SELECT stub_kind FROM entries WHERE path = %s", (entry.path,)).fetchone()
            if row is None:
                return
            if row[0]:
                with conn.pipeline():
                    self._unindex(conn, entry.path)
                    conn.execute("UPDATE entries SET indexed = version, counted = false WHERE path = %s", (entry.path,))
                self._seq += 1
                return
        meta = entry.metadata
        terms = entry_terms(entry.title, [str(tag) for tag in meta.tags], meta.domain or "", entry.content)
        tf = (terms.counts.astype(np.float32) @ self.weights).tolist() if terms.terms else []
        stored = [stored_term(term) for term in terms.terms]
        has_vector = entry.embedding is not None
        columns = SearchColumns(terms.length, text_hash, model_id if has_vector else None,
                                vector_hash if has_vector else None, meta.importance, meta.hidden)
        # The statements below wait for no answer: sent together, one round trip; a written entry's, with
        # the change's commit (nothing of this change reads them before: its next statement sends them).
        sink: Executes = AtCommit(self.db.lock) if held is not None else conn
        with conn.pipeline() if held is None else nullcontext():
            self._unindex(sink, entry.path)
            if held is not None:
                upsert_row(sink, held, search=columns)
            else:
                sink.execute(
                    "UPDATE entries SET length = %s, text_hash = %s, vector_model = %s, vector_text_hash = %s,"
                    " importance = %s, hidden = %s, counted = true, indexed = version WHERE path = %s",
                    (columns.length, columns.text_hash, columns.vector_model, columns.vector_text_hash,
                     columns.importance, columns.hidden, entry.path),
                )
            sink.execute(
                "INSERT INTO postings (term, entry, tf, length) SELECT t.term, e.id, t.tf, %s"
                " FROM entries e, unnest(%s::text[], %s::real[]) AS t(term, tf) WHERE e.path = %s",
                (terms.length, stored, tf, entry.path),
            )
            sink.execute(
                "INSERT INTO term_stats (term, entries) SELECT unnest(%s::text[]), 1"
                " ON CONFLICT (term) DO UPDATE SET entries = term_stats.entries + 1",
                (stored,),
            )
            links = meta.all_links
            sink.execute(
                "INSERT INTO links (entry, target, kind, strength, origin, created_at, traversed_at)"
                " SELECT e.id, l.* FROM entries e, unnest(%s::text[], %s::text[], %s::real[], %s::text[], %s::text[],"
                " %s::text[]) AS l WHERE e.path = %s ON CONFLICT DO NOTHING",
                (
                    [link.target for link in links], [link.kind for link in links],
                    [link.strength for link in links], [link.origin for link in links],
                    [link.created_at.isoformat() for link in links],
                    [link.traversed_at.isoformat() if link.traversed_at else None for link in links], entry.path,
                ),
            )
            sink.execute("UPDATE store_state SET entries = entries + 1, total_length = total_length + %s", (terms.length,))
        self._seq += 1

    @staticmethod
    def _unindex(conn: Executes, path: str) -> None:
        """Take the words of the row at ``path`` out of the term counts and totals (if they were
        counted: the statement that follows says whether the row counts now), its postings and
        links out of their tables. The row itself is not rewritten (`memdir.storage.postgres.held`)."""
        conn.execute(
            "UPDATE term_stats t SET entries = t.entries - 1 FROM postings p JOIN entries e ON e.id = p.entry"
            " WHERE e.path = %s AND e.counted AND t.term = p.term", (path,),
        )
        conn.execute(
            "UPDATE store_state s SET entries = s.entries - 1, total_length = s.total_length - e.length"
            " FROM entries e WHERE e.path = %s AND e.counted", (path,),
        )
        conn.execute("DELETE FROM postings p USING entries e WHERE e.path = %s AND p.entry = e.id", (path,))
        conn.execute("DELETE FROM links l USING entries e WHERE e.path = %s AND l.entry = e.id", (path,))

    def _store_builtin(self, conn: psycopg.Connection, entry: Entry) -> None:
        """A built-in entry's row: package data whose vector lives in this store alone."""
        version = next_change(conn)
        conn.execute(
            "INSERT INTO entries (path, content, title, metadata, updated_at, size, embedding, type, tags_folded,"
            " folder, builtin, version) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, true, %s)"
            " ON CONFLICT (path) DO UPDATE SET content = EXCLUDED.content, title = EXCLUDED.title,"
            " metadata = EXCLUDED.metadata, embedding = COALESCE(EXCLUDED.embedding, entries.embedding),"
            " type = EXCLUDED.type, tags_folded = EXCLUDED.tags_folded, version = EXCLUDED.version"
            " WHERE entries.builtin",
            (
                entry.path, entry.content, entry.title, metadata_json(entry.metadata), entry.updated_at, entry.size,
                entry.embedding, entry.type, [str(t).casefold() for t in entry.metadata.tags], folder_of(entry.path),
                version,
            ),
        )

    # ------------------------------------------------------------------ reconcile
    def reconcile(
        self,
        files: Iterable[tuple[str, FileStats]],
        load: Callable[[str], Entry],
        text_hash_of: Callable[[Entry], str],
        *,
        text_recipe: str | None = None,
        covered: Callable[[str], bool] | None = None,
        known: Mapping[str, Any] | None = None,
    ) -> ReconcileReport:
        """Index the built-in entries, rows written without their search columns, and — when
        ``text_recipe`` changed — re-hash every entry's searchable text (its vector then counts
        as stale where the text changed). Read-only, nothing is written. (``covered`` and ``known``
        are the directory store's listing plan: a database has no folders to list.)"""
        report = ReconcileReport()
        builtins = [path for path, _ in files if is_virtual(path)]
        if self.read_only:
            return report
        with self.db.lock.exclusive():
            conn = self._conn()
            present = {row[0] for row in conn.execute("SELECT path FROM entries WHERE builtin")}
            gone = sorted(present - set(virtual_paths()))
            behind = [row[0] for row in conn.execute("SELECT path FROM entries WHERE indexed IS NULL")]
            missing = [path for path in builtins if path not in present]
            rehash = text_recipe is not None and scalar(conn, "SELECT text_recipe FROM store_state") != text_recipe
            if gone or behind or missing or rehash:
                # The change number before any row, the order of every change and of a read's count
                # (`PostgresAdapter._counted`): a row taken first would deadlock with a read of it.
                next_change(conn)
            if gone:
                conn.execute("DELETE FROM entries WHERE builtin AND path = ANY(%s)", (gone,))
            for path in [*missing, *behind]:
                try:
                    entry = load(path)
                except Exception as exc:  # (a row that cannot be read as an entry: say so, index the rest)
                    log.warning("not indexing %s: %s", path, exc)
                    report.failed.append(path)
                    continue
                self._index(conn, entry, text_hash_of(entry), entry.embedding_model, entry.embedding_text_hash)
                report.updated += 1
            if rehash:
                report.rehashed = self._rehash(conn, load, text_hash_of)
                conn.execute("UPDATE store_state SET text_recipe = %s", (text_recipe,))
        return report

    def _rehash(self, conn: psycopg.Connection, load: Callable[[str], Entry], text_hash_of: Callable[[Entry], str]) -> int:
        paths = [row[0] for row in conn.execute("SELECT path FROM entries WHERE counted ORDER BY path")]
        for start in range(0, len(paths), _RECONCILE_BATCH):
            batch = paths[start : start + _RECONCILE_BATCH]
            hashes = [text_hash_of(load(path)) for path in batch]
            conn.execute(
                "UPDATE entries e SET text_hash = t.hash FROM unnest(%s::text[], %s::text[]) AS t(path, hash)"
                " WHERE e.path = t.path", (batch, hashes),
            )
        return len(paths)

    # ------------------------------------------------------------------ listings and rows
    def describe(self, stats: Mapping[str, FileStats]) -> dict[str, EntryInfo]:
        """Listing rows of the entries whose row version is the one in ``stats``."""
        rows = self._conn().execute(
            f"SELECT path, title, size, updated_at, type, {HITS}, version FROM entries"
            " WHERE path = ANY(%s) AND NOT builtin AND stub_kind IS NULL AND indexed = version", (list(stats),)
        ).fetchall()
        return {
            path: EntryInfo(path, title, size, updated_at, type_, hits, version)
            for path, title, size, updated_at, type_, hits, version in rows
            if stats[path] == row_stats(size, version)
        }

    def rows(self, paths: Sequence[str]) -> dict[str, EntryRow]:
        rows = self._conn().execute(
            "SELECT e.path, e.title, e.type, e.metadata -> 'tags', (SELECT string_agg(term, ' ' ORDER BY term)"
            " FROM postings p WHERE p.entry = e.id), e.metadata ->> 'domain' FROM entries e"
            " WHERE e.path = ANY(%s) AND e.counted",
            (list(paths),),
        ).fetchall()
        return {path: EntryRow(path, title, type_, tuple(tags or ()), terms or "", domain or "")
                for path, title, type_, tags, terms, domain in rows}

    def tags(self, paths: Sequence[str]) -> dict[str, tuple[str, ...]]:
        rows = self._conn().execute(
            "SELECT path, metadata -> 'tags' FROM entries WHERE path = ANY(%s) AND counted", (list(paths),),
        )
        return {path: tuple(tags or ()) for path, tags in rows}

    def labels(self, paths: Sequence[str] | None = None) -> dict[str, Labels]:
        where = "" if paths is None else " AND path = ANY(%s)"
        rows = self._conn().execute(
            "SELECT path, metadata ->> 'kind', metadata ->> 'created_by', metadata -> 'visible_to' FROM entries"
            " WHERE stub_kind IS NULL AND NOT builtin" + where, () if paths is None else (list(paths),),
        )
        found = {}
        for path, kind, owner, visible in rows:
            labels = Metadata(kind=kind, created_by=owner, visible_to=visible or []).labels()
            if labels != Labels():
                found[path] = labels
        return found

    def recently_used(self, limit: int) -> list[str]:
        return [row[0] for row in self._conn().execute(
            f"SELECT path FROM entry_reads r WHERE {LISTED} ORDER BY recency DESC, path LIMIT %s", (max(0, limit),),
        )]

    def most_important(self, at_least: float, limit: int) -> list[str]:
        return [row[0] for row in self._conn().execute(
            f"SELECT path FROM entry_reads r WHERE {LISTED} AND ranked_importance >= %s"
            " ORDER BY ranked_importance DESC, recency DESC, path LIMIT %s", (at_least, max(0, limit)),
        )]

    def recalibrate(self, changes: Sequence[ImportanceChange]) -> None:
        """Keep recalibrated importance in the entries' rows (`Memory.recalibrate_importance`)."""
        self._conn().execute(
            "UPDATE entries e SET recalibrated = c.new, recalibrated_from = c.stated"
            " FROM unnest(%s::text[], %s::real[], %s::real[]) AS c(path, new, stated) WHERE e.path = c.path",
            ([change.path for change in changes], [change.new for change in changes],
             [change.stated for change in changes]),
        )

    def linking_to(self, target: str) -> list[str]:
        return [row[0] for row in self._conn().execute(
            "SELECT DISTINCT e.path FROM links l JOIN entries e ON e.id = l.entry WHERE l.target = %s ORDER BY e.path", (target,)
        )]

    def edges(self, paths: Sequence[str], kinds: Sequence[str] | None = None) -> list[Edge]:
        """Every link from or to one of ``paths`` (of ``kinds``, when given): one hop of the graph."""
        kind_sql = " AND l.kind = ANY(%s)" if kinds else ""
        found: dict[tuple[str, str, str], Edge] = {}
        for column in ("e.path", "l.target"):
            rows = self._conn().execute(
                "SELECT e.path, l.target, l.kind, l.strength, l.origin, l.created_at, l.traversed_at FROM links l"
                f" JOIN entries e ON e.id = l.entry WHERE e.stub_kind IS NULL AND {column} = ANY(%s){kind_sql}",
                (list(paths), *([list(kinds)] if kinds else [])),
            )
            for row in rows:
                found.setdefault(row[:3], Edge(*row))
        return list(found.values())

    def hidden(self) -> frozenset[str]:
        """Archived and superseded entries (left out of search unless asked for): in a search, those
        read with its statistics, else read again only if the store changed since last read."""
        state = self._search()
        if state is not None and state.own:
            cached = self._hidden.get(state.change)
            if cached is not None:
                return cached
        own = state is None or state.own  # (inside a writer's transaction: its own changes, never cached)
        query = f"SELECT change, CASE WHEN change IS DISTINCT FROM %s THEN {HIDDEN} END FROM store_state"
        change, paths = self._rows((query, (self._hidden.known() if own else None,)))[0]
        if paths is None:  # unchanged since cached
            cached = self._hidden.get(change)
            if cached is not None:
                return cached
            change, paths = self._rows((query, (None,)))[0]  # (another thread cached a newer set meanwhile)
        return self._hidden.put(change, paths) if own else frozenset(paths)

    def rank_facts(self, paths: Sequence[str]) -> dict[str, RankFacts]:
        """Importance, reads, last access and archived/superseded state of ``paths``."""
        rows = self._conn().execute(
            f"SELECT e.path, type, {EFFECTIVE_IMPORTANCE}, r.hits, r.recency, hidden, metadata ->> 'kind', importance"
            " FROM entries e JOIN entry_reads r ON r.entry = e.id WHERE stub_kind IS NULL AND e.path = ANY(%s)", (list(paths),),
        )
        return {
            path: RankFacts(path, type_, importance, hits, accessed.isoformat(), hidden, kind, stated)
            for path, type_, importance, hits, accessed, hidden, kind, stated in rows
        }

    def needs_embedding(self, model_id: str | None) -> list[str]:
        """Entries without a current vector: none, one made from other text, or (given ``model_id``) by another model."""
        query, params = _stale(model_id, "path")
        return sorted(row[0] for row in self._conn().execute(query, params))

    def stats(self, model_id: str | None = None) -> IndexStats:
        """Counts read where they are kept: the entries from ``store_state``, the stale ones from the
        small indexes of unembedded rows and of vector models (no row of a current entry is read)."""
        query, params = _stale(model_id, "count(*)")
        entries, stale = self._conn().execute(
            f"SELECT s.entries, (SELECT coalesce(sum(n), 0)::bigint FROM ({query}) AS parts(n)) FROM store_state s", params,
        ).fetchone() or (0, 0)
        return IndexStats(entries=entries, embedded=entries - stale, stale=stale)

    def __len__(self) -> int:
        return scalar(self._conn(), "SELECT entries FROM store_state")

    def vector_snapshot(self, model_id: str | None) -> tuple[list[str], np.ndarray]:
        rows = self._conn().execute(
            "SELECT path, embedding FROM entries WHERE embedding IS NOT NULL AND stub_kind IS NULL"
            " AND vector_model IS NOT DISTINCT FROM %s ORDER BY path", (model_id,),
        ).fetchall()
        if not rows:
            return [], np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        return [row[0] for row in rows], np.vstack([as_array(row[1]) for row in rows])

    # ------------------------------------------------------------------ search (`memdir.storage.base.SearchIndex`)
    def _search(self) -> SearchState | None:
        return getattr(self._cache, "search", None)

    @contextmanager
    def reading(self, *, one_query: bool = False, caught_up_for: Sequence[str] | None = None) -> Iterator[psycopg.Connection]:
        """One repeatable-read snapshot for a search (the caller's own transaction, if it has one);
        its ``BEGIN`` goes with its first statement (`memdir.storage.postgres.search`). ``one_query``:
        the searches inside are of one query by different types, whose vector walks can be one (`semantic_hits`).
        ``caught_up_for``: the snapshot's first statement checks for a row changed without its search
        columns, in the round trip of the ``BEGIN`` and those terms' statistics (what a search reads first):
        `IndexBehindFiles` if one is found."""
        conn = self._conn()
        if self._search() is not None:
            yield conn
            return
        own = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        state = self._cache.search = SearchState(begin_pending=own, own=own, one_query=one_query)
        try:
            if caught_up_for is not None and self._starts_behind(state, caught_up_for):
                raise IndexBehindFiles
            yield conn
        finally:
            self._cache.search = None
            if state.begun:
                conn.execute("COMMIT" if conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS else "ROLLBACK")

    def _starts_behind(self, state: SearchState, terms: Sequence[str]) -> bool:
        """Whether the index is behind the files (`behind_files`) in ``state``'s reading: asked as its
        snapshot's first statement, in one round trip with its ``BEGIN`` and ``terms``' statistics, unless the
        store's lock answered it or the reading is in the caller's transaction (then asked alone)."""
        if self.db.lock.taken_answer(BEHIND_FILES) is not None or not state.begin_pending:
            return self.behind_files()
        state.asks_behind = True  # (the reading's first round trip asks it first: `_rows`)
        self._statistics(terms)
        return state.behind

    def _rows(self, *statements: tuple[str, Sequence[Any]], rows_of: int = -1) -> list[tuple[Any, ...]]:
        """The rows of the statement at ``rows_of`` (the last) among ``statements``, all sent in one
        round trip (after the reading's pending ``BEGIN``, if any, and its check for a row behind the
        files, if it asks one: `_starts_behind`)."""
        conn = self._conn()
        state = self._search()
        asks = state is not None and state.begin_pending and state.asks_behind
        if state is not None and state.begin_pending:
            state.begin_pending, state.begun = False, True
            lead = ((BEGIN, ()), (BEHIND_FILES, ())) if asks else ((BEGIN, ()),)
            statements = (*lead, *statements)
            rows_of = rows_of + len(lead) if rows_of >= 0 else rows_of
        if len(statements) == 1:
            return conn.execute(*statements[0]).fetchall()
        with conn.pipeline():
            cursors = [conn.execute(sql, params) for sql, params in statements]
            rows = cursors[rows_of].fetchall()
            if asks and state is not None:
                state.behind = bool(cursors[1].fetchall()[0][0])
            return rows

    def _statistics(self, terms: Iterable[str]) -> tuple[tuple[int, int], dict[str, int]]:
        """((entries, total length in words), entries holding each term): what BM25 needs, in one
        statement, with the hidden entries if the store changed since they were last read. Inside
        `reading`, read once per search; outside, the one statement is its own consistent read (no
        transaction is opened for it: what a result's snippet weighs its lines by)."""
        state = self._search()
        known = state.statistics if state is not None else {}
        own = state.own if state is not None else self._conn().info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        stored = {term: stored_term(term) for term in terms}
        wanted = [form for form in dict.fromkeys(stored.values()) if form not in known]
        if wanted or "" not in known:
            change, live, length, found, hidden = self._rows((
                "SELECT s.change, s.entries, s.total_length, (SELECT coalesce(json_object_agg(t.term, t.entries), '{}')"
                f" FROM term_stats t WHERE t.term = ANY(%s)), CASE WHEN s.change IS DISTINCT FROM %s THEN {HIDDEN} END"
                " FROM store_state s", (wanted, self._hidden.known() if own else None),
            ))[0]
            known[""] = (live, length)
            known.update((form, max(0, found.get(form, 0))) for form in wanted)
            if own:
                if state is not None:
                    state.change = change
                if hidden is not None:
                    self._hidden.put(change, hidden)
        return known[""], {term: known[form] for term, form in stored.items()}

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        return self._statistics(terms)[1]

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        (live, _), frequencies = self._statistics(terms)
        return {term: bm25_idf(live, hits) for term, hits in frequencies.items()}

    def keyword_hits(
        self, terms: Sequence[str], limit: int, *, types: Sequence[str] | None = None,
        path_prefix: str | None = None, tags: Sequence[str] | None = None,
    ) -> dict[str, float]:
        """BM25's best ``limit`` entries of the filters (`keyword_sql`). In a reading of one query
        (``reading(one_query=True)``), a search by type alone takes its hits from the ranking the
        reading's first such search read, when that tells (`KeywordRanking`). In a reading, the hits
        are kept for the search's vector walk, which reads their rows with its own (`semantic_hits`)."""
        hits = self._keyword_hits(terms, limit, types=types, path_prefix=path_prefix, tags=tags)
        state = self._search()
        if state is not None:
            state.keyword = KeywordAsked([stored_term(term) for term in dict.fromkeys(terms)], list(hits))
        return hits

    def _keyword_hits(
        self, terms: Sequence[str], limit: int, *, types: Sequence[str] | None,
        path_prefix: str | None, tags: Sequence[str] | None,
    ) -> dict[str, float]:
        (live, total_length), frequencies = self._statistics(terms)
        frequencies = {term: hits for term, hits in frequencies.items() if hits > 0}
        if not live or not frequencies or limit <= 0:
            return {}
        weights = [(K1 + 1.0) * max(bm25_idf(live, hits), 1e-6) for hits in frequencies.values()]
        avgdl = total_length / live if total_length > 0 else 1.0
        where, params = filters(types, path_prefix, tags)
        scoring = (K1, B, B, avgdl, [stored_term(term) for term in frequencies], weights)
        within = KEYWORD_OVERFETCH * limit if where else None
        shared = self._shared_by_type(types, path_prefix, tags)
        ranking = None
        if shared is not None and types:
            ranking = self._ranking(shared, scoring, types, limit)
            rows = ranking.take(scoring, types, limit)
            if rows is not None:
                return {path: float(score) for path, score in rows}
        if within is not None and (ranking is None or len(ranking.rows) < within):
            rows = self._rows((keyword_sql(where, within=within), (*scoring, *params, limit)))
            scored = next(int(score) for path, score in rows if path is None)
            rows = [row for row in rows if row[0] is not None]
            if len(rows) == limit or scored <= within:
                return {path: float(score) for path, score in rows}
        # Too few of the best passed (or no filter): test every scored entry.
        rows = self._rows((keyword_sql(where, within=None), (*scoring, *params, limit)))
        return {path: float(score) for path, score in rows}

    def _shared_by_type(
        self, types: Sequence[str] | None, path_prefix: str | None, tags: Sequence[str] | None,
    ) -> SearchState | None:
        """The reading's state when a search by ``types`` alone may share what the reading's first such
        search read (`KeywordRanking`, `TypedWalk`): a reading of one query, on a PostgreSQL that stops
        a scan at a window count (`STOPPING_WINDOWS`); else None."""
        state = self._search()
        if (state is None or not state.one_query or not types or path_prefix or tags
                or self._conn().info.server_version < STOPPING_WINDOWS):
            return None
        return state

    def _ranking(self, state: SearchState, scoring: tuple[Any, ...], types: Sequence[str], limit: int) -> KeywordRanking:
        """The reading's keyword ranking of ``scoring`` (`KeywordRanking`): read by the reading's first
        search by type (as far as that search reads), kept for its next ones."""
        if state.ranking is None or state.ranking.scoring != scoring:
            rows = self._rows((ranking_sql(KEYWORD_OVERFETCH * limit), (*scoring, list(types), limit)))
            scored = next(int(score) for path, score, _ in rows if path is None)
            state.ranking = KeywordRanking(scoring, [row for row in rows if row[0] is not None], scored)
        return state.ranking

    def semantic_hits(
        self, vector: np.ndarray, model: str | None, limit: int, *, types: Sequence[str] | None = None,
        path_prefix: str | None = None, tags: Sequence[str] | None = None, ef_search: int | None = None,
    ) -> RowHits | None:
        """The HNSW walk's ``limit`` nearest entries (see `WALK_OPERATOR_COST` for how it is planned).
        In a reading of one query (``reading(one_query=True)``), the first search by type alone walks
        once for every type: its walk keeps the other types' rows it reads (`TypedWalk`). Where the
        planner would not walk for that search's types, the next searches walk each for their own,
        without asking the planner again (discovery's, the one reading of one query, has one more).
        In a search's reading, after its keyword side (`keyword_hits`), the walk's statement also reads its
        candidates' rows, the walk's hits and the keyword hits (`walk_candidates_sql`): the search's
        `candidates` asks nothing more."""
        query = np.asarray(vector, dtype=np.float32)
        if query.shape != (EMBEDDING_DIM,):
            return None
        where, params = filters(types, path_prefix, tags)
        comparable = "e.embedding IS NOT NULL AND e.stub_kind IS NULL" + (" AND e.vector_model = %s" if model else "")
        model_params = [model] if model else []
        condition = comparable + (f" AND {where}" if where else "")
        with self.reading():  # the HNSW settings last until the end of this (or the search's) transaction
            state = self._search()
            shared = self._shared_by_type(types, path_prefix, tags) if ef_search is None else None
            rows = None
            if shared is not None and shared.walk is not None:
                rows = shared.walk.take(query, model, list(types or ()), limit)
            if rows is None:
                walk = (f"SELECT e.path, {COSINE} FROM entries e WHERE {condition}"
                        f" ORDER BY {WALK_ORDER} LIMIT %s", (query, *model_params, *params, query, limit))
                planner = WALK_PLANNER if not where else WALK_PLANNER[:1]
                keyword = state.keyword if state is not None and ef_search is None else None
                if shared is not None and not shared.walk_tried:  # (the reading's first search by type alone)
                    shared.walk_tried = True
                    if self._walks(shared, (tuple(types or ()), model, limit), planner, walk):
                        rows = self._typed_walk(shared, query, model, list(types or ()), limit, comparable, model_params,
                                                keyword, (condition, [*model_params, *params]))
                if rows is None and keyword is not None and shared is None:
                    rows = [(path, cosine) for path, cosine, *_ in self._walk_with_candidates(
                        planner, walk, keyword, (condition, [*model_params, *params]))]
                elif rows is None:
                    rows = self._planned(planner, walk, limit, ef_search)
            if not rows and not self._rows((f"SELECT EXISTS (SELECT 1 FROM entries e WHERE {comparable})", model_params))[0][0]:
                if state is not None:
                    state.read = None
                return None  # nothing embedded by this model yet (e.g. just switched): keyword mode
            rows.sort(key=lambda row: -row[1])  # (relaxed order: the scan may return near-ties out of order)
            hits = RowHits(self, query, condition, [*model_params, *params], [path for path, _ in rows],
                           {path: float(cosine) for path, cosine in rows})
            if state is not None:
                state.semantic = hits
        return hits

    def _walk_with_candidates(self, planner: Sequence[tuple[str, str]], walk: tuple[str, Sequence[Any]],
                              keyword: KeywordAsked, search: tuple[str, list[Any]], types: list[str] | None = None,
                              ) -> list[tuple[Any, ...]]:
        """The rows of ``walk`` (``(path, cosine, type, length)``, the last two None unless ``types``: a
        `typed_walk_sql` whose hits are those types' rows), read with the candidates' rows of its hits and
        ``keyword``'s (`walk_candidates_sql`; ``search``: the search's condition and its parameters): those
        are kept in the reading's state for the search's `candidates`."""
        state = self._search()
        assert state is not None  # (called in a search's reading only)
        window = self.context_window if keyword.stored else 0
        query, limit = walk[1][0], walk[1][-1]
        condition, params = search
        read = self._planned(planner, (
            walk_candidates_sql(walk[0], condition, window, typed=types is not None),
            [*walk[1], *([types, limit] if types is not None else []), keyword.paths, *params, query,
             *([window, window] if window else []), keyword.stored],
        ), limit)
        state.keyword = None
        state.read = ReadCandidates(keyword.paths, keyword.stored, window, [row for row in read if row[0] > 0])
        return [(path, cosine, type_, length) for _, length, path, _, type_, _, cosine, _
                in sorted((row for row in read if row[0] < 0), key=lambda row: -row[0])]

    def _planned(self, planner: Sequence[tuple[str, str]], statement: tuple[str, Sequence[Any]], limit: int,
                 ef_search: int | None = None) -> list[Any]:
        """The rows of ``statement`` planned with the HNSW settings and ``planner``'s, which are put back after it."""
        ef = ef_search or self.ef_search
        return self._rows(
            (f"SELECT set_config('hnsw.ef_search', {EF_SEARCH}::text, true),"
             " set_config('hnsw.iterative_scan', 'relaxed_order', true), "
             + ", ".join(f"set_config('{name}', '{value}', true)" for name, value in planner)
             + " FROM store_state", (ef, ef, limit)),
            statement,
            ("SELECT " + ", ".join(f"set_config('{name}', NULL, true)" for name, _ in planner), ()),
            rows_of=1,
        )

    def _walks(self, state: SearchState, key: tuple[Any, ...], planner: Sequence[tuple[str, str]],
               statement: tuple[str, Sequence[Any]]) -> bool:
        """Whether the planner reads ``statement`` (a walk filtered by the types of ``key``: types, model,
        limit) through the HNSW index: for a type few entries have, it reads those entries instead, and no
        walk is shared. Asked once for a store of about the size the reading's statistics say (`WalkPlans`)."""
        entries = state.statistics[""][0] if "" in state.statistics else None
        known = self._walk_plans.get(key, entries) if entries is not None else None
        if known is not None:
            return known
        plan = self._planned(planner, ("EXPLAIN " + statement[0], statement[1]), key[2])
        walks = any(f"using {VECTOR_INDEX_NAME} " in line for (line,) in plan)
        if entries is not None:
            self._walk_plans.put(key, entries, walks)
        return walks

    def _typed_walk(
        self, state: SearchState, query: np.ndarray, model: str | None, types: list[str], limit: int,
        comparable: str, model_params: list[Any], keyword: KeywordAsked | None, search: tuple[str, list[Any]],
    ) -> list[Any]:
        """The rows of ``types`` that `typed_walk_sql` finds; what it read is kept in ``state`` for the
        reading's next searches of other types. After the search's keyword side (``keyword``), the walk's
        statement reads its candidates' rows too (`_walk_with_candidates`; ``search``: its condition and
        parameters)."""
        walk = (typed_walk_sql(comparable), (query, types, query, *model_params, limit))
        read = (self._walk_with_candidates(WALK_PLANNER, walk, keyword, search, types) if keyword is not None
                else self._planned(WALK_PLANNER, walk, limit))
        wanted = set(types)
        found = [(path, cosine) for path, cosine, type_, _ in read if type_ in wanted]
        state.walk = TypedWalk(query.tobytes(), model, limit, read[0][3] if read else 0,
                               [(path, cosine, type_) for path, cosine, type_, _ in read], len(found) < limit)
        return found

    def cosines(self, query: np.ndarray, condition: str, params: list[Any], paths: Sequence[str]) -> dict[str, float]:
        """Exact cosine of ``paths`` that meet ``condition`` (others are left out)."""
        rows = self._rows((
            f"SELECT e.path, {COSINE} FROM entries e WHERE e.path = ANY(%s) AND {condition}",
            (query, list(paths), *params),
        ))
        return {path: float(cosine) for path, cosine in rows}

    def neighbours(self, paths: Sequence[str], window: int) -> tuple[np.ndarray, np.ndarray]:
        """Neighbours by first-write order (the row id) in the same folder; keys are row ids.
        In a search whose `candidates` asked for these paths: read with them, and only those
        holding one of its words (for `memdir.search.context`, the only ones that count)."""
        if window <= 0 or not paths:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        state = self._search()
        found = state.neighbours if state is not None else None
        if found is not None and found.window == window and found.paths == tuple(paths):
            return found.owner, found.ids
        rows = self._rows((
            "SELECT c.pos - 1, n.id FROM unnest(%s::text[]) WITH ORDINALITY AS c(path, pos)"
            f" JOIN entries e ON e.path = c.path CROSS JOIN LATERAL ({neighbour_ids('e')}) n",
            (list(paths), window, window),
        ))
        return np.array([row[0] for row in rows], dtype=np.int64), np.array([row[1] for row in rows], dtype=np.int64)

    def holding(self, terms: Sequence[str], keys: np.ndarray) -> dict[str, np.ndarray]:
        forms = {term: stored_term(term) for term in terms}
        state = self._search()
        found = state.neighbours if state is not None else None
        if found is not None and keys is found.ids:
            return {term: np.array([form in held for held in found.held], dtype=bool) for term, form in forms.items()}
        held: dict[str, set[int]] = {form: set() for form in forms.values()}
        if forms and len(keys):
            for form, entry_id in self._rows((
                "SELECT term, entry FROM postings WHERE term = ANY(%s) AND entry = ANY(%s)",
                (list(held), [int(key) for key in keys]),
            )):
                held[form].add(entry_id)
        return {term: np.array([int(key) in held[form] for key in keys], dtype=bool) for term, form in forms.items()}

    def keys_of(self, paths: Sequence[str]) -> list[str]:
        """(Keys are paths.)"""
        return list(paths)

    def candidates(self, paths: Sequence[str], terms: Sequence[str]) -> Candidates:
        """Title, type, tags and query words of ``paths`` — and, in a search, their cosines and
        their neighbours with the words those hold, in the same statement (`candidates_sql`)."""
        state = self._search()
        semantic = state.semantic if state is not None else None
        window = self.context_window if state is not None and terms else 0
        stored = [stored_term(term) for term in terms]
        read = state.read if state is not None else None
        if read is not None and semantic is not None and read.fit(semantic.top, paths, stored, window):
            rows = read.rows  # (read with the search's walk)
        else:
            rows = self._rows((candidates_sql(semantic, window), candidates_params(semantic, paths, stored, window)))
        if state is not None:
            state.read = None
        by_path: dict[str, tuple[Any, ...]] = {}
        owner, ids, neighbour_held = [], [], []
        for pos, entry_id, path, title, type_, tags, cosine, held in rows:
            if path is None:
                owner.append(pos)
                ids.append(entry_id)
                neighbour_held.append(frozenset(held))
                continue
            by_path.setdefault(path, (pos, title, type_, tags, frozenset(held)))
            if semantic is not None:
                semantic.known.setdefault(path, 0.0 if cosine is None else float(cosine))
        found = [(path, by_path[path]) for path in paths if path in by_path]
        if window and state is not None:  # (a window is asked for only in a search)
            # (owner: the candidate's place among those found, as `memdir.search.context` counts them)
            place = {row[0]: i for i, (_, row) in enumerate(found)}
            state.neighbours = Neighbours(
                tuple(path for path, _ in found), window, np.array([place[pos] for pos in owner], dtype=np.int64),
                np.array(ids, dtype=np.int64), neighbour_held,
            )
        kept = [path for path, _ in found]
        return Candidates(
            keys=kept,
            paths=kept,
            titles=[row[1] for _, row in found],
            types=[row[2] for _, row in found],
            tags=[tuple(row[3] or ()) for _, row in found],
            contains={term: np.array([form in row[4] for _, row in found], dtype=bool) for term, form in zip(terms, stored)},
        )


@dataclass(slots=True)
class ReconcileReport:
    """What `PostgresIndex.reconcile` did."""

    updated: int = 0
    rehashed: int = 0
    failed: list[str] = field(default_factory=list)
