"""The compaction check kept across appends (`Candidates`) picks exactly what a check of the whole thread picks."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.core.settings import Settings
from memdir.threads.compaction import Candidates, Plan, compaction_event, due
from memdir.threads.model import Chunk, ThreadState
from memdir.threads.reducers import apply

SETTINGS = Settings(thread_compact_chunks=6, thread_compact_keep_recent=3)


def whole_thread_plan(state: ThreadState, settings: Settings) -> Plan:
    """The rule stated plainly, over every chunk: older, compressible, not pinned; tool exchanges whole and answered."""
    keep = max(settings.threads.compact_keep_recent, 0)
    older = state.chunks[: max(len(state.chunks) - keep, 0)]
    eligible = {c.id for c in older if c.compressible and c.importance < settings.threads.pin_importance}
    groups: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in state.chunks:
        if chunk.call_id:
            groups[chunk.call_id].append(chunk)
    for members in groups.values():
        ids = [c.id for c in members]
        if not any(c.role == "tool" for c in members) or not all(i in eligible for i in ids):
            eligible.difference_update(ids)
    return Plan(tuple(c for c in state.chunks if c.id in eligible))


turn = st.tuples(
    st.sampled_from(["user", "assistant", "call", "tool", "delete", "reorder"]),
    st.sampled_from([0.2, 0.5, 0.9]),
    st.sampled_from(["compressible", "compressible", "critical"]),
    st.integers(0, 3),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(turn, max_size=80))
def test_the_check_kept_across_appends_agrees_with_a_check_of_the_whole_thread(turns):
    candidates = Candidates(SETTINGS)
    state = ThreadState()
    for role, importance, retention, call in turns:
        seq = state.seq + 1
        if role == "delete" and len(state.chunks) > 1:
            event = {"seq": seq, "op": "DELETE", "ids": [state.chunk_ids[call % len(state.chunks)]]}
        elif role == "reorder" and len(state.chunks) > 1:
            event = {"seq": seq, "op": "REORDER", "ids": list(state.chunk_ids[1:] + state.chunk_ids[:1])}
        elif role in ("user", "assistant", "call", "tool"):
            chunk = Chunk(f"c{seq}", "assistant" if role == "call" else role, f"turn {seq}", retention=retention,
                          importance=importance, call_id=f"k{call}" if role in ("call", "tool") else None)
            event = {"seq": seq, "op": "ADD", "chunk": chunk.to_json()}
        else:
            continue
        state = apply(state, event)
        found = candidates.plan(state)
        assert found == whole_thread_plan(state, SETTINGS)
        if due(found, SETTINGS):
            state = apply(state, compaction_event(found, "summary", "extractive")(state.seq + 1, "", state))
            assert candidates.plan(state) == whole_thread_plan(state, SETTINGS)


def test_a_call_that_waited_long_for_its_result_is_compacted_with_it():
    candidates = Candidates(SETTINGS)
    state = ThreadState()
    script = [("assistant", "k1"), *[("user", None)] * 8, ("tool", "k1"), *[("user", None)] * 8]
    for role, call in script:
        seq = state.seq + 1
        chunk = Chunk(f"c{seq}", role, f"turn {seq}", importance=0.2, call_id=call)
        state = apply(state, {"seq": seq, "op": "ADD", "chunk": chunk.to_json()})
        found = candidates.plan(state)
        assert found == whole_thread_plan(state, SETTINGS)
        if due(found, SETTINGS):
            state = apply(state, compaction_event(found, "summary", "extractive")(state.seq + 1, "", state))
    assert {"c1", "c10"} <= set(state.archive)  # the call and its result went together
