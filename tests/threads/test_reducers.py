"""Reducers: every operation, refusals that change nothing, and replay reproducing the state (property test)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.core.errors import InputValidationError
from memdir.threads.model import Chunk, ThreadState
from memdir.threads.reducers import apply, replay


def add(chunk_id: str, content: str = "x", **fields) -> dict:
    return {"op": "ADD", "chunk": Chunk(chunk_id, "user", content, **fields).to_json()}


def test_each_operation_changes_the_state_as_documented():
    state = replay([add("a"), add("b"), add("c")])
    assert state.chunk_ids == ("a", "b", "c") and state.version == 3
    state = apply(state, {"op": "UPDATE", "id": "b", "changes": {"content": "B", "importance": 0.9}})
    assert state.chunk("b").content == "B" and state.chunk("b").importance == 0.9
    state = apply(state, {"op": "REORDER", "ids": ["c", "a", "b"]})
    assert state.chunk_ids == ("c", "a", "b")
    state = apply(state, {"op": "REPLACE", "id": "a", "chunk": Chunk("a2", "assistant", "new").to_json()})
    assert state.chunk_ids == ("c", "a2", "b")
    state = apply(state, {"op": "BATCH_REPLACE", "ids": ["a2", "b"], "chunk": Chunk("s", "assistant", "sum", parents=("a2", "b")).to_json()})
    assert state.chunk_ids == ("c", "s") and state.chunk("s").parents == ("a2", "b")
    state = apply(state, {"op": "DELETE", "ids": ["c"]})
    assert state.chunk_ids == ("s",)
    state = apply(state, {"op": "BATCH", "events": [add("d"), {"op": "CONFIGURE", "key": "strategy", "value": "semantic"}]})
    assert state.chunk_ids == ("s", "d") and state.strategy == "semantic" and state.version == 9


@pytest.mark.parametrize("event", [
    {"op": "UPDATE", "id": "missing", "changes": {"content": "x"}},
    {"op": "UPDATE", "id": "a", "changes": {"id": "z"}},
    {"op": "DELETE", "ids": ["a", "missing"]},
    {"op": "REORDER", "ids": ["a"]},
    {"op": "ADD", "chunk": Chunk("a", "user", "dup").to_json()},
    {"op": "BATCH", "events": [add("new"), {"op": "DELETE", "ids": ["missing"]}]},
    {"op": "CONFIGURE", "key": "colour", "value": "red"},
    {"op": "EXPLODE"},
    {"op": ["ADD"]},
    {"op": "ADD"},
])
def test_a_refused_event_raises_and_leaves_the_state_as_it_was(event):
    state = replay([add("a"), add("b")])
    with pytest.raises(InputValidationError):
        apply(state, event)
    assert state.chunk_ids == ("a", "b") and state.version == 2


# ---------------------------------------------------------------- replay (property test)
ids = st.sampled_from([f"c{i}" for i in range(8)])
operation = st.one_of(
    st.builds(lambda i, text: add(i, text), ids, st.text(max_size=20)),
    st.builds(lambda i, text: {"op": "UPDATE", "id": i, "changes": {"content": text}}, ids, st.text(max_size=10)),
    st.builds(lambda chosen: {"op": "DELETE", "ids": chosen}, st.lists(ids, max_size=3, unique=True)),
    st.builds(lambda i, j: {"op": "BATCH_REPLACE", "ids": [i], "chunk": Chunk(j, "assistant", "s", parents=(i,)).to_json()}, ids, ids),
    st.builds(lambda name: {"op": "CONFIGURE", "key": "strategy", "value": name}, st.sampled_from(["virtual", "fragment", "semantic"])),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=30), st.randoms(use_true_random=False))
def test_replaying_the_accepted_events_reproduces_the_state_exactly(events, rnd):
    state, log = ThreadState(), []
    for event in events:
        try:
            state = apply(state, event)
        except InputValidationError:
            continue  # refused: never written to the log
        log.append(event)
        if log and rnd.random() < 0.3:  # a REORDER of what exists now
            order = list(state.chunk_ids)
            rnd.shuffle(order)
            reorder = {"op": "REORDER", "ids": order}
            state = apply(state, reorder)
            log.append(reorder)
    assert replay(log) == state
    cut = len(log) // 2  # incremental: a state read halfway, then the rest
    assert replay(log[cut:], replay(log[:cut])) == state


@settings(max_examples=25, deadline=None)
@given(st.lists(operation, max_size=25))
def test_a_log_written_event_by_event_replays_to_the_same_state_in_a_fresh_reader(events):
    import tempfile
    from pathlib import Path

    from memdir.storage.directory.locking import RootLock
    from memdir.storage.directory.thread_files import ThreadFiles
    from memdir.threads.log import EventLog

    with tempfile.TemporaryDirectory() as tmp:
        logs = ThreadFiles(Path(tmp), RootLock(Path(tmp) / ".lock"))
        writer = EventLog(logs, "t")
        for event in events:
            try:
                writer.append(lambda seq, at, _state, event=event: {"seq": seq, "at": at, **event})
            except InputValidationError:
                continue  # refused: nothing written
        reader = EventLog(logs, "t")
        assert reader.state() == writer.state() == replay(reader.events())


@settings(max_examples=25, deadline=None)
@given(st.lists(operation, min_size=1, max_size=10), st.lists(operation, max_size=10))
def test_a_log_created_in_one_step_knows_its_state_without_reading_it_back(first, then):
    import tempfile
    from pathlib import Path

    from memdir.storage.directory.locking import RootLock
    from memdir.storage.directory.thread_files import ThreadFiles
    from memdir.threads.log import EventLog

    with tempfile.TemporaryDirectory() as tmp:
        logs = ThreadFiles(Path(tmp), RootLock(Path(tmp) / ".lock"))
        writer = EventLog(logs, "t")
        logs.read = None  # type: ignore[method-assign]  # creating reads nothing back
        try:
            writer.create([lambda seq, at, _state, event=event: {"seq": seq, "at": at, **event} for event in first])
        except InputValidationError:
            assert not logs.exists("t")  # refused: nothing written
            return
        del logs.read
        assert writer.state() == EventLog(logs, "t").state()
        for event in then:
            try:
                writer.append(lambda seq, at, _state, event=event: {"seq": seq, "at": at, **event})
            except InputValidationError:
                continue
        reader = EventLog(logs, "t")
        assert reader.state() == writer.state() == replay(reader.events())
