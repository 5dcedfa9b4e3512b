"""The filesystem adapter: entries as SwarmMemory's ``.md`` / ``.yml`` / ``.emb`` triplets.

``concept/ruby/classes.md`` lives in three files under the root:

* ``concept/ruby/classes.md`` — the content, byte for byte (no newline translation);
* ``concept/ruby/classes.yml`` — ``title``, ``file_path``, ``updated_at`` (a YAML timestamp),
  ``size`` (content bytes), ``hits``, ``metadata`` (empty values left out),
  ``embedding_checksum`` and the vector's ``embedding_model`` and ``embedding_text_hash``;
* ``concept/ruby/classes.emb`` — 384 raw little-endian float32 values, no header;
  absent when the entry has no embedding.

The format is SwarmMemory's, so a root written by SwarmMemory (Ruby) reads as is
(Ruby's ``:symbol`` keys and ``Time`` dumps included) and users can read, edit, grep
and version the directory with ordinary tools: an ``.md`` without a ``.yml`` is a
valid entry, and a damaged ``.yml`` or ``.emb`` degrades the entry (default title,
not embedded) instead of making it unreadable. The encodings of the ``.yml`` and
``.emb`` files are in `memdir.storage.sidecar`; the listing walk is in `memdir.storage.directory.scan`.

Concurrency: every change goes through `memdir.storage.directory.atomic.file_transaction` under
the root's exclusive lock, and a killed writer is repaired (`memdir.storage.directory.atomic.recover`)
by the next process that takes the lock. Reads take no lock while they can: each file is
replaced by rename, so it reads whole, and a read of several files is kept only if the
root's change counter did not move and no committed transaction was renaming files
meanwhile (`memdir.storage.directory.changes`); otherwise it is repeated, in the end under the shared lock. So
no reader — in this process or another — sees half of a change, and readers never queue
behind writers. (A SwarmMemory process writing the same root raises no counter; its
changes are whole only to readers that hold the shared lock.)
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from memdir.core.entry import Entry, Metadata, entry_type, utcnow
from memdir.core.errors import (
    DiskFullError,
    EntryNotFoundError,
    InvalidPathError,
    MemdirError,
    ReadOnlyRootError,
    UnsafeFileError,
)
from memdir.core.files import disk_errors, open_regular, read_regular, stat_regular
from memdir.core.hook_socket import SOCKET_DIR
from memdir.core.paths import RESERVED_FOLDERS, disk_stem, is_within, normalize_path, resolve_in_root, unsafe_file
from memdir.storage import stubs
from memdir.storage.audit_log import AuditLog
from memdir.storage.base import EntryWrite, Redirect
from memdir.storage.directory.atomic import PRIVATE_DIR, commit_files, file_transaction, has_pending, recover, remove_unjournaled, renames_lost
from memdir.storage.directory.changes import ChangeCounter
from memdir.storage.directory.folder_stamps import ListedFolder, settled_now, stamp_of
from memdir.storage.directory.index_db import file_stats, stat_or_zero
from memdir.storage.directory.locking import LOCK_FILE_NAME, RootLock
from memdir.storage.directory.scan import scan_entries, scan_folder, sniff_stub
from memdir.storage.directory.stub_reads import StubReads
from memdir.storage.directory.thread_files import ThreadFiles
from memdir.storage.directory.totals import SharedTotal
from memdir.storage.entry_input import (
    check_sizes,
    checked_writes,
    encode_content,
    folder_prefix,
    refuse_virtual,
    valid_metadata,
    valid_redirect,
)
from memdir.storage.evolution_records import RecordFiles
from memdir.storage.records import EntryInfo, FileStats, Staged
from memdir.storage.sidecar import (
    EMBEDDING_DTYPE,
    EMBEDDING_SUFFIX,
    SIDECAR_SUFFIX,
    as_datetime,
    as_int,
    decode_embedding,
    dump_sidecar,
    embedding_checksum,
    embedding_origin,
    encode_embedding,
    fallback_title,
    metadata_from_yaml,
    parse_sidecar,
    set_embedding_fields,
)
from memdir.storage.virtual import is_virtual, load_virtual, virtual_info, virtual_paths

if TYPE_CHECKING:
    from memdir.storage.base import EntryIndex
    from memdir.storage.directory.root_listing import RootListing

log = logging.getLogger(__name__)

_STUB_READ_LIMIT = 8192  # the first line of any valid stub fits (paths are <= 1024 characters)
_TITLE_READ_LIMIT = 1024
# Lock-free attempts of a read that changes kept overlapping, before it waits for the shared
# lock (behind every queued writer), and the pause before the next one (times the attempt).
_LOCK_FREE_TRIES = 4
_RETRY_PAUSE = 0.001

T = TypeVar("T")


def _staged_stats(staged: Mapping[Path, Path], md: Path, yml: Path) -> FileStats:
    """The stats ``md`` and ``yml`` will have once the staged files are renamed into place."""
    md_st, yml_st = os.stat(staged.get(md, md)), os.stat(staged.get(yml, yml))
    return FileStats(md_st.st_mtime_ns, md_st.st_size, yml_st.st_mtime_ns, yml_st.st_size)


@dataclass(frozen=True, slots=True)
class _StagedEntry:
    """One entry's new version as files to commit, and the root's content total after it."""

    entry: Entry
    writes: dict[Path, bytes]
    removals: list[Path]
    md: Path
    yml: Path
    total: int

    def stats(self, staged: Mapping[Path, Path]) -> FileStats:
        return _staged_stats(staged, self.md, self.yml)


def _mtime(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC)


class FilesystemAdapter:
    """Memory entries stored as files under ``root`` (implements `StorageAdapter`).

    Args:
        root: the memory root; created if missing.
        max_entry_size: content bytes allowed per entry (`EntryTooLargeError`).
        max_total_size: content bytes allowed in the root (`StorageFullError`).
        lock_timeout: seconds to wait for the root's lock (`LockTimeoutError`).
        max_redirect_hops: stubs followed at most when reading.
        min_free_disk: bytes a write must leave free on the root's disk (`DiskFullError`
            otherwise), so that a full disk can still be cleaned up: deletes, the index's
            checkpoints and a journal need a little room themselves.
        read_only: None for a writable root, else why it is read-only ("mounted
            read-only", ...): then nothing under the root is changed (it must exist) —
            reads work, writes raise `ReadOnlyRootError` with that reason, hits are not
            counted, and nothing is repaired or created, not even ``.lock``.

    ``lock`` is the root's `RootLock`. Callers that must update derived data together
    with an entry hold it around both (it is re-entrant)::

        with adapter.lock.exclusive(), adapter.write(...) as (entry, stats):
            index.update(entry, stats)

    The total size is scanned once per process (lazily) and then kept, for every process
    writing to the root, in one shared figure (`memdir.storage.directory.totals`) that each write
    and delete updates in its own transaction: the limit holds across processes without a
    full scan per write. Files edited by hand show up after `rescan_total_size`.
    """

    counts_reads_alone = False  # a read's count rewrites the entry's sidecar: under the root's lock

    def __init__(
        self,
        root: Path | str,
        *,
        max_entry_size: int = 3_000_000,
        max_total_size: int = 100_000_000_000,
        lock_timeout: float = 30.0,
        max_redirect_hops: int = 5,
        min_free_disk: int = 0,
        read_only: str | None = None,
    ) -> None:
        root_path = Path(root).expanduser()
        if read_only is None:
            root_path.mkdir(parents=True, exist_ok=True)
        self.root = Path(os.path.realpath(root_path))
        self.max_entry_size = max_entry_size
        self.max_total_size = max_total_size
        self.max_redirect_hops = max_redirect_hops
        self.min_free_disk = min_free_disk
        self.read_only = read_only
        self._check_private_files()
        self.lock = RootLock(
            self.root / LOCK_FILE_NAME,
            timeout=lock_timeout,
            needs_repair=None if read_only else lambda: has_pending(self.root),
            repair=self._repair,
            create=read_only is None,
        )
        self._total = SharedTotal(self._scan_total)
        self._stub_reads = StubReads(self.root)
        self.changes = ChangeCounter(self.root)
        self.audit = AuditLog(self.root)
        self.records = RecordFiles(self.root)
        self.threads = ThreadFiles(self.root, self.lock)
        self._attempt = threading.local()  # warnings held back during a lock-free read
        if read_only is None and (has_pending(self.root) or renames_lost(self.root)):
            with self.lock.exclusive():  # finishes what a killed writer (or a power cut) left
                self._repair()

    # ----------------------------------------------------------------- locking

    def _repair(self) -> None:
        """Finish or undo a killed writer's transaction (the lock runs this, exclusively held)."""
        if recover(self.root):
            self._total.invalidate()  # files changed behind the recorded total
            # ... and behind every index that has not seen them: by two, past the value an index
            # updated just before the interrupted commit point recorded (`DerivedIndex.ahead_of_files`).
            self.changes.bump(2)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        if self.read_only is not None:
            raise ReadOnlyRootError(self.root, self.read_only)
        with self.lock.exclusive():
            if has_pending(self.root):  # a transaction of this very lock holder was interrupted
                self._repair()
            yield

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """The shared lock over a consistent root (the lock repairs on outermost acquisition)."""
        with self.lock.shared():
            if self.lock.mode == "exclusive" and has_pending(self.root):
                self._repair()
            yield

    def _consistent(self, read: Callable[[], T]) -> T:
        """``read()`` as of one state of the root: lock-free when no change overlapped it.

        The change counter is read before and after, and the journal folder checked in
        between (see `memdir.storage.directory.changes` for why that catches every overlapping
        transaction). When a committed journal (a writer renaming, or a killed one to repair)
        or a change overlaps every attempt, the read waits for the shared lock instead. An
        error raised while a change overlapped may come from that change, so it is retried.
        """
        if self.lock.mode is None:  # holding the lock already, this thread excludes writers
            for attempt in range(_LOCK_FREE_TRIES):
                if attempt:
                    time.sleep(_RETRY_PAUSE * attempt)  # a writer's renames take a few ms
                before = self.changes.value()
                if has_pending(self.root, committed_only=True):
                    continue
                held: list[tuple[str, tuple[Any, ...]]] = []
                self._attempt.warnings = held
                error: Exception | None = None
                try:
                    result = read()
                except Exception as exc:  # noqa: BLE001 — judged once we know whether a change overlapped
                    error = exc
                finally:
                    self._attempt.warnings = None
                if self.changes.value() == before:
                    for message, args in held:  # about the files as they are, not half a change
                        log.warning(message, *args)
                    if error is not None:
                        raise error
                    return result
        with self._reading():
            return read()

    def _warn(self, message: str, *args: Any) -> None:
        """Log a warning about a damaged file, or hold it until the lock-free read is known to be whole."""
        held = getattr(self._attempt, "warnings", None)
        if held is None:
            log.warning(message, *args)
        else:
            held.append((message, args))

    def _counted(self) -> tuple[int, int]:
        """The change count and the content total recorded with it (`ChangeCounter.prepare`), under the exclusive lock."""
        with disk_errors(self.root):
            return self.changes.prepare()

    @contextmanager
    def _transaction(
        self, writes: Mapping[Path, bytes], removals: Sequence[Path] = (), *,
        counted: tuple[int, int] | None = None, total: int | None = None,
    ) -> Iterator[Mapping[Path, Path]]:
        """A change to entries (under the exclusive lock), staged on entering and committed on leaving,
        raising the change counter (`file_transaction`).

        Args:
            counted: what `_counted` gave under this hold of the lock (None: read it now).
            total: the content bytes the change leaves (None: the change leaves them as they are).
        """
        count, shared = self._counted() if counted is None else counted
        after = self._total.carried(count, shared) if total is None else total
        bump = functools.partial(self.changes.bump, current=count, total=after)
        with file_transaction(self.root, writes, removals, on_commit=bump) as staged:
            yield staged
        self._total.committed(count + 1, after)

    # ----------------------------------------------------------------- paths

    def _files(self, path: str) -> tuple[Path, Path, Path]:
        """The .md/.yml/.emb files of a normalised path, refusing a folder on the way that leaves the root.

        Each file is confined again when it is opened (`memdir.core.files.open_regular`): a
        sidecar that is a symbolic link leading out is refused there.
        """
        md = resolve_in_root(self.root, path)
        stem = self.root / disk_stem(path)
        return md, stem.with_name(stem.name + SIDECAR_SUFFIX), stem.with_name(stem.name + EMBEDDING_SUFFIX)

    def _check_private_files(self) -> None:
        """Refuse a root whose ``.memdir/`` or ``threads/`` (or anything in them), or ``.lock``, is a
        symbolic link or a special file.

        memdir creates neither there; one planted would send the index, journals, thread logs
        and derived data outside the root, or make opening them block. Checked once, before
        the lock is first taken (journals planted later are refused by `memdir.storage.directory.atomic.recover`).
        """
        folders = [self.root / PRIVATE_DIR, *(self.root / name for name in sorted(RESERVED_FOLDERS))]
        items = [folder for folder in folders if os.path.lexists(folder)]
        for item in items:
            try:  # another process's journal or temporary file may go between listing and looking
                st = os.lstat(item)
                if stat.S_ISDIR(st.st_mode) and item != self.root / PRIVATE_DIR / SOCKET_DIR:  # the hooks' socket
                    items.extend(item / name for name in sorted(os.listdir(item)))
            except (FileNotFoundError, NotADirectoryError):
                continue
            if stat.S_ISLNK(st.st_mode):
                raise unsafe_file(self.root, item, "link")
            if not stat.S_ISDIR(st.st_mode) and not stat.S_ISREG(st.st_mode):
                raise unsafe_file(self.root, item, "special", "neither a regular file nor a folder")
        stat_regular(self.root, self.root / LOCK_FILE_NAME)

    # ----------------------------------------------------------------- size accounting

    def _content_size(self, md: Path) -> int:
        st = stat_regular(self.root, md)
        return 0 if st is None else st.st_size

    def _scan_total(self) -> int:
        # A file shadowed by a built-in entry cannot be reached, so it is not counted either.
        return sum(st.st_size for path, _, st, _ in scan_entries(self.root, self.root, "") if not is_virtual(path))

    def _current_total(self, counted: tuple[int, int] | None = None) -> int:
        return self._total.get(*(self.changes.read() if counted is None else counted))

    def stats(self, path: str) -> FileStats:
        """The ``.md`` and ``.yml`` mtimes and sizes of ``path`` (`memdir.storage.directory.index_db.file_stats`)."""
        return file_stats(self.root, path)

    def stats_each(self, paths: Sequence[str]) -> list[FileStats]:
        """`stats` of each (files have no question for several: a ``stat`` of each)."""
        return [self.stats(path) for path in paths]

    def listing(
        self, under: str | None = None, folders: dict[str, os.stat_result | None] | None = None
    ) -> Iterator[tuple[str, FileStats]]:
        """(path, stats) of every real entry, or of those in folder ``under`` (`memdir.storage.directory.index.listing`)."""
        from memdir.storage.directory.index import listing  # (the index module is the directory store's, loaded with it)

        return listing(self, under, folders)

    def root_listing(self, index: EntryIndex) -> RootListing:
        """Listings and reconcile plans from the index's rows plus the folders that changed.

        Raises:
            TypeError: ``index`` is not a directory store's index (the listing reads its rows).
        """
        from memdir.storage.directory.index import DerivedIndex
        from memdir.storage.directory.root_listing import RootListing

        if not isinstance(index, DerivedIndex):
            raise TypeError(f"a directory store lists over its own index, not {type(index).__name__}")

        return RootListing(self, index)

    def total_size(self) -> int:
        """Bytes of content held (``.md`` files, stubs included; virtual entries excluded)."""
        with self._reading():
            return self._current_total()

    def rescan_total_size(self) -> int:
        """Recount the total from disk (after other processes or tools changed the root)."""
        with self._reading():
            self._total.invalidate()
            return self._current_total()

    def _check_limits(self, path: str, md: Path, new_size: int, total: int) -> int:
        """The root's content ``total`` after replacing ``md`` with ``new_size`` bytes, if within limits."""
        grows = new_size - self._content_size(md)
        total += grows
        check_sizes(path, new_size, self.max_entry_size, total, self.max_total_size)
        self._check_free_disk(max(grows, 0))
        return total

    def _check_free_disk(self, needed: int) -> None:
        """Refuse a write that would leave less than ``min_free_disk`` bytes on the disk."""
        if self.min_free_disk <= 0:
            return
        try:
            st = os.statvfs(self.root)
        except (OSError, AttributeError):  # no statvfs (Windows): the write itself will tell
            return
        free = st.f_bavail * st.f_frsize
        if free - needed < self.min_free_disk:
            raise DiskFullError(
                self.root,
                f"{free:,} bytes free; memdir keeps {self.min_free_disk:,} free so that entries can still be deleted",
            )

    # ----------------------------------------------------------------- writing

    @contextmanager
    def write(
        self,
        path: str,
        content: str,
        *,
        title: str,
        metadata: Metadata | Mapping[str, Any] | None = None,
        embedding: np.ndarray | None = None,
        hits: int | None = None,
        updated_at: datetime | None = None,
        embedding_model: str | None = None,
        embedding_text_hash: str | None = None,
    ) -> Iterator[Staged]:
        """Create or replace the entry at ``path`` atomically (all three files or none).

        A context manager: the ``with`` block gets the entry and its files' stats once the files
        are staged, before they replace the old ones (`file_transaction`): derived data updated
        there changes only if the files do. If the block raises, nothing changes.

        Args:
            path: any accepted spelling of the logical path.
            content: the markdown, stored byte for byte as UTF-8.
            title: a short description shown in listings.
            metadata: `Metadata` (or a mapping of its fields).
            embedding: 384 floats, or None for an unembedded entry (its ``.emb`` is removed).
            hits: the hit count to store; None keeps the existing count (0 for a new entry).
            updated_at: the modification time to record; None means now. Maintenance that
                does not change what the entry says (re-embedding) keeps the old time.
            embedding_model: the model that made ``embedding`` (None: unknown, re-embedded later).
            embedding_text_hash: the hash of the searchable text it was made from.

        Raises:
            InvalidPathError, ReadOnlyEntryError, InputValidationError, EntryTooLargeError,
            StorageFullError, DiskFullError, ReadOnlyRootError, LockTimeoutError.
        """
        path = normalize_path(path)
        write = EntryWrite(path, content, str(title), valid_metadata(path, metadata), embedding, embedding_model,
                           embedding_text_hash)
        with self._writing():
            counted = self._counted()
            staged = self._staged(write, self._current_total(counted), hits, updated_at)
            with self._transaction(staged.writes, staged.removals, counted=counted, total=staged.total) as files:
                yield Staged(staged.entry, staged.stats(files))

    @contextmanager
    def write_many(self, writes: Sequence[EntryWrite]) -> Iterator[list[Staged]]:
        """Create or replace several entries in ONE transaction: all of them or none.

        Each is written as `write` writes it (with its ``hits`` and ``updated_at``, see `EntryWrite`); one
        journal and one round of flushes for the batch is what lets a bulk load go at the
        model's pace.

        Args:
            writes: the entries, at distinct paths.

        Raises:
            InputValidationError: a path appears twice.
            What `write` raises; nothing is written then.
        """
        checked = checked_writes(writes)
        if not checked:
            yield []
            return
        with self._writing():
            counted = self._counted()
            total = self._current_total(counted)
            batch: list[_StagedEntry] = []
            for write in checked:
                batch.append(self._staged(write, total, write.hits, write.updated_at))
                total = batch[-1].total
            files: dict[Path, bytes] = {}
            for staged in batch:
                files |= staged.writes
            with self._transaction(files, [path for s in batch for path in s.removals], counted=counted, total=total) as temps:
                yield [Staged(staged.entry, staged.stats(temps)) for staged in batch]

    def _staged(self, write: EntryWrite, total: int, hits: int | None = None, updated_at: datetime | None = None) -> _StagedEntry:
        """The files of one entry's new version, checked against the limits with the root's content
        at ``total`` bytes (caller holds the write lock)."""
        path = write.path
        refuse_virtual(path)
        data = encode_content(path, write.content)
        emb_bytes = None if write.embedding is None else encode_embedding(path, write.embedding)
        checksum = None if emb_bytes is None else embedding_checksum(emb_bytes)
        md, yml, emb = self._files(path)
        total = self._check_limits(path, md, len(data), total)
        if hits is None:
            hits = self._stored_hits(yml)
        updated_at = updated_at or utcnow()
        sidecar: dict[str, Any] = {
            "title": write.title,
            "file_path": path,
            "updated_at": updated_at,
            "size": len(data),
            "hits": int(hits),
            "metadata": write.metadata.to_yaml_dict(),
        }
        if checksum is not None:
            set_embedding_fields(sidecar, checksum, write.embedding_model, write.embedding_text_hash)
        files = {md: data, yml: dump_sidecar(sidecar)}
        removals = []
        if emb_bytes is None:
            if os.path.lexists(emb):
                removals.append(emb)
        else:
            files[emb] = emb_bytes
        entry = Entry(
            path=path,
            content=write.content,
            title=write.title,
            updated_at=updated_at,
            size=len(data),
            hits=int(hits),
            metadata=write.metadata.model_copy(deep=True),
            embedding=None if emb_bytes is None else np.frombuffer(emb_bytes, EMBEDDING_DTYPE).astype(np.float32),
            embedding_checksum=checksum,
            embedding_model=write.embedding_model if checksum else None,
            embedding_text_hash=write.embedding_text_hash if checksum else None,
        )
        return _StagedEntry(entry, files, removals, md, yml, total)

    @contextmanager
    def set_embeddings(
        self,
        vectors: Mapping[str, np.ndarray],
        *,
        expected: Mapping[str, Entry] | None = None,
        model_id: str | None = None,
        text_hashes: Mapping[str, str] | None = None,
    ) -> Iterator[list[Staged]]:
        """Replace the embeddings of existing entries in ONE transaction (re-embedding, rebuilds).

        Only the ``.emb`` files and the embedding fields of the sidecars change:
        content, title, metadata, hits and ``updated_at`` stay as they are. One journal and
        one set of fsyncs for the whole batch is what keeps a rebuild close to the model's
        own throughput.

        Args:
            vectors: path -> its new embedding.
            expected: path -> the entry as read when its vector was computed; an entry whose
                content, title or metadata (tags and domain are embedded too) changed since
                is skipped: the write that changed it embedded it.
            model_id: the model that made the vectors.
            text_hashes: path -> hash of the searchable text its vector was made from.

        A context manager as `write` is: its block gets each updated entry and its files' stats
        once staged, in the order given (skipped ones left out; none when all were skipped).
        """
        writes: dict[Path, bytes] = {}
        updated: list[Entry] = []
        files: list[tuple[Path, Path]] = []  # (md, yml) of each updated entry
        with self._writing():
            for path, vector in vectors.items():
                path = normalize_path(path)
                refuse_virtual(path)
                entry, sidecar = self._load(path)
                before = expected.get(path) if expected is not None else entry
                if before is None or (before.content, before.title, before.metadata) != (entry.content, entry.title, entry.metadata):
                    continue
                md, yml, emb = self._files(path)
                files.append((md, yml))
                emb_bytes = encode_embedding(path, vector)
                checksum = embedding_checksum(emb_bytes)
                text_hash = (text_hashes or {}).get(path)
                writes[emb] = emb_bytes
                if sidecar is None and yml.exists():
                    # A .yml memdir cannot read was written by someone else: never overwrite it
                    # (the vector goes to the .emb alone; an .emb without a checksum reads fine).
                    log.warning("re-embedding %s without touching its unreadable %s", path, yml.name)
                else:
                    fields = dict(sidecar or {
                        "title": entry.title, "file_path": path, "updated_at": entry.updated_at,
                        "size": entry.size, "hits": entry.hits, "metadata": entry.metadata.to_yaml_dict(),
                    })
                    set_embedding_fields(fields, checksum, model_id, text_hash)
                    writes[yml] = dump_sidecar(fields)
                updated.append(entry.model_copy(update={
                    "embedding": np.frombuffer(emb_bytes, EMBEDDING_DTYPE).astype(np.float32),
                    "embedding_checksum": checksum, "embedding_model": model_id, "embedding_text_hash": text_hash,
                }))
            if not writes:
                yield []
                return
            with self._transaction(writes) as staged:
                yield [Staged(entry, _staged_stats(staged, md, yml)) for entry, (md, yml) in zip(updated, files)]

    @contextmanager
    def set_metadata(self, paths: Sequence[str], decide: Callable[[Entry], Metadata | None]) -> Iterator[list[Staged]]:
        """Replace the metadata of existing entries in ONE transaction (the evolution jobs' bulk changes).

        Only the ``.yml`` files change: content, vector, hits and ``updated_at`` stay. One
        journal and one commit for the whole batch instead of one per entry.

        Args:
            paths: the entries to change. Missing ones and those whose ``.yml`` memdir cannot
                read (never overwritten; a lone stub has none) are skipped.
            decide: each entry as read under the lock -> its new metadata (fields that are not
                embedded, so the vector stays valid), or None to leave it; called for every entry
                before anything is staged, it may raise to refuse the batch. Each file is read once.

        A context manager as `set_embeddings` is.
        """
        writes: dict[Path, bytes] = {}
        updated: list[Entry] = []
        files: list[tuple[Path, Path]] = []
        with self._writing():
            for path in paths:
                path = normalize_path(path)
                refuse_virtual(path)
                md, yml, emb = self._files(path)
                try:
                    entry, sidecar = self._load(path, (md, yml, emb))
                except EntryNotFoundError:
                    continue
                if sidecar is None:
                    continue
                metadata = decide(entry)
                if metadata is None:
                    continue
                writes[yml] = dump_sidecar({**sidecar, "metadata": metadata.to_yaml_dict()})
                files.append((md, yml))
                updated.append(entry.model_copy(update={"metadata": metadata}))
            if not writes:
                yield []
                return
            with self._transaction(writes) as staged:
                yield [Staged(entry, _staged_stats(staged, md, yml)) for entry, (md, yml) in zip(updated, files)]

    def _stored_hits(self, yml: Path) -> int:
        sidecar = self._load_sidecar(yml)
        return as_int(sidecar.get("hits")) if sidecar else 0

    @contextmanager
    def write_stub(self, path: str, redirect: Redirect, *, owner: str | None = None) -> Iterator[None]:
        """Replace the entry at ``path`` with a stub pointing at ``redirect.target``.

        A stub without an owner is a lone ``.md`` file; an owned one has a ``.yml`` that says it
        is a stub (``stub: true``, ``redirect_to``, as SwarmMemory's were) and names its
        ``created_by``. The entry's other files go in the same transaction, so the old entry
        stops appearing in listings and searches. A context manager as `write` is.
        """
        path = normalize_path(path)
        refuse_virtual(path)
        redirect = valid_redirect(path, redirect)
        data = stubs.format_stub(redirect).encode("utf-8")
        md, yml, emb = self._files(path)
        writes: dict[Path, bytes] = {md: data}
        if owner is not None:
            marks = Metadata.model_validate({"stub": True, "redirect_to": redirect.target, "created_by": owner})
            writes[yml] = dump_sidecar({"file_path": path, "size": len(data), "hits": 0, "metadata": marks.to_yaml_dict()})
        with self._writing():
            counted = self._counted()
            total = self._check_limits(path, md, len(data), self._current_total(counted))
            staged = self._stub_reads.staged_forget([path])  # a new stub starts unread
            with self._transaction(writes | staged, [emb] if owner is not None else [yml, emb], counted=counted, total=total):
                yield

    @contextmanager
    def delete(self, path: str) -> Iterator[None]:
        """Remove the entry's ``.md``, ``.yml`` and ``.emb`` together; a stub is deleted itself.

        A context manager as `write` is. On a disk with no room even for the journal, the files
        are removed one by one after the block (deleting is how a full disk is cleaned up).

        Raises:
            EntryNotFoundError: nothing is stored at ``path``.
            ReadOnlyEntryError: ``path`` is a built-in entry.
        """
        path = normalize_path(path)
        refuse_virtual(path)
        md, yml, emb = self._files(path)
        with self._writing():
            if stat_regular(self.root, md) is None:
                raise EntryNotFoundError(path)
            counted = self.changes.read()  # (nothing created: a full disk may have no room)
            total = self._current_total(counted) - self._content_size(md)
            with ExitStack() as transaction:
                try:
                    transaction.enter_context(
                        self._transaction(self._stub_reads.staged_forget([path]), [md, yml, emb], counted=counted, total=total)
                    )
                    journaled = True
                except DiskFullError:
                    log.warning("Deleting %s without a journal: the disk has no room even for one", path)
                    journaled = False
                yield  # (if the derived index cannot shrink either, nothing is deleted)
            if not journaled:
                remove_unjournaled([md, yml, emb])
                self.changes.bump()
                self._total.invalidate()
            self._prune_empty_folders(md.parent)

    def _prune_empty_folders(self, folder: Path) -> None:
        """Remove folders the delete left empty, up to (never including) the root. Best effort."""
        while folder != self.root and self.root in folder.parents:
            try:
                folder.rmdir()
            except OSError:
                return  # not empty, a symlink, or already gone
            folder = folder.parent

    # ----------------------------------------------------------------- reading

    def will_read(self, path: str) -> None:
        """Nothing to read ahead: the files are read where they lie."""

    def exists(self, path: str) -> bool:
        """True if a real entry, stub or built-in entry lives at ``path``."""
        path = normalize_path(path)
        if is_virtual(path):
            return True
        md, _, _ = self._files(path)
        return stat_regular(self.root, md) is not None

    def read_redirect(self, path: str) -> Redirect | None:
        """The redirect if ``path`` is a stub, None if it is a real (or built-in) entry.

        Raises:
            EntryNotFoundError: nothing is stored at ``path``.
            RedirectError: ``path`` is a malformed stub.
        """
        path = normalize_path(path)
        if is_virtual(path):
            return None
        return self._consistent(lambda: self._redirect_of(path))

    def _redirect_of(self, path: str) -> Redirect | None:
        if is_virtual(path):
            return None
        md, yml, _ = self._files(path)
        try:
            head = read_regular(self.root, md, _STUB_READ_LIMIT)
        except (FileNotFoundError, NotADirectoryError):
            raise EntryNotFoundError(path) from None
        if not (stubs.looks_like_stub(head) and self._stub_sidecar(yml, yml.exists())):
            return None  # an entry with a sidecar is an entry, whatever its first line says
        return stubs.parse_stub(head.decode("utf-8", errors="replace"), path)

    def read_entry(self, path: str, *, count_hit: bool = False, follow: bool = True) -> Entry:
        """Read an entry, following stubs to their target when ``follow``.

        Args:
            path: any accepted spelling of the logical path.
            count_hit: add one to the entry's ``hits`` (agent reads only; takes the
                exclusive lock). Built-in entries, stubs and entries without a readable
                ``.yml`` (hand-written files) never count hits.
            follow: False returns a stub itself (its content is the redirect text).

        The returned entry's ``path`` is where the content really lives (the target of
        any stubs followed).

        Raises:
            EntryNotFoundError, RedirectError, InvalidPathError, LockTimeoutError.
        """
        path = normalize_path(path)
        if is_virtual(path):
            return load_virtual(path)
        count_hit = count_hit and self.read_only is None  # a read-only root reads without counting
        if not count_hit:
            return self._consistent(lambda: self._read_entry(path, follow=follow, count_hit=False))
        with self._writing():
            return self._read_entry(path, follow=follow, count_hit=True)

    def _read_entry(self, path: str, *, follow: bool, count_hit: bool) -> Entry:
        target = stubs.follow(self._redirect_of, path, self.max_redirect_hops) if follow else path
        if count_hit and target != path:
            self._count_stub_hit(path)
        if is_virtual(target):
            return load_virtual(target)
        entry, sidecar = self._load(target)
        if count_hit and sidecar is not None:  # stubs have no sidecar
            entry = self._count_hit(target, entry, sidecar)
        return entry

    def count_hit(self, entry: Entry) -> Entry:
        """Count a read of ``entry`` that was served without reading its files (a cache hit): its
        ``.yml`` alone is rewritten, hits + 1. Entries without a readable ``.yml`` count nothing."""
        if self.read_only is not None:
            return entry
        with self._writing():
            sidecar = self._load_sidecar(self._files(entry.path)[1])
            return entry if sidecar is None else self._count_hit(entry.path, entry, sidecar)

    def _count_stub_hit(self, path: str) -> None:
        """A read that went through the stub at ``path``: counted in derived data, never in the stub
        (`memdir.storage.directory.stub_reads`)."""
        try:
            commit_files(self.root, self._stub_reads.staged_add(path))
        except DiskFullError:
            log.info("Not counting a read through %s: the disk is full", path)  # the read itself goes on

    def read_contents(self, paths: Sequence[str]) -> list[str]:
        """The content of each entry ("" for one that vanished), in one pass.

        Only the ``.md`` files are read — no sidecar parsing, no vectors, no hits — which is
        what whole-root scans (grep, defrag's duplicate search) need and all they need. Each
        file is whole (files are replaced by rename), so no lock is needed.
        """
        contents = []
        for path in paths:
            if is_virtual(path):
                contents.append(load_virtual(path).content)
                continue
            try:
                contents.append(read_regular(self.root, self._files(path)[0]).decode("utf-8", errors="replace"))
            except (OSError, InvalidPathError):
                contents.append("")
        return contents

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for path in paths:
            try:
                found[path] = self.read_entry(normalize_path(path), follow=False).title
            except Exception:  # a dangling related link is shown without a title
                continue
        return found

    def read_entries(self, paths: Sequence[str]) -> list[tuple[Entry, FileStats]]:
        """The entries at ``paths``, each read after its stats were taken (a change made meanwhile
        leaves the pair stale, never wrongly fresh: `memdir.storage.entry_cache`)."""
        found = []
        for path in paths:
            if is_virtual(path):
                continue
            try:
                stats = self.stats(path)
                if self.read_redirect(path) is None:
                    found.append((self.read_entry(path, follow=False), stats))
            except MemdirError:  # (gone or unreadable since it was listed: left out)
                continue
        return found

    def _stub_sidecar(self, yml: Path, exists: bool, *, listed: str | None = None) -> bool:
        """Whether a stub-looking ``.md`` with this sidecar is a stub: no sidecar, or one that says so.

        ``listed``: the entry's path when a listing asks (an unusable sidecar is then left out, not refused).
        """
        if not exists:
            return True
        sidecar = (self._listed_sidecar(listed, yml) if listed else self._load_sidecar(yml)) or {}
        return stubs.marks_stub(sidecar.get("metadata")) or stubs.marks_stub(sidecar)  # either place

    def _load_sidecar(self, yml: Path) -> dict[str, Any] | None:
        """The ``.yml`` mapping; None when missing or unreadable as YAML.

        Raises:
            UnsafeFileError: the file is a link leading out of the root, or not a regular file.
        """
        try:
            text = read_regular(self.root, yml).decode("utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError):
            return None
        sidecar = parse_sidecar(text)
        if sidecar is None:
            self._warn("Ignoring %s: it is not a YAML mapping", yml)
        return sidecar

    def _listed_sidecar(self, path: str, yml: Path) -> dict[str, Any] | None:
        """A sidecar for a listing row: one memdir will not open is left out (the row shows the content's title)."""
        try:
            return self._load_sidecar(yml)
        except UnsafeFileError as exc:
            self._warn("Listing memory://%s without its sidecar: %s", path, exc.message)
            return None

    def _load(self, path: str, files: tuple[Path, Path, Path] | None = None) -> tuple[Entry, dict[str, Any] | None]:
        """The entry at ``path`` (no redirects) and its raw sidecar mapping (``files``: its `_files`, if known)."""
        md, yml, emb = files or self._files(path)
        try:
            with open_regular(self.root, md) as handle:
                data = handle.read()
                mtime_ns = os.fstat(handle.fileno()).st_mtime_ns
        except (FileNotFoundError, NotADirectoryError):
            raise EntryNotFoundError(path) from None
        content = data.decode("utf-8", errors="replace")
        sidecar = self._load_sidecar(yml)
        fields = sidecar or {}
        embedding, checksum = self._load_embedding(emb, fields.get("embedding_checksum"))
        model, text_hash = embedding_origin(fields, checksum)
        title = fields.get("title")
        entry = Entry(
            path=path,
            content=content,
            title=str(title) if title not in (None, "") else fallback_title(content, path),
            updated_at=as_datetime(fields.get("updated_at")) or _mtime(mtime_ns),
            size=len(data),
            hits=as_int(fields.get("hits")),
            metadata=metadata_from_yaml(fields.get("metadata")),
            embedding=embedding,
            embedding_checksum=checksum,
            embedding_model=model,
            embedding_text_hash=text_hash,
        )
        return entry, sidecar

    def _load_embedding(self, emb: Path, stored_checksum: Any) -> tuple[np.ndarray | None, str | None]:
        try:
            data = read_regular(self.root, emb)
        except (FileNotFoundError, NotADirectoryError):
            return None, None
        vector = decode_embedding(data, stored_checksum if isinstance(stored_checksum, str) else None)
        if vector is None:
            self._warn("Ignoring damaged embedding %s (%d bytes); the entry counts as not embedded", emb, len(data))
            return None, None
        return vector, embedding_checksum(data)

    def _count_hit(self, path: str, entry: Entry, sidecar: dict[str, Any]) -> Entry:
        """Store hits + 1 in the ``.yml``, leaving every other key as it was."""
        _, yml, _ = self._files(path)
        hits = entry.hits + 1
        updated = dict(sidecar)
        updated["hits"] = hits
        try:
            commit_files(self.root, {yml: dump_sidecar(updated)})
        except DiskFullError:
            log.info("Not counting a read of %s: the disk is full", path)  # the read itself goes on
            return entry
        return entry.model_copy(update={"hits": hits})

    # ----------------------------------------------------------------- listing

    def iter_entries(
        self,
        *,
        include_stubs: bool = False,
        include_virtual: bool = False,
        with_metadata: bool = True,
        under: str | None = None,
        folders: dict[str, os.stat_result | None] | None = None,
    ) -> Iterator[EntryInfo]:
        """Every entry, sorted by path, without reading content or counting hits.

        Args:
            include_stubs: also list redirect stubs.
            include_virtual: also list built-in entries.
            with_metadata: parse each ``.yml`` for ``title``, ``type``, ``hits`` and
                ``updated_at``. False is the fast path (one ``stat`` per entry, no file
                opened): ``title`` is empty, ``type`` None, ``hits`` 0 and ``updated_at``
                the file's modification time — enough for glob matching and index
                freshness checks (``size``, ``mtime_ns``).
            under: only entries inside this folder (e.g. ``"concept/ruby"``).
            folders: if given, receives the stat of every folder listed (`scan_entries`).

        Skipped: ``.memdir/``, ``.lock``, hidden and temporary files, names that are not
        valid memory paths, and symbolic links leading outside the root. A stub is an
        ``.md`` without a ``.yml`` whose first line is ``# merged →``/``# moved →``
        (`write_stub` always writes them so); only such files are opened to tell.

        The listing is taken as of one state of the root (`_consistent`) and then yielded,
        so the caller may write or delete entries while iterating.
        """
        prefix = folder_prefix(under)
        start = self.root / prefix if prefix else self.root
        rows = self._consistent(lambda: self._scan(start, prefix, include_stubs, with_metadata, folders))
        if include_virtual:
            rows.extend(virtual_info(p) for p in virtual_paths() if p.startswith(prefix))
        rows.sort(key=lambda info: info.path)
        yield from rows

    def _scan(
        self,
        start: Path,
        prefix: str,
        include_stubs: bool,
        with_metadata: bool,
        folders: dict[str, os.stat_result | None] | None,
    ) -> list[EntryInfo]:
        rows: list[EntryInfo] = []
        if start == self.root or (start.is_dir() and is_within(self.root, start)):
            for path, file, st, has_sidecar in scan_entries(self.root, start, prefix, folders):
                if is_virtual(path):
                    continue  # a file shadowed by a built-in entry is unreachable
                is_stub = self._is_stub(path, file.path, has_sidecar)
                if is_stub and not include_stubs:
                    continue
                rows.append(self._info(path, file.path, st, has_sidecar, is_stub, with_metadata))
        return rows

    def _is_stub(self, path: str, file: str, has_sidecar: bool) -> bool:
        """Whether the listed ``.md`` at ``file`` (entry ``path``) is a stub: it starts like one, and has
        no sidecar or one that says so."""
        yml = Path(file[: -len(".md")] + SIDECAR_SUFFIX)
        return sniff_stub(self.root, file) and self._stub_sidecar(yml, has_sidecar, listed=path)

    def list_folder(self, prefix: str, known: Callable[[str, FileStats], bool]) -> ListedFolder | None:
        """One folder's entries (stubs left out) with their files' stats, and its subfolders: what
        a listing needs of a folder whose stamp no longer holds (`memdir.storage.directory.folder_stamps`).

        Args:
            prefix: the folder's logical prefix (``""`` for the root, else ending in ``/``).
            known: True for an entry whose stats are those of a known entry (not a stub): its
                ``.md`` is not opened to tell.

        Returns:
            None if the folder is gone (or is no folder of the root).
        """
        folder = os.path.join(self.root, prefix)
        try:
            st = os.stat(folder)  # before listing: a change after it moves the mtime on
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode) or not is_within(self.root, folder):
            return None
        stamp = stamp_of(st, settled_now())
        found = scan_folder(self.root, folder, prefix)
        entries: dict[str, FileStats] = {}
        for path, file, md, has_sidecar in found.entries:
            if is_virtual(path):
                continue
            yml = stat_or_zero(file.path[: -len(".md")] + SIDECAR_SUFFIX) if has_sidecar else (0, 0)
            stats = FileStats(md.st_mtime_ns, md.st_size, *yml)
            if known(path, stats) or not self._is_stub(path, file.path, has_sidecar):
                entries[path] = stats
        return ListedFolder(stamp, entries, [sub for _, sub in found.folders], bool(found.linked))


    def describe(self, paths: Sequence[str]) -> list[EntryInfo]:
        """Listing rows with metadata (title, type, hits, updated_at, from each ``.yml``) of
        the given real entries, in the order given; entries gone meanwhile are left out."""
        return self._consistent(lambda: [row for path in paths if (row := self._describe(path)) is not None])

    def _describe(self, path: str) -> EntryInfo | None:
        md, yml, _ = self._files(path)
        try:
            st = stat_regular(self.root, md)
            head = read_regular(self.root, md, stubs.SNIFF_BYTES) if st is not None else b""
        except (OSError, UnsafeFileError):
            return None
        if st is None:
            return None
        has_sidecar = yml.is_file()
        is_stub = stubs.looks_like_stub(head) and self._stub_sidecar(yml, has_sidecar, listed=path)
        return self._info(path, str(md), st, has_sidecar, is_stub, True)

    def _info(
        self,
        path: str,
        file: str,
        st: os.stat_result,
        has_sidecar: bool,
        is_stub: bool,
        with_metadata: bool,
    ) -> EntryInfo:
        mtime_ns = st.st_mtime_ns
        title, type_, hits, updated_at = "", None, 0, None
        if with_metadata:
            sidecar = self._listed_sidecar(path, Path(file[:-3] + SIDECAR_SUFFIX)) if has_sidecar else None
            if sidecar:
                title = str(sidecar.get("title") or "")
                meta = sidecar.get("metadata")
                type_ = meta.get("type") if isinstance(meta, dict) else None
                hits = as_int(sidecar.get("hits"))
                updated_at = as_datetime(sidecar.get("updated_at"))
            if not title:
                try:
                    head = read_regular(self.root, file, _TITLE_READ_LIMIT).decode("utf-8", errors="ignore")
                except (OSError, UnsafeFileError):
                    head = ""
                title = head.split("\n", 1)[0].lstrip("# ").strip() if is_stub else fallback_title(head, path)
                if is_stub:
                    hits = stubs.stub_hits(head)
            if is_stub:
                hits += self._stub_reads.count(path)
        return EntryInfo(
            path=path,
            title=title,
            size=st.st_size,
            updated_at=updated_at or _mtime(mtime_ns),
            type=entry_type(type_, path),
            hits=hits,
            mtime_ns=mtime_ns,
        )
