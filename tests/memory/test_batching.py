"""Writes waiting for the model at the same time are embedded in one call (two such calls run at once by
default); each still gets its own vector, and a write that fails changes nothing and costs the others nothing."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from memdir.core.errors import StaleEditError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.memory.batching import BATCH_NICENESS
from tests.fakes import FakeEmbedder, HoldingEmbedder

WRITES = [(f"fact/team/note{i}.md", f"Note {i} about the release train and pipeline number {i}.") for i in range(4)]


def write(memory: Memory, path: str, content: str, expected: str | None = None):
    return memory.write(path, content, title=path.rsplit("/", 1)[-1], metadata={"type": "fact"}, expected_content=expected)


def written_alone(tmp_path) -> dict[str, np.ndarray]:
    """Each entry's vector when it is written by itself."""
    with Memory.open(Settings(root=tmp_path / "alone"), embedder=FakeEmbedder()) as memory:
        return {path: write(memory, path, content).entry.embedding for path, content in WRITES}


def test_writes_sent_together_share_one_model_call(tmp_path):
    embedder = HoldingEmbedder(others=len(WRITES) - 1)
    with Memory.open(Settings(root=tmp_path / "memory", embed_batches_at_once=1), embedder=embedder) as memory:
        embedder.hold_next()
        with ThreadPoolExecutor(len(WRITES)) as pool:
            list(pool.map(lambda item: write(memory, *item), WRITES))
        stored = {path: memory.read(path).embedding for path, _ in WRITES}
    # The first write found the model idle; the three sent meanwhile waited for it and went as one batch.
    assert sorted(len(batch) for batch in embedder.batches) == [1, 3]
    alone = written_alone(tmp_path)
    for path, _ in WRITES:
        np.testing.assert_allclose(stored[path], alone[path], atol=1e-6)


def test_a_write_arriving_while_one_batch_runs_starts_its_own(tmp_path):
    """By default two batches run at once: the second write does not wait for the first's model call
    (which holds the model until another call comes in), and the writes behind both go as one batch."""
    embedder = HoldingEmbedder(others=1, hold=10.0)
    with Memory.open(Settings(root=tmp_path / "memory"), embedder=embedder) as memory:
        embedder.hold_next()
        with ThreadPoolExecutor(len(WRITES)) as pool:
            list(pool.map(lambda item: write(memory, *item), WRITES))
        stored = {path: memory.read(path).embedding for path, _ in WRITES}
    assert embedder.released_in_time  # the second write's call came while the first's ran
    assert sorted(len(batch) for batch in embedder.batches) in ([1, 1, 2], [1, 1, 1, 1])
    alone = written_alone(tmp_path)
    for path, _ in WRITES:
        np.testing.assert_allclose(stored[path], alone[path], atol=1e-6)


def test_a_text_the_model_cannot_embed_costs_the_others_nothing(tmp_path):
    embedder = HoldingEmbedder(others=len(WRITES) - 1, poison="number 2")
    with Memory.open(Settings(root=tmp_path / "memory"), embedder=embedder) as memory:
        embedder.hold_next()
        with ThreadPoolExecutor(len(WRITES)) as pool:
            list(pool.map(lambda item: write(memory, *item), WRITES))
        stored = {path: memory.read(path) for path, _ in WRITES}
    alone = written_alone(tmp_path)
    for path, content in WRITES:
        assert stored[path].content == content  # every write is stored
        if "number 2" in content:
            assert stored[path].embedding is None  # without a vector, as any write the model failed
        else:
            np.testing.assert_allclose(stored[path].embedding, alone[path], atol=1e-6)


def test_a_stale_edit_in_a_batch_changes_nothing(tmp_path):
    embedder = HoldingEmbedder(others=len(WRITES) - 1)
    with Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder()) as memory:
        stale_path = WRITES[0][0]
        write(memory, stale_path, "What the entry held first.")
    with Memory.open(Settings(root=tmp_path / "memory", embed_batches_at_once=1), embedder=embedder) as memory:
        embedder.hold_next()
        edits = [(stale_path, "An edit made from an old read.", "What another client replaced."), *[(*w, None) for w in WRITES[1:]]]
        with ThreadPoolExecutor(len(edits)) as pool:
            outcomes = list(pool.map(lambda item: _outcome(memory, *item), edits))
        assert isinstance(outcomes[0], StaleEditError) and outcomes[1:] == ["stored"] * 3
        assert memory.read(stale_path).content == "What the entry held first."
        assert [memory.read(path).content for path, _ in WRITES[1:]] == [content for _, content in WRITES[1:]]
    assert sum(len(batch) for batch in embedder.batches) == len(WRITES) and len(embedder.batches) < len(WRITES)


def _outcome(memory: Memory, path: str, content: str, expected: str | None) -> object:
    try:
        write(memory, path, content, expected)
    except StaleEditError as exc:
        return exc
    return "stored"


def test_a_write_alone_whose_text_the_model_cannot_embed_calls_the_model_once(tmp_path, caplog):
    embedder = HoldingEmbedder(others=0, hold=0, poison="number 0")
    with Memory.open(Settings(root=tmp_path / "memory"), embedder=embedder) as memory:
        embedder.hold_next()  # (records the calls from here on)
        write(memory, *WRITES[0])
        stored = memory.read(WRITES[0][0])
    assert len(embedder.batches) == 1  # the failed call is not made a second time for the same text
    assert stored.content == WRITES[0][1] and stored.embedding is None
    assert "the model cannot embed 'number 0'" in caplog.text  # the model's own error, logged as before


class PriorityRecording(HoldingEmbedder):
    """Records the scheduling priority (nice value) of the thread each model call ran on, by text."""

    def __init__(self) -> None:
        super().__init__(others=1, hold=10.0)
        self.niceness: dict[str, int] = {}

    def embed(self, texts):
        import os
        import threading

        self.niceness.update(dict.fromkeys(texts, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        return super().embed(texts)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value is a thread's own on Linux only")
def test_a_batch_beside_another_yields_the_cores_to_the_servers_other_work(tmp_path):
    import os

    embedder = PriorityRecording()
    with Memory.open(Settings(root=tmp_path / "memory"), embedder=embedder) as memory:
        write(memory, *WRITES[0])  # (alone: its batch runs on its own thread)
        embedder.hold_next()  # (the next batch holds the model until a second one runs beside it)
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda item: write(memory, *item), WRITES[1:3]))
        memory.search("release train", top_k=3)  # (a search's query: embedded on the caller's thread)
    assert embedder.released_in_time
    caller = os.getpriority(os.PRIO_PROCESS, 0)
    niceness = [next(nice for text, nice in embedder.niceness.items() if f"pipeline number {i}." in text) for i in range(3)]
    # A batch beside another ran below this process's other threads, the first batch and the query at
    # their priority. (Before, both batches took the cores at the server's priority: a read, or a search's
    # query, queued for the cores behind them.)
    assert niceness[0] == caller and sorted(niceness[1:]) == [caller, min(19, caller + BATCH_NICENESS)], niceness
    assert embedder.niceness["release train"] == caller, embedder.niceness
