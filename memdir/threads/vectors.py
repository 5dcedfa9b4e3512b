"""Embeddings of thread text, cached on disk so a thread is embedded once, not on every context request.

``<root>/.memdir/threads/vectors-<model>.bin`` (derived data: deleting it only costs
re-embedding) holds fixed-size records: a 16-byte BLAKE2b digest of the text, then the
vector as little-endian float32. Records are appended under the root's lock; a reader
ignores a trailing partial record, and picks up what other processes appended when it
meets a text it does not know yet.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from memdir.core.files import append_bytes, open_regular
from memdir.embeddings.base import Embedder
from memdir.storage.base import StoreLock

DIGEST_BYTES = 16


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=DIGEST_BYTES).digest()


class VectorCache:
    """Text → vector for one embedder, in memory and in one append-only file."""

    def __init__(self, root: Path, folder: Path, embedder: Embedder, lock: StoreLock) -> None:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", embedder.model_id)
        self.root, self.path = root, folder / f"vectors-{slug}.bin"
        self.embedder, self.lock = embedder, lock
        self.record = DIGEST_BYTES + 4 * embedder.dimensions
        self._rows: dict[bytes, int] = {}
        self._by_text: dict[str, int] = {}  # texts met in this process: no digest needed again
        self._matrix = np.zeros((0, embedder.dimensions), dtype=np.float32)  # rows past ``_count``: room to grow
        self._count = 0
        self._read = 0
        self._embedding: dict[bytes, Future[None]] = {}  # texts being embedded by some caller right now
        self._guard = threading.Lock()  # callers on several threads (the model runs outside it)

    def vectors(self, texts: Sequence[str], ahead: Sequence[str] = ()) -> np.ndarray:
        """One unit vector per text, embedding (in batches) only the texts never seen before.

        ``ahead``: texts wanted soon (not returned): embedded in the same batch when something must be embedded
        anyway, never waited for. A text another caller is embedding right now is waited for, not embedded twice;
        the model runs with no lock held, so other callers' cached vectors come back meanwhile.
        """
        while True:
            with self._guard:
                rows = [self._by_text.get(text, -1) for text in texts]  # (-1: not embedded yet)
                unknown = {i: digest(texts[i]) for i, row in enumerate(rows) if row < 0}
                if not unknown:
                    return self._matrix[rows]
                if any(key not in self._rows for key in unknown.values()):
                    self._load_new()
                missing: dict[bytes, str] = {}
                for i, key in unknown.items():
                    if key in self._rows:
                        self._by_text[texts[i]] = self._rows[key]
                    else:
                        missing.setdefault(key, texts[i])
                if not missing:
                    return self._matrix[[self._by_text[text] for text in texts]]
                waits = {id(future): future for key in missing if (future := self._embedding.get(key)) is not None}
                mine = {key: text for key, text in missing.items() if key not in self._embedding}
                if mine:
                    for text in ahead:
                        if (key := digest(text)) not in self._rows and key not in self._embedding:
                            mine.setdefault(key, text)
                    done: Future[None] = Future()
                    self._embedding.update(dict.fromkeys(mine, done))
            if mine:
                self._embed(mine, done)
            for future in waits.values():
                future.exception()  # wait; a caller whose embedding failed raised it: this one tries again

    def query(self, text: str) -> np.ndarray:
        """The vector of a query: from the cache when the text is a known one, else embedded and not kept (a
        query is asked once; keeping it would cost a locked, fsynced write per question)."""
        with self._guard:
            row = self._by_text.get(text)
            if row is None:
                row = self._rows.get(digest(text))
        return self._matrix[row] if row is not None else self.embedder.embed([text])[0]

    def _embed(self, texts: dict[bytes, str], done: Future[None]) -> None:
        """Embed ``texts`` (by digest) and keep them; ``done`` tells the callers waiting for them."""
        try:
            self._add(list(texts), self.embedder.embed(list(texts.values())))
        except BaseException as exc:
            done.set_exception(exc)
            raise
        else:
            done.set_result(None)
        finally:
            with self._guard:
                for key in texts:
                    self._embedding.pop(key, None)

    def _add(self, keys: list[bytes], vectors: np.ndarray) -> None:
        """Keep new vectors, and append them to the file (under the root's lock, so other processes find them)."""
        vectors = np.ascontiguousarray(vectors, dtype="<f4")
        data = b"".join(key + row.tobytes() for key, row in zip(keys, vectors))
        with self.lock.exclusive():
            with self._guard:
                self._load_new()
            # cut: drop a killed writer's part record
            end = append_bytes(self.root, self.path, data, cut=lambda size: size - size % self.record)
            with self._guard:
                self._read = end
                self._remember(keys, vectors)

    def _load_new(self) -> None:
        try:
            with open_regular(self.root, self.path) as handle:
                handle.seek(self._read)
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError):
            return
        whole = len(data) - len(data) % self.record
        if not whole:
            return
        records = np.frombuffer(data[:whole], dtype=np.uint8).reshape(-1, self.record)
        keys = [bytes(row[:DIGEST_BYTES]) for row in records]
        vectors = records[:, DIGEST_BYTES:].copy().view("<f4").reshape(len(keys), -1)
        self._read += whole
        self._remember(keys, vectors)

    def _remember(self, keys: list[bytes], vectors: np.ndarray) -> None:
        """Keep the vectors of keys not known yet; the matrix doubles when full, so adding the vector of one new
        message costs one row, not a copy of every vector (readers index rows below ``_count`` only)."""
        fresh = [i for i, key in enumerate(keys) if key not in self._rows]
        start, end = self._count, self._count + len(fresh)
        if end > len(self._matrix):
            grown = np.zeros((max(end, 2 * len(self._matrix)), self._matrix.shape[1]), dtype=np.float32)
            grown[:start] = self._matrix[:start]
            self._matrix = grown
        self._matrix[start:end] = vectors[fresh]
        for offset, i in enumerate(fresh):
            self._rows[keys[i]] = start + offset
        self._count = end


__all__ = ["VectorCache", "digest"]
