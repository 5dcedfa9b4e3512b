"""Which model made a vector, and from which text: recorded beside it, checked before it is used.

A vector found on disk with no record (SwarmMemory's, multi-qa-MiniLM-L6-cos-v1 by default
there; an ``.emb`` copied by hand) is stale: counted by ``status``, re-embedded by
``rebuild``, never compared with the current model's queries. A change of the
searchable-text recipe (``embedding_max_chars``) marks exactly the vectors whose text it
changes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from fakes import FakeEmbedder
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.settings import Settings
from memdir.embeddings.text import searchable_text
from memdir.memory import Memory

SWARM_FIXTURE = Path(__file__).parents[1] / "fixtures" / "swarm_memory"
SWARM_ENTRIES = 5  # four with an .emb, one without
BUILTINS = 1  # embedded like any entry (in the index alone)
LONG = "Caching. " + "The cache keeps hot rows in memory and evicts the least recently used ones. " * 12


def cli_status(root: Path, monkeypatch, **env: str) -> dict:
    with monkeypatch.context() as patch:
        patch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")  # no model: status counts from the records alone
        for name, value in env.items():
            patch.setenv(name, value)
        result = CliRunner().invoke(app, ["status", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture
def swarm_root(tmp_path: Path) -> Path:
    copy = tmp_path / "swarm"
    shutil.copytree(SWARM_FIXTURE, copy)
    return copy


# --------------------------------------------------------------------------- which model
def test_swarm_memory_vectors_are_stale_until_re_embedded(swarm_root: Path, monkeypatch) -> None:
    assert cli_status(swarm_root, monkeypatch)["stale"] == SWARM_ENTRIES  # built-ins are counted apart


def test_vectors_of_unknown_origin_are_never_compared_with_the_query(swarm_root: Path) -> None:
    settings = Settings(root=swarm_root, embed_batch_size=1)  # too many to catch up on at open
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        results = memory.search("ruby classes objects")
        assert results and all(r.mode == "keyword" and r.breakdown.semantic is None for r in results)
        assert memory.vectors()[0] == []
        assert memory.rebuild(everything=False).total == SWARM_ENTRIES + BUILTINS
        assert memory.status().stale == 0
        hit = memory.search("ruby classes objects")[0]
        assert hit.mode == "hybrid" and hit.breakdown.semantic > 0
        entry = memory.read("concept/ruby/classes.md")
        expected = FakeEmbedder().embed([searchable_text(entry.title, entry.metadata, entry.content)])[0]
        assert np.allclose(entry.embedding, expected)
    sidecar = yaml.safe_load((swarm_root / "concept/ruby/classes.yml").read_text(encoding="utf-8"))
    assert sidecar["embedding_model"] == FakeEmbedder.model_id and sidecar["embedding_text_hash"]


def test_a_hand_copied_emb_is_of_unknown_origin(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "m"
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        memory.write("fact/a.md", "Apples are red.", title="Apples")
    (root / "fact/b.md").write_text("Bananas are yellow.\n", encoding="utf-8")
    shutil.copyfile(root / "fact/a.emb", root / "fact/b.emb")
    assert cli_status(root, monkeypatch)["stale"] == 1  # b only; a's .yml vouches for its vector
    with Memory.open(Settings(root=root), load_model=False) as memory:
        assert memory.index.vectors.model_of("fact/b.md") is None
        assert memory.index.vectors.model_of("fact/a.md") == FakeEmbedder.model_id


def test_the_record_survives_deleting_the_derived_index(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "m"
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        memory.write("fact/a.md", "Apples are red.", title="Apples")
    shutil.rmtree(root / ".memdir")
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        assert memory.index.needs_embedding(FakeEmbedder.model_id) == []
        assert memory.search("red apples")[0].mode == "hybrid"


# --------------------------------------------------------------------------- which text
def test_changing_embedding_max_chars_marks_the_vectors_whose_text_it_changes(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "m"
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        memory.write("concept/cache.md", LONG, title="Cache")
        memory.write("fact/short.md", "Short and sweet.", title="Short")
    assert cli_status(root, monkeypatch)["stale"] == 0
    # The long one, and the built-in skill (its whole content is embedded too): not the short one.
    assert cli_status(root, monkeypatch, MEMDIR_EMBEDDING_MAX_CHARS="200")["stale"] == 1  # the built-in skill is counted apart
    settings = Settings(root=root, embedding_max_chars=200, embed_batch_size=0)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        stale = memory.index.needs_embedding(FakeEmbedder.model_id)
        assert stale == ["concept/cache.md", "skill/meta/deep-learning.md"]
        assert memory.rebuild(everything=False).total == 1 + BUILTINS
        entry = memory.read("concept/cache.md")
        card = searchable_text(entry.title, entry.metadata, entry.content, 200)
        assert np.allclose(entry.embedding, FakeEmbedder().embed([card])[0])
    assert cli_status(root, monkeypatch, MEMDIR_EMBEDDING_MAX_CHARS="200")["stale"] == 0
    assert cli_status(root, monkeypatch)["stale"] == 1  # the built-in skill is counted apart  # and back: the default's text differs again


def test_changing_embedding_summary_marks_the_vectors_whose_text_it_changes(tmp_path: Path, monkeypatch) -> None:
    """The card's summary (first paragraph, or the whole content) is part of the recipe as well."""
    root = tmp_path / "m"
    with Memory.open(Settings(root=root, embedding_summary="first_paragraph"), embedder=FakeEmbedder()) as memory:
        memory.write("concept/two.md", "First point.\n\nSecond point.", title="Two paragraphs")
        memory.write("fact/one.md", "Only one paragraph.", title="One")
    assert cli_status(root, monkeypatch, MEMDIR_EMBEDDING_SUMMARY="first_paragraph")["stale"] == 0
    # The entry with a second paragraph, and the built-in skill (several): not the one-paragraph entry.
    assert cli_status(root, monkeypatch, MEMDIR_EMBEDDING_SUMMARY="content")["stale"] == 1  # the built-in skill is counted apart
