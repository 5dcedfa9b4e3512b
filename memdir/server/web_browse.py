"""What the web view shows, read from a store: listings, one entry, search, health, threads, episodes, links.

Plain functions over a `Memory`, like the MCP tools beside them, returning typed results
instead of text: the web view (`memdir.server.web`) renders them as HTML. Nothing here
changes the memory (reading through the web does not count as a hit).

Listings and search keep to the caller's role view, as MemoryGlob and MemorySearch do
(`memdir.core.identity.view_filter`): a reviewer's token sees in the browser what its
MCP client sees.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdir.core.entry import ENTRY_TYPES
from memdir.core.errors import EntryNotFoundError, InputValidationError
from memdir.core.identity import view_filter
from memdir.search.neighbourhood import neighbourhood as graph_neighbourhood
from memdir.search.snippet import best_line
from memdir.storage.records import Narrowing
from memdir.storage.virtual import is_virtual

if TYPE_CHECKING:
    from memdir.episodes.store import StoredEpisode
    from memdir.memory import Memory
    from memdir.optimization.analyzer import HealthStats
    from memdir.search.hybrid import SearchResult
    from memdir.storage.audit_log import AuditRecord
    from memdir.storage.records import EntryInfo
    from memdir.threads.context.base import Window
    from memdir.threads.model import ThreadState

MAX_NEIGHBOURS = 40
"""Most entries one neighbourhood picture shows (a hub's thousand links would be a grey disc)."""
SORTS = ("path", "recent")
TAGS_SHOWN = 40
"""Most tags the listing offers to browse by (the most used first)."""


@dataclass(frozen=True)
class Row:
    """One entry of a listing, with its tags."""

    info: EntryInfo
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Listing:
    """One page of the entries that match the filters, and what there is to filter by."""

    rows: list[Row]
    total: int | None
    """How many match; None: more than the pages up to this one (a store that reads a page at a time)."""
    page: int
    pages: int | None
    shown_through: int
    """How many matching entries there are up to the end of this page."""
    folder: str | None
    type: str | None
    tag: str | None
    sort: str
    folders: list[str]
    """The top-level folders of the memory the caller sees."""
    types: list[str]
    tags: list[tuple[str, int]]
    """The most used tags, with how many entries carry each (of the page, when the total is not counted)."""


@dataclass(frozen=True)
class LinkRow:
    """One link of an entry: the other end, its title (empty when no entry is there) and the link's kind."""

    path: str
    title: str
    kind: str
    strength: float
    exists: bool


@dataclass(frozen=True)
class EntryPage:
    """One entry with its links both ways."""

    path: str
    title: str
    type: str | None
    content: str
    metadata: dict[str, Any]
    updated_at: str
    size: int
    hits: int
    embedded: bool
    links_out: list[LinkRow]
    links_in: list[LinkRow]
    archived: bool
    owner: str | None

    @property
    def linked_from(self) -> list[str]:
        return [link.path for link in self.links_in]


@dataclass(frozen=True)
class Hit:
    """One search result with the line of the entry that matched best."""

    result: SearchResult
    line: str


@dataclass(frozen=True)
class SearchPage:
    """The results at or above the relevance floor, and how many fell below it."""

    query: str
    hits: list[Hit]
    floor: float
    below_floor: int
    keyword_only: bool


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


@dataclass(frozen=True)
class ThreadRow:
    """One working-memory thread, as the threads page lists it."""

    id: str
    state: ThreadState

    @property
    def last(self) -> str:
        return self.state.chunks[-1].at if self.state.chunks else ""


def list_entries(memory: Memory, folder: str | None = None, page: int = 1, page_size: int = 50, *,
                 type: str | None = None, tag: str | None = None, sort: str = "path") -> Listing:  # noqa: A002
    """Page ``page`` (from 1) of the entries in the caller's view that are under ``folder``, of
    ``type`` and carry ``tag`` (each None: any), by path or most recently changed first.

    A store that reads a page at a time (a database) reads the entries up to this page, in the order
    shown, and stops one match after it (`Memory.page_where`): then the total is known on the last
    page only, and the tags offered are those of the page. A store that lists everything in memory
    (the directory store) filters and counts its whole listing.
    """
    if page < 1:
        raise InputValidationError(f"page must be 1 or more, got {page}.", "Start at page 1.")
    if sort not in SORTS:
        raise InputValidationError(f"sort must be one of {', '.join(SORTS)}, got {sort!r}.", "Use ?sort=recent or ?sort=path.")
    view = view_filter(memory.actor, False)
    tags_of: dict[str, tuple[str, ...]] = {}

    def with_tags(infos: list[EntryInfo]) -> list[EntryInfo]:
        """``infos`` in the caller's view (built-ins left out), their tags noted in ``tags_of``."""
        seen = memory.in_view([info for info in infos if not is_virtual(info.path)], view)
        tags = memory.index.tags([info.path for info in seen])
        tags_of.update({info.path: tags.get(info.path, ()) for info in seen})
        return seen

    def matches(info: EntryInfo) -> bool:
        return (type is None or info.type == type) and (tag is None or tag in tags_of[info.path])

    start = (page - 1) * page_size
    found = memory.page_where(folder, page * page_size, lambda infos: [info for info in with_tags(infos) if matches(info)],
                              Narrowing(type, tag), newest=sort == "recent")
    if found is not None:
        shown, total = found.entries[start:], None if found.more else len(found.entries)
        folders, types, counted = memory.top_folders(), list(ENTRY_TYPES), Counter(
            one for info in shown for one in tags_of[info.path])
    else:
        everything = with_tags(memory.list(include_virtual=False))
        prefix = folder.strip("/") + "/" if folder else ""
        chosen = [info for info in everything if info.path.startswith(prefix) and matches(info)]
        if sort == "recent":
            chosen.sort(key=lambda info: info.updated_at, reverse=True)
        shown, total = chosen[start:start + page_size], len(chosen)
        folders = sorted({info.path.split("/", 1)[0] for info in everything if "/" in info.path})
        types = sorted({info.type for info in everything if info.type})
        counted = Counter(one for info in everything for one in tags_of[info.path])
    return Listing(
        rows=[Row(info, tags_of[info.path]) for info in shown], total=total, page=page, shown_through=start + len(shown),
        pages=None if total is None else max(1, -(-total // page_size)), folder=folder, type=type, tag=tag, sort=sort,
        folders=folders, types=types, tags=sorted(counted.items(), key=lambda item: (-item[1], item[0]))[:TAGS_SHOWN],
    )


def read_entry(memory: Memory, path: str) -> EntryPage:
    """The entry at ``path`` (redirect stubs followed) and its links, out and in, with the titles at the other end."""
    entry = memory.read(path)
    edges = memory.index.edges([entry.path])
    outgoing: dict[tuple[str, str], float] = {(link.target, link.kind): link.strength for link in entry.metadata.all_links}
    incoming = {(edge.source, edge.kind): edge.strength for edge in edges if edge.target == entry.path}
    titles = memory.titles({other for other, _ in (*outgoing, *incoming)})

    def rows(links: dict[tuple[str, str], float]) -> list[LinkRow]:
        return [LinkRow(other, titles.get(other, ""), kind, strength, other in titles)
                for (other, kind), strength in sorted(links.items())]

    meta = entry.metadata
    return EntryPage(
        path=entry.path, title=entry.title, type=entry.type, content=entry.content,
        metadata=meta.to_yaml_dict(), updated_at=entry.updated_at.isoformat(timespec="seconds"),
        size=entry.size, hits=entry.hits, embedded=entry.embedded, links_out=rows(outgoing), links_in=rows(incoming),
        archived=meta.archived_at is not None, owner=meta.created_by,
    )


def search_entries(memory: Memory, query: str, floor: float | None = None, top_k: int = 20) -> SearchPage:
    """Hybrid search in the caller's view: the results whose relevance reaches ``floor`` (default: the
    floor discovery uses for short queries), each with its best-matching line and score breakdown."""
    text = (query or "").strip()
    if not text:
        raise InputValidationError("The query is empty.", "Type what to look for.")
    floor = memory.settings.discovery.threshold_short if floor is None else floor
    if not 0.0 <= floor <= 1.0:
        raise InputValidationError(f"The relevance floor must lie between 0 and 1, got {floor}.", "Use e.g. ?floor=0.25.")
    results = memory.search(text, top_k=min(top_k, memory.settings.search.max_top_k),
                            view=view_filter(memory.actor, False))
    kept = [result for result in results if result.relevance >= floor]
    weights = memory.term_weights(text)
    hits = []
    for result in kept:
        try:
            hits.append(Hit(result, best_line(memory.read(result.path).content, weights)))
        except EntryNotFoundError:  # deleted since the search
            continue
    return SearchPage(text, hits, floor, len(results) - len(kept), bool(results) and results[0].mode == "keyword")


def health(memory: Memory) -> tuple[HealthStats, str]:
    """The analyzer's statistics and its markdown report (the same as `memdir defrag --action analyze`)."""
    from memdir.optimization.analyzer import analyze, format_health_report
    from memdir.optimization.corpus import Corpus

    stats = analyze(Corpus.load(memory))
    return stats, format_health_report(stats)


def defrag_preview(memory: Memory, action: str, read_only: bool = False) -> str:
    """What defrag's ``action`` would do, as its markdown report (a dry run: nothing changes), telling
    the person how to apply it: the page's button, or in a ``read_only`` web view the command."""
    from memdir.optimization.defragmenter import Defragmenter
    from memdir.optimization.reports import FOR_READ_ONLY_WEB, FOR_WEB

    wording = FOR_READ_ONLY_WEB if read_only else FOR_WEB
    return Defragmenter(memory, wording=wording).run(action, dry_run=True).markdown


def audit_trail(memory: Memory, path: str) -> list[AuditRecord]:
    """Every recorded change of the entry at ``path``, newest first."""
    from memdir.core.paths import normalize_path

    return list(reversed(list(memory.adapter.audit.records(path=normalize_path(path)))))


def recent_episodes(memory: Memory, limit: int = 20) -> list[StoredEpisode]:
    """The most recent episodes in the caller's view first."""
    from memdir.episodes.store import list_episodes

    return list_episodes(memory, limit=limit, view=view_filter(memory.actor, False))


def threads(memory: Memory) -> list[ThreadRow]:
    """The working-memory threads, the most recently changed first."""
    from memdir.threads.manager import manager_for

    manager = manager_for(memory)
    rows = [ThreadRow(thread, manager.state(thread)) for thread in manager.ids()]
    return sorted(rows, key=lambda row: row.last, reverse=True)


def thread_window(memory: Memory, thread: str, budget_tokens: int) -> tuple[ThreadState, Window]:
    """A thread's state and the context window its strategy assembles within ``budget_tokens``."""
    from memdir.threads.manager import manager_for

    manager = manager_for(memory)
    window = manager.context(thread, budget_tokens)  # (ThreadNotFoundError for no such thread)
    return manager.state(thread), window


def neighbourhood(memory: Memory, path: str, depth: int = 1, limit: int = MAX_NEIGHBOURS) -> Neighbourhood:
    """The link neighbourhood of ``path``: MemoryGraph's walk (`memdir.search.neighbourhood`, typed links
    both ways, ``related`` paths as ``references``), in the shape the picture's layout takes."""
    centre = memory.read(path).path
    found = graph_neighbourhood(memory, centre, depth, max_nodes=limit)
    edges = sorted({(edge.source, edge.target, edge.kind) for edge in found.edges})
    missing = {other for other in found.hops if other not in found.titles}  # titles exist only for entries
    return Neighbourhood(centre, found.titles, found.hops, edges, missing, found.truncated)


__all__ = [
    "SORTS", "EntryPage", "Hit", "LinkRow", "Listing", "Neighbourhood", "Row", "SearchPage", "ThreadRow", "audit_trail",
    "defrag_preview", "health", "list_entries", "neighbourhood", "read_entry", "recent_episodes", "search_entries",
    "thread_window", "threads",
]
