"""What one client session has read: the read-before-edit rule, and stale-edit detection.

SwarmMemory kept a global set of paths per agent and checked membership before an
edit. memdir keeps one `ReadTracker` per client session and fixes two of its gaps:

* keys are *normalised* paths (`memdir.core.paths.normalize_path`), so reading
  ``fact/x`` and editing ``fact/x.md`` is the same entry;
* each read records the content's sha256 and ``updated_at``, so an edit made after
  someone else (another session, another process, a person with an editor) changed
  the entry is refused with `StaleEditError` instead of silently applying
  ``old_string`` to content the model never saw.

Only the content decides staleness: a metadata-only change elsewhere (tags, title) does
not invalidate what the session saw, and edits keep the entry's current metadata anyway.

It also remembers which entries the session was *offered* through a link (MemoryGraph's
neighbours, MemoryRead's related reminder) and from where, so that reading one of them
counts as following that link (`offer`, `take_offers`; link traversal).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from datetime import datetime

from memdir.core.entry import Entry
from memdir.core.errors import StaleEditError
from memdir.core.paths import normalize_path


def content_digest(content: str) -> str:
    """sha256 hex digest of an entry's content (UTF-8)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ReadRecord:
    """What the session saw when it last read an entry."""

    path: str
    sha256: str
    updated_at: datetime | None


class ReadTracker:
    """Thread-safe record of the entries one session has read (keyed by normalised path)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads: dict[str, ReadRecord] = {}
        self._offers: dict[str, set[str]] = {}  # entry shown through a link -> the entries it was linked from

    def register(self, path: str, content: str, updated_at: datetime | None = None) -> ReadRecord:
        """Record that the session has seen ``content`` at ``path`` (replacing an earlier record)."""
        logical = normalize_path(path)
        record = ReadRecord(logical, content_digest(content), updated_at)
        with self._lock:
            self._reads[logical] = record
        return record

    def register_entry(self, entry: Entry, *, as_path: str | None = None) -> ReadRecord:
        """Record a read of ``entry`` (under ``as_path`` when it was reached through a stub)."""
        return self.register(as_path or entry.path, entry.content, entry.updated_at)

    def get(self, path: str) -> ReadRecord | None:
        """The record for ``path``, or None if the session has not read it."""
        logical = normalize_path(path)
        with self._lock:
            return self._reads.get(logical)

    def has_read(self, path: str) -> bool:
        """True if the session has read ``path`` (any spelling: ``x`` and ``x.md`` are one entry)."""
        return self.get(path) is not None

    def is_current(self, path: str, content: str) -> bool:
        """True if the session read ``path`` and ``content`` is still what it saw."""
        record = self.get(path)
        return record is not None and record.sha256 == content_digest(content)

    def ensure_current(self, path: str, entry: Entry) -> None:
        """Refuse (`StaleEditError`) if ``entry``'s content is not what the session read at ``path``.

        Call only after `has_read` succeeded: a path never read is the caller's own
        "read it first" error, not a stale one.
        """
        if not self.is_current(path, entry.content):
            raise StaleEditError(entry.path)

    def offer(self, path: str, via: str) -> None:
        """The session was shown ``path`` as linked from ``via`` (both normalised paths)."""
        with self._lock:
            self._offers.setdefault(path, set()).add(via)

    def take_offers(self, path: str) -> set[str]:
        """The entries ``path`` was offered from (and forget them: one read, one traversal)."""
        with self._lock:
            return self._offers.pop(normalize_path(path), set())

    def forget(self, path: str) -> None:
        """Drop the record for ``path`` (after a delete)."""
        logical = normalize_path(path)
        with self._lock:
            self._reads.pop(logical, None)

    def clear(self) -> None:
        """Forget every read (a new conversation on the same session)."""
        with self._lock:
            self._reads.clear()
            self._offers.clear()

    def paths(self) -> list[str]:
        """Every path read so far, sorted."""
        with self._lock:
            return sorted(self._reads)

    def __len__(self) -> int:
        with self._lock:
            return len(self._reads)


__all__ = ["ReadRecord", "ReadTracker", "content_digest"]
