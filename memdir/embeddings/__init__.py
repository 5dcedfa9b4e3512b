"""Local sentence embeddings for semantic search (onnxruntime, no torch).

Typical use::

    embedder = load_embedder(settings.model_dir, settings.cache_dir)
    vectors = embedder.embed(["some text", "another"])  # (2, 384) float32, unit rows

``load_embedder`` raises ``ModelNotFoundError`` when no model is installed; the
caller then falls back to keyword search.
"""

from memdir.embeddings.base import Embedder, embed_one
from memdir.embeddings.minilm import OnnxEmbedder
from memdir.embeddings.resolve import (
    DEFAULT_MODEL_ID,
    ModelNotFoundError,
    ResolvedModel,
    load_embedder,
    resolve_model,
)

__all__ = [
    "DEFAULT_MODEL_ID",
    "Embedder",
    "ModelNotFoundError",
    "OnnxEmbedder",
    "ResolvedModel",
    "embed_one",
    "load_embedder",
    "resolve_model",
]
