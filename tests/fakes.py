"""Test doubles shared by the test suite.

`FakeEmbedder` stands in for the ONNX model: deterministic, instant, and similar
texts (sharing words) get similar vectors, so semantic-search tests mean something
without loading onnxruntime.
"""

from __future__ import annotations

import hashlib
import re
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
