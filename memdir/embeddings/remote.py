"""An embedding service as the model: any OpenAI-compatible ``/v1/embeddings`` endpoint.

Ollama, text-embeddings-inference, vLLM, OpenAI and Voyage all answer ``POST
<url>/v1/embeddings`` with ``{"model": ..., "input": [texts]}`` and return
``{"data": [{"index": i, "embedding": [...]}, ...]}``. `RemoteEmbedder` sends the texts in
batches of ``embed_batch_size``, retries a batch up to 3 times with exponential backoff when
the service answers 429 or 5xx or cannot be reached, gives up on a request after
``embedding_timeout`` seconds, and checks that every vector has the length the store keeps
(`memdir.storage.sidecar.EMBEDDING_DIM`). Vectors are L2-normalised (not every service does)
and recorded with the model named in ``model``, so switching models re-embeds as with the
local one.

The API key comes from ``embedding_api_key`` (``MEMDIR_EMBEDDING_API_KEY``) and is sent only
as the ``Authorization`` header: it is kept as a secret (never shown in a repr or a
message) and never written to the root, the index or a log.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx2
import numpy as np

from memdir.core.errors import EmbeddingServiceError
from memdir.core.settings import Settings
from memdir.storage.sidecar import EMBEDDING_DIM

RETRIES = 3
"""Retries of a batch after a 429, a 5xx or a connection failure (4 attempts in all)."""


class RemoteEmbedder:
    """`memdir.embeddings.base.Embedder` over an OpenAI-compatible embeddings endpoint.

    Args:
        url: the service's base URL (``http://localhost:11434``, ``https://api.openai.com``);
            ``/v1/embeddings`` is appended unless the URL already ends with it (or ``/v1``).
        model: the model name the service knows; also the id the vectors are recorded with.
        api_key: sent as ``Authorization: Bearer ...`` when given.
        batch_size: texts per request.
        timeout: seconds per request.
        backoff: seconds before the first retry, doubled for each next one.
    """

    dimensions = EMBEDDING_DIM

    def __init__(self, url: str, model: str, *, api_key: str | None = None, batch_size: int = 32,
                 timeout: float = 30.0, backoff: float = 0.5) -> None:
        base = url.rstrip("/")
        if not base.endswith("/embeddings"):
            base += "/embeddings" if base.endswith("/v1") else "/v1/embeddings"
        self.endpoint = base
        self.model_id = model
        self.source = f"embedding service {base}"
        self.batch_size = max(1, batch_size)
        self.backoff = backoff
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx2.Client(timeout=timeout, headers=headers)

    @classmethod
    def from_settings(cls, settings: Settings) -> RemoteEmbedder:
        key = settings.embeddings.api_key.get_secret_value() if settings.embeddings.api_key else None
        return cls(str(settings.embeddings.url), settings.embeddings.model, api_key=key, batch_size=settings.embeddings.batch_size,
                   timeout=settings.embeddings.timeout, backoff=settings.embeddings.backoff)

    def warmup(self) -> None:
        """One request, so a wrong URL, key, model or vector length shows at start, not at the first write."""
        self.embed(["memdir"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        parts = [self._batch(list(texts[start : start + self.batch_size]))
                 for start in range(0, len(texts), self.batch_size)]
        vectors = np.concatenate(parts).astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)

    def _batch(self, texts: list[str]) -> np.ndarray:
        answer = self._post({"model": self.model_id, "input": texts})
        try:
            rows = sorted(answer["data"], key=lambda row: row["index"])
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingServiceError(
                f"The embedding service at {self.endpoint} did not answer with embeddings ({type(exc).__name__}).",
                "Check that the URL is an OpenAI-compatible /v1/embeddings endpoint (embedding_url).",
            ) from exc
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise EmbeddingServiceError(
                f"The embedding service at {self.endpoint} returned {len(vectors)} vectors for {len(texts)} texts.",
                "Check that the URL is an OpenAI-compatible /v1/embeddings endpoint (embedding_url).",
            )
        if vectors.shape[1] != self.dimensions:
            raise EmbeddingServiceError(
                f"The model {self.model_id!r} of the embedding service returns {vectors.shape[1]}-dimensional "
                f"vectors; memdir stores {self.dimensions}-dimensional ones.",
                f"Serve a {self.dimensions}-dimensional model (all-MiniLM-L6-v2, Ollama's all-minilm) and name it "
                "in the model setting, or leave embedding_url unset to use the local model.",
            )
        return vectors

    def _post(self, body: dict[str, Any]) -> Any:
        """POST ``body``; retried on 429, 5xx and connection failures, with exponential backoff."""
        problem = ""
        for attempt in range(RETRIES + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = self._client.post(self.endpoint, json=body)
            except httpx2.TimeoutException:
                problem = "did not answer in time"
                continue
            except httpx2.TransportError as exc:
                problem = f"could not be reached ({type(exc).__name__})"
                continue
            if response.status_code == 429 or response.status_code >= 500:
                problem = f"answered HTTP {response.status_code}"
                continue
            if response.status_code >= 400:
                raise EmbeddingServiceError(
                    f"The embedding service at {self.endpoint} refused the request: HTTP {response.status_code}.",
                    "Check the model name (model) and the API key (embedding_api_key or MEMDIR_EMBEDDING_API_KEY).",
                )
            try:
                return response.json()
            except ValueError as exc:
                raise EmbeddingServiceError(
                    f"The embedding service at {self.endpoint} did not answer with JSON.",
                    "Check that the URL is an OpenAI-compatible /v1/embeddings endpoint (embedding_url).",
                ) from exc
        raise EmbeddingServiceError(
            f"The embedding service at {self.endpoint} {problem}, {RETRIES + 1} times.",
            "Check that the service is running and reachable; search is keyword-only meanwhile.",
        )

    def close(self) -> None:
        self._client.close()


__all__ = ["RETRIES", "RemoteEmbedder"]
