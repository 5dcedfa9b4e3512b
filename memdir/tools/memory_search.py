"""MemorySearch: ranked hybrid search (meaning + keywords), compact results with a snippet each.

The results it shows (at most ``prefetch_search``, 10) are prefetched into the memory's entry
cache, best first: an agent's next call after a search is most often a MemoryRead of one of
them, and not only of the best. An entry cached and unchanged costs two ``stat`` calls,
not a read. The prefetch runs on a thread of its own once the answer is made, so the search
does not wait for it; the agent's next call comes after its turn, when the prefetch is done.

Also what ``memdir search`` prints, so the CLI and the tool show the same results.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from memdir.core.entry import IMPORTANCE_RANGE, check_entry_types
from memdir.core.errors import InputValidationError
from memdir.core.identity import view_filter
from memdir.search.snippet import best_line
from memdir.tools.formatting import memory_uri, plural
from memdir.tools.params import coerce_str_list

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.search.hybrid import SearchResult

log = logging.getLogger(__name__)
_PREFETCH = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memdir-prefetch")


def _after_fork_in_child() -> None:
    """A forked child has none of its parent's threads: it gets a prefetch pool of its own."""
    global _PREFETCH
    _PREFETCH = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memdir-prefetch")


os.register_at_fork(after_in_child=_after_fork_in_child)


def prefetch_soon(memory: Memory, paths: Sequence[str]) -> Future[int]:
    """Prefetch ``paths`` into the memory's cache on the prefetch thread; its future (how many were cached)."""
    def run() -> int:
        try:
            return memory.prefetch(paths)
        except Exception:  # a guess: a memory closed meanwhile is no one's error
            log.debug("prefetching search results failed", exc_info=True)
            return 0

    return _PREFETCH.submit(run)


def memory_search(
    memory: Memory,
    query: str,
    top_k: int = 10,
    type: list[str] | None = None,  # noqa: A002 - the parameter's name in the tool's schema
    path_prefix: str | None = None,
    tags: list[str] | None = None,
    threshold: float | None = None,
    explain: bool = False,
    include_archived: bool = False,
    view_all: bool = False,
    min_importance: float | None = None,
) -> str:
    """Search memory by meaning and keywords, best first: find what is stored about a topic or question.

    Args:
        query: a question or a few keywords.
        top_k: how many results.
        type: only these entry types.
        path_prefix: only under this folder.
        tags: only entries with any of these tags.
        threshold: least score (0-1).
        explain: add each result's score breakdown.
        include_archived: also archived and superseded entries.
        view_all: also entries outside your role's view.
        min_importance: least importance (1-10).

    Returns:
        ``N results for 'QUERY':`` then per result ``1. memory://path "Title" (type, score 0.62)``
        and an indented line of the entry's best-matching text.
    """
    text = (query or "").strip()
    if not text:
        raise InputValidationError("The query is empty.", "Pass what to look for, e.g. query: 'deployment checklist'.")
    limit = memory.settings.search.max_top_k
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= limit:
        raise InputValidationError(f"top_k must be a whole number from 1 to {limit}, got {top_k!r}.",
                                   f"Pass e.g. top_k: 10 (at most {limit}).")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise InputValidationError(f"threshold must lie between 0 and 1, got {threshold!r}.",
                                   "Pass e.g. threshold: 0.3, or leave it out to keep every result.")
    low, high = IMPORTANCE_RANGE
    if min_importance is not None and (isinstance(min_importance, bool) or not low <= min_importance <= high):
        raise InputValidationError(f"min_importance must lie between {low:g} and {high:g}, got {min_importance!r}.",
                                   "Pass e.g. min_importance: 7 for the important entries, or leave it out.")
    types = coerce_str_list(type, "type") or None
    check_entry_types(types)
    tag_list = coerce_str_list(tags, "tags") or None
    with memory.reading(query=text):  # the snippets' word weights: the statistics the search read
        results = memory.search(text, top_k=top_k, threshold=threshold, types=types, path_prefix=path_prefix,
                                tags=tag_list, view=view_filter(memory.actor, view_all), include_archived=include_archived,
                                min_importance=min_importance)
        weights = memory.term_weights(text) if results else {}
    if not results:
        return f"No memory entries found for '{text}'."
    prefetched = [result.path for result in results[: memory.settings.discovery.prefetch_search]]
    lines = [f"{plural(len(results), 'result')} for '{text}'"
             + (" (keyword search only: no embedding model is ready)" if results[0].mode == "keyword" else "") + ":"]
    contents = memory.contents([result.path for result in results])
    for rank, (result, content) in enumerate(zip(results, contents), start=1):
        lines.append(_headline(rank, result))
        snippet = best_line(content, weights)
        if snippet:
            lines.append(f"   {snippet}")
        if explain:
            lines.append(f"   {_explanation(result)}")
    if prefetched:  # the agent reads some of what it was just shown: those entries wait in the cache
        prefetch_soon(memory, prefetched)
    return "\n".join(lines)


def _headline(rank: int, result: SearchResult) -> str:
    title = f' "{result.title}"' if result.title else ""
    kind = f"{result.type}, " if result.type else ""
    return f"{rank}. {memory_uri(result.path)}{title} ({kind}score {result.score:.2f})"


def _explanation(result: SearchResult) -> str:
    parts = result.breakdown
    semantic = "n/a" if parts.semantic is None else f"{parts.semantic:.3f}"
    beyond = "".join(f" · {name} {value:.3f}" for name in ("graph", "importance", "recency")
                     if (value := getattr(parts, name)) is not None)
    return (f"[semantic {semantic} · bm25 {parts.bm25:.3f} (raw {parts.bm25_raw:.2f}) · keyword {parts.keyword:.3f}"
            f" · tag {parts.tag:.3f} · context {parts.context:.3f}{beyond} · relevance {result.relevance:.3f}]")


__all__ = ["memory_search", "prefetch_soon"]
