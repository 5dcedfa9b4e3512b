"""Reading a memory's entries on an agent's behalf: counted reads, and the cache that serves them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from memdir.core.entry import Entry
from memdir.core.errors import DiskFullError, MemdirError, ReadOnlyRootError
from memdir.core.paths import normalize_path
from memdir.core.settings import Settings
from memdir.memory.keeper import IndexKeeper
from memdir.memory.ownership import Ownership
from memdir.storage.base import EntryIndex, StorageAdapter
from memdir.storage.entry_cache import EntryCache, PrefetchReport, save_report
from memdir.storage.records import FileStats

log = logging.getLogger(__name__)

CACHE_FIGURES_EVERY = 50
"""Agent reads between two saves of the cache's figures for `memdir status`."""


class Reads:
    """Reads of entries, with a cache of the entries agents read (and `prefetch` put there), served to
    MemoryRead while unchanged."""

    def __init__(self, settings: Settings, adapter: StorageAdapter, index: EntryIndex, keeper: IndexKeeper, owners: Ownership) -> None:
        self.adapter = adapter
        self.index = index
        self.keeper = keeper
        self.owners = owners
        size = settings.discovery.prefetch_size
        self.cache = EntryCache(adapter.stats, size, stats_each=adapter.stats_each) if size > 0 else None

    def read(self, path: str, *, count_hit: bool = False) -> Entry:
        """Read an entry (following merge/move stubs); ``count_hit`` for reads on the agent's behalf.

        A counted read rewrites the entry's ``.yml``; its index row takes the new count too, so
        that listings can come from the index again (`entries`).
        """
        logical = normalize_path(path)
        if not count_hit:
            return self.adapter.read_entry(logical)
        if self.keeper.read_only:
            cached, stats = self.looked_up(logical)
            return cached or self.remember(logical, lambda: self.adapter.read_entry(logical), stats)
        if self.adapter.counts_reads_alone:  # (no lock: the cache takes the stats from before the read)
            cached, stats = self.looked_up(logical)
            entry = self.adapter.count_hit(cached) if cached is not None else self.remember(
                logical, lambda: self.adapter.read_entry(logical, count_hit=True), stats)
            self.save_cache_figures(every=CACHE_FIGURES_EVERY)
            return entry
        with self.keeper.changing():
            before = self.adapter.stats(logical)
            cached = self.cached(logical)
            if cached is not None:
                entry = self.adapter.count_hit(cached)
            else:
                entry = self.adapter.read_entry(logical, count_hit=True)
            if entry.path == logical and not entry.virtual:  # (a read through a stub is left to the walk)
                after = self.adapter.stats(logical)
                if self.cache is not None:  # the lock is held: the files are as this read left them
                    self.cache.put(entry, after)
                try:
                    self.index.record_hits(logical, entry.hits, before, after)
                except (DiskFullError, ReadOnlyRootError) as exc:  # the read goes on; listings walk meanwhile
                    log.info("Not recording the read of %s in the derived index: %s", entry.path, exc)
        self.save_cache_figures(every=CACHE_FIGURES_EVERY)
        return entry

    def contents(self, paths: Sequence[str]) -> list[str]:
        """The content of each entry at ``paths`` ("" for one gone since), reading only its ``.md``:
        what a result's snippet needs, at a fraction of `read`'s cost (no sidecar, vector or stub walk)."""
        return self.adapter.read_contents([normalize_path(path) for path in paths])

    def cached(self, logical: str) -> Entry | None:
        """The cache's fresh copy of the entry at ``logical`` (a hit), or None (a miss, or no cache)."""
        return self.looked_up(logical)[0]

    def looked_up(self, logical: str) -> tuple[Entry | None, FileStats | None]:
        """`cached`, and the stats the cache took to tell (`EntryCache.look_up`)."""
        return self.cache.look_up(logical) if self.cache is not None else (None, None)

    def remember(self, logical: str, read: Callable[[], Entry], stats: FileStats | None = None) -> Entry:
        """``read()`` the entry at ``logical`` and cache it with the stats taken before reading (``stats``
        if the caller took them; a change in between makes it stale, never served: `memdir.storage.entry_cache`)."""
        if self.cache is None:
            return read()
        if stats is None:
            stats = self.cache.stats_of(logical)
        entry = read()
        if entry.path == logical:
            self.cache.put(entry, stats)
        return entry

    def prefetch(self, paths: Iterable[str]) -> int:
        """Read entries into the cache ahead of the agent's reads (no hit is counted); how many are cached.

        An entry cached and unchanged is not read again, only made the most recently used (whether
        each is unchanged is asked together: `EntryCache.refresh`); the others are read together
        (`memdir.storage.base.StorageAdapter.read_entries`). Entries that vanished or cannot be read
        are skipped: prefetching is a guess.
        """
        if self.cache is None:
            return 0
        wanted: list[str] = []
        for path in paths:
            try:
                wanted.append(normalize_path(path))
            except MemdirError:
                continue
        fresh = self.cache.refresh(wanted)
        unread = [path for path in dict.fromkeys(wanted) if path not in fresh]
        try:
            read = self.adapter.read_entries(unread) if unread else []
        except MemdirError:
            read = []
        got = {entry.path: (entry, stats) for entry, stats in read}
        put: set[str] = set()
        for path in wanted:  # in the order asked: the last asked is the most recently used
            if path in got:
                self.cache.put(*got[path], prefetch=path not in put)
                put.add(path)
        return sum(path in fresh or path in got for path in wanted)

    def save_cache_figures(self, every: int | None = None) -> None:
        """Keep the cache's hit and miss counts where `memdir status` (another process) finds them:
        at close, and every ``every`` lookups. Best effort: figures are not worth failing a read for."""
        cache = self.cache
        if cache is None or self.keeper.read_only or not (cache.hits + cache.misses):
            return
        if every is not None and (cache.hits + cache.misses) % every:
            return
        try:
            save_report(self.adapter.root, PrefetchReport.of(cache.stats(), self.owners.actor.label))
        except (OSError, MemdirError) as exc:
            log.debug("prefetch figures not saved: %s", exc)

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        """Titles for display (missing entries are left out)."""
        return self.adapter.titles(paths)
