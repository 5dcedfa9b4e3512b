"""Listing a memory's entries: by folder, glob and page, in a role's view, and grep over them."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

from memdir.core.identity import Actor, Labels
from memdir.core.settings import Settings
from memdir.core.user_regex import RegexBudget, check_length
from memdir.memory.keeper import IndexKeeper
from memdir.memory.results import GlobPage, ListPage
from memdir.search.text_search import (
    GrepHit,
    GrepPattern,
    filter_folder,
    glob_folder,
    glob_matcher,
    grep_content,
    matching_fields,
    path_filter,
)
from memdir.storage.base import EntryIndex, StorageAdapter, StoreListing, paged_listing
from memdir.storage.records import EntryInfo, Listed, Narrowing, Page
from memdir.storage.virtual import is_virtual, load_virtual, virtual_info, virtual_paths


class _AboutAnEntry(Protocol):
    """Anything about one entry (a listing row, a search result): what `Listings.in_view` filters."""

    @property
    def path(self) -> str: ...



T = TypeVar("T", bound=_AboutAnEntry)

NO_LABELS = Labels()


Chunk = Callable[[list[EntryInfo]], list[EntryInfo]]
"""What of a chunk of listed entries a page keeps (in their order): a glob, an agent's view."""


class Listings:
    """Listings from the derived index's rows where they are fresh, from a walk of the store where not."""

    def __init__(self, settings: Settings, adapter: StorageAdapter, index: EntryIndex, keeper: IndexKeeper, listing: StoreListing) -> None:
        self.settings = settings
        self.adapter = adapter
        self.index = index
        self.keeper = keeper
        self.listing = listing

    def list(self, prefix: str | None = None, *, include_virtual: bool = True, view: Actor | None = None) -> builtins.list[EntryInfo]:
        """Every entry (stubs excluded), optionally under a folder prefix, in path order.

        Args:
            view: keep only the entries in this actor's view (`Actor.sees`); None keeps all.
        """
        infos = self.entries(path_filter(prefix), include_virtual=include_virtual, under=filter_folder(prefix))
        return self.in_view(infos, view)

    def in_view(self, items: builtins.list[T], view: Actor | None) -> builtins.list[T]:
        """The items (anything with a ``path``: listings, search results) whose entry is in
        ``view`` (`Actor.sees`, on the labels the derived index keeps), in their order; all for None."""
        if view is None or not items:
            return items
        labels = self.index.labels([item.path for item in items])
        return [item for item in items if view.sees(labels.get(item.path, NO_LABELS))]

    def entries(
        self, keep: Callable[[str], bool], *, include_virtual: bool = True, under: str | None = None
    ) -> builtins.list[EntryInfo]:
        """The entries whose path ``keep`` accepts, with title, type, hits and updated_at, in path order (`listed`)."""
        infos = self.listed(keep, include_virtual=include_virtual, under=under).infos()
        return sorted(infos, key=lambda info: info.path)

    def listed(self, keep: Callable[[str], bool], *, include_virtual: bool = True, under: str | None = None) -> Listed:
        """The entries whose path ``keep`` accepts.

        From the derived index's rows, with the folders changed since they were last found as
        the rows have them listed again (`memdir.storage.directory.root_listing`; `memdir.storage.directory.folder_stamps`
        says what may lag, and until when); from a walk when the stamps cannot tell (`walked_entries`).
        """
        listed = self.listing.select(keep, under)
        if listed is None:
            listed = Listed(None, [], self.walked_entries(keep, under))
        if include_virtual:
            listed = listed.with_read(virtual_info(path) for path in virtual_paths() if keep(path))
        return listed

    def walked_entries(self, keep: Callable[[str], bool], under: str | None) -> builtins.list[EntryInfo]:
        """The listing from a walk: title, type, hits and updated_at from the index's row where it is
        as fresh as the entry's files (one ``stat`` of the ``.yml`` tells), from the ``.yml`` otherwise
        (parsing every sidecar made a listing of 100K entries take ~15 s)."""
        stats = {path: st for path, st in self.adapter.listing(under) if keep(path)}
        known = self.index.describe(stats)
        return [*known.values(), *self.adapter.describe([path for path in stats if path not in known])]

    def list_stubs(self) -> builtins.list[EntryInfo]:
        """Stub entries only (defrag's cleanup needs them; nothing else lists them)."""
        real = {info.path for info in self.adapter.iter_entries(with_metadata=False)}
        return [info for info in self.adapter.iter_entries(include_stubs=True) if info.path not in real]

    def glob(self, pattern: str, *, view: Actor | None = None) -> builtins.list[EntryInfo]:
        """Entries matching a glob (`memdir.search.text_search.normalize_glob`), newest first; ``view`` as in `list`."""
        return self.glob_page(pattern, None, view=view).entries

    def glob_page(self, pattern: str, limit: int | None, *, view: Actor | None = None) -> GlobPage:
        """The ``limit`` newest entries matching a glob (all for None) and how many match; as `glob`.

        Only the entries shown are made into `EntryInfo` (`memdir.storage.directory.root_listing.Listed`):
        MemoryGlob shows 500, and building all 100K of a root's cost more than finding them.
        With a ``limit``, the entries shown are checked against their files: one rewritten in
        place since its row was written is shown as its files say (`memdir.storage.directory.root_listing.RootListing.as_files_say`).
        A database reads the page alone, newest first through an index (`memdir.storage.postgres.pages`),
        and does not count the matches beyond it: its total is None when more match.
        """
        check_length(pattern, RegexBudget.from_settings(self.settings), "glob pattern")
        keep = glob_matcher(pattern)
        paged = paged_listing(self.listing)
        if limit is not None and paged is not None:
            page = _page(paged.newest(glob_folder(pattern), limit), limit, self.keeping(keep, view))
            return GlobPage(page.entries, None if page.more else len(page.entries))
        listed = self.listed(keep, under=glob_folder(pattern))
        if view is not None and len(listed):
            labels = self.index.labels(listed.paths())
            listed = listed.only(lambda path: view.sees(labels.get(path, NO_LABELS)))
        shown = listed.newest(limit)
        return GlobPage(shown if limit is None else self.listing.as_files_say(shown), len(listed))

    def keeping(self, keep: Callable[[str], bool], view: Actor | None) -> Callable[[builtins.list[EntryInfo]], builtins.list[EntryInfo]]:
        """What of a chunk of listed entries a page keeps: those ``keep`` accepts, in ``view``."""
        return lambda infos: self.in_view([info for info in infos if keep(info.path)], view)

    def list_page(self, after: str | None, limit: int, *, under: str | None = None, view: Actor | None = None) -> ListPage:
        """The first ``limit`` entries (built-ins included) after the path ``after`` (None: from the
        first), under the folder ``under``, in ``view``, in path order: a database reads this page
        alone, the directory store takes it from its whole listing (in memory)."""
        paged = paged_listing(self.listing)
        if paged is not None:
            page = _page(paged.in_path_order(under, after, limit), limit, self.keeping(lambda path: True, view))
            shown, more = page.entries, page.more
        else:
            listed = [info for info in self.list(under, view=view) if after is None or info.path > after]
            shown, more = listed[:limit], len(listed) > limit
        return ListPage(shown, shown[-1].path if more and shown else None)

    def numbered_page(self, under: str | None, number: int, size: int) -> tuple[builtins.list[EntryInfo], int]:
        """Page ``number`` (from 1) of ``size`` entries under ``under`` in path order, and how many there are."""
        paged = paged_listing(self.listing)
        if paged is not None:
            return paged.at_offset(under, (number - 1) * size, size), paged.count(under)
        listed = self.list(under)
        return listed[(number - 1) * size:number * size], len(listed)

    def page_where(self, under: str | None, limit: int, keep: Chunk, narrow: Narrowing, *, newest: bool) -> Page | None:
        """The first ``limit`` entries under ``under`` and ``narrow`` that ``keep`` keeps, newest first or in path
        order, read a page at a time (a database); None for a store that lists everything in memory (take `list`)."""
        paged = paged_listing(self.listing)
        if paged is None:
            return None
        chunks = paged.newest(under, limit, narrow) if newest else paged.in_path_order(under, None, limit, narrow)
        return _page(chunks, limit, keep)

    def top_folders(self) -> builtins.list[str]:
        """The top-level folders that hold entries (built-ins included)."""
        paged = paged_listing(self.listing)
        if paged is not None:
            return paged.top_folders()
        return sorted({info.path.split("/", 1)[0] for info in self.list() if "/" in info.path})

    def grep(
        self, pattern: str, *, path: str | None = None, case_insensitive: bool = False, labels: bool = False
    ) -> builtins.list[GrepHit]:
        """Regex search of entry contents (not the .yml internals), in path order.

        Args:
            labels: also search each entry's title, tags and domain (SwarmMemory searched the
                .yml too), so an entry found by its title is listed although its content does
                not match; `GrepHit.where` says where each entry matched.
        """
        compiled = GrepPattern(pattern, case_insensitive, RegexBudget.from_settings(self.settings))
        keep = path_filter(path)
        listing = self.adapter.iter_entries(include_virtual=True, with_metadata=False)
        paths = sorted(info.path for info in listing if keep(info.path))
        # An entry deleted by another process meanwhile reads as "" and matches nothing.
        found = (grep_content(compiled, p, content) for p, content in zip(paths, self.adapter.read_contents(paths)))
        hits = {hit.path: hit for hit in found if hit}
        if labels:
            for entry_path, fields in self.labels(paths).items():
                where = matching_fields(compiled, fields)
                if where:
                    hit = hits.setdefault(entry_path, GrepHit(entry_path))
                    hit.where[:0] = where
        return [hits[p] for p in paths if p in hits]

    def labels(self, paths: builtins.list[str]) -> dict[str, dict[str, tuple[str, ...]]]:
        """Title, tags and domain of each entry: from the index (no file read), built-in ones from their own metadata."""
        self.keeper.refresh()
        rows = self.index.rows([p for p in paths if not is_virtual(p)])
        labels = {p: {"title": (row.title,), "tags": row.tags, "domain": (row.domain,)} for p, row in rows.items()}
        for builtin in filter(is_virtual, paths):
            entry = load_virtual(builtin)
            labels[builtin] = {"title": (entry.title,), "tags": tuple(entry.metadata.tags),
                               "domain": (entry.metadata.domain or "",)}
        return labels


def _page(chunks: Iterator[list[EntryInfo]], limit: int, keep: Chunk) -> Page:
    """The first ``limit`` entries ``keep`` keeps of a paged listing's chunks, pulling no more chunks than
    that takes, and whether more are kept after them."""
    found: list[EntryInfo] = []
    for chunk in chunks:
        found.extend(keep(chunk))
        if len(found) > limit:
            break
    return Page(found[:limit], len(found) > limit)
