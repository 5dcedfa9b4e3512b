"""The storage protocols: what `memdir.memory.Memory` and the hybrid searcher need of a store.

A store is a pair: an adapter (`StorageAdapter`, the *source of truth*: entries with
their content, metadata, embedding and hits) and an index (`EntryIndex`, what search and
listings read: keyword statistics, vectors, links, freshness). Two stores implement them:

* the directory (`memdir.storage.directory.filesystem.FilesystemAdapter` + the derived SQLite index
  `memdir.storage.directory.index.DerivedIndex`): files are the truth, the index is rebuilt from them;
* PostgreSQL (`memdir.storage.postgres`): one database holds both, and the "index" is the
  same rows' derived columns (tsvector, pgvector), written in the entry's own transaction.

The protocols are what `Memory` calls, no more. The seams where the two differ most:

* changes as ``with`` blocks: each adapter change (`StorageAdapter.write`, ``delete``, ...) is a
  context manager that stages the change on entering and commits it on leaving; the caller
  updates the index inside the block, and if the block raises, nothing changes. For the
  directory the block runs "before the renames", for PostgreSQL "before COMMIT". The store
  never calls back into its caller; `committed` makes a change with nothing to add.
* ``adapter.lock``: many readers or one writer. A file lock for the directory; a
  transaction plus advisory lock for PostgreSQL, so that several servers on several machines
  serialise their changes the same way several processes on one machine do.
* `ChangeSource.value`: a number that grows with every committed change (a file counter, a
  database sequence), which listings cached from the index are checked against.
* ``FileStats``: a stamp of an entry's stored version (file mtimes and sizes, or a
  row version), compared to tell whether an index row is as fresh as the entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar, runtime_checkable

import numpy as np
from pydantic import JsonValue

from memdir.core.entry import Entry, Metadata
from memdir.core.identity import Labels
from memdir.storage.records import EVERY, Edge, EntryInfo, FileStats, Listed, Narrowing, RankFacts, ReconcilePlan, Staged, Stamp

if TYPE_CHECKING:
    import os

    from memdir.storage.audit_log import AuditRecord
    from memdir.storage.records import ImportanceChange


@dataclass(frozen=True, slots=True)
class Redirect:
    """A stub's redirect: ``# merged → target`` or ``# moved → target``."""

    kind: str  # "merged" | "moved"
    target: str  # normalised logical path


@dataclass(frozen=True, slots=True)
class EntryWrite:
    """One entry of `StorageAdapter.write_many`: what `StorageAdapter.write` takes for a new version
    (``hits`` None: the stored count is kept; ``updated_at`` None: now)."""

    path: str
    content: str
    title: str
    metadata: Metadata
    embedding: np.ndarray | None = None
    embedding_model: str | None = None
    embedding_text_hash: str | None = None
    updated_at: datetime | None = None
    hits: int | None = None


@dataclass(frozen=True, slots=True)
class EntryRow:
    """What search results show about an entry, read from the index (no file access)."""

    path: str
    title: str
    type: str | None
    tags: tuple[str, ...]
    terms: str = ""  # distinct Porter-stemmed words, space-separated
    domain: str = ""


@dataclass(frozen=True, slots=True)
class IndexStats:
    """Counts for ``memdir status``: entries, those with a current vector, those needing one."""

    entries: int
    embedded: int
    stale: int


SearchKey: TypeAlias = Any
"""What a store calls an entry during a search (`SearchIndex`): its path, or a number of its own
(the directory store's keyword slot), so a search never looks a path up before it shows a result."""


class SemanticHits(Protocol):
    """The semantic side of one search: the best entries by cosine, and the cosine of any candidate."""

    @property
    def keys(self) -> list[SearchKey]:
        """The best entries' keys, best first."""

    @property
    def top(self) -> list[str]:
        """The best entries' paths, best first."""

    def cosines(self, keys: Sequence[SearchKey]) -> np.ndarray:
        """Cosine of each entry (0.0 for entries without a comparable vector or outside the filters)."""


@dataclass(frozen=True, slots=True)
class Candidates:
    """What ranking needs of the candidates a search found, in the order asked (unknown keys dropped).

    Attributes:
        keys: each candidate's key (`SearchKey`).
        contains: per query term, whether each candidate's words hold it.
    """

    keys: list[SearchKey]
    paths: Sequence[str]
    titles: Sequence[str]
    types: Sequence[str | None]
    tags: list[tuple[str, ...]]
    contains: dict[str, np.ndarray]


class IndexBehindFiles(Exception):
    """A reading asked to start caught up (`SearchIndex.reading`) found the index behind the files: the
    caller catches it up (`memdir.memory.keeper.IndexKeeper.refresh`) and opens a reading again."""


class SearchIndex(Protocol):
    """What `memdir.search.hybrid.HybridSearcher` reads: candidates by keyword and by vector."""

    def reading(self, *, one_query: bool = False, caught_up_for: Sequence[str] | None = None) -> AbstractContextManager[object]:
        """One consistent view of the keyword and vector data for the calls made inside it (what it
        gives is the store's own business). ``one_query``: the searches inside are of one query by
        different types (a store may make their vector searches one). ``caught_up_for``: the keyword
        terms the searches inside will ask about; the reading first checks that the index is not behind
        the files (`EntryIndex.behind_files`), raising `IndexBehindFiles` (before anything is read in it)
        if it is, and may read those terms' statistics in the same step."""

    def keyword_hits(
        self, terms: Sequence[str], limit: int, *, types: Sequence[str] | None,
        path_prefix: str | None, tags: Sequence[str] | None,
    ) -> dict[SearchKey, float]:
        """Key -> BM25 (positive) of the ``limit`` best entries holding any of ``terms``
        (Porter stems), filters applied first; weighted by field (title, tags, domain, content)."""

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Each term's BM25 idf in this store (negative for terms in most entries)."""

    def semantic_hits(
        self, vector: np.ndarray, model: str | None, limit: int, *, types: Sequence[str] | None,
        path_prefix: str | None, tags: Sequence[str] | None, ef_search: int | None = None,
    ) -> SemanticHits | None:
        """The ``limit`` nearest entries embedded by ``model``; None when nothing is comparable.

        ``ef_search``: the candidate list of an approximate index's scan, when not the store's own
        (an index that compares every vector has none).
        """

    def keys_of(self, paths: Sequence[str]) -> list[SearchKey]:
        """The key of each of ``paths`` (one `candidates` drops for a path not indexed)."""

    def candidates(self, keys: Sequence[SearchKey], terms: Sequence[str]) -> Candidates:
        """Path, title, type, tags and term presence of the entries of ``keys``."""

    def neighbours(self, keys: Sequence[SearchKey], window: int) -> tuple[np.ndarray, np.ndarray]:
        """The entries written just before and after each of ``keys`` (known entries) in its folder,
        up to ``window`` each side: ``(owner, neighbour)``, ``owner`` the position in ``keys``,
        ``neighbour`` a key `holding` understands (`memdir.search.context`)."""

    def holding(self, terms: Sequence[str], keys: np.ndarray) -> dict[str, np.ndarray]:
        """Per term, whether each neighbour ``keys`` (from `neighbours`) holds it."""

    def edges(self, paths: Sequence[str], kinds: Sequence[str] | None = None) -> list[Edge]:
        """Every link from or to one of ``paths`` (of ``kinds``)."""

    def rank_facts(self, paths: Sequence[str]) -> dict[str, RankFacts]:
        """Importance, reads, last access and hidden state of ``paths``."""

    def hidden(self) -> frozenset[str]:
        """The archived and superseded entries (left out of search unless asked for)."""


class ChangeSource(Protocol):
    """A number that grows with every committed change of the store."""

    def value(self) -> int: ...


class StoreLock(Protocol):
    """Many readers or one writer, across every process (and machine) using the store; re-entrant."""

    @property
    def mode(self) -> str | None:
        """"shared", "exclusive", or None when this thread holds nothing."""

    def exclusive(self, timeout: float | None = None) -> AbstractContextManager[None]: ...

    def shared(self) -> AbstractContextManager[None]: ...

    def close(self) -> None:
        """Let go of what the lock keeps open between holds (taking it again later opens it again)."""


class AuditTrail(Protocol):
    """Where a store keeps its audit records (`memdir.storage.audit_log.AuditRecord`): files of
    the root (`AuditLog`), or a table of the database (`memdir.storage.postgres.audit`)."""

    def append(self, record: AuditRecord) -> None:
        """Keep one record (the caller holds the store's write lock; raises if it cannot)."""

    def append_many(self, records: Iterable[AuditRecord]) -> None:
        """Keep the records of one change of many entries, all or none."""

    def records(
        self, *, path: str | None = None, agent: str | None = None, since: datetime | None = None
    ) -> Iterator[AuditRecord]:
        """The records, oldest first: of one entry, by one agent, at or after ``since``."""


class StoreListing(Protocol):
    """How `memdir.memory.Memory` lists a store's entries and plans its reconciles (for the directory
    `memdir.storage.directory.root_listing.RootListing`: the index's rows plus the folders that changed)."""

    stamps: dict[str, Stamp]  # the folder stamps this process trusts (none for a database)

    def warm(self) -> None:
        """Load what the first listing needs ahead of it (in a background thread)."""

    def entries(self, keep: Callable[[str], bool], under: str | None = None) -> list[EntryInfo] | None:
        """Listing rows of the entries ``keep`` accepts (under folder ``under``); None when the rows
        cannot tell and the caller must read the store."""

    def select(self, keep: Callable[[str], bool], under: str | None = None) -> Listed | None:
        """The entries ``keep`` accepts, made into `EntryInfo` only when asked for; None as for `entries`."""

    def as_files_say(self, infos: list[EntryInfo]) -> list[EntryInfo]:
        """``infos`` with those edited in place since their row was written described as stored."""

    def plan(self, text_recipe: str, *, in_place_edits: bool) -> ReconcilePlan:
        """What a reconcile of the index checks, and the stamps it leaves."""


@runtime_checkable
class PagedListing(Protocol):
    """A store listing that reads one page at a time (a database: `memdir.storage.postgres.pages`)
    instead of listing every entry; `paged_listing` tells one from a listing that lists everything.

    Its listings are chunks read as the caller pulls them: the caller keeps what it wants of each
    (a glob, an agent's view) and stops pulling once its page is full."""

    def newest(self, under: str | None, limit: int, narrow: Narrowing = EVERY) -> Iterator[list[EntryInfo]]:
        """The entries under ``under`` (and ``narrow``), newest first; the first chunk is sized for ``limit``."""

    def in_path_order(self, under: str | None, after: str | None, limit: int, narrow: Narrowing = EVERY) -> Iterator[list[EntryInfo]]:
        """The entries after the path ``after``, in path order, chunked as `newest`."""

    def at_offset(self, under: str | None, offset: int, limit: int) -> list[EntryInfo]:
        """``limit`` entries from the ``offset``-th in path order."""

    def count(self, under: str | None) -> int:
        """How many entries are under ``under``."""

    def top_folders(self) -> list[str]:
        """The top-level folders that hold entries."""


def paged_listing(listing: StoreListing) -> PagedListing | None:
    """``listing`` as one that reads a page at a time, or None when it lists everything."""
    return listing if isinstance(listing, PagedListing) else None


class ReconcileOutcome(Protocol):
    """What an index's reconcile reports back to `memdir.memory.Memory`."""

    @property
    def failed(self) -> list[str]:
        """Entries that could not be read."""


JsonRecord = dict[str, JsonValue]
"""One record of a `RecordLog`: a JSON object, whatever the reader makes of its fields."""


class RecordLog(Protocol):
    """Where a store keeps records that are not entries, by log name (the evolution jobs' runs, the
    importance history: `memdir.storage.evolution_records`): JSON objects, appended, read oldest first."""

    def append(self, name: str, records: Iterable[JsonRecord]) -> None:
        """Keep ``records`` at the end of the log ``name``, all or none."""

    def read(self, name: str) -> Iterator[JsonRecord]:
        """The records of the log ``name``, oldest first."""


class ThreadLogs(Protocol):
    """Where a store keeps its working-memory threads' event logs: per thread, an append-only sequence of
    JSON lines (`memdir.threads.log` gives them meaning). Files of the root (`memdir.storage.directory.thread_files`),
    or rows of the database (`memdir.storage.postgres.threads`). A *cursor* marks how far a reader got:
    lines are read after it and appended after it, in one order every reader sees."""

    @property
    def lock(self) -> StoreLock:
        """Held (exclusive) around each append, so that appends are ordered across processes and servers."""

    def ids(self) -> list[str]:
        """Every thread that has a log."""

    def exists(self, thread: str) -> bool:
        """Whether ``thread`` has a log."""

    def read(self, thread: str, cursor: int) -> list[tuple[int, bytes]] | None:
        """The complete lines after ``cursor`` (each ending in a newline), each with the cursor after it; None when
        the log no longer reaches ``cursor`` (read it again from 0)."""

    def append(self, thread: str, line: bytes, cursor: int) -> int:
        """Append one line after ``cursor`` (the caller holds the lock); the cursor after it."""

    def create(self, thread: str, lines: Iterable[bytes]) -> int:
        """A new thread's log holding ``lines``, all or none (the caller holds the lock); the cursor after them."""


class StorageAdapter(Protocol):
    """A store of memory entries keyed by normalised logical path (``concept/x.md``): the truth."""

    root: Path
    read_only: str | None  # why writes are refused, None when writable
    counts_reads_alone: bool
    """True when recording a read (its count and its time, `count_hit` or a counted `read_entry`) is one
    atomic change of the store's own that needs no store lock: reads then never queue for the lock
    the writers take, and the index has nothing to record."""

    @property
    def lock(self) -> StoreLock: ...

    @property
    def audit(self) -> AuditTrail:
        """Its record of every change (`memdir.memory.Memory` writes it)."""

    @property
    def records(self) -> RecordLog:
        """Its records that are not entries (the evolution jobs')."""

    @property
    def threads(self) -> ThreadLogs:
        """Its working-memory threads' event logs."""

    def write(
        self, path: str, content: str, *, title: str, metadata: Metadata | Mapping[str, object] | None = None,
        embedding: np.ndarray | None = None, hits: int | None = None, updated_at: datetime | None = None,
        embedding_model: str | None = None, embedding_text_hash: str | None = None,
    ) -> AbstractContextManager[Staged]:
        """Create or replace an entry atomically; ``hits=None`` keeps the existing count. The block
        gets the entry as staged (see the module docstring)."""

    def write_many(self, writes: Sequence[EntryWrite]) -> AbstractContextManager[list[Staged]]:
        """Create or replace several entries (distinct paths) in ONE transaction, all or none:
        one journal and one round of flushes for the batch (bulk loads). The block gets them as staged."""

    def set_embeddings(
        self, vectors: Mapping[str, np.ndarray], *, expected: Mapping[str, Entry] | None = None,
        model_id: str | None = None, text_hashes: Mapping[str, str] | None = None,
    ) -> AbstractContextManager[list[Staged]]:
        """New vectors for unchanged entries, in one transaction (entries changed since ``expected`` skipped)."""

    def set_metadata(self, paths: Sequence[str], decide: Callable[[Entry], Metadata | None]) -> AbstractContextManager[list[Staged]]:
        """New metadata (fields not embedded) for existing entries, in one transaction: ``decide`` gets
        each entry as it is read under the lock and gives its new metadata (None: left as it is); it
        is called for every entry before anything is staged, so it may raise to refuse the whole
        change. Missing entries and stubs are skipped."""

    def read_entry(self, path: str, *, count_hit: bool = False, follow: bool = True) -> Entry:
        """Read an entry (following stubs when ``follow``); ``count_hit`` for agent reads only."""

    def count_hit(self, entry: Entry) -> Entry:
        """Count an agent's read of ``entry`` served from a cache (the entry with its new count)."""

    def will_read(self, path: str) -> None:
        """The change this thread starts next reads the entry at ``path`` first (`read_entry`, unfollowed):
        a store whose lock is a round trip away reads it with the lock."""

    def exists(self, path: str) -> bool:
        """True if a real entry, stub or virtual entry lives at ``path``."""

    def delete(self, path: str) -> AbstractContextManager[None]:
        """Remove the entry (`EntryNotFoundError` if there is none)."""

    def write_stub(self, path: str, redirect: Redirect, *, owner: str | None = None) -> AbstractContextManager[None]:
        """Replace the entry at ``path`` with a redirect stub, owned by ``owner`` (None: nobody), so
        that only its owner (or an admin) may overwrite, delete or clean it up."""

    def read_redirect(self, path: str) -> Redirect | None:
        """The redirect if ``path`` is a stub, else None."""

    def read_contents(self, paths: Sequence[str]) -> list[str]:
        """The content of each entry ("" for a missing one), cheaply, for whole-store scans."""

    def read_entries(self, paths: Sequence[str]) -> list[tuple[Entry, FileStats]]:
        """The entries stored at ``paths``, each with the stats of the version read (no stub followed;
        stubs, built-ins and paths that cannot be read left out): what a prefetch caches."""

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        """The title each entry shows, by the path as given: a stub's as reading it (unfollowed) shows,
        a built-in's too; paths that name no entry, or cannot, left out."""

    def iter_entries(
        self, *, include_stubs: bool = False, include_virtual: bool = False, with_metadata: bool = True,
        under: str | None = None, folders: dict[str, os.stat_result | None] | None = None,
    ) -> Iterator[EntryInfo]:
        """Every entry in path order, cheaply (no content, no hit counting)."""

    def describe(self, paths: Sequence[str]) -> list[EntryInfo]:
        """Listing rows with metadata of the given real entries (gone ones left out)."""

    def listing(
        self, under: str | None = None, folders: dict[str, os.stat_result | None] | None = None
    ) -> Iterator[tuple[str, FileStats]]:
        """(path, stats) of every real entry (or of folder ``under``), stubs and built-ins left out;
        ``folders`` receives what `memdir.storage.directory.folder_stamps` checks later (folder mtimes)."""

    def stats(self, path: str) -> FileStats:
        """The stamp of the stored version of ``path`` (all zero when absent)."""

    def stats_each(self, paths: Sequence[str]) -> list[FileStats]:
        """`stats` of each of ``paths``, in their order, asked together (on a database, one statement)."""

    def total_size(self) -> int:
        """Bytes of content held (virtual entries excluded)."""

    def root_listing(self, index: EntryIndex) -> StoreListing:
        """How `Memory` lists entries and plans reconciles over ``index`` (this store's own)."""


class EntryIndex(SearchIndex, Protocol):
    """What search and listings read, kept in step with the adapter by `Memory` (see the module docstring)."""

    in_memory: bool  # True when this process keeps the index to itself (a root it cannot write)

    @property
    def changes(self) -> ChangeSource: ...

    @property
    def seq(self) -> int:
        """The last index change this process has seen."""

    def close(self) -> None: ...

    def keep_in_memory(self) -> None:
        """Go on without writing the index where others see it (a full disk)."""

    def behind_files(self) -> bool:
        """True if the truth changed in a way no index change has recorded (a writer died mid-change)."""

    def ahead_of_files(self) -> AbstractContextManager[None]:
        """Around index changes made inside an adapter change's ``with`` block."""

    def upsert(
        self, entry: Entry, stats: FileStats, text_hash: str | None, model_id: str | None = None, *,
        vector_text_hash: str | None = None,
    ) -> None:
        """The row of ``entry`` as just written (its ``embedding`` made by ``model_id`` from the
        text hashed ``vector_text_hash``, default ``text_hash``)."""

    def upsert_many(self, items: Iterable[tuple[Entry, FileStats, str | None, str | None]]) -> int:
        """`upsert` of many (entry, stats, text_hash, model_id) in one transaction; how many."""

    def restamp_metadata(self, items: Sequence[tuple[Entry, FileStats, str | None, str | None, str | None]]) -> None:
        """Rows of entries whose metadata alone changed, as (entry, stats, text_hash, model_id,
        vector_text_hash), in one transaction: their words and vectors stay."""

    def set_vectors(self, items: Iterable[tuple[Entry, FileStats, str | None, str | None]]) -> int:
        """New vectors of (entry, stats, text_hash, model_id) whose text is unchanged."""

    def record_hits(
        self, path: str, hits: int, before: FileStats, after: FileStats, at: datetime | None = None
    ) -> None:
        """A counted read moved ``path`` from ``before`` to ``after``: a fresh row takes the count;
        the row records ``at`` (now) as the entry's last access."""

    def remove(self, path: str) -> bool:
        """Drop the row of ``path``; False if it had none."""

    def reconcile(
        self, files: Iterable[tuple[str, FileStats]], load: Callable[[str], Entry],
        text_hash_of: Callable[[Entry], str], *, text_recipe: str | None = None,
        covered: Callable[[str], bool] | None = None,
        known: Mapping[str, tuple[int, tuple[int, ...]]] | None = None,
    ) -> ReconcileOutcome:
        """Bring the rows in line with the truth (``files``, ``covered`` and ``known`` from the
        `root_listing`'s plan); the report's ``failed`` lists entries that could not be read."""

    def record_folder_stamps(self, stamps: Mapping[str, Stamp] | None) -> None:
        """Keep the folder stamps a reconcile leaves (`memdir.storage.directory.folder_stamps`)."""

    def describe(self, stats: Mapping[str, FileStats]) -> dict[str, EntryInfo]:
        """Listing rows of the entries whose row is as fresh as ``stats`` says."""

    def rows(self, paths: Sequence[str]) -> dict[str, EntryRow]:
        """Title, type, tags, words and domain of the given entries."""

    def tags(self, paths: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The tags of the given entries, without their words (what a listing shows)."""

    def labels(self, paths: Sequence[str] | None = None) -> dict[str, Labels]:
        """Access labels (kind, owner, visibility; `memdir.core.identity`) of the given entries (None: all);
        entries without any left out."""

    def recently_used(self, limit: int) -> list[str]:
        """The ``limit`` entries read last (never read: by when they were written), newest first; no hidden ones."""

    def most_important(self, at_least: float, limit: int) -> list[str]:
        """The ``limit`` most important entries of at least importance ``at_least``; no hidden ones."""

    def recalibrate(self, changes: Sequence[ImportanceChange]) -> None:
        """Keep recalibrated importance: it
        counts in `rank_facts` while the entry states the importance it stated then."""

    def linking_to(self, target: str) -> list[str]:
        """The entries whose metadata links to ``target``, in path order."""

    def needs_embedding(self, model_id: str | None) -> list[str]:
        """Entries without a current vector of ``model_id`` (any model when None)."""

    def stats(self, model_id: str | None = None) -> IndexStats: ...

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """How many entries hold each term (a Porter stem)."""

    def vector_snapshot(self, model_id: str | None) -> tuple[list[str], np.ndarray]:
        """(paths, matrix) of the entries embedded by ``model_id``, one L2-normalised row each."""


Made = TypeVar("Made")


def committed(change: AbstractContextManager[Made]) -> Made:
    """Make an adapter change with nothing to add inside it: what it staged, now committed."""
    with change as staged:
        return staged
