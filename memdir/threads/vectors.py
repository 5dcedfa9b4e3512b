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
        self._guard = threading.Lock()  # several readers at once

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text, embedding (in batches) only the texts never seen before."""
        with self._guard:
            return self._vectors(texts)

    def query(self, text: str) -> np.ndarray:
        """The vector of a query: from the cache when the text is a known one, else embedded and not kept (a
        query is asked once; keeping it would cost a locked, fsynced write per question)."""
        with self._guard:
            row = self._by_text.get(text)
            if row is None:
                row = self._rows.get(digest(text))
        return self._matrix[row] if row is not None else self.embedder.embed([text])[0]

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        rows = [self._by_text.get(text, -1) for text in texts]  # (-1: not embedded yet)
        unknown = [i for i, row in enumerate(rows) if row < 0]
        if unknown:
            keys = {i: digest(texts[i]) for i in unknown}
            if any(key not in self._rows for key in keys.values()):
                self._load_new()
            missing: dict[bytes, str] = {}
            for i, key in keys.items():
                if key not in self._rows:
                    missing.setdefault(key, texts[i])
            if missing:
                self._add(list(missing), self.embedder.embed(list(missing.values())))
            for i, key in keys.items():
                rows[i] = self._by_text[texts[i]] = self._rows[key]
        return self._matrix[rows]

    def _add(self, keys: list[bytes], vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype="<f4")
        data = b"".join(key + row.tobytes() for key, row in zip(keys, vectors))
        with self.lock.exclusive():
            self._load_new()
            # cut: drop a killed writer's part record
            self._read = append_bytes(self.root, self.path, data, cut=lambda size: size - size % self.record)
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
