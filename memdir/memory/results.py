"""What a memory's calls return: plain records, for callers and the server's answers alike."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir.core.entry import Entry, Metadata
from memdir.storage.entry_cache import PrefetchReport
from memdir.storage.records import EntryInfo


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did: the stored entry, and whether it replaced an existing one."""

    entry: Entry
    overwritten: bool


@dataclass(frozen=True, slots=True)
class NewEntry:
    """One entry for `Memory.write_many`: what `Memory.write` takes."""

    path: str
    content: str
    title: str = ""
    metadata: Metadata | dict[str, Any] | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class GlobPage:
    """What `Memory.glob_page` found: the newest entries matching a glob, newest first, and how
    many match in all."""

    entries: list[EntryInfo]
    total: int | None
    """None: more match than are shown, and the store did not count them (a database reads the page alone)."""


@dataclass(frozen=True, slots=True)
class ListPage:
    """What `Memory.list_page` found: one page of entries in path order, and what comes after it."""

    entries: list[EntryInfo]
    next_after: str | None
    """The path to ask the next page after (None: this is the last page)."""


@dataclass(frozen=True, slots=True)
class MemoryStatus:
    """What `memdir status` reports."""

    root: Path
    entries: int
    embedded: int
    total_size: int
    model_state: str
    model_id: str | None
    model_source: str | None
    dimensions: int | None
    reason: str
    index_fresh: bool
    stale: int
    prefetch: PrefetchReport | None = None
    store: str = ""
    """Where the entries live: "files" (under the root), or the database URL, its password masked."""
    builtins: int = 0


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """What `Memory.rebuild` embedded: the root's entries, and the built-in ones every root has."""

    entries: int
    builtins: int

    @property
    def total(self) -> int:
        return self.entries + self.builtins
