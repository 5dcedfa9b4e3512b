"""Embedding a memory's entries: a write's vector before it takes the lock, and the batched
catch-up of entries written without the model (`rebuild`, the model-ready backlog)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from memdir.core.entry import Entry
from memdir.core.settings import Settings
from memdir.embeddings.base import Embedder
from memdir.embeddings.provider import ModelProvider, ModelState
from memdir.embeddings.text import text_hash
from memdir.memory.batching import EmbeddingBatches
from memdir.memory.keeper import IndexKeeper
from memdir.memory.results import Rebuilt
from memdir.storage.base import EntryIndex, StorageAdapter
from memdir.storage.virtual import is_virtual

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]


class Embedding:
    """The model as a memory uses it: loaded on first need (a command) or in the background (a server),
    and every entry's vector made by the current model sooner or later."""

    def __init__(self, settings: Settings, adapter: StorageAdapter, index: EntryIndex, model: ModelProvider, keeper: IndexKeeper) -> None:
        self.settings = settings
        self.adapter = adapter
        self.index = index
        self.model = model
        self.keeper = keeper
        self.written_unembedded: set[str] = set()  # written while the model loaded (embedded at close at the latest)
        self.batches = EmbeddingBatches(settings.embeddings.batches_at_once)

    def embed_written(self) -> None:
        """Embed the entries this process wrote while the model was loading (at close: the model has
        stopped taking new batches, and these are finished nonetheless)."""
        embedder = self.model.peek()
        if self.written_unembedded and embedder is not None and not self.keeper.read_only:
            written = [path for path in self.index.needs_embedding(embedder.model_id) if path in self.written_unembedded]
            self.embed_paths(embedder, written, None, finish=True)

    def embed_pending(self, embedder: Embedder, at_most: int | None = None) -> None:
        """Once the model is ready: embed entries written without it (or under another model).

        With ``at_most``, a larger backlog is left for `rebuild` (and said so in the log).
        """
        pending = self.index.needs_embedding(embedder.model_id)
        if at_most is not None and len(pending) > at_most:
            log.info("%d entries wait for embedding: run `memdir rebuild --missing-only`", len(pending))
            return
        if pending:
            self.embed_paths(embedder, pending, None)

    def embed_paths(
        self, embedder: Embedder, paths: list[str], progress: ProgressCallback | None, *, finish: bool = False
    ) -> int:
        """Embed ``paths`` and store their vectors; returns how many were embedded.

        A pipeline: the model embeds one chunk on a worker thread (onnxruntime releases the
        GIL) while this thread stores the previous chunk's vectors (two files per entry
        with fsync, the index rows), so the file work hides behind the model's. Chunks
        follow the entries' file sizes, and within a chunk the texts go by their length (the
        title and tags count too), so the model's batches pad little. ``progress`` hears of
        every model batch (``embed_batch_size`` entries) as it is embedded, from the worker
        thread: a chunk takes several batches, and a progress bar should move with each.
        """
        batch = max(1, self.settings.embeddings.batch_size)
        chunk = batch * 4
        ordered = sorted(paths, key=lambda path: self.adapter.stats(path).md_size)
        done = embedded = 0
        if progress:
            progress(0, len(paths))

        def embed(texts: list[str]) -> np.ndarray:
            nonlocal embedded
            parts = []
            for start in range(0, len(texts), batch):
                parts.append(embedder.embed(texts[start : start + batch]))
                embedded += len(parts[-1])
                if progress:
                    progress(embedded, len(paths))
            return np.concatenate(parts) if parts else np.zeros((0, embedder.dimensions), dtype=np.float32)

        def store(item: tuple[list[Entry], list[str], Future[np.ndarray]]) -> None:
            nonlocal done
            done += self.store_vectors(embedder, *item)

        with ThreadPoolExecutor(1, thread_name_prefix="memdir-embed") as worker:
            pending: tuple[list[Entry], list[str], Future[np.ndarray]] | None = None
            for start in range(0, len(ordered), chunk):
                if self.model.closing and not finish:
                    break
                read = [(entry, self.keeper.searchable(entry)) for entry in self.readable(ordered[start : start + chunk])]
                read.sort(key=lambda item: len(item[1]))  # each model batch pads to its longest text
                entries, texts = [entry for entry, _ in read], [text for _, text in read]
                embedding = worker.submit(embed, texts)
                if pending is not None:
                    store(pending)  # while the model works on this chunk
                pending = (entries, texts, embedding)
            if pending is not None:
                store(pending)
        return done

    def readable(self, paths: Iterable[str]) -> list[Entry]:
        """The entries at ``paths`` that can still be read (for embedding)."""
        entries = []
        for path in paths:
            try:
                entries.append(self.adapter.read_entry(path, follow=False))
            except Exception:  # vanished, or turned into a stub, since listing
                continue
        return entries

    def store_vectors(self, embedder: Embedder, entries: list[Entry], texts: list[str], embedding: Future[np.ndarray]) -> int:
        """Write one chunk's vectors (files and index) once the model has made them; returns the chunk's size."""
        vectors = embedding.result()
        with self.keeper.exclusive():
            fresh: dict[str, np.ndarray] = {}
            hashes: dict[str, str] = {}
            expected: dict[str, Entry] = {}
            for entry, text, vector in zip(entries, texts, vectors):
                if entry.virtual:  # read-only package data: its vector lives in the derived index only
                    self.keeper.index_entry(entry.model_copy(update={"embedding": vector}), text, embedder.model_id)
                    continue
                fresh[entry.path], hashes[entry.path] = vector, text_hash(text)
                expected[entry.path] = entry  # changed meanwhile: its own write embedded it
            with (
                self.index.ahead_of_files(),  # the index changes just before the files commit
                self.adapter.set_embeddings(fresh, expected=expected, model_id=embedder.model_id, text_hashes=hashes) as stored,
            ):
                self.index.set_vectors((entry, stats, hashes[entry.path], embedder.model_id) for entry, stats in stored)
        return len(entries)

    def embedder_now(self) -> Embedder | None:
        """The model if ready; loads it first when nobody has started loading it (CLI use).

        A server loads it in the background instead, and meanwhile gets None (keyword search).
        """
        if self.model.state is ModelState.NOT_LOADED:
            return self.model.get()
        return self.model.peek()

    def search_embedder(self) -> Embedder | None:
        """The model for a search: one arriving while it loads waits up to ``search_model_wait``
        seconds for it (a one-shot client's first call, a hook's first prompt) before going
        keyword-only."""
        if self.model.state is ModelState.LOADING:
            return self.model.get(timeout=self.settings.embeddings.search_model_wait)
        return self.embedder_now()

    def embed(self, texts: list[str], *, with_waiting: bool = False) -> np.ndarray | None:
        """The vectors of ``texts`` (None: no model, or it failed: stored without vectors).

        ``with_waiting``: in one model call with the texts of the writes waiting beside them
        (`EmbeddingBatches`), as a single write's text is embedded; a bulk write's are one batch already.
        """
        embedder = self.embedder_now()
        if embedder is None:
            return None
        try:
            return self.batches.embed(embedder, texts) if with_waiting else embedder.embed(texts)
        except Exception:  # the write must still succeed; the entry stays "not embedded"
            log.exception("embedding failed; the entry is stored without a vector")
            return None

    def rebuild(self, *, progress: ProgressCallback | None = None, everything: bool = True) -> Rebuilt:
        """Re-embed entries in length-sorted batches; says how many were embedded, built-ins apart.

        Args:
            everything: True re-embeds every entry (after a model or max-chars change);
                False only those without a current vector.
        """
        self.keeper.reconcile()
        waiting = set(self.index.needs_embedding(self.keeper.model_id()))  # the model-ready catch-up may take some
        embedder = self.model.get()
        if embedder is None:
            return Rebuilt(0, 0)
        if everything:
            paths = [info.path for info in self.adapter.iter_entries(with_metadata=False)]
        else:
            paths = self.index.needs_embedding(embedder.model_id)
        self.embed_paths(embedder, paths, progress)
        left = set(self.index.needs_embedding(embedder.model_id))
        done = (waiting | set(paths)) - left
        builtins = sum(map(is_virtual, done))
        return Rebuilt(len(done) - builtins, builtins)
