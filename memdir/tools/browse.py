"""What the web view shows, read from a store: listings, one entry, search with scores, health, episodes, links.

Plain functions over a `Memory`, like the MCP tools beside them, returning typed results
instead of text: the web view (`memdir.server.web`) renders them as HTML. Nothing here
changes the memory (reading through the web does not count as a hit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdir.core.errors import InputValidationError
from memdir.graph.neighbourhood import neighbourhood as graph_neighbourhood

if TYPE_CHECKING:
    from memdir.episodes.store import StoredEpisode
    from memdir.memory import Memory
    from memdir.optimization.analyzer import HealthStats
    from memdir.search.hybrid import SearchResult
    from memdir.storage.base import EntryInfo

MAX_NEIGHBOURS = 40
"""Most entries one neighbourhood picture shows (a hub's thousand links would be a grey disc)."""


@dataclass(frozen=True)
class Listing:
    """One page of entries under a folder."""

    entries: list[EntryInfo]
    total: int
    page: int
    pages: int
    folder: str | None
    folders: list[str]
    """The top-level folders of the whole memory (to browse by)."""


@dataclass(frozen=True)
class EntryPage:
    """One entry with what links to it."""

    path: str
    title: str
    type: str | None
    content: str
    metadata: dict[str, Any]
    updated_at: str
    size: int
    hits: int
    embedded: bool
    linked_from: list[str]


@dataclass(frozen=True)
class Neighbourhood:
    """The entries within ``depth`` links of ``centre`` (either direction) and the links between them.

    ``edges`` are (from, to, kind) with ``kind`` the link's type (``references`` for the
    metadata's plain ``related`` paths); ``missing`` are linked paths with no entry (dangling links).
    """

    centre: str
    titles: dict[str, str]
    distance: dict[str, int]
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)
    truncated: bool = False


def list_entries(memory: Memory, folder: str | None = None, page: int = 1, page_size: int = 50) -> Listing:
    """Page ``page`` (from 1) of the entries under ``folder`` (all when None), in path order."""
    if page < 1:
        raise InputValidationError(f"page must be 1 or more, got {page}.", "Start at page 1.")
    entries, total = memory.numbered_page(folder or None, page, page_size)
    pages = max(1, -(-total // page_size))
    return Listing(entries, total, page, pages, folder, memory.top_folders())


def read_entry(memory: Memory, path: str) -> EntryPage:
    """The entry at ``path`` (redirect stubs followed) and the entries whose links point at it."""
    entry = memory.read(path)
    return EntryPage(
        path=entry.path, title=entry.title, type=entry.type, content=entry.content,
        metadata=entry.metadata.to_yaml_dict(), updated_at=entry.updated_at.isoformat(timespec="seconds"),
        size=entry.size, hits=entry.hits, embedded=entry.embedded,
        linked_from=sorted({edge.source for edge in memory.index.edges([entry.path]) if edge.target == entry.path}),
    )


def search_entries(memory: Memory, query: str, top_k: int = 20) -> list[SearchResult]:
    """Hybrid search results, each with its score breakdown (`SearchResult.breakdown`)."""
    text = (query or "").strip()
    if not text:
        raise InputValidationError("The query is empty.", "Type what to look for.")
    return memory.search(text, top_k=min(top_k, memory.settings.search_max_top_k))


def health(memory: Memory) -> tuple[HealthStats, str]:
    """The analyzer's statistics and its markdown report (the same as `memdir defrag --action analyze`)."""
    from memdir.optimization.analyzer import analyze, format_health_report
    from memdir.optimization.corpus import Corpus

    stats = analyze(Corpus.load(memory))
    return stats, format_health_report(stats)


def recent_episodes(memory: Memory, limit: int = 20) -> list[StoredEpisode]:
    """The most recent episodes first."""
    from memdir.episodes.store import list_episodes

    return list_episodes(memory, limit=limit)


def neighbourhood(memory: Memory, path: str, depth: int = 1, limit: int = MAX_NEIGHBOURS) -> Neighbourhood:
    """The link neighbourhood of ``path``: MemoryGraph's walk (`memdir.graph.neighbourhood`, typed links
    both ways, ``related`` paths as ``references``), in the shape the picture's layout takes."""
    centre = memory.read(path).path
    found = graph_neighbourhood(memory, centre, depth, max_nodes=limit)
    edges = sorted({(edge.source, edge.target, edge.kind) for edge in found.edges})
    missing = {other for other in found.hops if other not in found.titles}  # titles exist only for entries
    return Neighbourhood(centre, found.titles, found.hops, edges, missing, found.truncated)


__all__ = [
    "EntryPage", "Listing", "Neighbourhood", "health", "list_entries", "neighbourhood", "read_entry",
    "recent_episodes", "search_entries",
]
