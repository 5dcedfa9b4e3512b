"""`ResolvedModel`: a model directory that was found, as model resolution (`memdir.embeddings.resolve`) hands it
to the embedder (`memdir.embeddings.minilm`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ResolvedModel:
    """A model directory that was found, plus what memdir needs to know about it.

    Attributes:
        model_id: stable model name stored with the index.
        directory: the directory holding the files.
        source: where it came from, for humans (status output, logs).
        max_seq_length: tokens per text before truncation (sentence-transformers' setting).
        dimensions: embedding length.
        onnx_path: a ready ``model.onnx`` to load as is, or None when memdir builds
            the graph from ``model.safetensors``.
    """

    model_id: str
    directory: Path
    source: str
    max_seq_length: int
    dimensions: int
    onnx_path: Path | None = None

    @property
    def tokenizer_path(self) -> Path:
        return self.directory / "tokenizer.json"

    @property
    def weights_path(self) -> Path:
        return self.onnx_path or self.directory / "model.safetensors"
