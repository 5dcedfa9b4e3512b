"""Shared fixtures: every test runs against its own memory root, config and cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memdir.core.settings import setting_info
from memdir.embeddings.model_package import fetched_model_dir
from tests.prerequisites import missing_prerequisite


@pytest.fixture(scope="session")
def model_cache_dir(tmp_path_factory):
    """One cache for the built ONNX model per test run (building it is the slow part), holding
    the model's files that `memdir setup` fetched into the user's cache (linked, not copied)."""
    cache = tmp_path_factory.mktemp("memdir-cache")
    users = Path(os.environ.get("MEMDIR_CACHE_DIR") or setting_info("cache_dir").default)
    fetched = fetched_model_dir(users)
    if fetched.is_dir():
        fetched_model_dir(cache).parent.mkdir(parents=True)
        fetched_model_dir(cache).symlink_to(fetched, target_is_directory=True)
    return cache


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch, model_cache_dir):
    """Point memdir's root, config file and cache at temporary places (never the user's)."""
    monkeypatch.setenv("MEMDIR_ROOT", str(tmp_path / "memory"))
    monkeypatch.setenv("MEMDIR_CONFIG", str(tmp_path / "memdir.toml"))
    monkeypatch.setenv("MEMDIR_CACHE_DIR", str(model_cache_dir))
    monkeypatch.setenv("MEMDIR_HTTP_TOKENS_FILE", str(tmp_path / "http-tokens.json"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # tests never download a model; the hub tests lift it
    for name in ("MEMDIR_MODEL_DIR", "MEMDIR_AGENT", "MEMDIR_MODE", "MEMDIR_EMBEDDINGS_ENABLED", "MEMDIR_MODEL_DOWNLOAD",
                 "MEMDIR_HTTP_TOKEN", "MEMDIR_STORE", "MEMDIR_ROLE", "MEMDIR_SHARED_STORE"):
        monkeypatch.delenv(name, raising=False)
    yield


def pytest_collection_modifyitems(config, items):
    """Tests marked ``directory_store`` (about files under the root: symlinks, hand edits,
    SwarmMemory's files) run against the directory store only."""
    keep, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("store_kind") == "postgres"
        (dropped if on_postgres and item.get_closest_marker("directory_store") else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session")
def pg_cluster():
    """A throwaway PostgreSQL + pgvector cluster for the whole session (`tests.pg_cluster`); the tests
    that need it skip (fail in CI), saying why, when it cannot start."""
    from tests.pg_cluster import Cluster, ClusterUnavailable

    try:
        cluster = Cluster()
    except ClusterUnavailable as exc:
        missing_prerequisite(f"PostgreSQL store tests need a PostgreSQL server with pgvector: {exc}")
    try:
        cluster.start()
    except ClusterUnavailable as exc:
        cluster.stop()
        missing_prerequisite(f"PostgreSQL store tests could not start their server: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(pg_cluster):
    """The URL of an empty PostgreSQL store of this test's own."""
    return pg_cluster.fresh_url()


@pytest.fixture(params=["directory", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_kind(request, monkeypatch):
    """Run the test against each store: the directory, then PostgreSQL (through ``MEMDIR_STORE``,
    which every `Settings` of the test reads)."""
    if request.param == "postgres":
        monkeypatch.setenv("MEMDIR_STORE", request.getfixturevalue("pg_url"))
    return request.param


@pytest.fixture
def memory(tmp_path):
    """A fresh memory root with the deterministic fake embedder (no onnxruntime)."""
    from memdir.core.settings import Settings
    from memdir.memory import Memory
    from tests.fakes import FakeEmbedder

    store = Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder())
    yield store
    store.close()


@pytest.fixture
def session():
    """A fresh MCP client session's state (read tracker, loaded skill)."""
    from memdir.tools.session import Session

    return Session()


@pytest.fixture
def anyio_backend():
    """The MCP SDK's client and server run on asyncio; the async tests do too (not on trio as well)."""
    return "asyncio"
