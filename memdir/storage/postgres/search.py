"""What one search on the PostgreSQL store keeps between its statements, and the SQL they run.

A search (`memdir.search.hybrid.HybridSearcher`) asks its index for statistics, keyword hits,
vector hits, its candidates' rows, their cosines, their folder neighbours and the words those
hold, and the hidden entries: done one by one, that was 13 round trips. At 100K entries the
statements themselves are quick (0.1-5 ms each); the round trips and planning add up. So:

* the search's ``BEGIN`` is not sent on its own: it goes with the first statement in one
  pipeline (`SearchState.begin_pending`), as the HNSW settings go with the HNSW query; so does
  the check for a row changed without its search columns, as the snapshot's first statement
  (`SearchState.asks_behind`), where it was a round trip of its own before the snapshot;
* `candidates` is ONE statement (`candidates_sql`) that also returns every candidate's cosine
  to the query (the vector search's own ``cosines`` then asks nothing) and, when context
  coverage is on, each candidate's neighbours with the query words they hold (what
  `memdir.search.context` asks next through ``neighbours`` and ``holding``);
* and in a search that statement is the vector walk's own (`walk_candidates_sql`): the walk's
  hits and the keyword hits the search found before it are its candidates (in discovery, the
  first search by type's, whose walk is the one its other searches take their hits from);
* the hidden (archived, superseded) entries are read with the statistics only when the
  store's change counter moved since they were last read (`HiddenCache`).
* the statistics are read once per `SearchState`: what a reading read, the searches and the
  snippet weights inside the same reading take from it (`memdir.memory.searching.Searching.reading`);
* in a reading of one query by type (discovery: skills, then the other types), the postings are
  scored once: the first keyword search reads the ranking with its entries' types (`ranking_sql`),
  the next take their hits from it (`KeywordRanking`), as they take their vector hits from one walk
  (`TypedWalk`).

The candidates statement reads every posting of the query's words to find which candidates and
neighbours hold them: the one part of it that grows with the store (at 1M entries, up to ~24,000
rows for a message of five to ten words). Probing each of those ~700 entries' postings instead
reads pages of an index far larger than a stock configuration's buffers, one random page each,
which is slower at that size.

Measured with ``bench/bench_postgres.py`` (figures in bench/RESULTS.md).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from memdir.storage.postgres.pages import like_prefix
from memdir.storage.postgres.schema import HALF_VECTOR

BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"

WALK_ORDER = f"e.embedding::{HALF_VECTOR} <=> %s::{HALF_VECTOR}"
"""What an HNSW walk orders by (a parameter: the query vector): the half-precision distance, which the
vector index answers (`memdir.storage.postgres.schema.VECTOR_INDEX`). The walks return each row's cosine
computed from its float vector, and a search ranks its hits by that, so their order is exact."""

COSINE = "1 - (e.embedding <=> %s)"
"""A row's cosine with the query vector (a parameter), from its float vector: what every walk returns and
a search ranks by, whatever precision the walk ordered by (`WALK_ORDER`)."""

HIDDEN = "ARRAY(SELECT path FROM entries WHERE hidden AND stub_kind IS NULL)"  # (a partial index holds them)

TAGS = "ARRAY(SELECT json_array_elements_text(CASE json_typeof(e.metadata -> 'tags') WHEN 'array' THEN e.metadata -> 'tags' END))"
"""An entry's tags as ``text[]``: a search's ~100 candidates parsed as JSON, one by one, took a fifth of its
time in Python; an array of text is parsed by the driver in one pass."""

BY_PATH = "SELECT * FROM entries e WHERE e.path = p.path AND e.counted OFFSET 0"
"""The counted row of ``p.path`` (a lateral subquery): one probe of the paths' index per path asked. Left
to the planner, the join read every row of a store of a few thousand entries to hash them (all 2,600 of a
2K store, four times the time of the ~100 probes); ``OFFSET 0`` keeps the subquery from being merged
back into such a join."""


def neighbour_ids(owner: str) -> str:
    """A lateral subquery: the ids of the counted entries written just before and after the row
    ``owner`` in its folder, up to a parameter's number on each side (the parameter comes twice)."""
    return (
        f"(SELECT x.id FROM entries x WHERE x.folder = {owner}.folder AND x.id < {owner}.id AND x.counted"
        " ORDER BY x.id DESC LIMIT %s) UNION ALL"
        f" (SELECT x.id FROM entries x WHERE x.folder = {owner}.folder AND x.id > {owner}.id AND x.counted"
        " ORDER BY x.id LIMIT %s)"
    )


def candidates_sql(semantic: RowHits | None, window: int) -> str:
    """The one statement behind `PostgresIndex.candidates` (see the module docstring).

    Rows: ``(pos, id, path, title, type, tags, cosine, held)`` per candidate (``pos`` its
    1-based place in the paths asked; ``cosine`` NULL where the vector search's condition
    excludes it or the search found it already (each cosine reads the row's vector out of line);
    ``held`` the query's stored terms it holds), then, if ``window``,
    ``(pos, id, NULL..., held)`` per neighbour of the candidate at ``pos`` that holds one of
    the query's words (the others add nothing to context coverage: most of the ~600 rows). Which entries hold
    which query words is one join of their ids with the words' postings, so the planner
    reads each word's postings once or probes each entry's, whichever is cheaper (probing
    700 entries for each word one by one took longer than the rest of the statement).
    Parameters (`candidates_params`): `semantic`'s known paths, ``params`` and query vector (if any), the
    paths, ``window`` twice (if any), the query's stored terms.
    """
    cosine = (
        f"CASE WHEN NOT e.path = ANY(%s) AND {semantic.condition} THEN {COSINE} END"
        if semantic else "NULL::float8"
    )
    return _candidates("", "unnest(%s::text[]) WITH ORDINALITY AS p(path, pos)", cosine, window)


def walk_candidates_sql(walk: str, condition: str, window: int, *, typed: bool = False) -> str:
    """The HNSW walk ``walk`` and its candidates' rows in one statement (one round trip less than the walk,
    then `candidates_sql`): the walk's hits, then the paths asked (the keyword hits) it did not find, read as
    `candidates_sql` reads its paths (the walk's own hits without a cosine, the others with theirs where
    ``condition`` holds). The walk is a materialized part, planned on its own: its plan is the walk's alone.
    ``walk``'s rows are ``(path, cosine)``, or with ``typed`` `typed_walk_sql`'s, whose hits are its rows of
    the types asked. Rows: `candidates_sql`'s, ``pos`` a number of the candidate (not its place), then
    ``(-n, length, path, NULL, type, NULL, cosine, NULL)`` per row of the walk, ``n`` its place in the walk's
    order (``length`` and ``type`` NULL unless ``typed``). A typed walk's hits are taken up to its limit, which
    they never pass: the planner, which estimates such a walk at every row of the store, then plans the rest
    for that many candidates (not for a store's worth of them).
    Parameters: the walk's, the types and the limit (if ``typed``), the paths asked, ``condition``'s, the
    query vector, ``window`` twice (if any), the query's stored terms."""
    columns, named = ("s.type, s.length", "s(path, cosine, type, length)") if typed else (
        "NULL::text AS type, NULL::int AS length", "s(path, cosine)")
    return _candidates(
        f"w AS MATERIALIZED (SELECT s.path, s.cosine, {columns}, row_number() OVER () AS n FROM ({walk}) AS {named}),"
        " k AS ((SELECT path, n AS pos, true AS walked FROM w" + (" WHERE type = ANY(%s) LIMIT %s" if typed else "")
        + ") UNION ALL SELECT a.path, (SELECT count(*) FROM w) + a.pos, false"
        " FROM unnest(%s::text[]) WITH ORDINALITY AS a(path, pos) WHERE NOT a.path IN (SELECT path FROM w)), ",
        "k AS p", f"CASE WHEN NOT p.walked AND {condition} THEN {COSINE} END", window,
    ) + " UNION ALL SELECT -w.n, w.length, w.path, NULL, w.type, NULL, w.cosine, NULL FROM w"


def _candidates(before: str, paths: str, cosine: str, window: int) -> str:
    """The candidates' statement of ``paths`` (a source of rows ``(path, pos)`` named ``p``), after the
    common table expressions ``before`` (each followed by a comma), their cosines as ``cosine`` gives them."""
    ids = "SELECT id FROM c UNION SELECT id FROM n" if window > 0 else "SELECT id FROM c"
    return (
        f"WITH {before}c AS MATERIALIZED (SELECT p.pos, e.id, e.path, e.title, e.type, {TAGS} AS tags, e.folder,"
        f" {cosine} AS cosine FROM {paths} CROSS JOIN LATERAL ({BY_PATH}) e)"
        + (f", n AS MATERIALIZED (SELECT c.pos, n.id FROM c CROSS JOIN LATERAL ({neighbour_ids('c')}) n)"
           if window > 0 else "")
        + ", h AS (SELECT h.entry, array_agg(h.term) AS terms FROM postings h"
        f" WHERE h.term = ANY(%s) AND h.entry IN ({ids}) GROUP BY h.entry)"
        " SELECT c.pos, c.id, c.path, c.title, c.type, c.tags, c.cosine, coalesce(h.terms, '{}')"
        " FROM c LEFT JOIN h ON h.entry = c.id"
        + (" UNION ALL SELECT n.pos, n.id, NULL, NULL, NULL, NULL, NULL, h.terms FROM n JOIN h ON h.entry = n.id"
           if window > 0 else "")
    )


def candidates_params(semantic: RowHits | None, paths: Sequence[str], stored: list[str], window: int) -> list[Any]:
    """The parameters of `candidates_sql`, in its order."""
    params: list[Any] = [list(semantic.known), *semantic.params, semantic.query] if semantic else []
    params.append(list(paths))
    if window > 0:
        params += [window, window]
    params.append(stored)
    return params


@dataclass(slots=True)
class KeywordAsked:
    """A search's keyword side in a reading: its query's stored terms and the hits it found, in their order
    (the same search's candidates are the vector walk's hits, then these)."""

    stored: list[str]
    paths: list[str]


@dataclass(slots=True)
class ReadCandidates:
    """Candidates' rows read with the vector walk (`walk_candidates_sql`): those of the walk's hits and of the
    keyword hits ``keyword``, with the query's stored terms and the neighbours' ``window``; what the search's
    `PostgresIndex.candidates` takes instead of a statement of its own."""

    keyword: list[str]
    stored: list[str]
    window: int
    rows: list[tuple[Any, ...]]

    def fit(self, top: Sequence[str], paths: Sequence[str], stored: list[str], window: int) -> bool:
        """Whether these are the rows of ``paths`` (asked as a search asks: the walk's hits ``top``, then the
        keyword hits), ``stored`` and ``window``."""
        return (stored == self.stored and window == self.window
                and list(paths) == list(dict.fromkeys([*top, *self.keyword])))


@dataclass(slots=True)
class Neighbours:
    """Neighbours found with a search's candidates that hold one of its words: what ``neighbours``
    and ``holding`` answer from (a neighbour holding none of them would only be answered False)."""

    paths: tuple[str, ...]
    window: int
    owner: np.ndarray
    ids: np.ndarray
    held: list[frozenset[str]]  # stored terms each neighbour holds, of the query's


def typed_walk_sql(condition: str) -> str:
    """The HNSW walk of a search by type, unfiltered: rows ``(path, cosine, type, list length)``
    in the order the scan gives them, up to where the same walk filtered by type stops (``limit``
    rows of the types, or the scan's end: a window count, past which PostgreSQL 15 and later stop
    the scan). It reads what the filtered walk reads, and returns the other
    types' rows too: a later search of the same query by those types takes them from here
    (`TypedWalk`). Parameters: the query vector, the types, the query vector, ``condition``'s, the limit."""
    return (
        "SELECT path, cosine, type, current_setting('hnsw.ef_search')::int FROM (SELECT e.path,"
        f" {COSINE} AS cosine, e.type, count(CASE WHEN e.type = ANY(%s) THEN 1 END)"
        f" OVER (ORDER BY {WALK_ORDER} ROWS UNBOUNDED PRECEDING) AS seen FROM entries e WHERE {condition}) s"
        " WHERE seen <= %s"
    )


@dataclass(slots=True)
class TypedWalk:
    """What `typed_walk_sql` read for one query vector and ``limit``: rows ``(path, cosine, type)``
    in the scan's order, the scan's list length, and whether the scan ended before the limit (then
    it read every row the walk reaches)."""

    query: bytes
    model: str | None
    limit: int
    length: int
    rows: list[tuple[str, float, str]]
    ended: bool

    def take(self, query: np.ndarray, model: str | None, types: Sequence[str], limit: int) -> list[tuple[str, float]] | None:
        """What the same walk filtered by ``types`` gives for ``limit`` (the first that many rows of
        those types, in the scan's order), or None when this walk is of another query, kept another
        list (a limit beyond the store's list lengthens it:
        `memdir.storage.postgres.index.EF_SEARCH`) or did not read that far."""
        same_list = limit == self.limit or (self.limit < self.length and limit <= self.length)
        if query.tobytes() != self.query or model != self.model or not same_list:
            return None
        wanted = set(types)
        found = [(path, cosine) for path, cosine, type_ in self.rows if type_ in wanted][:limit]
        return found if len(found) == limit or self.ended else None


@dataclass(slots=True)
class SearchState:
    """One `PostgresIndex.reading`: its snapshot's state and what its statements have read.

    Attributes:
        begin_pending: the snapshot's ``BEGIN`` is still to be sent (with the next statement).
        begun: this reading sent a ``BEGIN`` (and so ends the transaction).
        own: the snapshot is this reading's (not a writer's open transaction): what it reads
            may be cached by change number, as no uncommitted change of its own is in it.
        change: the store's change number this snapshot sees, once read.
        statistics: ``""`` -> (entries, total length), stored term -> entries holding it.
        semantic: the vector search's hits in this reading (for the candidates' cosines).
        neighbours: neighbours read with the candidates.
        one_query: the searches in this reading are of one query, by type (`TypedWalk`).
        walk: the unfiltered walk a search by type made in this reading (with ``one_query``).
        walk_tried: the reading's first search by type has asked whether the planner walks for it.
        ranking: the keyword ranking a search by type read in this reading (with ``one_query``).
        keyword: the last search's keyword side in this reading (what its walk reads the candidates of).
        read: the candidates read with the last search's walk, until its `PostgresIndex.candidates` takes them.
        asks_behind: the reading's first round trip asks whether the index is behind the files (its snapshot's first statement).
        behind: what that round trip answered.
    """

    begin_pending: bool
    own: bool
    asks_behind: bool = False
    behind: bool = False
    one_query: bool = False
    walk: TypedWalk | None = None
    walk_tried: bool = False
    ranking: KeywordRanking | None = None
    begun: bool = False
    change: int | None = None
    statistics: dict[str, Any] = field(default_factory=dict)
    semantic: RowHits | None = None
    neighbours: Neighbours | None = None
    keyword: KeywordAsked | None = None
    read: ReadCandidates | None = None


class WalkPlans:
    """Whether the planner walks the graph for a search by some types (`memdir.storage.postgres.index.PostgresIndex._walks`),
    as it answered at a store size, asked again once the store has grown or shrunk by a tenth: its choice rests
    on its statistics of the table (how many entries, what share of each type), not on the query. (Asking
    it was a statement of its own, planned, in every discovery.)"""

    def __init__(self) -> None:
        self._known: dict[tuple[Any, ...], tuple[int, bool]] = {}

    def get(self, key: tuple[Any, ...], entries: int) -> bool | None:
        found = self._known.get(key)
        if found is None or abs(entries - found[0]) * 10 > found[0]:
            return None
        return found[1]

    def put(self, key: tuple[Any, ...], entries: int, walks: bool) -> None:
        self._known[key] = (entries, walks)


class HiddenCache:
    """The hidden entries as of a change number: read again only once the store has changed
    (every write and every counted read moves the number; `memdir.storage.postgres.adapter.next_change`)."""

    def __init__(self) -> None:
        self._value: tuple[int | None, frozenset[str]] = (None, frozenset())
        self._lock = threading.Lock()

    def known(self) -> int | None:
        """The change number the cached set is of (None: nothing cached)."""
        return self._value[0]

    def get(self, change: int | None) -> frozenset[str] | None:
        value = self._value
        return value[1] if change is not None and value[0] == change else None

    def put(self, change: int, paths: Sequence[str]) -> frozenset[str]:
        found = frozenset(paths)
        with self._lock:
            if self._value[0] is None or change >= self._value[0]:
                self._value = (change, found)
        return found


class ExactCosines(Protocol):
    """Exact cosines of named entries (`memdir.storage.postgres.index.PostgresIndex.cosines`)."""

    def cosines(self, query: np.ndarray, condition: str, params: list[Any], paths: Sequence[str]) -> dict[str, float]: ...


@dataclass(slots=True)
class RowHits:
    """`memdir.storage.base.SemanticHits` from the HNSW scan; other candidates' cosines come with
    the candidates' statement, or are asked for once."""

    index: ExactCosines
    query: np.ndarray
    condition: str
    params: list[Any]
    top: list[str]
    known: dict[str, float]

    @property
    def keys(self) -> list[str]:
        """(Keys are paths.)"""
        return self.top

    def cosines(self, paths: Sequence[str]) -> np.ndarray:
        missing = [path for path in paths if path not in self.known]
        if missing:
            self.known.update(self.index.cosines(self.query, self.condition, self.params, missing))
            self.known.update((path, 0.0) for path in missing if path not in self.known)
        return np.array([self.known[path] for path in paths], dtype=np.float64)


KEYWORD_OVERFETCH = 16
"""A filtered keyword search tests its filter on at most this many times the hits it asks for, the best-scored
first, before it tests every entry that holds one of its words (`keyword_sql`)."""

_SCORE = (
    "SELECT p.entry, sum(q.weight * p.tf / (p.tf + %s * (1 - %s + %s * p.length / %s))) AS score"
    " FROM unnest(%s::text[], %s::float8[]) AS q(term, weight) JOIN postings p ON p.term = q.term"
)


def keyword_sql(where: str, *, within: int | None) -> str:
    """BM25's best entries for `memdir.storage.postgres.index.PostgresIndex.keyword_hits`, rows ``(path, score)``.

    Unfiltered (no ``where``), or filtered ``within`` the best ``within`` entries of the unfiltered
    ranking: the postings alone give the scores (an index-only scan), and the filter is tested on
    those entries' rows, best first, until ``limit`` pass; one more row ``(NULL, entries scored)``
    follows. (Testing the filter on every entry holding a word read a row per posting: 5,900 rows,
    24,000 pages, for a three-word message at 1M entries.) The ``limit`` found are the filtered
    ranking's best; fewer, and more entries were scored than tested, the caller asks again with
    ``within`` None: the filter tested on every scored entry (the planner reads the entries the
    filter selects instead, when they are few: a folder's, a rare tag's).
    Parameters: k1, b, b, the average length, the terms, their weights, then ``where``'s, the limit.
    """
    if not where:
        return (f"WITH scored AS ({_SCORE} GROUP BY p.entry ORDER BY score DESC, p.entry LIMIT %s)"
                " SELECT e.path, s.score FROM scored s JOIN entries e ON e.id = s.entry ORDER BY s.score DESC, s.entry")
    if within is None:
        return (f"WITH scored AS ({_SCORE} WHERE p.entry IN (SELECT e.id FROM entries e WHERE {where})"
                " GROUP BY p.entry ORDER BY score DESC, p.entry LIMIT %s)"
                " SELECT e.path, s.score FROM scored s JOIN entries e ON e.id = s.entry ORDER BY s.score DESC, s.entry")
    return (f"WITH scored AS MATERIALIZED ({_SCORE} GROUP BY p.entry)"
            " (SELECT e.path, s.score FROM (SELECT entry, score FROM scored ORDER BY score DESC, entry"
            f" LIMIT {int(within)}) s JOIN entries e ON e.id = s.entry WHERE {where} ORDER BY s.score DESC, s.entry LIMIT %s)"
            " UNION ALL SELECT NULL, count(*) FROM scored")


def ranking_sql(within: int) -> str:
    """The unfiltered BM25 ranking with its entries' types, rows ``(path, score, type)`` best first, up to
    where `keyword_sql` filtered by type ``within`` stops (``limit`` rows of the types, or ``within`` rows),
    then one row ``(NULL, entries scored, NULL)``: what a keyword search by type reads in a reading of one
    query. It reads the rows that search reads, and returns the other types' rows too: the reading's next
    searches by other types take their hits from them (`KeywordRanking`) instead of scoring the same
    postings again. Parameters: `keyword_sql`'s scoring ones, the types, the limit."""
    return (f"WITH scored AS MATERIALIZED ({_SCORE} GROUP BY p.entry)"
            " (SELECT path, score, type FROM (SELECT e.path, s.score, e.type, s.entry,"
            " count(CASE WHEN e.type = ANY(%s) THEN 1 END) OVER (ORDER BY s.score DESC, s.entry ROWS UNBOUNDED PRECEDING)"
            " AS seen FROM (SELECT entry, score FROM scored ORDER BY score DESC, entry"
            f" LIMIT {int(within)}) s JOIN entries e ON e.id = s.entry) r WHERE seen <= %s ORDER BY score DESC, entry)"
            " UNION ALL SELECT NULL, count(*), NULL FROM scored")


@dataclass(slots=True)
class KeywordRanking:
    """What `ranking_sql` read: the scoring it ranked by (terms, weights, length statistics), its rows
    ``(path, score, type)`` best first (the ranking's first rows, as many as it read), and how many
    entries were scored in all.

    The best ``limit`` of some types are the first ``limit`` rows of those types in the ranking; if fewer
    are among the rows read, and the rows read are not all scored entries, they are not known from it."""

    scoring: tuple[Any, ...]
    rows: list[tuple[str, float, str]]
    scored: int

    def take(self, scoring: tuple[Any, ...], types: Sequence[str], limit: int) -> list[tuple[str, float]] | None:
        """The best ``limit`` entries of ``types`` (fewer when fewer are scored), or None when the ranking
        is of another scoring or the rows read do not tell."""
        if scoring != self.scoring:
            return None
        wanted = set(types)
        found = [(path, score) for path, score, type_ in self.rows if type_ in wanted][:limit]
        return found if len(found) == limit or self.scored <= len(self.rows) else None


def filters(types: Sequence[str] | None, prefix: str | None, tags: Sequence[str] | None) -> tuple[str, list[Any]]:
    """SQL conditions on ``entries e`` for a search's filters (as `memdir.storage.directory.vectors.VectorMatrix.mask`)."""
    where: list[str] = []
    params: list[Any] = []
    if types is not None:
        where.append("e.type = ANY(%s)")
        params.append(list(types))
    if prefix:
        if prefix.endswith(".md"):
            where.append("e.path = %s")
            params.append(prefix)
        else:
            where.append("e.path LIKE %s")
            params.append(like_prefix(prefix.strip("/") + "/"))
    if tags is not None:
        where.append("e.tags_folded && %s")
        params.append(sorted({tag.casefold() for tag in tags}))
    return " AND ".join(where), params
