"""The storage adapter protocol: what any backend (filesystem now, others later) provides.

Adapters hold the *source of truth*: entries with their content, metadata and embedding.
They know nothing about search ranking or models; `memdir.memory.Memory` combines an
adapter with the derived index and an embedder.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, Protocol

import numpy as np

from memdir.core.entry import Entry, Metadata


class EntryInfo(NamedTuple):
    """A light listing row: enough for glob output and index freshness checks.

    A named tuple rather than a frozen dataclass: listings of 100K entries build 100K of
    them, and a frozen dataclass costs ~5x as much to construct (one ``__setattr__`` per field).
    """

    path: str
    title: str
    size: int
    updated_at: datetime
    type: str | None
    hits: int = 0
    mtime_ns: int = 0
    virtual: bool = False


@dataclass(frozen=True, slots=True)
class Redirect:
    """A stub's redirect: ``# merged → target`` or ``# moved → target``."""

    kind: str  # "merged" | "moved"
    target: str  # normalised logical path


class StorageAdapter(Protocol):
    """A store of memory entries keyed by normalised logical path (``concept/x.md``)."""

    root: object

    def write(
        self,
        path: str,
        content: str,
        *,
        title: str,
        metadata: Metadata,
        embedding: np.ndarray | None,
        hits: int | None = None,
    ) -> Entry:
        """Create or replace an entry atomically; ``hits=None`` keeps the existing count."""

    def read_entry(self, path: str, *, count_hit: bool = False, follow: bool = True) -> Entry:
        """Read an entry (following stubs when ``follow``); ``count_hit`` for agent reads only."""

    def exists(self, path: str) -> bool:
        """True if a real entry, stub or virtual entry lives at ``path``."""

    def delete(self, path: str) -> None:
        """Remove every file of the entry."""

    def write_stub(self, path: str, redirect: Redirect) -> None:
        """Replace the entry at ``path`` with a redirect stub."""

    def read_redirect(self, path: str) -> Redirect | None:
        """The redirect if ``path`` is a stub, else None."""

    def read_contents(self, paths: Sequence[str]) -> list[str]:
        """The content of each entry ("" for a missing one), cheaply, for whole-root scans."""

    def iter_entries(self, *, include_stubs: bool = False, include_virtual: bool = False) -> Iterator[EntryInfo]:
        """Every entry, cheaply (no content, no hit counting)."""

    def total_size(self) -> int:
        """Bytes of content held (virtual entries excluded)."""
