"""The remote embedder against a local OpenAI-compatible ``/v1/embeddings`` server the test starts."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.errors import EmbeddingServiceError
from memdir.core.settings import Settings
from memdir.embeddings.remote import RemoteEmbedder
from memdir.memory import Memory

KEY = "sk-test-never-stored-0123456789"


def vector(text: str, size: int = 384) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return np.random.default_rng(seed).standard_normal(size).tolist()


class Service:
    """A scripted embeddings endpoint: ``failures`` answers first (status codes), then embeddings."""

    def __init__(self) -> None:
        self.failures: list[int] = []
        self.size = 384
        self.delay = 0.0
        self.requests: list[dict] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                service.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                time.sleep(service.delay)
                if service.failures:
                    self.send_response(service.failures.pop(0))
                    self.end_headers()
                    return
                data = [{"index": i, "embedding": vector(text, service.size)} for i, text in enumerate(body["input"])]
                payload = json.dumps({"data": list(reversed(data)), "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def service():
    running = Service()
    yield running
    running.server.shutdown()


def embedder(service: Service, **kwargs) -> RemoteEmbedder:
    return RemoteEmbedder(service.url, "all-minilm", api_key=KEY, backoff=0.01, **kwargs)


def test_texts_go_in_batches_with_the_key_and_come_back_normalised_in_order(service):
    vectors = embedder(service, batch_size=2).embed(["a", "b", "c"])
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    expected = np.asarray(vector("c"), dtype=np.float32)
    assert np.allclose(vectors[2], expected / np.linalg.norm(expected), atol=1e-6)
    assert [(r["path"], r["auth"], r["model"], r["input"]) for r in service.requests] == [
        ("/v1/embeddings", f"Bearer {KEY}", "all-minilm", ["a", "b"]),
        ("/v1/embeddings", f"Bearer {KEY}", "all-minilm", ["c"]),
    ]


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_busy_or_failing_service_is_retried_three_times(service, status):
    service.failures = [status] * 3
    assert embedder(service).embed(["a"]).shape == (1, 384)
    assert len(service.requests) == 4
    service.failures = [status] * 4
    with pytest.raises(EmbeddingServiceError, match=f"answered HTTP {status}, 4 times"):
        embedder(service).embed(["a"])


def test_a_refusal_is_not_retried_and_says_what_to_check(service):
    service.failures = [401]
    with pytest.raises(EmbeddingServiceError, match="refused the request: HTTP 401") as caught:
        embedder(service).embed(["a"])
    assert "API key" in caught.value.hint and KEY not in str(caught.value)
    assert len(service.requests) == 1


def test_the_dimension_is_checked(service):
    service.size = 1536
    with pytest.raises(EmbeddingServiceError, match="returns 1536-dimensional vectors; memdir stores 384"):
        embedder(service).embed(["a"])


def test_a_slow_service_times_out(service):
    service.delay = 0.5
    with pytest.raises(EmbeddingServiceError, match="did not answer in time, 4 times"):
        embedder(service, timeout=0.1).embed(["a"])


def test_memdir_uses_the_service_records_its_model_and_never_writes_the_key(service, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMDIR_EMBEDDING_URL", service.url)
    monkeypatch.setenv("MEMDIR_EMBEDDING_API_KEY", KEY)
    monkeypatch.setenv("MEMDIR_MODEL", "all-minilm")
    root = tmp_path / "memory"
    with Memory.open(Settings(root=root)) as memory:
        memory.write("fact/ledger.md", "The ledger stays on Postgres.", title="Ledger", metadata={"type": "fact"})
        assert memory.read("fact/ledger.md").embedding_model == "all-minilm"
        found = memory.search("where does the ledger live")
        assert found[0].path == "fact/ledger.md" and found[0].mode == "hybrid"
    status = CliRunner().invoke(app, ["status", "--root", str(root), "--json"])
    assert json.loads(status.output)["model_source"] == f"embedding service {service.url}/v1/embeddings"
    assert KEY not in status.output and KEY not in repr(Settings())
    for path in root.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert all(request["auth"] == f"Bearer {KEY}" for request in service.requests)
