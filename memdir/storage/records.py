"""Records both stores share: link rows, what ranking knows of an entry besides its text, an entry's
BM25 terms, a logical path's folder, and what a listing found."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple, Protocol

from memdir.core.keywords import STOP_WORDS, porter_stem, words

if TYPE_CHECKING:
    import numpy as np

    from memdir.core.entry import Entry

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
class FileStats:
    """The stamp of an entry's stored version: modification time and size of its ``.md`` and
    ``.yml`` (0 when a file is absent); a database store puts its row version in ``yml_mtime_ns``."""

    md_mtime_ns: int = 0
    md_size: int = 0
    yml_mtime_ns: int = 0
    yml_size: int = 0


class Staged(NamedTuple):
    """An entry's new version as a store has staged it (not yet committed), with the stamp
    (`FileStats`) its stored version will have once the change commits."""

    entry: Entry
    stats: FileStats


class Stamp(NamedTuple):
    """A folder's mtime (ns; `memdir.storage.directory.folder_stamps.UNTRUSTED` if it had not settled when
    listed) and inode."""

    mtime_ns: int
    ino: int


class RowColumns(Protocol):
    """The columns of listing rows a `Listed` reads: each row's path and update moment."""

    @property
    def paths(self) -> list[str]: ...

    @property
    def moments(self) -> list[int]: ...


class ListingRowSource(Protocol):
    """Listing rows a `Listed` points into (`memdir.storage.directory.listing_rows.ListingRows`)."""

    @property
    def table(self) -> RowColumns: ...

    def info(self, slot: int) -> EntryInfo: ...

    def infos(self, slots: list[int]) -> list[EntryInfo]: ...


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def moment_of(when: datetime) -> int:
    """An (aware) instant in microseconds since the epoch: exact, unlike a float timestamp."""
    return (when - EPOCH) // _MICROSECOND


def folder_of(path: str) -> str:
    """The folder part of a logical path: ``concept/ruby`` for ``concept/ruby/classes.md``."""
    cut = path.rfind("/")
    return path[:cut] if cut >= 0 else ""


@dataclass(frozen=True, slots=True)
class Edge:
    """One row of the link table: ``source`` links to ``target`` (see `memdir.core.links.Link`)."""

    source: str
    target: str
    kind: str
    strength: float
    origin: str
    created_at: str | None
    traversed_at: str | None


@dataclass(frozen=True, slots=True)
class RankFacts:
    """What ranking knows of an entry besides its text (`memdir.search.ranking`).

    Attributes:
        importance: the entry's importance: the importance job's recalibration while the entry
            still states what it stated then, else the metadata's; None when neither gives one.
        hits: agent reads (the ``.yml``'s count).
        accessed_at: the last agent read this index saw, else ``updated_at`` (ISO text).
        hidden: archived or superseded.
        kind: the metadata's kind (decision, bug, ...; a role's relevance), None when it gives none.
    """

    path: str
    type: str | None
    importance: float | None
    hits: int
    accessed_at: str | None
    hidden: bool
    kind: str | None = None
    stated: float | None = None
    """The importance the metadata states (None: none)."""


@dataclass(frozen=True, slots=True)
class EntryTerms:
    """An entry's words as BM25 counts them (see `entry_terms`)."""

    terms: list[str]  # distinct Porter-stemmed words, sorted
    counts: np.ndarray  # (len(terms), 4) uint16: occurrences in title, tags, domain, content
    length: int  # words in all four columns, stop words included (as FTS5 counted them)


def entry_terms(title: str, tags: Sequence[str], domain: str, content: str) -> EntryTerms:
    """Porter-stemmed content words (`memdir.core.keywords.porter_stem`) of each column, counted.

    Content words as `memdir.core.keywords.tokenize` keeps them: at least 2 letters, no stop word.
    """
    import numpy as np  # (here: the shared records load without numpy)

    counts: dict[str, list[int]] = {}
    length = 0
    for column, text in enumerate((title, " ".join(tags), domain, content)):
        found = words(text)
        length += len(found)
        for word in found:
            if len(word) >= 2 and word not in STOP_WORDS:
                term = porter_stem(word)
                slot = counts.get(term)
                if slot is None:
                    slot = counts[term] = [0, 0, 0, 0]
                slot[column] += 1
    terms = sorted(counts)
    array = (
        np.array([counts[t] for t in terms], dtype=np.uint16).reshape(len(terms), 4)
        if terms
        else np.zeros((0, 4), np.uint16)
    )
    return EntryTerms(terms, array, length)


@dataclass(frozen=True, slots=True)
class ReconcilePlan:
    """What a reconcile gives `memdir.storage.directory.index.DerivedIndex.reconcile`, and the stamps after it.

    Attributes:
        files: (path, stats) of the entries to check: all of them after a walk, else those in
            the listed folders and those edited in place.
        covered: None after a walk, else `FolderChanges.covers`.
        known: the index's freshness rows, read under the caller's lock (None: unreadable).
        stamps: the folder stamps once the index holds ``files``, given the paths that could
            not be indexed (their folders stay untrusted); None when there can be none.
    """

    files: list[tuple[str, FileStats]]
    covered: Callable[[str], bool] | None
    known: dict[str, tuple[int, tuple[int, ...]]] | None
    stamps: Callable[[list[str]], dict[str, Stamp] | None]


@dataclass(frozen=True, slots=True)
class Listed:
    """The entries a listing found: listing rows, made into `EntryInfo` only when asked for (a
    glob of 100K entries shows 500), and entries read from their files.

    Attributes:
        rows: the listing rows ``slots`` point into (None: every entry is in ``read``).
        slots: the found entries' places in ``rows`` (`memdir.storage.directory.listing_rows.ListingRows.slots`).
        read: the found entries described from their files (and built-in entries).
    """

    rows: ListingRowSource | None
    slots: list[int]
    read: list[EntryInfo]

    def __len__(self) -> int:
        return len(self.slots) + len(self.read)

    def paths(self) -> list[str]:
        paths = self.rows.table.paths if self.rows is not None else []
        return [*(paths[slot] for slot in self.slots), *(info.path for info in self.read)]

    def infos(self) -> list[EntryInfo]:
        """Every entry found, rows first (in no particular order)."""
        if self.rows is None:
            return list(self.read)
        return [*self.rows.infos(self.slots), *self.read]

    def only(self, keep: Callable[[str], bool]) -> Listed:
        """The entries whose path ``keep`` accepts."""
        paths = self.rows.table.paths if self.rows is not None else []
        return Listed(
            self.rows,
            [slot for slot in self.slots if keep(paths[slot])],
            [info for info in self.read if keep(info.path)],
        )

    def with_read(self, infos: Iterable[EntryInfo]) -> Listed:
        """These entries and ``infos`` (built-ins, say)."""
        return Listed(self.rows, self.slots, [*self.read, *infos])

    def newest(self, limit: int | None = None) -> list[EntryInfo]:
        """The ``limit`` newest entries (all for None), newest first — entries updated at the same
        moment in path order: what sorting every entry by path and then, stably, by updated_at
        (newest first) gives, without making each row an `EntryInfo`."""
        import numpy as np  # (here: the shared records load without numpy)

        keyed: list[tuple[int, str, int | EntryInfo]] = [
            (moment_of(info.updated_at), info.path, info) for info in self.read
        ]
        if self.rows is not None:
            table = self.rows.table
            moments, paths = table.moments, table.paths
            slots = self.slots
            if limit is not None and len(slots) > limit:
                # Every row at least as new as the limit-th newest (one as new as it and later in
                # path order may still lose to it below).
                candidates = np.asarray(slots, dtype=np.int64)
                keys = np.asarray(moments, dtype=np.int64)[candidates]
                floor = np.partition(keys, len(keys) - limit)[len(keys) - limit]
                slots = candidates[keys >= floor].tolist()
            keyed += [(moments[slot], paths[slot], slot) for slot in slots]
        keyed.sort(key=lambda item: item[1])
        keyed.sort(key=lambda item: item[0], reverse=True)
        shown = keyed if limit is None else keyed[:limit]
        if self.rows is None:  # (every entry was read: no slots)
            return [found for _, _, found in shown if isinstance(found, EntryInfo)]
        info = self.rows.info
        return [found if isinstance(found, EntryInfo) else info(found) for _, _, found in shown]


@dataclass(frozen=True, slots=True)
class Narrowing:
    """What a page of a listing is narrowed to beyond its folder, for a store to ask its indexes (a database's
    type column and tag index) rather than test row by row: an entry type, a tag (matched case-folded;
    the caller checks the exact tag)."""

    type: str | None = None
    tag: str | None = None


EVERY = Narrowing()
"""No narrowing: the folder's every entry."""


@dataclass(frozen=True, slots=True)
class Page:
    """Entries of one page of a listing, and whether more match after them."""

    entries: list[EntryInfo]
    more: bool


@dataclass(frozen=True, slots=True)
class ImportanceChange:
    """One recalibrated importance, as the importance history (`memdir.storage.evolution_records`) holds it.

    Attributes:
        stated: the importance the entry's metadata stated when this was made (None: none);
            the recalibration holds only while the entry still states it.
    """

    path: str
    at: str
    old: float
    new: float
    reason: str
    stated: float | None = None
