"""Keeping a memory's derived index in step with its store: the write lock, reconciles, and the text
each entry is indexed and embedded from."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from memdir.core.entry import Entry, Metadata
from memdir.core.errors import EntryNotFoundError, LockTimeoutError, ReadOnlyRootError
from memdir.core.settings import Settings
from memdir.embeddings.provider import ModelProvider
from memdir.embeddings.resolve import model_id_for
from memdir.embeddings.text import entry_text_hash, searchable_text, text_hash, text_recipe
from memdir.storage.base import EntryIndex, StorageAdapter, StoreListing
from memdir.storage.records import FileStats
from memdir.storage.virtual import virtual_paths

log = logging.getLogger(__name__)


class IndexKeeper:
    """The write lock and the derived index's freshness for one memory: every change runs under
    `exclusive` (or `changing`), which first repairs what a writer killed mid-change left behind."""

    def __init__(self, settings: Settings, adapter: StorageAdapter, index: EntryIndex, model: ModelProvider, listing: StoreListing) -> None:
        self.settings = settings
        self.adapter = adapter
        self.index = index
        self.model = model
        self.listing = listing
        self.text_hash_of = functools.partial(entry_text_hash, max_chars=settings.embeddings.max_chars,
                                              summary=settings.embeddings.summary)
        """The hash of an entry's searchable text as this store's settings make it (what its vector was made from)."""

    @property
    def root(self) -> Path:
        return self.adapter.root

    def check_writable(self) -> None:
        if self.adapter.read_only is not None:
            raise ReadOnlyRootError(self.root, self.adapter.read_only)

    def exclusive(self) -> AbstractContextManager[None]:
        """The root's write lock over an up-to-date index, for a change (refused at once on a
        read-only root; see `changing`)."""
        self.check_writable()
        return self.changing()

    @contextmanager
    def index_first(self, *paths: str) -> Iterator[None]:
        """Around a change whose index update runs before the files are committed (inside the
        adapter change's ``with`` block): a failure there — a full disk — leaves files and index as they
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
                    self.reindex(path)
            raise

    def reindex(self, path: str) -> None:
        """Best effort: make the index row of ``path`` say what its files say."""
        try:
            try:
                entry = self.adapter.read_entry(path, follow=False)
            except EntryNotFoundError:
                self.index.remove(path)
                return
            self.index_entry(entry, self.searchable(entry), None)  # whose vector: unknown, so re-embedded
        except Exception:
            log.warning("the index row of %s may be stale until the next open", path, exc_info=True)

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
        recipe = text_recipe(self.settings.embeddings.max_chars, self.settings.embeddings.summary)
        # Read-only, the index is this process's own (or changes only as the files say), and
        # the files cannot change under the shared lock; no repair runs (it writes).
        lock = self.adapter.lock.shared() if self.read_only else self.adapter.lock.exclusive()
        with lock:
            plan = self.listing.plan(recipe, in_place_edits=in_place_edits)
            report = self.index.reconcile(
                [*plan.files, *builtins],
                functools.partial(self.adapter.read_entry, follow=False),
                self.text_hash_of,
                text_recipe=recipe,
                covered=plan.covered,
                known=plan.known,
            )
            stamps = plan.stamps(report.failed)
            self.index.record_folder_stamps(stamps)
            self.listing.stamps = stamps or {}

    @contextmanager
    def changing(self) -> Iterator[None]:
        """The exclusive lock, over an index that holds every file change committed before.

        A writer killed between committing its files and updating the index leaves a change
        the index lacks; recording a new change on top without a re-scan would hide it for good.
        """
        with self.adapter.lock.exclusive():
            if self.index.behind_files():
                self.reconcile(in_place_edits=False)  # a killed writer's renames changed their folders
            yield

    def refresh(self) -> None:
        """Catch the index up with other processes, re-scanning the files if a writer died mid-change.

        While another process holds the lock, a lagging index means a writer between its files
        and its index update (or a dead one that writer's `changing` will repair): nobody waits.
        """
        if not self.index.behind_files() or self.adapter.lock.mode == "shared":
            return
        try:
            with self.adapter.lock.exclusive(timeout=0):  # free: nobody is mid-change
                if self.index.behind_files():
                    self.reconcile(in_place_edits=False)
        except LockTimeoutError:
            pass

    def searchable(self, entry: Entry) -> str:
        return self.card(entry.title, entry.metadata, entry.content)

    def card(self, title: str, metadata: Metadata, content: str) -> str:
        """The searchable text of an entry, as this store's settings make it."""
        settings = self.settings
        return searchable_text(title, metadata, content, settings.embeddings.max_chars, summary=settings.embeddings.summary)

    def model_id(self) -> str:
        """The model vectors are made with: the loaded one, else the configured one (what
        vectors are compared with, and re-embedded for when another model made them)."""
        embedder = self.model.peek()
        if embedder is not None:
            return embedder.model_id
        return model_id_for(self.settings.embeddings.model_dir, self.settings.model_wanted)

    def index_entry(self, entry: Entry, text: str, model_id: str | None, stats: FileStats | None = None) -> None:
        self.index.upsert(entry, stats or self.adapter.stats(entry.path), text_hash(text), model_id)

    @property
    def read_only(self) -> bool:
        """True if this memory was opened read-only (see `open`): writes raise `ReadOnlyRootError`."""
        return self.adapter.read_only is not None
