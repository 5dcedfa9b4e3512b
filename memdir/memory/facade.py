"""`Memory`: one memory root — files, derived index and model — behind one small API.

Everything above this layer (tools, CLI, defrag, episodes) talks to `Memory`; it keeps
the files (the truth), the derived index and the vector matrix in step:

* a write embeds *before* taking the root's lock (the model is the slow part), then,
  under the exclusive lock, stages the files, updates the index and only then commits
  the files (`memdir.storage.directory.atomic.commit_files`): a write that fails — a full disk
  fails the index's transaction as often as the files' — changes neither;
* reads of content go to the files; search goes to the index, refreshed first with
  whatever other processes changed (and re-scanned when a writer died between its files
  and its index update: `DerivedIndex.behind_files`);
* when the model is missing or still loading, writes still succeed (the entry is marked
  not embedded and embedded later) and search is keyword-only;
* a root that cannot be written (read-only mount, no permission) or that a command only
  reads (``read_only=True``) opens read-only: nothing under it is created or changed,
  the derived index is kept in memory unless a writable one is there already, reads and
  search work, and writes raise `ReadOnlyRootError`.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from memdir.core.entry import Entry, Metadata, importance_on_scale, utcnow
from memdir.core.errors import (
    DiskFullError,
    EntryNotFoundError,
    InputValidationError,
    InvalidPathError,
    LockTimeoutError,
    MemdirError,
    ReadOnlyEntryError,
    ReadOnlyRootError,
    RedirectError,
    StaleEditError,
)
from memdir.core.files import disk_errors
from memdir.core.identity import Actor, Labels
from memdir.core.keywords import extract_keywords, porter_stem
from memdir.core.links import RELATED_KIND, Link, check_link_kind, make_link, related_links
from memdir.core.paths import normalize_path
from memdir.core.settings import Settings
from memdir.core.user_regex import RegexBudget, check_length
from memdir.embeddings.base import Embedder
from memdir.embeddings.provider import ModelProvider, ModelState
from memdir.embeddings.resolve import model_id_for
from memdir.embeddings.text import searchable_text, text_hash, text_recipe
from memdir.search.hybrid import HybridSearcher, SearchResult, normalize_prefix
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
from memdir.storage.audit_log import ACTIONS, AuditRecord, change_diff
from memdir.storage.base import EntryIndex, EntryWrite, Redirect, StorageAdapter, paged_listing
from memdir.storage.credentials import shown
from memdir.storage.entry_cache import EntryCache, PrefetchReport, load_report, save_report
from memdir.storage.evolution_records import record_importance
from memdir.storage.records import Edge, EntryInfo, FileStats, ImportanceChange, Listed
from memdir.storage.stores import open_store
from memdir.storage.virtual import is_virtual, load_virtual, virtual_info, virtual_paths

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
FieldChanges = dict[str, Any]  # metadata field -> new value (None: removed)


class _AboutAnEntry(Protocol):
    """Anything about one entry (a listing row, a search result): what `Memory.in_view` filters."""

    @property
    def path(self) -> str: ...


T = TypeVar("T", bound=_AboutAnEntry)
CACHE_FIGURES_EVERY = 50
"""Agent reads between two saves of the cache's figures for `memdir status`."""
NO_LABELS = Labels()

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


class Memory:
    """One memory root. Open with `Memory.open(settings)`; close (or use ``with``) when done."""

    def __init__(self, settings: Settings, adapter: StorageAdapter, index: EntryIndex, model: ModelProvider) -> None:
        self.settings = settings
        self.adapter = adapter
        self.index = index
        self.model = model
        self.searcher = HybridSearcher(index, settings, embedder=self._search_embedder, role=lambda: self.actor.role)
        self._listing = adapter.root_listing(index)  # see `_entries`
        self._actor = Actor.from_settings(settings)
        self._acting = threading.local()  # `acting_as`, per thread
        self.audit = adapter.audit
        self.cache = EntryCache(adapter.stats, settings.prefetch_size) if settings.prefetch_size > 0 else None
        """Entries agents read (and `prefetch` put there), served to MemoryRead while unchanged."""
        self._labelled = threading.local()  # the action label of `action`, per thread
        self._written_unembedded: set[str] = set()  # written while the model loaded (see `close`)
        self._serving = False  # opened by a server (`open(background=True)`): its own cache figures from the start

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(
        cls,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        background: bool = False,
        load_model: bool = True,
        read_only: bool = False,
    ) -> Memory:
        """Open (creating if needed) the store ``settings.store_root``.

        Args:
            settings: configuration; defaults to `Settings()` (files + environment).
            embedder: use this embedder instead of resolving the real model (tests).
            background: load the model in a background thread (the server) instead of
                on first need, and read the listing rows in another.
            load_model: False keeps the model unloaded (pure file operations stay fast,
                and nothing waits on onnxruntime).
            read_only: open for reading only (commands that only look: status, search, the
                discover hook): the root must exist, and nothing under it is created or
                changed — no ``.lock``, no ``.memdir/`` where there was none, no ``.yml`` or
                ``.emb`` for entries written by hand (`memdir rebuild` embeds those).
                A root that cannot be written opens read-only whatever this says.

        Raises:
            RootNotFoundError: ``read_only`` and there is no directory at the root.
            ReadOnlyRootError, DiskFullError, OSError: the root does not exist and cannot be created.
        """
        settings = settings or Settings()
        adapter, index = open_store(settings, read_only=read_only)
        if embedder is not None:
            model = ModelProvider(embedder=embedder, enabled=settings.embeddings_enabled)
        else:
            model = ModelProvider.from_settings(
                settings, enabled=settings.embeddings_enabled and load_model, download=background
            )
        memory = cls(settings, adapter, index, model)
        try:
            memory.reconcile()
        except (DiskFullError, ReadOnlyRootError) as exc:
            # The root must still open — to read, and to delete entries to make room.
            log.warning("%s The derived index is kept in memory by this process.", exc)
            index.keep_in_memory()
            memory.reconcile()
        if not memory.read_only:  # (embedding writes the entries' .yml and .emb)
            # A long-running process catches up on entries written without the model (or under
            # another one) once it is ready, however many there are; a command catches up on a
            # few (entries edited by hand), but never re-embeds a whole root on its way:
            # `memdir rebuild` does that.
            at_most = None if background else settings.embed_batch_size
            model.on_ready(functools.partial(memory._embed_pending, at_most=at_most))
        if background:
            memory._serving = True
            model.start_background()
            # A server's first listing (MemoryGlob) then finds the index's rows read and built
            # (~0.3 s of CPU at 100K entries), instead of paying for them itself.
            threading.Thread(target=memory._listing.warm, name="memdir-listing", daemon=True).start()
        return memory

    def close(self) -> None:
        """Close the memory; entries this process wrote while the model was loading are embedded first
        (the model-ready catch-up of older entries stops at its next batch instead)."""
        self._save_cache_figures()
        self.model.close()
        embedder = self.model.peek()
        if self._written_unembedded and embedder is not None and not self.read_only:
            written = [path for path in self.index.needs_embedding(embedder.model_id) if path in self._written_unembedded]
            self._embed_paths(embedder, written, None, finish=True)
        self.index.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def root(self) -> Path:
        return self.adapter.root

    @property
    def read_only(self) -> bool:
        """True if this memory was opened read-only (see `open`): writes raise `ReadOnlyRootError`."""
        return self.adapter.read_only is not None

    def _check_writable(self) -> None:
        if self.adapter.read_only is not None:
            raise ReadOnlyRootError(self.root, self.adapter.read_only)

    def _exclusive(self) -> AbstractContextManager[None]:
        """The root's write lock over an up-to-date index, for a change (refused at once on a
        read-only root; see `_changing`)."""
        self._check_writable()
        return self._changing()

    @contextmanager
    def _index_first(self, *paths: str) -> Iterator[None]:
        """Around a change whose index update runs before the files are committed (their
        ``before_commit``): a failure there — a full disk — leaves files and index as they
        were. Should the commit itself fail after it (rare: one rename is left), the rows of
        ``paths`` are read back from the files, so the index does not claim a change that
        did not happen."""
        seen = self.index.seq
        try:
            with self.index.ahead_of_files():
                yield
        except BaseException:
            if self.index.seq != seen:
                for path in paths:
                    self._reindex(path)
            raise

    def _reindex(self, path: str) -> None:
        """Best effort: make the index row of ``path`` say what its files say."""
        try:
            try:
                entry = self.adapter.read_entry(path, follow=False)
            except EntryNotFoundError:
                self.index.remove(path)
                return
            self._index_entry(entry, self._searchable(entry), None)  # whose vector: unknown, so re-embedded
        except Exception:
            log.warning("the index row of %s may be stale until the next open", path, exc_info=True)

    # ------------------------------------------------------------------ ownership and audit
    @property
    def actor(self) -> Actor:
        """Who makes this memory's changes and asks for its views: every change is checked against it
        (`memdir.core.identity`). The settings' agent, role and admin flag, unless `acting_as` says otherwise."""
        return getattr(self._acting, "actor", None) or self._actor

    @contextmanager
    def acting_as(self, actor: Actor | None) -> Iterator[None]:
        """Make the calls inside (on this thread) as ``actor`` (None: the settings' own): a server over
        HTTP serves many clients with one memory, each client as the agent its token names."""
        previous = getattr(self._acting, "actor", None)
        self._acting.actor = actor
        try:
            yield
        finally:
            self._acting.actor = previous

    @contextmanager
    def action(self, label: str, **details: Any) -> Iterator[None]:
        """Record the changes made inside (on this thread) in the audit log as ``label`` — archive,
        unarchive, supersede, merge, link, unlink, ... — with ``details``, instead of the plain
        create / update / delete they are made of. Ownership is checked as for any change.

        Args:
            label: one of `memdir.storage.audit_log.ACTIONS`.
            details: small JSON-able facts the record keeps (a link's target, a merge's keeper).
        """
        if label not in ACTIONS:
            raise ValueError(f"unknown audit action {label!r}; one of {', '.join(ACTIONS)}")
        previous = getattr(self._labelled, "current", None)
        self._labelled.current = (label, details)
        try:
            yield
        finally:
            self._labelled.current = previous

    def check_change(self, path: str, action: str = "update", *, entry: Entry | None = None) -> None:
        """Refuse now a change `Memory` would refuse (callers making several changes check all first;
        ``entry``: the entry at ``path`` as the caller has just read it, not read again).

        Raises:
            NotOwnerError: ``path`` belongs to another agent and this memory's actor is no admin.
        """
        logical = normalize_path(path)
        before = entry or self._existing(logical)
        if before is not None:
            self.actor.check_change(logical, before.metadata.labels(), self._label(action)[0])

    def _existing(self, logical: str) -> Entry | None:
        """The entry (or stub) at ``logical`` as it is now, or None (also when its files cannot be
        read safely — a sidecar linked out of the root: it has no owner memdir can know of)."""
        try:
            return self.adapter.read_entry(logical, follow=False)
        except (EntryNotFoundError, RedirectError, InvalidPathError):
            return None

    def _label(self, default: str) -> tuple[str, dict[str, Any]]:
        return getattr(self._labelled, "current", None) or (default, {})

    def _guard(self, logical: str, before: Entry | None, default: str) -> None:
        """The ownership check of a change to ``logical`` (caller holds the write lock)."""
        if before is not None:
            self.actor.check_change(logical, before.metadata.labels(), self._label(default)[0])

    def _record(self, logical: str, before: Entry | None, after: Entry | None, default: str, **facts: Any) -> None:
        """Append the change's audit record (under the write lock, before the change's commit point)."""
        with disk_errors(self.root):
            self.audit.append(self._audit_record(logical, before, after, default, **facts))

    def _audit_record(self, logical: str, before: Entry | None, after: Entry | None, default: str, **facts: Any) -> AuditRecord:
        """The audit record of a change of ``logical`` from ``before`` to ``after`` (None: no entry)."""
        action, labelled = self._label(default)
        details = {**facts, **labelled}
        subject = before or after
        owner = subject.metadata.labels().created_by if subject is not None else None
        overrode = self.actor.admin and owner is not None and owner != self.actor.name
        return AuditRecord(
            at=utcnow().isoformat(), agent=self.actor.name, role=self.actor.role.value if self.actor.role else None,
            admin=overrode, action=action, path=logical, owner=owner,
            diff=change_diff(logical, before, after, self.settings.audit_diff_chars), details=details,
        )

    def _stamped(self, metadata: Metadata, before: Entry | None) -> Metadata:
        """``metadata`` with who created (owns) the entry, who changed it last and who sees it.

        A new entry belongs to the actor (unless the metadata names its creator: a restore);
        an existing one keeps its owner — a write never takes ownership, of an entry without
        an owner either — and its visibility unless the metadata sets one.
        """
        old = before.metadata if before is not None else None
        if old is None:
            owner = metadata.created_by or self.actor.name
            visible = metadata.visible_to or self.actor.default_visibility()
        else:
            owner = old.created_by
            visible = metadata.visible_to or old.visible_to
        return metadata.model_copy(update={"created_by": owner, "modified_by": self.actor.name, "visible_to": visible})

    # ------------------------------------------------------------------ entries
    def write(
        self,
        path: str,
        content: str,
        *,
        title: str = "",
        metadata: Metadata | dict[str, Any] | None = None,
        expected_content: str | None = None,
        updated_at: datetime | None = None,
        hits: int | None = None,
    ) -> WriteResult:
        """Create or replace an entry; embeds it when the model is ready.

        Args:
            expected_content: compare-and-swap for edits: the write happens only if the
                entry still holds exactly this content, checked under the lock (else
                `StaleEditError`), so a change made between reading and writing is never lost.
            updated_at: the modification time to record (None: now). Maintenance that does not
                change what an entry says (links, restores) keeps its age this way.
            hits: the read count to store (None: keep the current one).
        """
        logical, meta, text = self._prepared(path, title, metadata, content)
        vector = self._embed([text])
        return self._stored(logical, content, title, meta, text, None if vector is None else vector[0],
                            expected_content=expected_content, updated_at=updated_at, hits=hits)

    def write_many(self, writes: Sequence[NewEntry]) -> builtins.list[WriteResult]:
        """Create or replace several entries (what bulk paths write): their embeddings made in one
        model call, then, in one turn of the lock, their files committed together (one journal,
        one round of flushes) with their index rows and audit records, as ONE change. A path
        written twice starts a second change after the first, so the later version is kept.

        Raises:
            What `write` raises. Nothing of the change that failed is written then (nor of any
            after it).
        """
        prepared = [self._prepared(w.path, w.title, w.metadata, w.content) for w in writes]
        if not prepared:
            return []
        vectors = self._embed([text for _, _, text in prepared])
        model_id = self._model_id() if vectors is not None else None
        if vectors is None and self.model.state is ModelState.LOADING:
            self._written_unembedded.update(logical for logical, _, _ in prepared)
        items = [EntryWrite(logical, w.content, w.title, meta, None if vectors is None else vectors[i], model_id, text_hash(text))
                 for i, (w, (logical, meta, text)) in enumerate(zip(writes, prepared))]
        results: builtins.list[WriteResult] = []
        with self._exclusive(), self._index_first(*{item.path for item in items}):
            for change in _distinct_runs(items):
                results += self._stored_together(change)
        return results

    def _stored_together(self, items: builtins.list[EntryWrite]) -> builtins.list[WriteResult]:
        """Store prepared writes of distinct paths as one change of files, index and audit (under the lock)."""
        overwritten = {item.path: self.adapter.exists(item.path) for item in items}
        before = {path: self._existing(path) if there else None for path, there in overwritten.items()}
        for path, entry in before.items():
            self._guard(path, entry, "update")
        hashes = {item.path: item.embedding_text_hash for item in items}

        def before_commit(stored: builtins.list[tuple[Entry, FileStats]]) -> None:
            self.index.upsert_many((entry, stats, hashes[entry.path], entry.embedding_model) for entry, stats in stored)
            records = [self._audit_record(e.path, before[e.path], e, "update" if before[e.path] else "create") for e, _ in stored]
            with disk_errors(self.root):
                self.audit.append_many(records)

        batch = [dataclasses.replace(item, metadata=self._stamped(item.metadata, before[item.path])) for item in items]
        return [WriteResult(entry, overwritten[entry.path]) for entry in self.adapter.write_many(batch, before_commit=before_commit)]

    def _prepared(self, path: str, title: str, metadata: Metadata | dict[str, Any] | None, content: str) -> tuple[str, Metadata, str]:
        """A write's checked path and metadata, and the searchable text its embedding is made from."""
        logical = normalize_path(path)
        self._check_writable()
        meta = metadata if isinstance(metadata, Metadata) else Metadata.model_validate(metadata or {})
        return logical, meta, self._card(title, meta, content)  # before the entry exists

    def _stored(
        self,
        logical: str,
        content: str,
        title: str,
        meta: Metadata,
        text: str,
        vector: np.ndarray | None,
        *,
        expected_content: str | None = None,
        updated_at: datetime | None = None,
        hits: int | None = None,
    ) -> WriteResult:
        """Store a prepared write (see `write`) under the lock, with its vector (None: not embedded)."""
        model_id = self._model_id() if vector is not None else None
        if vector is None and self.model.state is ModelState.LOADING:
            self._written_unembedded.add(logical)  # embedded once the model is ready, at the latest on close
        with self._exclusive(), self._index_first(logical):
            overwritten = self.adapter.exists(logical)
            if expected_content is not None and (
                not overwritten or self.adapter.read_contents([logical])[0] != expected_content
            ):
                raise StaleEditError(logical)
            before = self._existing(logical) if overwritten else None
            self._guard(logical, before, "update")

            def before_commit(written: Entry, stats: FileStats) -> None:
                self._index_entry(written, text, model_id, stats)
                self._record(logical, before, written, "update" if before is not None else "create")

            entry = self.adapter.write(
                logical, content, title=title, metadata=self._stamped(meta, before),
                embedding=vector, hits=hits, updated_at=updated_at,
                embedding_model=model_id, embedding_text_hash=text_hash(text), before_commit=before_commit,
            )
        return WriteResult(entry, overwritten)

    def read(self, path: str, *, count_hit: bool = False) -> Entry:
        """Read an entry (following merge/move stubs); ``count_hit`` for reads on the agent's behalf.

        A counted read rewrites the entry's ``.yml``; its index row takes the new count too, so
        that listings can come from the index again (`_entries`).
        """
        logical = normalize_path(path)
        if not count_hit:
            return self.adapter.read_entry(logical)
        if self.read_only:
            return self._cached(logical) or self._remember(logical, lambda: self.adapter.read_entry(logical))
        with self._changing():
            before = self.adapter.stats(logical)
            cached = self._cached(logical)
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
        self._save_cache_figures(every=CACHE_FIGURES_EVERY)
        return entry

    def contents(self, paths: Sequence[str]) -> builtins.list[str]:
        """The content of each entry at ``paths`` ("" for one gone since), reading only its ``.md``:
        what a result's snippet needs, at a fraction of `read`'s cost (no sidecar, vector or stub walk)."""
        return self.adapter.read_contents([normalize_path(path) for path in paths])

    def _cached(self, logical: str) -> Entry | None:
        """The cache's fresh copy of the entry at ``logical`` (a hit), or None (a miss, or no cache)."""
        return self.cache.get(logical) if self.cache is not None else None

    def _remember(self, logical: str, read: Callable[[], Entry]) -> Entry:
        """``read()`` the entry at ``logical`` and cache it with the stats taken before reading
        (a change in between makes it stale, never served: `memdir.storage.entry_cache`)."""
        if self.cache is None:
            return read()
        stats = self.cache.stats_of(logical)
        entry = read()
        if entry.path == logical:
            self.cache.put(entry, stats)
        return entry

    def prefetch(self, paths: Iterable[str]) -> int:
        """Read entries into the cache ahead of the agent's reads (no hit is counted); how many were cached.

        Entries that vanished or cannot be read are skipped: prefetching is a guess.
        """
        if self.cache is None:
            return 0
        done = 0
        for path in paths:
            try:
                logical = normalize_path(path)
                if self.adapter.read_redirect(logical) is not None:
                    continue  # a stub: reads of it are reads of its target
                stats = self.cache.stats_of(logical)
                entry = self.adapter.read_entry(logical, follow=False)
            except MemdirError:
                continue
            if not entry.virtual:
                self.cache.put(entry, stats, prefetch=True)
                done += 1
        return done

    def _save_cache_figures(self, every: int | None = None) -> None:
        """Keep the cache's hit and miss counts where `memdir status` (another process) finds them:
        at close, and every ``every`` lookups. Best effort: figures are not worth failing a read for."""
        cache = self.cache
        if cache is None or self.read_only or not (cache.hits + cache.misses):
            return
        if every is not None and (cache.hits + cache.misses) % every:
            return
        try:
            save_report(self.root, PrefetchReport.of(cache.stats(), self.actor.label))
        except (OSError, MemdirError) as exc:
            log.debug("prefetch figures not saved: %s", exc)

    def exists(self, path: str) -> bool:
        return self.adapter.exists(normalize_path(path))

    def delete(self, path: str) -> str:
        """Delete an entry (all its files and index rows); returns the normalised path."""
        logical = normalize_path(path)
        try:
            self._delete(logical)
        except DiskFullError:
            if self.index.in_memory:
                raise
            # Deleting is how a full disk is cleaned up: if the index file cannot take even
            # that, this process goes on with the index in memory (the files stay the truth).
            log.warning("the derived index cannot grow: it is kept in memory by this process")
            self.index.keep_in_memory()
            self._delete(logical)
        return logical

    def _delete(self, logical: str) -> None:
        with self._exclusive(), self._index_first(logical):  # (the adapter raises EntryNotFoundError)
            before = self._existing(logical)
            self._guard(logical, before, "delete")
            self.adapter.delete(logical, before_commit=lambda: self.index.remove(logical))
            # Recorded after the commit point, unlike other changes: a delete is how a full disk
            # is cleaned up, and the room the audit line needs is what the delete just freed.
            try:
                self._record(logical, before, None, "delete")
            except DiskFullError:
                log.warning("the deletion of %s is not in the audit log: the disk is full", logical)

    def delete_and_unlink(self, path: str) -> tuple[str, builtins.list[str]]:
        """Delete an entry and remove the links other entries had to it (typed ones and ``related``).

        Both happen under one hold of the write lock, so no reader sees a link to the
        deleted entry. Returns the normalised path and the entries whose links were removed.
        The entries linking to it may belong to other agents: dropping their links to an entry
        its owner (or an admin) deleted is part of that delete, and each is audited as ``unlink``.
        """
        with self._changing():
            logical = self.delete(path)
            return logical, self.remove_links_to(logical)

    def remove_links_to(self, target: str) -> builtins.list[str]:
        """Remove every link to ``target`` (typed ``links`` and ``related`` paths) from the entries'
        metadata; returns the entries changed.

        The derived index's link table names the entries to change (no ``.yml`` is read
        but theirs); each keeps its content, age and read count. Links written into an
        entry's content (frontmatter) are the author's text and stay; ``analyze`` reports them.
        """
        target = normalize_path(target)
        changed = []
        with self._changing():
            for path in self.index.linking_to(target):
                entry = self.adapter.read_entry(path, follow=False)
                if self._set_links(entry, lambda link: link.target != target, "unlink", target=target):
                    changed.append(path)
        return changed

    def edges(self, paths: Iterable[str], kinds: Iterable[str] | None = None) -> builtins.list[Edge]:
        """Every link from or to one of ``paths`` (of ``kinds``, when given), from the derived index."""
        self._refresh()
        return self.index.edges(list(paths), list(kinds) if kinds else None)

    def links(self, path: str) -> builtins.list[Link]:
        """The links an entry holds (typed ``links``, then ``related`` paths as ``references``)."""
        return self.adapter.read_entry(normalize_path(path), follow=False).metadata.all_links

    def link(
        self, source: str, target: str, kind: str = RELATED_KIND, strength: float = 1.0, *, origin: str = "user"
    ) -> Link:
        """Link ``source`` to ``target`` (both existing entries), replacing a link of the same kind.

        Raises:
            InputValidationError: an unknown kind or origin, a strength outside [0, 1], a link to itself.
            EntryNotFoundError: either entry does not exist.
        """
        wanted = make_link(target, kind, strength, origin)
        logical = normalize_path(source)
        if wanted.target == logical:
            raise InputValidationError(f"{logical} cannot link to itself.", "Name two different entries.")
        with self._exclusive():
            if not self.adapter.exists(wanted.target):
                raise EntryNotFoundError(wanted.target)
            entry = self.adapter.read_entry(logical, follow=False)
            if entry.virtual:
                raise ReadOnlyEntryError(logical)
            self._guard(logical, entry, "link")
            kept = [link for link in entry.metadata.links if link.key != wanted.key]
            self._store_metadata(entry, entry.metadata.model_copy(update={"links": [*kept, wanted]}),
                                 "link", target=wanted.target, kind=wanted.kind)
        return wanted

    def unlink(self, source: str, target: str, kind: str | None = None) -> builtins.list[Link]:
        """Remove the links from ``source`` to ``target`` (of one ``kind``, or all); returns those removed.

        A ``related`` path to ``target`` is a ``references`` link and goes too.

        Raises:
            InputValidationError: an unknown kind, or no such link (the message lists the entry's links).
            EntryNotFoundError: ``source`` does not exist.
        """
        logical, goal = normalize_path(source), normalize_path(target)
        wanted = check_link_kind(kind) if kind is not None else None

        def goes(link: Link) -> bool:
            return link.target == goal and (wanted is None or link.kind == wanted)

        with self._exclusive():
            entry = self.adapter.read_entry(logical, follow=False)
            removed = [link for link in entry.metadata.all_links if goes(link)]
            if not removed:
                held = ", ".join(f"{link.kind} → {link.target}" for link in entry.metadata.all_links) or "none"
                raise InputValidationError(
                    f"{logical} has no {wanted or ''}{' ' if wanted else ''}link to {goal} (its links: {held}).",
                    "Check the paths and the kind (MemoryGraph shows an entry's links).",
                )
            self._guard(logical, entry, "unlink")
            self._set_links(entry, lambda link: not goes(link), "unlink", target=goal)
        return removed

    def record_traversal(self, source: str, target: str, when: datetime | None = None) -> int:
        """Note that someone followed the link between ``source`` and ``target`` (either way):
        each such link's ``traversed_at`` becomes ``when`` (now). Returns the links updated.

        A ``related`` path followed becomes a typed ``references`` link carrying the time (the
        path stays in ``related`` for SwarmMemory). Nothing happens on a read-only root.
        """
        if self.read_only:
            return 0
        ends = normalize_path(source), normalize_path(target)
        moment = when or utcnow()
        updated = 0
        with self._changing():
            for holder, other in (ends, ends[::-1]):
                try:
                    entry = self.adapter.read_entry(holder, follow=False)
                except EntryNotFoundError:
                    continue
                followed = [link for link in entry.metadata.all_links if link.target == other]
                if not followed or entry.virtual:
                    continue
                touched = {link.key: link.model_copy(update={"traversed_at": moment}) for link in followed}
                links = [touched.pop(link.key, link) for link in entry.metadata.links] + list(touched.values())
                self._store_metadata(entry, entry.metadata.model_copy(update={"links": links}), None)
                updated += len(followed)
        return updated

    def _set_links(self, entry: Entry, keep: Callable[[Link], bool], action: str, **facts: Any) -> bool:
        """Keep only the links (typed and ``related``) that ``keep`` accepts; False if none went.
        ``action`` and ``facts`` are the audit record's (see `_store_metadata`)."""
        meta = entry.metadata
        links = [link for link in meta.links if keep(link)]
        related = [path for path in meta.related if all(map(keep, related_links([path])))]  # unreadable ones stay
        if len(links) == len(meta.links) and len(related) == len(meta.related):
            return False
        self._store_metadata(entry, meta.model_copy(update={"links": links, "related": related}), action, **facts)
        return True

    def update_metadata(self, path: str, changes: dict[str, Any]) -> Entry:
        """Set (or, with None, remove) metadata fields of an entry, keeping everything else.

        For maintenance that changes what an entry *is* to memdir, not what it says — its
        importance, ``archived_at``, ``superseded_by``, links: the content, age and read count
        stay, and so does the vector when the searchable text is unchanged (no model needed).
        A change to a field the entry is embedded from (tags, domain) is a plain `write`.

        Raises:
            EntryNotFoundError: no entry at ``path`` (a stub is no entry here).
            InputValidationError: the changed metadata is not valid.
        """
        logical = normalize_path(path)
        with self._exclusive():
            entry = self.adapter.read_entry(logical, follow=False)
            metadata = _changed_metadata(entry, changes)
            action, facts = _metadata_action(entry.metadata, metadata)
            self._guard(logical, entry, action)
            if self._card(entry.title, metadata, entry.content) != self._searchable(entry):
                label, details = self._label(action)
                with self.action(label, **{**facts, **details}):  # recorded as this change, not a plain update
                    return self.write(logical, entry.content, title=entry.title, metadata=metadata,
                                      updated_at=entry.updated_at, hits=entry.hits).entry
            return self._store_metadata(entry, metadata, action, **facts)

    def update_metadata_many(self, changes: Mapping[str, FieldChanges | Callable[[Entry], FieldChanges | None]]) -> builtins.list[Entry]:
        """`update_metadata` of many entries as ONE change of files and index (the evolution jobs'
        batches: one commit instead of one per entry): only `BULK_FIELDS` — importance, archival,
        supersession, links — none of which the entries are embedded from. Entries that no longer
        exist are left out, and so are those this memory's actor may not change (another agent's,
        `check_change` says why): a job run by one agent changes its own entries and ownerless
        ones; an admin's changes all. Each entry changed is audited (archive, unarchive, supersede
        or update, with the fields changed).

        Args:
            changes: path -> the fields to set (None: remove), or a function from the entry as
                it is read under the lock to those fields (None or empty: leave it) — a job that
                decides from the entry itself (link decay) then reads each entry once, not twice.

        Returns:
            The updated entries.

        Raises:
            InputValidationError: a changed metadata is not valid; nothing is changed then.
            ValueError: a field outside `BULK_FIELDS`.
        """
        wanted = {normalize_path(path): change for path, change in changes.items()}
        _check_bulk_fields(change for change in wanted.values() if not callable(change))
        before: dict[str, tuple[Entry, str, dict[str, Any]]] = {}  # path -> (entry as read, audit action, facts)

        def changed(entry: Entry) -> Metadata | None:  # under the lock, from the adapter's one read
            change = wanted[entry.path]
            if callable(change):
                fields = change(entry)
                if not fields:
                    return None
                _check_bulk_fields([fields])
            else:
                fields = change
            metadata = _changed_metadata(entry, fields)
            action, facts = _metadata_action(entry.metadata, metadata)
            self._guard(entry.path, entry, action)  # (the index lagged a hand edit)
            before[entry.path] = (entry, action, facts)
            return metadata.model_copy(update={"modified_by": self.actor.name})

        def index_first(stored: builtins.list[tuple[Entry, FileStats]]) -> None:  # before the commit point, in one transaction
            rows = []
            for written, stats in stored:
                card = text_hash(self._searchable(written))
                rows.append((written, stats, card, written.embedding_model, written.embedding_text_hash or card))
            self.index.restamp_metadata(rows)
            records = []
            for written, _ in stored:
                entry, action, facts = before[written.path]
                records.append(self._audit_record(written.path, entry, written, action, **facts))
            with disk_errors(self.root):
                self.audit.append_many(records)

        with self._exclusive(), self._index_first(*wanted):
            labels = self.index.labels(list(wanted))
            allowed = [path for path in wanted if self.actor.may_change(labels.get(path, NO_LABELS))]
            if len(allowed) < len(wanted):
                log.info("%s may not change %d of the entries: left as they are", self.actor.label, len(wanted) - len(allowed))
            return self.adapter.set_metadata(dict.fromkeys(allowed, changed), before_commit=index_first)

    def recalibrate_importance(self, changes: Iterable[ImportanceChange]) -> builtins.list[ImportanceChange]:
        """Keep the importance job's recalibrated importance: recorded in the store's importance history
        (``evolution/importance.jsonl``, or a row each in PostgreSQL; with the importance each entry
        states now), then held by the index, where ranking,
        archival and prefetch read it. The entries' files are not rewritten: what an entry
        states is what a person or agent set, and a recalibration counts only while the entry
        still states that (one set later, by hand or by a write, wins); a daily recalibration
        does not rewrite thousands of ``.yml`` files under the user's version control either.
        A rebuilt index replays the record, so deleting ``.memdir/`` loses nothing.

        Entries that no longer exist are left out, and so are those this memory's actor may
        not change (as in `update_metadata_many`).

        Returns:
            The changes kept, each with the importance its entry states.
        """
        wanted = {normalize_path(change.path): change for change in changes}
        with self._exclusive():
            labels = self.index.labels(list(wanted))
            facts = self.index.rank_facts(list(wanted))
            kept = [
                dataclasses.replace(change, path=path, stated=facts[path].stated) for path, change in wanted.items()
                if path in facts and self.actor.may_change(labels.get(path, NO_LABELS))
            ]  # fmt: skip
            if kept:
                with disk_errors(self.root):
                    record_importance(self.adapter.records, kept)
                self.index.recalibrate(kept)
        return kept

    def importance(self, path: str) -> float | None:
        """The importance of the entry at ``path`` as ranking sees it (recalibrated, else stated;
        None when neither gives one or there is no such entry)."""
        logical = normalize_path(path)
        facts = self.index.rank_facts([logical]).get(logical)
        return facts.importance if facts else None

    def _store_metadata(self, entry: Entry, metadata: Metadata, action: str | None, **facts: Any) -> Entry:
        """Store new metadata that is not part of the searchable text (links, importance, archival):
        the entry keeps its vector (no model needed) as well as its content, age and read count.

        ``action`` (with ``facts``) is what the audit log records, unless the caller labelled the
        change (`action`); None for bookkeeping that changes nothing an entry says (a link's
        traversal time): not audited, and ``modified_by`` stays.
        """
        if action is not None:
            metadata = metadata.model_copy(update={"modified_by": self.actor.name})

        def index_first(written: Entry, stats: FileStats) -> None:  # before the commit point, as `write` does
            self.index.upsert(written, stats, text_hash(self._searchable(written)), entry.embedding_model,
                              vector_text_hash=entry.embedding_text_hash)
            if action is not None:
                self._record(entry.path, entry, written, action, **facts)

        with self._index_first(entry.path):
            return self.adapter.write(
                entry.path, entry.content, title=entry.title, metadata=metadata,
                embedding=entry.embedding, hits=entry.hits, updated_at=entry.updated_at,
                embedding_model=entry.embedding_model, embedding_text_hash=entry.embedding_text_hash,
                before_commit=index_first,
            )

    def write_stub(self, path: str, target: str, kind: str = "merged", *, owner: str | None = None) -> None:
        """Turn ``path`` into a stub redirecting to ``target`` (used by merges and moves).

        The stub keeps the owner of what it replaces (``owner`` when nothing is there: an undo
        putting back a stub it recorded), so no other agent may overwrite or delete it and take
        over the path its readers are redirected through.
        """
        logical, goal = normalize_path(path), normalize_path(target)
        action = "merge" if kind == "merged" else "stub"
        with self._exclusive(), self._index_first(logical):
            before = self._existing(logical)
            self._guard(logical, before, action)
            if before is not None:
                owner = before.metadata.labels().created_by

            def before_commit() -> None:
                self.index.remove(logical)
                self._record(logical, before, None, action, into=goal)

            self.adapter.write_stub(logical, Redirect(kind, goal), owner=owner, before_commit=before_commit)

    def redirect_of(self, path: str) -> Redirect | None:
        return self.adapter.read_redirect(normalize_path(path))

    def list(self, prefix: str | None = None, *, include_virtual: bool = True, view: Actor | None = None) -> builtins.list[EntryInfo]:
        """Every entry (stubs excluded), optionally under a folder prefix, in path order.

        Args:
            view: keep only the entries in this actor's view (`Actor.sees`); None keeps all.
        """
        infos = self._entries(path_filter(prefix), include_virtual=include_virtual, under=filter_folder(prefix))
        return self.in_view(infos, view)

    def in_view(self, items: builtins.list[T], view: Actor | None) -> builtins.list[T]:
        """The items (anything with a ``path``: listings, search results) whose entry is in
        ``view`` (`Actor.sees`, on the labels the derived index keeps), in their order; all for None."""
        if view is None or not items:
            return items
        labels = self.index.labels([item.path for item in items])
        return [item for item in items if view.sees(labels.get(item.path, NO_LABELS))]

    def _entries(
        self, keep: Callable[[str], bool], *, include_virtual: bool = True, under: str | None = None
    ) -> builtins.list[EntryInfo]:
        """The entries whose path ``keep`` accepts, with title, type, hits and updated_at, in path order (`_listed`)."""
        infos = self._listed(keep, include_virtual=include_virtual, under=under).infos()
        return sorted(infos, key=lambda info: info.path)

    def _listed(self, keep: Callable[[str], bool], *, include_virtual: bool = True, under: str | None = None) -> Listed:
        """The entries whose path ``keep`` accepts.

        From the derived index's rows, with the folders changed since they were last found as
        the rows have them listed again (`memdir.storage.directory.root_listing`; `memdir.storage.directory.folder_stamps`
        says what may lag, and until when); from a walk when the stamps cannot tell (`_walked_entries`).
        """
        listed = self._listing.select(keep, under)
        if listed is None:
            listed = Listed(None, [], self._walked_entries(keep, under))
        if include_virtual:
            listed = listed.with_read(virtual_info(path) for path in virtual_paths() if keep(path))
        return listed

    def _walked_entries(self, keep: Callable[[str], bool], under: str | None) -> builtins.list[EntryInfo]:
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
        paged = paged_listing(self._listing)
        if limit is not None and paged is not None:
            page = paged.newest(glob_folder(pattern), limit, self._keeping(keep, view))
            return GlobPage(page.entries, None if page.more else len(page.entries))
        listed = self._listed(keep, under=glob_folder(pattern))
        if view is not None and len(listed):
            labels = self.index.labels(listed.paths())
            listed = listed.only(lambda path: view.sees(labels.get(path, NO_LABELS)))
        shown = listed.newest(limit)
        return GlobPage(shown if limit is None else self._listing.as_files_say(shown), len(listed))

    def _keeping(self, keep: Callable[[str], bool], view: Actor | None) -> Callable[[builtins.list[EntryInfo]], builtins.list[EntryInfo]]:
        """What of a chunk of listed entries a page keeps: those ``keep`` accepts, in ``view``."""
        return lambda infos: self.in_view([info for info in infos if keep(info.path)], view)

    def list_page(self, after: str | None, limit: int, *, under: str | None = None, view: Actor | None = None) -> ListPage:
        """The first ``limit`` entries (built-ins included) after the path ``after`` (None: from the
        first), under the folder ``under``, in ``view``, in path order: a database reads this page
        alone, the directory store takes it from its whole listing (in memory)."""
        paged = paged_listing(self._listing)
        if paged is not None:
            page = paged.in_path_order(under, after, limit, self._keeping(lambda path: True, view))
            shown, more = page.entries, page.more
        else:
            listed = [info for info in self.list(under, view=view) if after is None or info.path > after]
            shown, more = listed[:limit], len(listed) > limit
        return ListPage(shown, shown[-1].path if more and shown else None)

    def numbered_page(self, under: str | None, number: int, size: int) -> tuple[builtins.list[EntryInfo], int]:
        """Page ``number`` (from 1) of ``size`` entries under ``under`` in path order, and how many there are."""
        paged = paged_listing(self._listing)
        if paged is not None:
            return paged.at_offset(under, (number - 1) * size, size), paged.count(under)
        listed = self.list(under)
        return listed[(number - 1) * size:number * size], len(listed)

    def top_folders(self) -> builtins.list[str]:
        """The top-level folders that hold entries (built-ins included)."""
        paged = paged_listing(self._listing)
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
            for entry_path, fields in self._labels(paths).items():
                where = matching_fields(compiled, fields)
                if where:
                    hit = hits.setdefault(entry_path, GrepHit(entry_path))
                    hit.where[:0] = where
        return [hits[p] for p in paths if p in hits]

    def _labels(self, paths: builtins.list[str]) -> dict[str, dict[str, tuple[str, ...]]]:
        """Title, tags and domain of each entry: from the index (no file read), built-in ones from their own metadata."""
        self._refresh()
        rows = self.index.rows([p for p in paths if not is_virtual(p)])
        labels = {p: {"title": (row.title,), "tags": row.tags, "domain": (row.domain,)} for p, row in rows.items()}
        for builtin in filter(is_virtual, paths):
            entry = load_virtual(builtin)
            labels[builtin] = {"title": (entry.title,), "tags": tuple(entry.metadata.tags),
                               "domain": (entry.metadata.domain or "",)}
        return labels

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        """Titles for display (missing entries are left out)."""
        found: dict[str, str] = {}
        for path in paths:
            try:
                found[path] = self.adapter.read_entry(normalize_path(path), follow=False).title
            except Exception:  # a dangling related link is shown without a title
                continue
        return found

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        *,
        top_k: int = 10,
        threshold: float | None = None,
        types: Iterable[str] | None = None,
        path_prefix: str | None = None,
        tags: Iterable[str] | None = None,
        include_archived: bool = False,
        view: Actor | None = None,
        min_importance: float | None = None,
    ) -> builtins.list[SearchResult]:
        """Hybrid search (semantic + BM25 + tags, then graph, importance and recency when their
        weights are set); keyword-only while no model is ready.

        Built-in skills are in every root: they answer searches for skills (``types``
        with ``skill``, a ``skill/`` prefix), not every content search of every root.

        Args:
            view: only entries in this actor's view (`Actor.sees`). Out-of-view hits are
                dropped before the ``top_k`` cut: the search asks for more until ``top_k``
                remain or nothing more matches, so a view never makes results come back short.
            include_archived: keep archived and superseded entries (left out by default).
            min_importance: only entries whose importance, as ranking sees it (1-10, none
                stated: 5), is at least this; like a view, applied before the ``top_k`` cut.
        """
        self._refresh()
        types = list(types) if types else None
        hidden = _unasked_builtins(types, path_prefix)
        wanted = top_k + len(hidden)
        while True:
            results = self.searcher.search(
                query,
                top_k=wanted,
                threshold=threshold,
                types=types,
                path_prefix=path_prefix,
                tags=list(tags) if tags else None,
                include_hidden=include_archived,
            )
            kept = self.in_view([result for result in results if result.path not in hidden], view)
            if min_importance is not None:
                kept = self._important(kept, min_importance)
            if len(kept) >= top_k or len(results) < wanted:
                return kept[:top_k]
            wanted *= 4

    def _important(self, results: builtins.list[SearchResult], least: float) -> builtins.list[SearchResult]:
        """The results whose importance (`importance`; built-ins and entries stating none: 5) is at least ``least``."""
        facts = self.index.rank_facts([result.path for result in results])
        return [result for result in results
                if importance_on_scale(result.path, row.importance if (row := facts.get(result.path)) else None) >= least]

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """How many entries contain each keyword term (a Porter stem, as `SearchResult.matched` has them)."""
        return self.index.document_frequencies(terms)

    def term_weights(self, query: str) -> dict[str, float]:
        """The query's keyword terms (Porter stems) weighted by their idf in this store, as search
        weighs them (a word in most entries still counts a little): what snippets rank lines by."""
        terms = list(dict.fromkeys(porter_stem(word) for word in extract_keywords(query)))
        with self.index.reading():
            return self.searcher.idf(terms)

    def nearest(self, vector: np.ndarray, limit: int) -> builtins.list[tuple[str, float]]:
        """The ``limit`` entries whose vectors (of the current model) are nearest ``vector``:
        ``(path, cosine)``, nearest first. The index answers (HNSW on PostgreSQL, the in-memory
        matrix locally): no vector is read out of the store.
        """
        self._refresh()
        with self.index.reading():
            hits = self.index.semantic_hits(np.asarray(vector, dtype=np.float32).ravel(), self._model_id(), limit,
                                            types=None, path_prefix=None, tags=None)
            if hits is None:
                return []
            top = hits.top[:limit]
            return [(path, float(cosine)) for path, cosine in zip(top, hits.cosines(top))]

    def vectors(self) -> tuple[builtins.list[str], np.ndarray]:
        """(paths, matrix) of every entry embedded by the current model: one L2-normalised row per path.

        Vectors of another model (left from before a model switch, until re-embedded) are
        left out: they are not comparable with the current ones.
        """
        self._refresh()
        return self.index.vector_snapshot(self._model_id())

    # ------------------------------------------------------------------ model & index maintenance
    def status(self) -> MemoryStatus:
        """The root's figures; the built-in entries every root has are counted apart (``builtins``),
        so a fresh root reports no entries, none waiting for the model, and a fresh index."""
        self._refresh()
        embedder = self.model.peek()
        stats = self.index.stats(embedder.model_id if embedder else None)
        builtins = len(self.index.rows(list(virtual_paths())))
        stale = sum(not is_virtual(path) for path in self.index.needs_embedding(embedder.model_id if embedder else None))
        entries = stats.entries - builtins
        return MemoryStatus(
            root=self.root,
            entries=entries,
            builtins=builtins,
            embedded=entries - stale,
            total_size=self.adapter.total_size(),
            model_state=self.model.state.value,
            model_id=embedder.model_id if embedder else None,
            model_source=embedder.source if embedder else None,
            dimensions=embedder.dimensions if embedder else None,
            reason=self.model.reason,
            index_fresh=stale == 0,
            stale=stale,
            prefetch=self._prefetch_report(),
            store=shown(self.settings.store) if self.settings.store.strip() else "files",
        )

    def _prefetch_report(self) -> PrefetchReport | None:
        """This process's cache figures once it has served reads or when it is a server (from its first
        second: not the previous server's), else the last ones a server saved (`memdir status`)."""
        if self.cache is not None and (self._serving or self.cache.hits + self.cache.misses):
            return PrefetchReport.of(self.cache.stats(), self.actor.label)
        return load_report(self.root)

    def rebuild(self, *, progress: ProgressCallback | None = None, everything: bool = True) -> Rebuilt:
        """Re-embed entries in length-sorted batches; says how many were embedded, built-ins apart.

        Args:
            everything: True re-embeds every entry (after a model or max-chars change);
                False only those without a current vector.
        """
        self.reconcile()
        waiting = set(self.index.needs_embedding(self._model_id()))  # the model-ready catch-up may take some
        embedder = self.model.get()
        if embedder is None:
            return Rebuilt(0, 0)
        if everything:
            paths = [info.path for info in self.adapter.iter_entries(with_metadata=False)]
        else:
            paths = self.index.needs_embedding(embedder.model_id)
        self._embed_paths(embedder, paths, progress)
        left = set(self.index.needs_embedding(embedder.model_id))
        done = (waiting | set(paths)) - left
        builtins = sum(map(is_virtual, done))
        return Rebuilt(len(done) - builtins, builtins)

    def reconcile(self, *, in_place_edits: bool = True) -> None:
        """Bring the derived index in line with the files (changed by hand, by a killed writer, ...).

        Only the folders changed since the last reconcile are listed (`memdir.storage.directory.root_listing`).

        Args:
            in_place_edits: also stat every other entry's ``.md`` and ``.yml``: a file rewritten in
                place changes no folder (opening does this; repairing after a killed writer,
                whose renames changed their folders, need not).
        """
        # Built-in entries have no files of their own; listed with constant stats, they are
        # indexed once (and embedded once) like any entry, so search and discovery find them.
        builtins = [(path, self.adapter.stats(path)) for path in virtual_paths()]
        recipe = text_recipe(self.settings.embedding_max_chars, self.settings.embedding_summary)
        # Read-only, the index is this process's own (or changes only as the files say), and
        # the files cannot change under the shared lock; no repair runs (it writes).
        lock = self.adapter.lock.shared() if self.read_only else self.adapter.lock.exclusive()
        with lock:
            plan = self._listing.plan(recipe, in_place_edits=in_place_edits)
            report = self.index.reconcile(
                [*plan.files, *builtins],
                lambda path: self.adapter.read_entry(path, follow=False),
                lambda entry: text_hash(self._searchable(entry)),
                model_id=self._model_id(),
                text_recipe=recipe,
                covered=plan.covered,
                known=plan.known,
            )
            stamps = plan.stamps(report.failed)
            self.index.record_folder_stamps(stamps)
            self._listing.stamps = stamps or {}

    @contextmanager
    def _changing(self) -> Iterator[None]:
        """The exclusive lock, over an index that holds every file change committed before.

        A writer killed between committing its files and updating the index leaves a change
        the index lacks; recording a new change on top without a re-scan would hide it for good.
        """
        with self.adapter.lock.exclusive():
            if self.index.behind_files():
                self.reconcile(in_place_edits=False)  # a killed writer's renames changed their folders
            yield

    def _refresh(self) -> None:
        """Catch the index up with other processes, re-scanning the files if a writer died mid-change.

        While another process holds the lock, a lagging index means a writer between its files
        and its index update (or a dead one that writer's `_changing` will repair): nobody waits.
        """
        if not self.index.behind_files() or self.adapter.lock.mode == "shared":
            return
        try:
            with self.adapter.lock.exclusive(timeout=0):  # free: nobody is mid-change
                if self.index.behind_files():
                    self.reconcile(in_place_edits=False)
        except LockTimeoutError:
            pass

    def _searchable(self, entry: Entry) -> str:
        return self._card(entry.title, entry.metadata, entry.content)

    def _card(self, title: str, metadata: Metadata, content: str) -> str:
        """The searchable text of an entry, as this store's settings make it."""
        settings = self.settings
        return searchable_text(title, metadata, content, settings.embedding_max_chars, summary=settings.embedding_summary)

    def _model_id(self) -> str:
        """The model vectors are made with: the loaded one, else the configured one (what
        vectors are compared with, and re-embedded for when another model made them)."""
        embedder = self.model.peek()
        if embedder is not None:
            return embedder.model_id
        return model_id_for(self.settings.model_dir, self.settings.model_wanted)

    def _embed_pending(self, embedder: Embedder, at_most: int | None = None) -> None:
        """Once the model is ready: embed entries written without it (or under another model).

        With ``at_most``, a larger backlog is left for `rebuild` (and said so in the log).
        """
        pending = self.index.needs_embedding(embedder.model_id)
        if at_most is not None and len(pending) > at_most:
            log.info("%d entries wait for embedding: run `memdir rebuild --missing-only`", len(pending))
            return
        if pending:
            self._embed_paths(embedder, pending, None)

    def _embed_paths(
        self, embedder: Embedder, paths: builtins.list[str], progress: ProgressCallback | None, *, finish: bool = False
    ) -> int:
        """Embed ``paths`` and store their vectors; returns how many were embedded.

        A pipeline: the model embeds one chunk on a worker thread (onnxruntime releases the
        GIL) while this thread stores the previous chunk's vectors (two files per entry
        with fsync, the index rows), so the file work hides behind the model's. Chunks
        follow the entries' sizes, so the model's batches pad little. ``progress`` hears of
        every model batch (``embed_batch_size`` entries) as it is embedded, from the worker
        thread: a chunk takes several batches, and a progress bar should move with each.
        """
        batch = max(1, self.settings.embed_batch_size)
        chunk = batch * 4
        ordered = sorted(paths, key=lambda path: self.adapter.stats(path).md_size)
        done = embedded = 0
        if progress:
            progress(0, len(paths))

        def embed(texts: builtins.list[str]) -> np.ndarray:
            nonlocal embedded
            parts = []
            for start in range(0, len(texts), batch):
                parts.append(embedder.embed(texts[start : start + batch]))
                embedded += len(parts[-1])
                if progress:
                    progress(embedded, len(paths))
            return np.concatenate(parts) if parts else np.zeros((0, embedder.dimensions), dtype=np.float32)

        def store(item: tuple[builtins.list[Entry], builtins.list[str], Future[np.ndarray]]) -> None:
            nonlocal done
            done += self._store_vectors(embedder, *item)

        with ThreadPoolExecutor(1, thread_name_prefix="memdir-embed") as worker:
            pending: tuple[builtins.list[Entry], builtins.list[str], Future[np.ndarray]] | None = None
            for start in range(0, len(ordered), chunk):
                if self.model.closing and not finish:
                    break
                entries = self._readable(ordered[start : start + chunk])
                texts = [self._searchable(entry) for entry in entries]
                embedding = worker.submit(embed, texts)
                if pending is not None:
                    store(pending)  # while the model works on this chunk
                pending = (entries, texts, embedding)
            if pending is not None:
                store(pending)
        return done

    def _readable(self, paths: Iterable[str]) -> builtins.list[Entry]:
        """The entries at ``paths`` that can still be read (for embedding)."""
        entries = []
        for path in paths:
            try:
                entries.append(self.adapter.read_entry(path, follow=False))
            except Exception:  # vanished, or turned into a stub, since listing
                continue
        return entries

    def _store_vectors(self, embedder: Embedder, entries: builtins.list[Entry], texts: builtins.list[str], embedding: Future[np.ndarray]) -> int:
        """Write one chunk's vectors (files and index) once the model has made them; returns the chunk's size."""
        vectors = embedding.result()
        with self._exclusive():
            fresh: dict[str, np.ndarray] = {}
            hashes: dict[str, str] = {}
            expected: dict[str, Entry] = {}
            for entry, text, vector in zip(entries, texts, vectors):
                if entry.virtual:  # read-only package data: its vector lives in the derived index only
                    self._index_entry(entry.model_copy(update={"embedding": vector}), text, embedder.model_id)
                    continue
                fresh[entry.path], hashes[entry.path] = vector, text_hash(text)
                expected[entry.path] = entry  # changed meanwhile: its own write embedded it
            with self.index.ahead_of_files():  # the index changes just before the files commit
                self.adapter.set_embeddings(
                    fresh,
                    expected=expected,
                    model_id=embedder.model_id,
                    text_hashes=hashes,
                    before_commit=lambda stored: self.index.set_vectors(
                        (entry, stats, hashes[entry.path], embedder.model_id) for entry, stats in stored
                    ),
                )
        return len(entries)

    def _embedder_now(self) -> Embedder | None:
        """The model if ready; loads it first when nobody has started loading it (CLI use).

        A server loads it in the background instead, and meanwhile gets None (keyword search).
        """
        if self.model.state is ModelState.NOT_LOADED:
            return self.model.get()
        return self.model.peek()

    def _search_embedder(self) -> Embedder | None:
        """The model for a search: one arriving while it loads waits up to ``search_model_wait``
        seconds for it (a one-shot client's first call, a hook's first prompt) before going
        keyword-only."""
        if self.model.state is ModelState.LOADING:
            return self.model.get(timeout=self.settings.search_model_wait)
        return self._embedder_now()

    def _embed(self, texts: builtins.list[str]) -> np.ndarray | None:
        embedder = self._embedder_now()
        if embedder is None:
            return None
        try:
            return embedder.embed(texts)
        except Exception:  # the write must still succeed; the entry stays "not embedded"
            log.exception("embedding failed; the entry is stored without a vector")
            return None

    def _index_entry(self, entry: Entry, text: str, model_id: str | None, stats: FileStats | None = None) -> None:
        self.index.upsert(entry, stats or self.adapter.stats(entry.path), text_hash(text), model_id)


BULK_FIELDS = frozenset({"importance", "archived_at", "unarchived_at", "superseded_by", "links"})
"""What `Memory.update_metadata_many` may change: no text, tag or owner the index keeps otherwise."""


def _check_bulk_fields(changes: Iterable[FieldChanges]) -> None:
    """Raise ValueError for a field `Memory.update_metadata_many` may not change (see `BULK_FIELDS`)."""
    unknown = {key for change in changes for key in change} - BULK_FIELDS
    if unknown:
        raise ValueError(f"update_metadata_many changes only {sorted(BULK_FIELDS)}, not {sorted(unknown)}")


def _changed_metadata(entry: Entry, changes: dict[str, Any]) -> Metadata:
    """``entry``'s metadata with ``changes`` set (None: removed).

    Raises:
        InputValidationError: the result is not valid metadata.
    """
    data = {**entry.metadata.to_yaml_dict(), **changes}
    try:
        return Metadata.model_validate({key: value for key, value in data.items() if value is not None})
    except ValueError as exc:  # pydantic's ValidationError
        raise InputValidationError(
            f"The metadata of memory://{entry.path} cannot take {changes!r}: {exc}", "Nothing was changed."
        ) from exc


def _metadata_action(before: Metadata, after: Metadata) -> tuple[str, dict[str, Any]]:
    """The audit action of a metadata change (archive, unarchive, supersede, else update) and the fields it changed."""
    old, new = before.to_yaml_dict(), after.to_yaml_dict()
    fields = sorted(key for key in old.keys() | new.keys() if key != "modified_by" and old.get(key) != new.get(key))
    if (before.archived_at is None) != (after.archived_at is None):
        action = "archive" if after.archived_at is not None else "unarchive"
    elif after.superseded_by and after.superseded_by != before.superseded_by:
        action = "supersede"
    else:
        action = "update"
    return action, {"fields": fields}


def _distinct_runs(items: builtins.list[EntryWrite]) -> builtins.list[builtins.list[EntryWrite]]:
    """``items`` in order, cut before each path the current run holds already."""
    runs: builtins.list[builtins.list[EntryWrite]] = [[]]
    seen: set[str] = set()
    for item in items:
        if item.path in seen:
            runs.append([])
            seen.clear()
        runs[-1].append(item)
        seen.add(item.path)
    return runs


def _unasked_builtins(types: builtins.list[str] | None, path_prefix: str | None) -> tuple[str, ...]:
    """The built-in skills a search did not ask for: all, unless it names a type (the type
    filter decides) or a folder they are in (``skill/``, ``skill/meta``)."""
    if types is not None:
        return ()
    prefix = normalize_prefix(path_prefix)
    return tuple(path for path in virtual_paths() if prefix is None or not path.startswith(prefix))


__all__ = ["Memory", "MemoryStatus", "NewEntry", "WriteResult"]
