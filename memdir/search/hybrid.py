"""Hybrid search: semantic similarity, BM25 and keyword coverage, fused into one score.

SwarmMemory scored ``0.5 * cosine + 0.5 * keyword``, where *keyword* was the share of
query keywords found in the entry's tags (``matches / min(len(keywords), 5)``). memdir
keeps that score but matches the keywords against all of the entry's words (title, tags,
domain, content), weights each by its idf in the store (``keyword_idf``: a rare word or
name found counts for more than a common one), keeps the tag match as its own signal,
and adds real BM25:

    score = (w_sem * cosine + w_bm25 * bm25 / best_bm25 + w_kw * coverage + w_tag * tags
             + w_ctx * context) / (sum of the weights of the signals available)

where *context* (`memdir.search.context`) is the idf-weighted share of the query's words
the entry lacks that entries written just before or after it in its folder hold: a
question whose words are spread over two turns of a conversation.

Every signal lies in [0, 1] and all but BM25 are absolute. BM25 divided by the query's
best makes the best keyword hit of *any* query score 1 on that signal — right for ranking,
wrong for "is anything here relevant at all?": a message sharing one rare word with one
entry made it look like a 58% match. So each result also carries ``relevance``,
SwarmMemory's absolute ``0.5 * cosine + 0.5 * keyword`` with the keyword share weighted
by idf (a word the store has never seen weighs most), independent of the ranking
weights, on which its thresholds (0.35 normal, 0.25 for short queries) keep their
meaning. Discovery and episode recall threshold and show ``relevance``; ``score`` ranks
search results. Without a model (not installed, disabled, still loading) the semantic
term is left out and the others are re-weighted: results then say ``mode == "keyword"``.

The fusion was chosen by measurement (``bench/bench_recall_locomo.py``: turn-level
recall, 1,536 LoCoMo questions of categories 1-4, all-MiniLM-L6-v2), tuned on
conversations 0-4 and checked on 5-9 and on a documentation corpus
(``bench/bench_recall_docs.py``). Turns written as an agent records them (speaker and
date as title, speaker as tag, the turn answered as a second paragraph, the whole entry
embedded: ``embedding_summary = "content"``):

    earlier weights (0.5 / 0.3 / 0.2 / 0.1, plain coverage): R@10 0.741, R@5 0.661;
    0.5 / 0.1 / 0.1 / 0.4 with idf coverage: R@10 0.762, R@5 0.687;
    plus context coverage (weight 0.11, 3 neighbours each side): R@10 0.789, R@5 0.712,
        multi-hop (category 1) R@10 0.491 -> 0.513 (tuning half 0.495 -> 0.511,
        held-out 0.486 -> 0.514); documentation corpus R@10 0.941 -> 0.968, MRR 0.702 ->
        0.723; discovery's evidence in the reminder (``bench/bench_discovery.py``) 60.0% -> 60.8%.

Context coverage, measured on conversations 0-4 (R@10 / category 1): weight 0.05 / 0.08 /
0.11 / 0.15 with 3 neighbours: 0.789 / 0.507, 0.795 / 0.501, 0.806 / 0.511, 0.803 / 0.499
(without: 0.776 / 0.495); weight 0.11 with 1 / 2 / 4 / 5 neighbours: 0.791 / 0.504, 0.798 /
0.505, 0.799 / 0.505, 0.796 / 0.501; counting nearer neighbours more (x0.7 / x0.5 per
step further): 0.801 / 0.505, 0.797 / 0.504. Counting, instead of the words any neighbour
holds, only the best single neighbour's: a little less (R@10 -0.002, category 1 -0.003). With
context coverage on, a grid of semantic 0.4 / 0.5 / 0.6, keyword 0.05 / 0.1 / 0.2, tag
0.3 / 0.4 / 0.5 and context 0.11 / 0.15 found none better than these weights on
conversations 0-4 (next: 0.805 for 0.6 / 0.2 / 0.5 / 0.15, category 1 0.505).

Tag matches carry the speaker (a question names the person it is about); BM25 matters
less once coverage is idf-weighted. Measured and left out, as they did not help:
Rocchio pseudo-relevance feedback (-0.001 to -0.006 R@10), maximal-marginal-relevance
diversity (+0.001 at best), 100 candidates per signal instead of 50 (-0.003); for
multi-hop questions (category 1, R@10 0.491): a greedy re-rank rewarding query terms
not yet covered by the results above (-0.001 R@10, category 1 -0.001/-0.002), a larger
semantic weight for queries of <= 3-5 keywords (category 1 up to +0.005, R@10 -0.001
to -0.002), semantic weight 0.55 / 0.6 (category 1 +0.004 / +0.007, R@10 -0.002 / -0.001).
Measured on conversations 0-4 while choosing context coverage (prototypes re-ranking the
top 50; R@10 0.775 and category 1 0.498 without): query expansion from the top hits'
distinctive words (the 10 heaviest words of the top 5 hits, idf times hit score, found in
at most 5% of entries) R@10 +0.004 to +0.005, category 1 +0.007, and little on top of
context coverage (measured with one neighbour each side: category 1 +0.001 to +0.003, R@10
-0.001 to +0.004), not worth an entry-to-words view of the index; adding a share of the
neighbours' fused score to an entry's ("smoothing", 0.1 / 0.2 / 0.35) R@10 +0.003 to +0.005
but category 1 -0.006 / -0.019 / -0.030; one result per session first (a penalty per
result already taken from the same folder, 0.02 / 0.05) R@10 -0.028 / -0.062.

Reciprocal-rank fusion is kept as ``fusion = "rrf"`` for comparison; its scores are
rank-based, so thresholds mean less there.

Filters (types, folder, tags) are applied before the top-k cut: as a mask over the vector
matrix and over the BM25 matches, so a filtered search never comes back short because
the best unfiltered hits were elsewhere.

Everything a search reads comes through `memdir.storage.base.SearchIndex`. The directory
store keeps it in memory (`DerivedIndex.vectors`, `DerivedIndex.keywords`): no SQLite query
per search; PostgreSQL answers it with two queries (`memdir.storage.postgres`). ``bench/bench_search.py``
measures it (figures in bench/RESULTS.md).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, NamedTuple

import numpy as np

from memdir.core.identity import Role, parse_role
from memdir.core.keywords import extract_keywords, porter_stem, stem
from memdir.core.paths import ENTRY_SUFFIX, MEMORY_SCHEME
from memdir.core.settings import Settings
from memdir.embeddings.base import Embedder
from memdir.search.context import context_coverage, weighted_sum
from memdir.search.ranking import RankingSignals
from memdir.search.tags import TagMatcher
from memdir.storage.base import Candidates, SearchIndex, SearchKey, SemanticHits

Mode = Literal["hybrid", "keyword"]
EmbedderSource = Embedder | Callable[[], Embedder | None] | None

# SwarmMemory: keyword matches are normalised by min(len(keywords), 5), so a long query
# is not penalised for words no entry could contain.
KEYWORD_NORMALISER_CAP = 5

MIN_IDF = 0.1
"""Coverage weight of a query term found in more than half the entries (its BM25 idf is negative)."""

QUERY_VECTORS_KEPT = 64
"""Query embeddings a searcher remembers (see `HybridSearcher._query_vector`)."""

def _embedding_threads() -> ThreadPoolExecutor:
    """Where a search's query is embedded while its keyword side reads the index (both wait
    outside the GIL: the model's run, a database's answer). Two workers: one per core here; the
    searches of a server's read threads queue for them, as they would for the cores."""
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="memdir-query-embedding")


_EMBEDDING = _embedding_threads()


def _after_fork_in_child() -> None:
    """A forked child has none of its parent's threads: a pool that believes it has idle workers
    would queue its searches' embeddings forever, so the child gets a pool of its own."""
    global _EMBEDDING
    _EMBEDDING = _embedding_threads()


os.register_at_fork(after_in_child=_after_fork_in_child)


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """The signals behind a result's score, each in [0, 1] (``semantic`` is None in keyword mode).

    Attributes:
        semantic: cosine similarity of the query and entry vectors (negative clipped to 0).
        bm25: BM25 divided by the query's best BM25 among the filtered entries.
        bm25_raw: the BM25 score (FTS5's formula, positive; 0 when the entry matched no keyword).
        keyword: share of query keywords found among the entry's words (SwarmMemory's score).
        tag: share of query keywords matching the entry's tags.
        context: share of query keywords the entry lacks that entries written next to it
            in its folder hold (`memdir.search.context`).
        graph, importance, recency: the signals of `memdir.search.ranking`, None while their
            weights are all 0 (not computed).
    """

    semantic: float | None
    bm25: float
    bm25_raw: float
    keyword: float
    tag: float
    context: float = 0.0
    graph: float | None = None
    importance: float | None = None
    recency: float | None = None


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One hit: where it is, what it is, how well it matched and why.

    Attributes:
        score: the fused score results are ranked by.
        relevance: the absolute part of it (no BM25, see the module docstring): what
            thresholds of "relevant at all" apply to.
    """

    path: str
    title: str
    type: str | None
    score: float
    relevance: float
    breakdown: ScoreBreakdown
    mode: Mode
    tags: tuple[str, ...] = ()
    matched: tuple[str, ...] = ()
    """The query's keyword terms (Porter stems) the entry contains."""


def normalize_prefix(path_prefix: str | None) -> str | None:
    """A folder (``concept/ruby``) or exact entry path; ``memory://``, slashes and ``**`` tolerated."""
    if path_prefix is None:
        return None
    text = path_prefix.strip()
    if text.startswith(MEMORY_SCHEME):
        text = text[len(MEMORY_SCHEME):]
    text = text.rstrip("*").strip("/")
    if not text:
        return None
    return text if text.endswith(ENTRY_SUFFIX) else text + "/"


class HybridSearcher:
    """Ranks a root's entries for a query (see the module docstring).

    Args:
        index: the root's derived index (refresh it before searching when other
            processes may write).
        settings: weights, fusion method, thresholds, candidate pool.
        embedder: an embedder, or a zero-argument callable returning one or None
            (e.g. ``ModelProvider.peek``) so a model still loading means keyword mode.
        role: the role of the agent searching now (a server over HTTP serves agents of
            several roles with one searcher); default: the settings' role.
    """

    def __init__(
        self,
        index: SearchIndex,
        settings: Settings | None = None,
        embedder: EmbedderSource = None,
        role: Callable[[], Role | None] | None = None,
    ) -> None:
        self.index = index
        self.settings = settings or Settings()
        self._role = role or (lambda: parse_role(self.settings.roles.role))
        self._signals: dict[Role | None, RankingSignals] = {}
        self._embedder = embedder
        self._recent_queries: dict[tuple[str, str], np.ndarray] = {}
        self._embedding: dict[tuple[str, str], Future[np.ndarray]] = {}  # (embed_soon's, until done)
        self._cache_lock = threading.Lock()
        self._tags = TagMatcher()

    def _query_vector(self, embedder: Embedder, query: str) -> np.ndarray:
        """The query's embedding, remembered for the next few searches.

        Discovery searches one message three times (skills, memories, episodes) and a
        client often repeats a query: each repeat would cost a model run (4-6 ms).
        """
        key = (embedder.model_id, query)
        with self._cache_lock:
            vector = self._recent_queries.pop(key, None)
        if vector is None:
            vector = embedder.embed([query])[0]
        with self._cache_lock:
            self._recent_queries[key] = vector  # newest last
            while len(self._recent_queries) > QUERY_VECTORS_KEPT:
                del self._recent_queries[next(iter(self._recent_queries))]
        return vector

    def embed_soon(self, query: str) -> None:
        """Start embedding ``query`` now, for a search of it about to come (with the embedder of now, if one
        is ready): what a caller knows before the search's reading has sent its first statements."""
        embedder = self.embedder()
        if embedder is not None:
            self._embedded(embedder, query)

    def _embedded(self, embedder: Embedder, query: str) -> Future[np.ndarray]:
        """The query's embedding: remembered (`_query_vector`), or on an embedding thread, the one `embed_soon`
        started or a new one."""
        key = (embedder.model_id, query)
        with self._cache_lock:
            found = self._embedding.get(key)
            if found is None and key in self._recent_queries:
                vector = self._recent_queries[key] = self._recent_queries.pop(key)  # (newest last)
                found = Future()
                found.set_result(vector)
            if found is not None:
                return found
            future = self._embedding[key] = _EMBEDDING.submit(self._query_vector, embedder, query)
        future.add_done_callback(lambda _: self._forget(key, future))
        return future

    def _forget(self, key: tuple[str, str], future: Future[np.ndarray]) -> None:
        """A finished embedding's future is let go (its vector is remembered with the recent queries')."""
        with self._cache_lock:
            if self._embedding.get(key) is future:
                del self._embedding[key]

    def embedder(self) -> Embedder | None:
        """The embedder to use now, or None (none configured, or not ready)."""
        source = self._embedder
        if source is None or isinstance(source, Embedder):
            return source
        return source()

    def search(
        self,
        query: str,
        *,
        top_k: int = 10,
        threshold: float | None = None,
        types: Sequence[str] | None = None,
        path_prefix: str | None = None,
        tags: Sequence[str] | None = None,
        query_vector: np.ndarray | None = None,
        query_model: str | None = None,
        include_hidden: bool = False,
    ) -> list[SearchResult]:
        """The ``top_k`` best entries for ``query``, best first.

        Args:
            threshold: minimum fused ``score`` (what results are ranked by); None keeps
                everything. Discovery's thresholds apply to ``relevance`` instead.
            types: only entries of these types.
            path_prefix: only entries in this folder (any depth), or this one ``.md`` path.
            tags: only entries carrying at least one of these tags (case-insensitive).
            query_vector: the query's embedding, if the caller already has it; else the
                searcher's embedder (if any, and ready) embeds the query.
            query_model: the model of ``query_vector`` (default: the embedder's); only
                entry vectors of that model are compared with it.
            include_hidden: keep archived and superseded entries (left out by default).
        """
        if top_k <= 0 or not query.strip():
            return []
        types = list(types) if types is not None else None
        tags = list(tags) if tags is not None else None
        prefix = normalize_prefix(path_prefix)
        stems, terms = _query_words(query)
        embedding: Future[np.ndarray] | None = None
        if query_vector is None:
            embedder = self.embedder()
            if embedder is not None:
                embedding = self._embedded(embedder, query)
                query_model = query_model or embedder.model_id
        elif query_model is None:
            embedder = self.embedder()
            query_model = embedder.model_id if embedder is not None else None
        pool = max(self.settings.search.candidates, top_k * 3)

        with self.index.reading():  # one consistent view of the vectors and the keyword data
            bm25 = self.index.keyword_hits(terms, pool, types=types, path_prefix=prefix, tags=tags)
            idf = self.idf(terms)
            if embedding is not None:
                query_vector = embedding.result()
            semantic = None
            if query_vector is not None:
                semantic = self.index.semantic_hits(query_vector, query_model, pool, types=types, path_prefix=prefix, tags=tags)
            mode: Mode = "hybrid" if semantic is not None else "keyword"
            ranked = self._ranked(semantic, bm25, idf, stems, mode)
            if ranked is not None:
                ranked = self._beyond_text(ranked, _Rerun(semantic, bm25, idf, stems, mode),
                                           _Filters(types, prefix, tags, include_hidden))
            if ranked is None:
                return []
            found, scores, relevance = ranked.found, ranked.scores, ranked.relevance
            shown: list[int] = []
            for i in ranked.order(top_k):
                # A score of 0 means no signal at all (no shared word, orthogonal vectors): never a result.
                if scores[i] <= 0.0 or (threshold is not None and scores[i] < threshold):
                    break
                shown.append(i)
                if len(shown) == top_k:
                    break
            extras = [ranked.extras[i] for i in shown] if ranked.extras else None
            return [
                SearchResult(found.paths[i], found.titles[i], found.types[i], round(scores[i], 6), round(relevance[i], 6),
                             breakdown, mode, found.tags[i], matched)
                for i, breakdown, matched in zip(shown, ranked.signals.breakdowns(shown, extras), ranked.matched(shown))
            ]

    def idf(self, terms: Sequence[str]) -> dict[str, float]:
        """Each query term's idf in this store (at least `MIN_IDF`; a word no entry holds gets
        the highest), so that a rare word or name found counts for more than a common one. Inside
        ``index.reading()`` it is of the search's snapshot."""
        return {term: max(value, MIN_IDF) for term, value in self.index.idf(terms).items()}

    def _ranked(
        self,
        semantic: SemanticHits | None,
        bm25: dict[SearchKey, float],
        idf: dict[str, float],
        stems: frozenset[str],
        mode: Mode,
        extra: Sequence[SearchKey] = (),
    ) -> _Ranked | None:
        """Candidates (semantic top + BM25 matches), their signals, scores and relevance; None if none.

        Keyword coverage ranks by the share of the query's terms found, each counted once or
        (``keyword_idf``) by its idf; relevance always counts them by idf (see `_relevance`).
        """
        found = self.index.candidates(list(dict.fromkeys([*(semantic.keys if semantic else ()), *bm25, *extra])), list(idf))
        candidates = found.keys
        if not candidates:
            return None
        term_weights = idf if self.settings.search.keyword_idf else dict.fromkeys(idf, 1.0)
        contains = found.contains
        held = np.array([contains[term] for term in idf]) if idf else np.zeros((0, len(candidates)), dtype=bool)
        covered = weighted_sum(list(term_weights.values()), held)  # (term_weights has idf's terms, in its order)
        covered_idf = covered if term_weights is idf else weighted_sum(list(idf.values()), held)
        window = self.settings.search.context_window if self.settings.search.context_weight else 0
        signals = _Signals.of(
            bm25_raw=np.array([bm25.get(key, 0.0) for key in candidates]),
            cosines=semantic.cosines(candidates) if semantic else None,
            covered=covered,
            context_covered=context_coverage(self.index, candidates, contains, term_weights, window),
            term_weights=list(term_weights.values()),
            tag_counts=self._tags.counts(stems, found.tags),
            distinct_stems=len(stems),
        )
        scores = self._fuse(signals, mode).tolist()
        relevance = self._relevance(signals.semantic, _share(covered_idf, idf.values())).tolist()
        return _Ranked(found, signals, scores, relevance)

    def signals(self) -> RankingSignals:
        """The ranking signals of the agent searching now (its role's importance, if it has one)."""
        role = self._role()
        found = self._signals.get(role)
        if found is None:
            found = self._signals[role] = RankingSignals(self.settings, role)
        return found

    def _beyond_text(self, ranked: _Ranked, rerun: _Rerun, filters: _Filters) -> _Ranked | None:
        """Leave out archived and superseded entries (unless asked for), then add graph expansion,
        importance and recency (`memdir.search.ranking`) when any of their weights is set."""
        hidden = frozenset() if filters.include_hidden else self.index.hidden()
        signals = self.signals()
        if not signals.active:
            return ranked.without(hidden) if hidden else ranked
        graph = signals.expand(self.index, zip(ranked.found.paths, ranked.scores))
        known = set(ranked.found.paths)
        new = [path for path in graph if path not in hidden and path not in known]
        if new:
            joining = self.index.candidates(self.index.keys_of(new), [])  # their type and tags, for the search's filters
            admitted = [key for key, path, type_, tags in zip(joining.keys, joining.paths, joining.types, joining.tags)
                        if filters.admit(path, type_, tags)]
            if admitted:
                ranked = self._ranked(*rerun, extra=admitted) or ranked
        if hidden:
            kept = ranked.without(hidden)
            if kept is None:
                return None
            ranked = kept
        paths = list(ranked.found.paths)
        facts = self.index.rank_facts(paths)
        now = datetime.now(UTC)
        text_total = sum(self._text_weights(rerun.mode).values()) or 1.0
        extras = [signals.extras(facts.get(path), graph.get(path, 0.0), now) for path in paths]
        scores = [signals.combine(score, text_total, extra) for score, extra in zip(ranked.scores, extras)]
        return dataclasses.replace(ranked, scores=scores, extras=extras)

    def _relevance(self, cosines: np.ndarray | None, idf_coverage: np.ndarray) -> np.ndarray:
        """SwarmMemory's absolute relevance, ``w * cosine + (1 - w) * keyword`` (w =
        ``relevance_semantic_weight``, 0.5), with the keyword share weighted by idf: a message's
        rare words and names weigh more than its common ones, so one shared common word no
        longer makes an unrelated entry look relevant. Keyword mode: the idf share alone.

        It does not use the ranking weights: thresholds keep their meaning when those change.
        """
        if cosines is None:
            return idf_coverage
        w = self.settings.search.relevance_semantic_weight
        return w * cosines + (1.0 - w) * idf_coverage

    # ------------------------------------------------------------------ signals
    def _text_weights(self, mode: Mode) -> dict[str, float]:
        s = self.settings.search
        if self.settings.swarm_formula:  # SwarmMemory's keyword score is the tag share
            semantic = s.semantic_weight if mode == "hybrid" else 0.0
            return {"semantic": semantic, "bm25": 0.0, "keyword": 0.0, "tag": s.keyword_weight, "context": 0.0}
        return {
            "semantic": s.semantic_weight if mode == "hybrid" else 0.0,
            "bm25": s.bm25_weight,
            "keyword": s.keyword_weight,
            "tag": s.tag_weight,
            "context": s.context_weight,
        }

    def _fuse(self, signals: _Signals, mode: Mode) -> np.ndarray:
        """One score per candidate: the weighted mean of its signals (or weighted RRF)."""
        weights = self._text_weights(mode)
        total = sum(weights.values()) or 1.0
        if self.settings.search.fusion == "rrf":
            return self._rrf(signals, weights, total)
        fused = np.zeros(len(signals.bm25))
        for name, weight in weights.items():
            values = getattr(signals, name)
            if weight and values is not None:
                fused += weight * values
        return fused / total

    def _rrf(self, signals: _Signals, weights: dict[str, float], total: float) -> np.ndarray:
        """Weighted reciprocal-rank fusion, scaled so first place in every signal scores 1.0."""
        k = self.settings.search.rrf_k
        fused = np.zeros(len(signals.bm25))
        for name, weight in weights.items():
            values = getattr(signals, name)
            if not weight or values is None:
                continue
            ranked = [i for i in np.argsort(-values, kind="stable").tolist() if values[i] > 0]
            fused[ranked] += weight / (k + np.arange(1, len(ranked) + 1))
        return fused * ((k + 1) / total)


@dataclass(frozen=True, slots=True)
class _Ranked:
    """One ranking pass: the candidates and, per position, their signals, score and relevance."""

    found: Candidates
    signals: _Signals
    scores: list[float]
    relevance: list[float]
    extras: list[dict[str, float | None]] | None = None  # graph, importance, recency per candidate

    def without(self, paths: frozenset[str]) -> _Ranked | None:
        """This pass minus the candidates in ``paths`` (None when nothing is left)."""
        keep = [i for i, path in enumerate(self.found.paths) if path not in paths]
        if len(keep) == len(self.found.paths):
            return self
        if not keep:
            return None
        pick = np.asarray(keep, dtype=np.int64)
        f = self.found
        found = Candidates([f.keys[i] for i in keep], [f.paths[i] for i in keep], [f.titles[i] for i in keep],
                           [f.types[i] for i in keep], [f.tags[i] for i in keep],
                           {term: held[pick] for term, held in f.contains.items()})
        return _Ranked(
            found, self.signals.take(pick), [self.scores[i] for i in keep], [self.relevance[i] for i in keep],
            [self.extras[i] for i in keep] if self.extras else None,
        )  # fmt: skip

    def matched(self, positions: list[int]) -> list[tuple[str, ...]]:
        """The query terms each candidate at ``positions`` contains (asked of the results only)."""
        pick = np.asarray(positions, dtype=np.intp)
        held = {term: found[pick].tolist() for term, found in self.found.contains.items()}
        return [tuple(term for term, has in held.items() if has[at]) for at in range(len(positions))]

    def order(self, limit: int) -> list[int]:
        """Positions best first (ties by path): the ``limit`` best, and any tied with the last of them
        (only those are sorted; the rest cannot be among the first ``limit``)."""
        paths, scores = self.found.paths, self.scores
        positions: Iterable[int] = range(len(paths))
        if limit < len(paths):
            values = np.asarray(scores)
            last = np.partition(values, len(values) - limit)[len(values) - limit]
            positions = (values >= last).nonzero()[0].tolist()
        return sorted(positions, key=lambda i: (-scores[i], paths[i]))


@dataclass(frozen=True, slots=True)
class _Signals:
    """Every candidate's signals as arrays (one position per candidate), each normalised to [0, 1]."""

    semantic: np.ndarray | None
    bm25: np.ndarray
    bm25_raw: np.ndarray
    keyword: np.ndarray
    tag: np.ndarray
    context: np.ndarray

    @classmethod
    def of(
        cls,
        *,
        bm25_raw: np.ndarray,
        cosines: np.ndarray | None,
        covered: np.ndarray,
        context_covered: np.ndarray,
        term_weights: Sequence[float],
        tag_counts: np.ndarray,
        distinct_stems: int,
    ) -> _Signals:
        """Normalise the raw measures.

        ``covered``: the summed weight of the distinct query terms (Porter stems) each
        candidate contains, out of ``term_weights``; ``context_covered``: of those it lacks,
        the weight its neighbours hold (`memdir.search.context`); ``tag_counts``: how many of the
        ``distinct_stems`` query words (light stems) match its tags. Both are divided by
        what the `KEYWORD_NORMALISER_CAP` heaviest terms weigh (SwarmMemory's rule: a
        long query is not penalised for words no entry could contain); BM25 by the query's best.
        """
        best_bm25 = float(bm25_raw.max(initial=0.0))
        return cls(
            semantic=np.maximum(cosines, 0.0) if cosines is not None else None,
            bm25=bm25_raw / best_bm25 if best_bm25 > 0 else np.zeros_like(bm25_raw),
            bm25_raw=bm25_raw,
            keyword=_share(covered, term_weights),
            context=_share(context_covered, term_weights),
            tag=np.minimum(1.0, tag_counts / max(1, min(distinct_stems, KEYWORD_NORMALISER_CAP))),
        )

    def take(self, positions: np.ndarray) -> _Signals:
        """The signals of the candidates at ``positions`` only."""
        return _Signals(
            self.semantic[positions] if self.semantic is not None else None, self.bm25[positions],
            self.bm25_raw[positions], self.keyword[positions], self.tag[positions], self.context[positions],
        )  # fmt: skip

    def breakdowns(self, positions: list[int], extras: list[dict[str, float | None]] | None = None) -> list[ScoreBreakdown]:
        """The signals of the candidates at ``positions``, for their results (``extras``: graph, importance,
        recency of each)."""
        pick = np.asarray(positions, dtype=np.intp)
        cosines = self.semantic[pick].tolist() if self.semantic is not None else [None] * len(positions)
        columns = zip(cosines, self.bm25[pick].tolist(), self.bm25_raw[pick].tolist(),
                      self.keyword[pick].tolist(), self.tag[pick].tolist(), self.context[pick].tolist())
        return [ScoreBreakdown(semantic=semantic, bm25=bm25, bm25_raw=raw, keyword=keyword, tag=tag, context=context,
                               **(extras[at] if extras else {}))
                for at, (semantic, bm25, raw, keyword, tag, context) in enumerate(columns)]


class _Rerun(NamedTuple):
    """What `HybridSearcher._ranked` needs to rank again with more candidates (graph expansion)."""

    semantic: SemanticHits | None
    bm25: dict[SearchKey, float]
    idf: dict[str, float]
    stems: frozenset[str]
    mode: Mode


@dataclass(frozen=True, slots=True)
class _Filters:
    """A search's filters, for candidates that join through links rather than through a signal."""

    types: Sequence[str] | None
    prefix: str | None
    tags: Sequence[str] | None
    include_hidden: bool

    def admit(self, path: str, type_: str | None, tags: Sequence[str]) -> bool:
        """True if the entry at ``path`` (of ``type_``, with ``tags``) passes the type, folder and tag filters."""
        if self.types is not None and type_ not in self.types:
            return False
        if self.prefix is not None and not (path == self.prefix or (self.prefix.endswith("/") and path.startswith(self.prefix))):
            return False
        if self.tags is not None:
            wanted = {tag.casefold() for tag in self.tags}
            return any(tag.casefold() in wanted for tag in tags)
        return True


@functools.lru_cache(maxsize=QUERY_VECTORS_KEPT)
def _query_words(query: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """A query's keywords as the tag match sees them (light stems) and as the keyword index does
    (Porter stems, in order), remembered for the next few searches: discovery searches one message
    three times (skills, memories, episodes)."""
    keywords = extract_keywords(query)
    return frozenset(stem(word) for word in keywords), tuple(dict.fromkeys(porter_stem(word) for word in keywords))


def _share(covered: np.ndarray, weights: Iterable[float]) -> np.ndarray:
    """``covered`` (summed weights of the query terms found) over what the `KEYWORD_NORMALISER_CAP`
    heaviest query terms weigh, at most 1 (SwarmMemory's rule: a long query is not penalised
    for words no entry could contain)."""
    heaviest = sum(sorted(weights, reverse=True)[:KEYWORD_NORMALISER_CAP])
    return np.minimum(1.0, covered / heaviest) if heaviest > 0 else np.zeros_like(covered)
