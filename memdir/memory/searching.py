"""Searching a memory: hybrid search in a view, nearest neighbours, and the statistics snippets use."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager

import numpy as np

from memdir.core.entry import importance_on_scale
from memdir.core.identity import Actor
from memdir.core.keywords import keyword_terms
from memdir.memory.keeper import IndexKeeper
from memdir.memory.listings import Listings
from memdir.search.hybrid import HybridSearcher, SearchResult, normalize_prefix
from memdir.storage.base import EntryIndex, IndexBehindFiles
from memdir.storage.virtual import virtual_paths


class Searching:
    """Search over the derived index, caught up with other processes first."""

    def __init__(self, index: EntryIndex, searcher: HybridSearcher, keeper: IndexKeeper, listings: Listings) -> None:
        self.index = index
        self.searcher = searcher
        self.keeper = keeper
        self.listings = listings
        self._reading = threading.local()  # .open: this thread is inside `reading`

    def search(
        self,
        query: str,
        *,
        top_k: int = 10,
        threshold: float | None = None,
        types: Iterable[str] | None = None,
        path_prefix: str | None = None,
        tags: Iterable[str] | None = None,
        include_archived: bool = False,
        view: Actor | None = None,
        min_importance: float | None = None,
    ) -> list[SearchResult]:
        """Hybrid search (semantic + BM25 + tags, then graph, importance and recency when their
        weights are set); keyword-only while no model is ready.

        Built-in skills are in every root: they answer searches for skills (``types``
        with ``skill``, a ``skill/`` prefix), not every content search of every root.

        Args:
            view: only entries in this actor's view (`Actor.sees`). Out-of-view hits are
                dropped before the ``top_k`` cut: the search asks for more until ``top_k``
                remain or nothing more matches, so a view never makes results come back short.
            include_archived: keep archived and superseded entries (left out by default).
            min_importance: only entries whose importance, as ranking sees it (1-10, none
                stated: 5), is at least this; like a view, applied before the ``top_k`` cut.
        """
        types = list(types) if types else None
        hidden = _unasked_builtins(types, path_prefix)
        wanted = top_k + len(hidden)
        with self.reading(query=query):
            return self._kept(query, top_k, wanted, hidden, threshold=threshold, types=types, path_prefix=path_prefix,
                              tags=tags, include_archived=include_archived, view=view, min_importance=min_importance)

    @contextmanager
    def reading(self, *, one_query: bool = False, query: str | None = None) -> Iterator[None]:
        """One consistent view of the store for the searches and statistics read inside it: the
        index caught up with other processes first, then held still (on PostgreSQL one snapshot,
        whose statistics a search reads once for every search and snippet weight inside it).
        ``one_query``: the searches inside are of one query by different types (on PostgreSQL,
        one vector walk serves them all where the planner walks the graph for them).
        ``query``: what the searches inside search for: its embedding starts first, beside the
        catching up and the reading's first statements (a search waits for it before its vector walk)."""
        if getattr(self._reading, "open", False):
            yield
            return
        if query is not None:
            self.searcher.embed_soon(query)
        with ExitStack() as held:
            self._caught_up_reading(held, one_query, query)
            self._reading.open = True
            try:
                yield
            finally:
                self._reading.open = False

    def _caught_up_reading(self, held: ExitStack, one_query: bool, query: str | None) -> None:
        """Open the index's reading in ``held``, the index caught up with other processes first. A reading
        of one search's query (not discovery's several, whose first statistics are more than its words')
        checks that as it begins, with its first statements; else, and when the check finds the index
        behind, `IndexKeeper.refresh` checks and catches up before the reading."""
        if query is not None and not one_query:
            try:
                held.enter_context(self.index.reading(caught_up_for=keyword_terms(query)))
                return
            except IndexBehindFiles:
                pass
        self.keeper.refresh()
        held.enter_context(self.index.reading(one_query=one_query))

    def _kept(
        self, query: str, top_k: int, wanted: int, hidden: tuple[str, ...], *, threshold: float | None,
        types: list[str] | None, path_prefix: str | None, tags: Iterable[str] | None, include_archived: bool,
        view: Actor | None, min_importance: float | None,
    ) -> list[SearchResult]:
        """`search`'s results in ``view`` and of ``min_importance``: asked for again, more of them, until ``top_k`` remain."""
        while True:
            results = self.searcher.search(
                query,
                top_k=wanted,
                threshold=threshold,
                types=types,
                path_prefix=path_prefix,
                tags=list(tags) if tags else None,
                include_hidden=include_archived,
            )
            kept = self.listings.in_view([result for result in results if result.path not in hidden], view)
            if min_importance is not None:
                kept = self.important(kept, min_importance)
            if len(kept) >= top_k or len(results) < wanted:
                return kept[:top_k]
            wanted *= 4

    def important(self, results: list[SearchResult], least: float) -> list[SearchResult]:
        """The results whose importance (`importance`; built-ins and entries stating none: 5) is at least ``least``."""
        facts = self.index.rank_facts([result.path for result in results])
        return [result for result in results
                if importance_on_scale(result.path, row.importance if (row := facts.get(result.path)) else None) >= least]

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """How many entries contain each keyword term (a Porter stem, as `SearchResult.matched` has them)."""
        return self.index.document_frequencies(terms)

    def term_weights(self, query: str) -> dict[str, float]:
        """The query's keyword terms (Porter stems) weighted by their idf in this store, as search
        weighs them (a word in most entries still counts a little): what snippets rank lines by.
        Inside `reading`, after a search of the same query, the statistics that search read (on
        PostgreSQL no statement); outside, one read of them and no snapshot around it."""
        return self.searcher.idf(keyword_terms(query))

    def nearest(self, vector: np.ndarray, limit: int, *, caught_up: bool = False) -> list[tuple[str, float]]:
        """The ``limit`` entries whose vectors (of the current model) are nearest ``vector``:
        ``(path, cosine)``, nearest first: what near-duplicates are looked for in. The index answers
        (HNSW on PostgreSQL, the in-memory matrix locally): no vector is read out of the store. An
        HNSW scan keeps a short candidate list (``hnsw_ef_search_duplicates``): a near-duplicate lies
        so close that the scan meets it early, where a search's list must be long to find the
        true nearest of a loosely related query. ``caught_up``: the caller's change has just brought the
        index up to date (a change's first step checks for a killed writer's change under the lock, and
        repairs it): not asked again.
        """
        if not caught_up:
            self.keeper.refresh()
        with self.index.reading():
            hits = self.index.semantic_hits(np.asarray(vector, dtype=np.float32).ravel(), self.keeper.model_id(), limit,
                                            types=None, path_prefix=None, tags=None,
                                            ef_search=self.keeper.settings.storage.hnsw_ef_search_duplicates)
            if hits is None:
                return []
            return [(path, float(cosine)) for path, cosine in zip(hits.top[:limit], hits.cosines(hits.keys[:limit]))]

    def vectors(self) -> tuple[list[str], np.ndarray]:
        """(paths, matrix) of every entry embedded by the current model: one L2-normalised row per path.

        Vectors of another model (left from before a model switch, until re-embedded) are
        left out: they are not comparable with the current ones.
        """
        self.keeper.refresh()
        return self.index.vector_snapshot(self.keeper.model_id())


def _unasked_builtins(types: list[str] | None, path_prefix: str | None) -> tuple[str, ...]:
    """The built-in skills a search did not ask for: all, unless it names a type (the type
    filter decides) or a folder they are in (``skill/``, ``skill/meta``)."""
    if types is not None:
        return ()
    prefix = normalize_prefix(path_prefix)
    return tuple(path for path in virtual_paths() if prefix is None or not path.startswith(prefix))
