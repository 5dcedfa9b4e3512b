"""Test doubles shared by the test suite.

`FakeEmbedder` stands in for the ONNX model: deterministic, instant, and similar
texts (sharing words) get similar vectors, so semantic-search tests mean something
without loading onnxruntime.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"[^\W_]+")


class FakeEmbedder:
    """A bag-of-words embedder: each lowercased word hashed into one of 384 dimensions, L2-normalised.

    Texts without words embed to a fixed unit vector (never zeros), as a real model
    would still return a unit vector.
    """

    model_id = "fake/bow-384"
    dimensions = 384
    source = "test fake"

    def __init__(self) -> None:
        self.calls = 0
        self.texts_embedded = 0

    @staticmethod
    def _bucket(word: str) -> int:
        return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=4).digest(), "little") % 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                out[row, self._bucket(word)] += 1.0
            norm = np.linalg.norm(out[row])
            if norm == 0:
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        return out


class HoldingEmbedder(FakeEmbedder):
    """A `FakeEmbedder` whose first call after `hold_next` holds the model until ``others`` more calls
    have come in, or ``hold`` seconds have passed, so writes sent together either reach the model each
    on its own (their calls release the first) or wait for it and come as one batch. ``batches``
    records the calls' texts from then on; ``released_in_time`` whether the held call saw its ``others``
    come (False: it gave up after ``hold`` seconds); ``poison`` is a word that makes any call whose texts
    hold it fail."""

    def __init__(self, others: int, hold: float = 1.0, poison: str | None = None) -> None:
        super().__init__()
        self.others, self.hold, self.poison = others, hold, poison
        self.batches: list[list[str]] = []
        self.released_in_time = True
        self._came = threading.Condition()
        self._holding = False

    def hold_next(self) -> None:
        """Hold the next call (and record the calls from it on)."""
        with self._came:
            self.batches, self._holding = [], True

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._came:
            self.batches.append(list(texts))
            self._came.notify_all()
            if self._holding:
                self._holding = False
                self.released_in_time = self._came.wait_for(lambda: len(self.batches) > self.others, timeout=self.hold)
        if self.poison is not None and any(self.poison in text for text in texts):
            raise RuntimeError(f"the model cannot embed {self.poison!r}")
        return super().embed(texts)
