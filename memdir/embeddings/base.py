"""What the rest of memdir may assume about an embedding model.

Search, indexing and tests depend on this small protocol rather than on
``OnnxEmbedder`` so a fake embedder (hash-based, for fast tests) or another
backend can stand in without touching callers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    Attributes:
        model_id: stable model name (e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``);
            stored beside an index so vectors from different models never mix.
        dimensions: length of each vector (384 for all-MiniLM-L6-v2).
        source: human-readable origin of the weights, shown by ``memdir setup``/status
            so a user can tell which copy of the model is in use.
    """

    model_id: str
    dimensions: int
    source: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in order.

        Returns:
            float32 array of shape ``(len(texts), dimensions)`` whose rows have L2 norm 1
            (so cosine similarity is a dot product). An empty input gives shape ``(0, dimensions)``.
        """
        ...


def embed_one(embedder: Embedder, text: str) -> np.ndarray:
    """Embed a single text (e.g. a search query) and return its 1-D vector."""
    return embedder.embed([text])[0]
