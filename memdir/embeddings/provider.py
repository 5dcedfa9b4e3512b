"""The model's lifecycle: resolved and loaded lazily, optionally in the background.

A server must answer ``initialize`` within a second of spawn, so it cannot wait for
onnxruntime to load. `ModelProvider` hands out the embedder only once it is ready;
until then (or for good, when no model exists) callers get ``None`` and fall back to
keyword search, and `state`/`reason` say why.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from enum import Enum

from memdir.core.errors import MemdirError
from memdir.core.heap import release_freed_memory
from memdir.core.settings import Settings
from memdir.embeddings.base import Embedder

log = logging.getLogger(__name__)


class ModelState(str, Enum):
    NOT_LOADED = "not loaded"
    LOADING = "loading"
    READY = "ready"
    UNAVAILABLE = "unavailable"
    DISABLED = "disabled"


class ModelProvider:
    """Owns the embedder: resolves and loads it once, on demand or in a background thread.

    Args:
        loader: builds a ready embedder (resolution + onnxruntime session); may raise.
        embedder: an already-built embedder (tests pass a fake one) — then no loading happens.
        enabled: False turns semantic search off entirely.
    """

    def __init__(
        self,
        loader: Callable[[], Embedder] | None = None,
        *,
        embedder: Embedder | None = None,
        enabled: bool = True,
    ) -> None:
        self._loader = loader
        self._embedder = embedder
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._on_ready: list[Callable[[Embedder], None]] = []
        self._closing = threading.Event()
        self._ready = threading.Event()  # set once loading ends, ready or not (before the callbacks run)
        self._awaited = False  # see `start_background`
        self.reason = ""
        if not enabled:
            self.state, self.reason = ModelState.DISABLED, "embeddings are disabled in settings"
        elif embedder is not None:
            self.state = ModelState.READY
        elif loader is None:
            self.state, self.reason = ModelState.UNAVAILABLE, "no embedding model configured"
        else:
            self.state = ModelState.NOT_LOADED

    @classmethod
    def from_settings(cls, settings: Settings, *, enabled: bool = True, download: bool = False) -> ModelProvider:
        """The real model, resolved as DESIGN.md says (explicit dir -> package -> HF cache -> HF hub),
        or the embedding service ``embedding_url`` names (`memdir.embeddings.remote`).

        ``download`` allows the hub step (with ``settings.model_download``): for long-running
        processes that load in the background. A command or a per-prompt hook must never wait
        on a network that drops packets instead of refusing them.
        """

        def load() -> Embedder:
            if settings.embeddings.url:
                from memdir.embeddings.remote import RemoteEmbedder

                remote = RemoteEmbedder.from_settings(settings)
                remote.warmup()
                return remote
            from memdir.embeddings.resolve import load_embedder

            embedder = load_embedder(
                model_dir=settings.embeddings.model_dir, cache_dir=settings.storage.cache_dir, batch_size=settings.embeddings.batch_size,
                threads=settings.embeddings.threads, model_id=settings.model_wanted, download=download and settings.embeddings.model_download,
            )
            embedder.warmup()
            release_freed_memory()  # what building the session freed
            return embedder

        return cls(load, enabled=enabled)

    def on_ready(self, callback: Callable[[Embedder], None]) -> None:
        """Run ``callback(embedder)`` once the model is ready (now, if it already is)."""
        with self._lock:
            if self.state is not ModelState.READY:
                self._on_ready.append(callback)
                return
        assert self._embedder is not None  # (ready: it is set)
        callback(self._embedder)

    def get(self, *, wait: bool = True, timeout: float | None = None) -> Embedder | None:
        """The embedder, loading it first if needed; None when unavailable (or still loading and
        not ``wait``, or not ready within ``timeout`` seconds of waiting)."""
        if self.state is ModelState.READY:
            return self._embedder
        if self.state in (ModelState.UNAVAILABLE, ModelState.DISABLED):
            return None
        if self.state is ModelState.LOADING:
            if not wait or self._thread is None:
                return None
            self._ready.wait(None if self._awaited else timeout)
            return self.peek()
        self._load()
        return self._embedder

    def peek(self) -> Embedder | None:
        """The embedder if it is ready right now; never blocks, never starts loading."""
        return self._embedder if self.state is ModelState.READY else None

    def start_background(self, *, awaited: bool = False) -> None:
        """Begin loading in a daemon thread (a server calls this so start-up stays fast).

        Args:
            awaited: `get` waits for the whole load, whatever its ``timeout``: a command that
                needs the model loads it while it opens the store, and would otherwise have
                loaded it first (onnxruntime builds the session mostly without the GIL).
        """
        with self._lock:
            if self.state is not ModelState.NOT_LOADED:
                return
            self._awaited = awaited
            self.state = ModelState.LOADING
            self._thread = threading.Thread(target=self._load, name="memdir-model-loader", daemon=True)
            self._thread.start()

    @property
    def closing(self) -> bool:
        """True once `close` was called: long model-ready work (the backlog) stops at its next batch."""
        return self._closing.is_set()

    def close(self) -> None:
        """Wait for the background loading (and its model-ready callbacks) to stop.

        The process must not exit while that thread is inside onnxruntime: tearing the
        interpreter down under a running session aborts it ("terminate called without an
        active exception", exit code 134) — what a client closing the server early saw.
        """
        self._closing.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _load(self) -> None:
        with self._lock:
            if self.state is ModelState.READY:
                return
            self.state = ModelState.LOADING
        try:
            assert self._loader is not None  # (without one the model is unavailable: nothing loads)
            embedder = self._loader()
        except MemdirError as exc:
            self._fail(str(exc))
            return
        except Exception as exc:  # a broken model must not take the memory down with it
            log.exception("loading the embedding model failed")
            self._fail(f"loading the embedding model failed: {exc}")
            return
        with self._lock:
            self._embedder, self.state = embedder, ModelState.READY
            callbacks, self._on_ready = self._on_ready, []
        self._ready.set()
        for callback in callbacks:
            try:
                callback(embedder)
            except Exception:
                log.exception("a model-ready callback failed")

    def _fail(self, reason: str) -> None:
        with self._lock:
            self.state, self.reason = ModelState.UNAVAILABLE, reason
            self._on_ready = []
        self._ready.set()
        log.warning("semantic search unavailable: %s", reason)

