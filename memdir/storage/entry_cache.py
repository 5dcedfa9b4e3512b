"""A least-recently-used cache of entries as agents read them (prefetch cache).

`Memory.read` serves an agent's read (MemoryRead) from here when the entry's files are as they
were when it was cached, and counts hits and misses; `memdir.server.prefetch` fills it at
session start with the entries an agent of that role is likely to read.

Freshness without trusting anyone to report changes: each entry is kept with the stamp of its
stored version taken *before* it was read (`StorageAdapter.stats`: for the directory, the mtime
in ns and size of its ``.md`` and ``.yml`` — every write replaces a file, so both move), and a
lookup compares it with the stamp now (two ``stat`` calls, against a full read: two files
opened, the YAML parsed, the vector read). The root's
change counter (`memdir.storage.directory.changes`) would be cheaper still, but only memdir raises it: a
note edited by hand in a text editor would be served stale. A changed entry is dropped — a
miss. An entry changed between taking its stats and reading it is newer than its stats say, so
it too is dropped at the next look, never served stale.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memdir.core.entry import Entry, utcnow
from memdir.core.errors import MemdirError
from memdir.core.files import private_folder, read_regular, replace_file
from memdir.storage.directory.index_db import INDEX_DIR
from memdir.storage.records import FileStats

REPORT_FILE = "prefetch.json"
"""Under ``.memdir/``: the figures of the last process that served reads from its cache (for `memdir status`)."""


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What the cache did so far: lookups that found a fresh entry (hits) or not (misses)."""

    capacity: int
    entries: int
    hits: int
    misses: int
    prefetched: int

    @property
    def hit_rate(self) -> float:
        """Hits over lookups (0.0 before the first lookup), as ``PrefetchMetrics`` defines it."""
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0


@dataclass(frozen=True, slots=True)
class PrefetchReport:
    """Cache figures as `memdir status` and the server's status resource show them: whose, and when."""

    hits: int
    misses: int
    hit_rate: float
    entries: int
    capacity: int
    prefetched: int
    agent: str
    pid: int
    at: str

    @classmethod
    def of(cls, stats: CacheStats, agent: str) -> PrefetchReport:
        return cls(stats.hits, stats.misses, round(stats.hit_rate, 4), stats.entries, stats.capacity,
                   stats.prefetched, agent, os.getpid(), utcnow().isoformat())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def save_report(root: Path, report: PrefetchReport) -> None:
    """Replace ``.memdir/prefetch.json`` (derived data: losing it loses only old figures)."""
    folder = private_folder(root, INDEX_DIR)
    replace_file(folder / REPORT_FILE, json.dumps(report.to_dict()).encode(), root=root, durable=False)


def load_report(root: Path) -> PrefetchReport | None:
    """The figures last saved under ``root``, or None (none saved, or unreadable)."""
    try:
        data = json.loads(read_regular(root, Path(root) / INDEX_DIR / REPORT_FILE))
        return PrefetchReport(**data)
    except (OSError, ValueError, TypeError, MemdirError):
        return None


class EntryCache:
    """The LRU cache of one root's entries (see the module docstring); safe to share between threads."""

    def __init__(self, stats: Callable[[str], FileStats], capacity: int, *,
                 stats_each: Callable[[Sequence[str]], list[FileStats]]) -> None:
        """``stats``: the store's stamp of an entry's stored version (`StorageAdapter.stats`); ``stats_each``:
        those of several entries asked together (`StorageAdapter.stats_each`)."""
        self._stats = stats
        self._stats_each = stats_each
        self.capacity = max(0, capacity)
        self._items: OrderedDict[str, tuple[Entry, FileStats]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = self.prefetched = 0

    def stats_of(self, path: str) -> FileStats:
        """The stats to cache an entry with: take them *before* reading it."""
        return self._stats(path)

    def get(self, path: str) -> Entry | None:
        """The cached entry at ``path`` if its files have not changed since (a hit), else None (a miss)."""
        return self.look_up(path)[0]

    def look_up(self, path: str) -> tuple[Entry | None, FileStats | None]:
        """`get`, and the stats it took, with which the entry read after it is cached (`put`); None
        when nothing was cached at ``path``: a miss told without asking the files."""
        with self._lock:
            known = path in self._items
            if not known:
                self.misses += 1
        if not known:
            return None, None
        current = self._stats(path)
        with self._lock:
            entry = self._fresh(path, current)
            if entry is None:
                self.misses += 1
            else:
                self.hits += 1
            return entry, current

    def put(self, entry: Entry, stats: FileStats, *, prefetch: bool = False) -> None:
        """Keep ``entry`` (read after ``stats`` were taken), evicting the least recently used beyond capacity.

        Putting an entry again refreshes it and its place (prefetching twice is idempotent).
        """
        if not self.capacity or entry.virtual:
            return
        with self._lock:
            self._items[entry.path] = (entry, stats)
            self._items.move_to_end(entry.path)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
            if prefetch:
                self.prefetched += 1

    def refresh(self, paths: Iterable[str]) -> set[str]:
        """Those of ``paths`` whose cached copy is fresh: they become the most recently used, in the order
        given (no hit is counted); stale copies are dropped. What prefetching does with the entries it holds
        already: their stats, asked together in one question, instead of a read."""
        with self._lock:
            held = [path for path in dict.fromkeys(paths) if path in self._items]
        if not held:
            return set()
        current = self._stats_each(held)
        with self._lock:
            return {path for path, stats in zip(held, current, strict=True) if self._fresh(path, stats) is not None}

    def _fresh(self, path: str, current: FileStats) -> Entry | None:
        """The cached entry at ``path`` if it was cached with ``current`` stats, made the most
        recently used; a stale copy is dropped (under the lock)."""
        item = self._items.get(path)
        if item is None:
            return None
        if item[1] != current:
            del self._items[path]
            return None
        self._items.move_to_end(path)
        return item[0]

    def drop(self, path: str) -> None:
        with self._lock:
            self._items.pop(path, None)

    def __contains__(self, path: object) -> bool:
        with self._lock:
            return path in self._items

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self.capacity, len(self._items), self.hits, self.misses, self.prefetched)


__all__ = ["CacheStats", "EntryCache", "PrefetchReport", "load_report", "save_report"]
