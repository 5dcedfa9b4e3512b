"""What the semantic strategy embeds, and where: a new message ahead of the next window, off the caller's path."""

from __future__ import annotations

import threading
import time

import numpy as np

from memdir.core.settings import Settings
from memdir.storage.directory.locking import RootLock
from memdir.threads.manager import ThreadManager
from memdir.threads.vectors import VectorCache
from tests.fakes import FakeEmbedder
from tests.threads.conftest import say


class RecordingEmbedder(FakeEmbedder):
    """The fake embedder, noting each call's texts and the thread that made it."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[tuple[str, list[str]]] = []

    def embed(self, texts):
        self.batches.append((threading.current_thread().name, list(texts)))
        return super().embed(texts)

    def embedded(self, fragment: str) -> bool:
        return any(fragment in text for _, batch in self.batches for text in batch)


def live_thread(tmp_path, embedder: RecordingEmbedder) -> ThreadManager:
    settings = Settings(root=tmp_path / "memory", thread_compact_chunks=0, thread_compact_tokens=0)
    manager = ThreadManager(settings.store_root, settings, lambda: embedder)
    say(manager, "t", "user", "My sister Wilhelmina lives in Reykjavik and breeds alpacas.")
    for turn in range(60):
        say(manager, "t", "assistant" if turn % 2 else "user", f"Turn {turn}: the garden, the invoice and the flight.")
    manager.set_strategy("t", "semantic")
    manager.context("t", 300, "warm up")  # embeds the thread once
    return manager


def wait_until(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_new_message_is_embedded_off_the_callers_thread_and_the_next_window_embeds_only_its_query(tmp_path):
    embedder = RecordingEmbedder()
    manager = live_thread(tmp_path, embedder)
    say(manager, "t", "user", "Quokkas were seen near the lighthouse.")
    assert wait_until(lambda: embedder.embedded("Quokkas")), "the new message was not embedded ahead"
    assert all(name != threading.current_thread().name for name, batch in embedder.batches if "Quokkas" in batch[0])
    embedder.batches.clear()
    window = manager.context("t", 300, "Where does Wilhelmina live?")
    assert embedder.batches == [(threading.current_thread().name, ["Where does Wilhelmina live?"])]
    assert "Reykjavik" in window.text and "Quokkas" in window.text


def test_a_query_that_is_the_last_user_message_uses_that_messages_vector(tmp_path):
    embedder = RecordingEmbedder()
    manager = live_thread(tmp_path, embedder)
    say(manager, "t", "user", "Which country does Wilhelmina live in?")
    assert wait_until(lambda: embedder.embedded("Which country"))
    embedder.batches.clear()
    asked = manager.context("t", 300, "Which country does Wilhelmina live in?")
    unasked = manager.context("t", 300)
    assert embedder.batches == []
    assert "Reykjavik" in asked.text and asked.text == unasked.text


def test_a_text_being_embedded_is_waited_for_not_embedded_twice_and_cached_ones_come_back_meanwhile(tmp_path):
    started, release = threading.Event(), threading.Event()

    class SlowEmbedder(RecordingEmbedder):
        def embed(self, texts):
            if "slow" in texts[0]:
                started.set()
                release.wait(10)
            return super().embed(texts)

    embedder = SlowEmbedder()
    cache = VectorCache(tmp_path, tmp_path / ".memdir" / "threads", embedder, RootLock(tmp_path / ".lock"))
    cache.vectors(["a cached text"])
    results: dict[str, np.ndarray] = {}
    first = threading.Thread(target=lambda: results.update(first=cache.vectors(["a slow text"])))
    second = threading.Thread(target=lambda: results.update(second=cache.vectors(["a slow text"])))
    first.start()
    assert started.wait(10)
    second.start()
    cached = threading.Thread(target=lambda: results.update(cached=cache.vectors(["a cached text"])))
    cached.start()
    cached.join(5)
    assert "cached" in results, "a cached vector waited for the model"
    release.set()
    first.join(10)
    second.join(10)
    assert np.allclose(results["first"], results["second"])
    assert sum(batch.count("a slow text") for _, batch in embedder.batches) == 1


def test_an_append_never_loads_the_model_when_no_semantic_window_was_asked_in_the_process(tmp_path):
    asked: list[str] = []

    def model() -> FakeEmbedder:
        asked.append("model")
        return RecordingEmbedder()

    settings = Settings(root=tmp_path / "memory")
    manager = ThreadManager(settings.store_root, settings, model)
    say(manager, "t", "user", "hello")
    manager.set_strategy("t", "semantic")
    say(manager, "t", "user", "a message appended from the command line")
    assert asked == []
