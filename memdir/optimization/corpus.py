"""A snapshot of every entry in a memory root, as defrag's analyses need it.

Defrag reads each entry once (content, metadata, hits, timestamps) and takes the vector
matrix from the index once; every action then works on this snapshot. Live actions
re-check each entry against it before changing anything (`Item.fingerprint`), so an
entry edited meanwhile by another process is skipped, never overwritten.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from memdir.core.entry import Entry, Metadata, entry_type
from memdir.core.errors import MemdirError
from memdir.core.links import Link, entry_links, parse_links
from memdir.core.quality import confidence_of, effective_metadata, score_metadata
from memdir.optimization.pairs import WordSets

if TYPE_CHECKING:
    from memdir.memory import Memory

SECONDS_PER_DAY = 86_400.0


def fingerprint(entry: Entry) -> str:
    """A short hash of what defrag may change in an entry: content, title and metadata."""
    payload = json.dumps(
        [entry.content, entry.title, entry.metadata.to_yaml_dict()], sort_keys=True, default=str, ensure_ascii=False
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Item:
    """One entry as defrag sees it.

    ``metadata`` is the effective metadata (sidecar merged over content frontmatter);
    ``stored`` is the sidecar metadata exactly as written, which is what defrag edits.
    """

    path: str
    title: str
    content: str
    stored: Metadata
    metadata: dict[str, Any]
    hits: int
    updated_at: datetime
    size: int
    embedded: bool
    quality: int
    fingerprint: str

    @classmethod
    def from_entry(cls, entry: Entry) -> Item:
        merged = effective_metadata(entry.metadata, entry.content)
        return cls(
            path=entry.path,
            title=entry.title,
            content=entry.content,
            stored=entry.metadata,
            metadata=merged,
            hits=entry.hits,
            updated_at=entry.updated_at,
            size=entry.size or len(entry.content.encode("utf-8")),
            embedded=entry.embedding is not None,
            quality=score_metadata(merged),
            fingerprint=fingerprint(entry),
        )

    @property
    def type(self) -> str | None:
        return entry_type(self.metadata.get("type"), self.path)

    @property
    def confidence(self) -> str | None:
        return confidence_of(self.metadata)

    @property
    def has_metadata(self) -> bool:
        """True when the entry carries any metadata (sidecar or frontmatter)."""
        return bool(self.metadata)

    @property
    def tags(self) -> list[str]:
        return [str(tag) for tag in self.metadata.get("tags", [])]

    @property
    def links(self) -> list[Link]:
        """Every readable link of this entry: typed ``links``, then ``related`` paths (as ``references``)."""
        return entry_links(parse_links(self.metadata.get("links"))[0], self.metadata.get("related", []))

    @property
    def related(self) -> set[str]:
        """Normalised paths this entry links to (by any kind of link)."""
        return {link.target for link in self.links}

    def age_days(self, now: datetime) -> float:
        updated = self.updated_at if self.updated_at.tzinfo else self.updated_at.replace(tzinfo=UTC)
        return (now - updated).total_seconds() / SECONDS_PER_DAY


class Corpus:
    """Every (non built-in) entry of a root, sorted by path, plus the vector matrix.

    ``rows[k]`` is the entry index of row ``k`` of ``matrix``; entries without a vector
    have no row. A *full* corpus reads every entry up front (metadata, hits, quality);
    a *light* one (`load` with ``full=False``) lists paths and reads contents in bulk,
    and reads single entries only when asked (`item`) — enough for finding pairs.
    """

    def __init__(self, memory: Memory, paths: list[str], items: list[Item] | None) -> None:
        self.memory = memory
        self.paths = paths
        self.index = {path: position for position, path in enumerate(paths)}
        self._items: dict[int, Item | None] = dict(enumerate(items)) if items is not None else {}
        self.full = items is not None
        vector_paths, matrix = memory.vectors()
        keep = [(row, self.index[path]) for row, path in enumerate(vector_paths) if path in self.index]
        if keep:
            matrix_rows, entry_rows = map(list, zip(*keep))
            self.matrix = np.ascontiguousarray(np.asarray(matrix, dtype=np.float32)[matrix_rows])
        else:
            entry_rows = []
            self.matrix = np.zeros((0, matrix.shape[1] if np.ndim(matrix) == 2 else 0), np.float32)
        self.rows = np.asarray(entry_rows, dtype=np.int64)

    @classmethod
    def load(cls, memory: Memory, *, full: bool = True) -> Corpus:
        """Snapshot ``memory``'s entries (never counting hits).

        Args:
            full: read every entry now (metadata, hits, quality); False only lists them.
        """
        # A stat-only listing (built-in entries and stubs left out): each entry is read below anyway.
        paths = sorted(info.path for info in memory.adapter.iter_entries(with_metadata=False))
        if not full:
            return cls(memory, paths, None)
        items: list[Item] = []
        with memory.adapter.lock.shared():  # one lock for the whole scan, not one per entry
            for path in paths:
                try:
                    entry = memory.adapter.read_entry(path, follow=False)
                except MemdirError:  # vanished, or unreadable: nothing defrag can work on
                    continue
                items.append(Item.from_entry(entry))
        return cls(memory, [item.path for item in items], items)

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def items(self) -> list[Item]:
        """Every entry (a full corpus only)."""
        if not self.full:
            raise RuntimeError("a light Corpus has no item list; load it with full=True")
        return [item for item in self._items.values() if item is not None]

    def item(self, position: int) -> Item | None:
        """The entry at ``position`` (read now if this corpus is light; None if it vanished)."""
        if position not in self._items:
            try:
                self._items[position] = Item.from_entry(self.memory.adapter.read_entry(self.paths[position], follow=False))
            except MemdirError:
                self._items[position] = None
        return self._items[position]

    def get(self, path: str) -> Item | None:
        position = self.index.get(path)
        return None if position is None else self.item(position)

    @cached_property
    def contents(self) -> list[str]:
        if self.full:
            return [item.content for item in self.items]
        return self.memory.adapter.read_contents(self.paths)

    @cached_property
    def words(self) -> WordSets:
        """Word sets of every entry's content, for Jaccard similarity."""
        return WordSets.from_texts(self.contents)

    @property
    def total_size(self) -> int:
        return sum(item.size for item in self.items)


__all__ = ["Corpus", "Item", "fingerprint"]
