"""Local sentence embeddings for semantic search (onnxruntime, no torch).

Typical use::

    embedder = load_embedder(settings.model_dir, settings.cache_dir)
    vectors = embedder.embed(["some text", "another"])  # (2, 384) float32, unit rows

``load_embedder`` raises ``ModelNotFoundError`` when no model is installed; the
caller then falls back to keyword search.
"""

import importlib
from typing import Any

_EXPORTS = {
    "DEFAULT_MODEL_ID": "resolve",
    "Embedder": "base",
    "ModelNotFoundError": "resolve",
    "OnnxEmbedder": "minilm",
    "ResolvedModel": "resolve",
    "embed_one": "base",
    "load_embedder": "resolve",
    "resolve_model": "resolve",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    # Lazy, so that `memdir.embeddings.text` (searchable text, no numpy) loads alone on the
    # server's start-up path; the names above resolve on first use.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memdir.embeddings' has no attribute {name!r}")
    return getattr(importlib.import_module(f"memdir.embeddings.{module}"), name)
