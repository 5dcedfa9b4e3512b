"""The first seconds: searches wait a bounded time for a loading model, writes made meanwhile are embedded by exit."""

from __future__ import annotations

import threading

from memdir.core.settings import Settings
from memdir.embeddings.provider import ModelProvider
from memdir.memory import Memory
from memdir.tools.memory_search import memory_search
from tests.fakes import FakeEmbedder

KEYWORD_ONLY = "keyword search only"


def loading(tmp_path, release: threading.Event, **settings) -> Memory:
    """A memory whose model is still loading until ``release`` is set."""
    root = tmp_path / "memory"
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        memory.write("fact/git/rebase.md", "Rebase the feature branch onto main, then push.", title="Rebase",
                     metadata={"type": "fact", "tags": ["git"]})

    def loader():
        release.wait(30)
        return FakeEmbedder()

    memory = Memory.open(Settings(root=root, **settings), model=ModelProvider(loader))
    memory.model.start_background()
    return memory


def test_a_search_arriving_while_the_model_loads_waits_for_it(tmp_path):
    release = threading.Event()
    memory = loading(tmp_path, release)
    try:
        threading.Timer(0.3, release.set).start()
        found = memory_search(memory, "rebase the branch onto main")
        assert "fact/git/rebase.md" in found and KEYWORD_ONLY not in found
    finally:
        release.set()
        memory.close()


def test_the_wait_is_bounded_by_a_setting(tmp_path):
    release = threading.Event()
    memory = loading(tmp_path, release, search_model_wait=0.2)
    try:
        found = memory_search(memory, "rebase the branch onto main")
        assert "fact/git/rebase.md" in found and KEYWORD_ONLY in found
    finally:
        release.set()
        memory.close()


def test_entries_written_while_the_model_loads_are_embedded_before_close(tmp_path):
    release = threading.Event()
    memory = loading(tmp_path, release)
    memory.write("fact/git/push.md", "Push with --force-with-lease after a rebase.", title="Push",
                 metadata={"type": "fact"})
    assert not (memory.root / "fact" / "git" / "push.emb").exists()
    threading.Timer(0.3, release.set).start()
    memory.close()
    assert (memory.root / "fact" / "git" / "push.emb").stat().st_size == FakeEmbedder().dimensions * 4


def test_the_server_says_on_stderr_when_the_model_is_ready(tmp_path, capsys):
    from memdir.server.state import MemoryHost

    memory = MemoryHost._open(Settings(root=tmp_path / "memory"), FakeEmbedder())
    memory.close()
    err = capsys.readouterr().err
    assert "memdir: the embedding model fake/bow-384 is ready: search is semantic from now on" in err
