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
import functools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memdir.core.entry import Entry, Metadata
from memdir.core.errors import DiskFullError, ReadOnlyRootError
from memdir.core.identity import Actor
from memdir.core.links import RELATED_KIND, Link
from memdir.core.settings import Settings
from memdir.embeddings.base import Embedder
from memdir.embeddings.provider import ModelProvider
from memdir.memory.embedding import Embedding, ProgressCallback
from memdir.memory.keeper import IndexKeeper
from memdir.memory.links import Links
from memdir.memory.listings import Chunk, Listings, T
from memdir.memory.metadata import FieldChanges, MetadataChanges
from memdir.memory.ownership import Ownership
from memdir.memory.reads import Reads
from memdir.memory.results import GlobPage, ListPage, MemoryStatus, NewEntry, Rebuilt, WriteResult
from memdir.memory.searching import Searching
from memdir.memory.writes import Writes
from memdir.search.hybrid import HybridSearcher, SearchResult
from memdir.search.text_search import GrepHit
from memdir.storage.base import EntryIndex, Redirect, StorageAdapter
from memdir.storage.credentials import shown
from memdir.storage.entry_cache import PrefetchReport, load_report
from memdir.storage.records import Edge, EntryInfo, ImportanceChange, Narrowing, Page
from memdir.storage.stores import open_store
from memdir.storage.virtual import is_virtual, virtual_paths

log = logging.getLogger(__name__)


class Memory:
    """One memory root. Open with `Memory.open(settings)`; close (or use ``with``) when done.

    A facade: each part of the work is a collaborator built over the same store (adapter and
    index), lock and model — `Writes`, `Reads`, `Links`, `MetadataChanges`, `Listings`,
    `Searching`, `Ownership`, `Embedding` and `IndexKeeper` — and the methods below hand
    each call to the one that does it.
    """

    def __init__(self, settings: Settings, adapter: StorageAdapter, index: EntryIndex, model: ModelProvider) -> None:
        self.settings = settings
        self.adapter = adapter
        self.index = index
        self.model = model
        self.audit = adapter.audit
        self.listing = adapter.root_listing(index)
        self._keeper = IndexKeeper(settings, adapter, index, model, self.listing)
        self._owners = Ownership(settings, adapter)
        self._embedding = Embedding(settings, adapter, index, model, self._keeper)
        self.searcher = HybridSearcher(index, settings, embedder=self._embedding.search_embedder, role=lambda: self.actor.role)
        self._writes = Writes(adapter, index, model, self._keeper, self._owners, self._embedding)
        self._reads = Reads(settings, adapter, index, self._keeper, self._owners)
        self._metadata = MetadataChanges(adapter, index, self._keeper, self._owners, self._writes)
        self._links = Links(adapter, index, self._keeper, self._owners, self._metadata)
        self._listings = Listings(settings, adapter, index, self._keeper, self.listing)
        self._searching = Searching(index, self.searcher, self._keeper, self._listings)
        self.cache = self._reads.cache
        """Entries agents read (and `prefetch` put there), served to MemoryRead while unchanged."""
        self._serving = False  # opened by a server (`open(background=True)`): its own cache figures from the start

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(
        cls,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        model: ModelProvider | None = None,
        background: bool = False,
        load_model: bool = True,
        read_only: bool = False,
    ) -> Memory:
        """Open (creating if needed) the store ``settings.store_root``.

        Args:
            settings: configuration; defaults to `Settings()` (files + environment).
            embedder: use this embedder instead of resolving the real model (tests).
            model: use this model provider as it is (tests: one whose model loads slowly).
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
        if model is None and embedder is not None:
            model = ModelProvider(embedder=embedder, enabled=settings.embeddings.enabled)
        elif model is None:
            model = ModelProvider.from_settings(
                settings, enabled=settings.embeddings.enabled and load_model, download=background
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
            at_most = None if background else settings.embeddings.batch_size
            model.on_ready(functools.partial(memory._embedding.embed_pending, at_most=at_most))
        if background:
            memory._serving = True
            model.start_background()
            # A server's first listing (MemoryGlob) then finds the index's rows read and built
            # (~0.3 s of CPU at 100K entries), instead of paying for them itself.
            threading.Thread(target=memory.listing.warm, name="memdir-listing", daemon=True).start()
        return memory

    def close(self) -> None:
        """Close the memory; entries this process wrote while the model was loading are embedded first
        (the model-ready catch-up of older entries stops at its next batch instead)."""
        self._reads.save_cache_figures()
        self.model.close()
        self._embedding.embed_written()
        self.index.close()
        self.adapter.lock.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def root(self) -> Path:
        return self.adapter.root

    def delete_and_unlink(self, path: str) -> tuple[str, builtins.list[str]]:
        """Delete an entry and remove the links other entries had to it (typed ones and ``related``).

        Both happen under one hold of the write lock, so no reader sees a link to the
        deleted entry. Returns the normalised path and the entries whose links were removed.
        The entries linking to it may belong to other agents: dropping their links to an entry
        its owner (or an admin) deleted is part of that delete, and each is audited as ``unlink``.
        """
        with self._keeper.changing():
            logical = self.delete(path)
            return logical, self.remove_links_to(logical)

    def status(self) -> MemoryStatus:
        """The root's figures; the built-in entries every root has are counted apart (``builtins``),
        so a fresh root reports no entries, none waiting for the model, and a fresh index."""
        self._keeper.refresh()
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
            store=shown(self.settings.storage.store) if self.settings.storage.store.strip() else "files",
        )

    def _prefetch_report(self) -> PrefetchReport | None:
        """This process's cache figures once it has served reads or when it is a server (from its first
        second: not the previous server's), else the last ones a server saved (`memdir status`)."""
        if self.cache is not None and (self._serving or self.cache.hits + self.cache.misses):
            return PrefetchReport.of(self.cache.stats(), self.actor.label)
        return load_report(self.root)

    # ------------------------------------------------------------------ entries (`Writes`)
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
        """Create or replace an entry; embeds it when the model is ready."""
        return self._writes.write(path, content, title=title, metadata=metadata, expected_content=expected_content, updated_at=updated_at, hits=hits)

    def write_many(self, writes: Sequence[NewEntry]) -> builtins.list[WriteResult]:
        """Create or replace several entries, their embeddings computed together in batches (what bulk paths — transcript ingestion — write)."""
        return self._writes.write_many(writes)

    def exists(self, path: str) -> bool:
        return self._writes.exists(path)

    def delete(self, path: str) -> str:
        """Delete an entry (all its files and index rows); returns the normalised path."""
        return self._writes.delete(path)

    def write_stub(self, path: str, target: str, kind: str = "merged", *, owner: str | None = None) -> None:
        """Turn ``path`` into a stub redirecting to ``target`` (used by merges and moves)."""
        return self._writes.write_stub(path, target, kind, owner=owner)

    def redirect_of(self, path: str) -> Redirect | None:
        return self._writes.redirect_of(path)

    # ------------------------------------------------------------------ reads (`Reads`)
    def read(self, path: str, *, count_hit: bool = False) -> Entry:
        """Read an entry (following merge/move stubs); ``count_hit`` for reads on the agent's behalf."""
        return self._reads.read(path, count_hit=count_hit)

    def contents(self, paths: Sequence[str]) -> builtins.list[str]:
        """The content of each entry at ``paths`` ("" for one gone since), reading only its ``.md``."""
        return self._reads.contents(paths)

    def prefetch(self, paths: Iterable[str]) -> int:
        """Read entries into the cache ahead of the agent's reads (no hit is counted); how many were cached."""
        return self._reads.prefetch(paths)

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        """Titles for display (missing entries are left out)."""
        return self._reads.titles(paths)

    # ------------------------------------------------------------------ links (`Links`)
    def remove_links_to(self, target: str) -> builtins.list[str]:
        """Remove every link to ``target`` (typed ``links`` and ``related`` paths) from the entries' metadata; returns the entries changed."""
        return self._links.remove_links_to(target)

    def edges(self, paths: Iterable[str], kinds: Iterable[str] | None = None) -> builtins.list[Edge]:
        """Every link from or to one of ``paths`` (of ``kinds``, when given), from the derived index."""
        return self._links.edges(paths, kinds)

    def links(self, path: str) -> builtins.list[Link]:
        """The links an entry holds (typed ``links``, then ``related`` paths as ``references``)."""
        return self._links.of(path)

    def link(
        self, source: str, target: str, kind: str = RELATED_KIND, strength: float = 1.0, *, origin: str = "user"
    ) -> Link:
        """Link ``source`` to ``target`` (both existing entries), replacing a link of the same kind."""
        return self._links.link(source, target, kind, strength, origin=origin)

    def unlink(self, source: str, target: str, kind: str | None = None) -> builtins.list[Link]:
        """Remove the links from ``source`` to ``target`` (of one ``kind``, or all); returns those removed."""
        return self._links.unlink(source, target, kind)

    def record_traversal(self, source: str, target: str, when: datetime | None = None) -> int:
        """Note that someone followed the link between ``source`` and ``target`` (either way)."""
        return self._links.record_traversal(source, target, when)

    # ------------------------------------------------------------------ metadata (`MetadataChanges`)
    def update_metadata(self, path: str, changes: dict[str, Any]) -> Entry:
        """Set (or, with None, remove) metadata fields of an entry, keeping everything else."""
        return self._metadata.update(path, changes)

    def update_metadata_many(self, changes: Mapping[str, FieldChanges | Callable[[Entry], FieldChanges | None]]) -> builtins.list[Entry]:
        """`update_metadata` of many entries as one change of files and index (the evolution jobs' batches)."""
        return self._metadata.update_many(changes)

    def recalibrate_importance(self, changes: Iterable[ImportanceChange]) -> builtins.list[ImportanceChange]:
        """Keep the importance job's recalibrated importance."""
        return self._metadata.recalibrate_importance(changes)

    def importance(self, path: str) -> float | None:
        """The importance of the entry at ``path`` as ranking sees it (recalibrated, else stated."""
        return self._metadata.importance(path)

    # ------------------------------------------------------------------ listings (`Listings`)
    def list(self, prefix: str | None = None, *, include_virtual: bool = True, view: Actor | None = None) -> builtins.list[EntryInfo]:
        """Every entry (stubs excluded), optionally under a folder prefix, in path order."""
        return self._listings.list(prefix, include_virtual=include_virtual, view=view)

    def in_view(self, items: builtins.list[T], view: Actor | None) -> builtins.list[T]:
        """The items (listings, search results) whose entry is in ``view``, in their order; all for None."""
        return self._listings.in_view(items, view)

    def list_stubs(self) -> builtins.list[EntryInfo]:
        """Stub entries only (defrag's cleanup needs them; nothing else lists them)."""
        return self._listings.list_stubs()

    def glob(self, pattern: str, *, view: Actor | None = None) -> builtins.list[EntryInfo]:
        """Entries matching a glob (`memdir.search.text_search.normalize_glob`), newest first; ``view`` as in `list`."""
        return self._listings.glob(pattern, view=view)

    def glob_page(self, pattern: str, limit: int | None, *, view: Actor | None = None) -> GlobPage:
        """The ``limit`` newest entries matching a glob (all for None) and how many match; as `glob`."""
        return self._listings.glob_page(pattern, limit, view=view)

    def list_page(self, after: str | None, limit: int, *, under: str | None = None, view: Actor | None = None) -> ListPage:
        """The first ``limit`` entries (built-ins included) after the path ``after`` (None."""
        return self._listings.list_page(after, limit, under=under, view=view)

    def numbered_page(self, under: str | None, number: int, size: int) -> tuple[builtins.list[EntryInfo], int]:
        """Page ``number`` (from 1) of ``size`` entries under ``under`` in path order, and how many there are."""
        return self._listings.numbered_page(under, number, size)

    def page_where(self, under: str | None, limit: int, keep: Chunk, narrow: Narrowing, *, newest: bool) -> Page | None:
        """The first ``limit`` entries under ``under`` and ``narrow`` that ``keep`` keeps (a database reads one page)."""
        return self._listings.page_where(under, limit, keep, narrow, newest=newest)

    def top_folders(self) -> builtins.list[str]:
        """The top-level folders that hold entries (built-ins included)."""
        return self._listings.top_folders()

    def grep(
        self, pattern: str, *, path: str | None = None, case_insensitive: bool = False, labels: bool = False
    ) -> builtins.list[GrepHit]:
        """Regex search of entry contents (not the .yml internals), in path order."""
        return self._listings.grep(pattern, path=path, case_insensitive=case_insensitive, labels=labels)

    # ------------------------------------------------------------------ search (`Searching`)
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
        """Hybrid search (semantic + BM25 + tags, then graph, importance and recency when their weights are set); keyword-only while no model is ready."""
        return self._searching.search(query, top_k=top_k, threshold=threshold, types=types, path_prefix=path_prefix, tags=tags,
                                       include_archived=include_archived, view=view, min_importance=min_importance)

    def reading(self, *, one_query: bool = False, query: str | None = None) -> AbstractContextManager[None]:
        """One consistent view of the store for the searches and statistics read inside it (read once);
        ``one_query``: they search one query by different types; ``query``: the query they search (its
        embedding starts now)."""
        return self._searching.reading(one_query=one_query, query=query)

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """How many entries contain each keyword term (a Porter stem, as `SearchResult.matched` has them)."""
        return self._searching.document_frequencies(terms)

    def term_weights(self, query: str) -> dict[str, float]:
        """The query's keyword terms (Porter stems) weighted by their idf in this store, as search weighs them."""
        return self._searching.term_weights(query)

    def nearest(self, vector: np.ndarray, limit: int, *, caught_up: bool = False) -> builtins.list[tuple[str, float]]:
        """The ``limit`` entries whose vectors (of the current model) are nearest ``vector`` (``caught_up``:
        right after the caller's own change, which brought the index up to date)."""
        return self._searching.nearest(vector, limit, caught_up=caught_up)

    def vectors(self) -> tuple[builtins.list[str], np.ndarray]:
        """(paths, matrix) of every entry embedded by the current model: one L2-normalised row per path."""
        return self._searching.vectors()

    # ------------------------------------------------------------------ ownership and audit (`Ownership`)
    @property
    def actor(self) -> Actor:
        """Who makes this memory's changes and asks for its views."""
        return self._owners.actor

    def acting_as(self, actor: Actor | None) -> AbstractContextManager[None]:
        """Make the calls inside (on this thread) as ``actor`` (None."""
        return self._owners.acting_as(actor)

    def action(self, label: str, **details: Any) -> AbstractContextManager[None]:
        """Record the changes made inside (on this thread) in the audit log as ``label`` (archive, merge, link, ...)."""
        return self._owners.action(label, **details)

    def check_change(self, path: str, action: str = "update", *, entry: Entry | None = None) -> None:
        """Refuse now a change `Memory` would refuse (callers making several changes check all first."""
        return self._owners.check_change(path, action, entry=entry)

    # ------------------------------------------------------------------ the model (`Embedding`)
    def rebuild(self, *, progress: ProgressCallback | None = None, everything: bool = True) -> Rebuilt:
        """Re-embed entries in length-sorted batches; says how many were embedded, built-ins apart."""
        return self._embedding.rebuild(progress=progress, everything=everything)

    # ------------------------------------------------------------------ the derived index (`IndexKeeper`)
    @property
    def read_only(self) -> bool:
        """True if this memory was opened read-only (see `open`): writes raise `ReadOnlyRootError`."""
        return self._keeper.read_only

    def reconcile(self, *, in_place_edits: bool = True) -> None:
        """Bring the derived index in line with the files (changed by hand, by a killed writer, ...)."""
        return self._keeper.reconcile(in_place_edits=in_place_edits)


__all__ = ["Memory", "MemoryStatus", "NewEntry", "WriteResult"]
