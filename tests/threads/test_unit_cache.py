"""The units a context builder keeps while a thread grows are the units of the whole thread, tool calls included."""

from __future__ import annotations

import random

from memdir.threads.context import UnitCache
from memdir.threads.context.base import units_of
from memdir.threads.model import Chunk


def test_units_grown_a_few_chunks_at_a_time_are_the_units_of_the_whole_thread():
    rng = random.Random(7)
    chunks: list[Chunk] = []
    open_calls: list[str] = []
    cache = UnitCache()
    for number in range(1, 400):
        if open_calls and rng.random() < 0.3:  # a result, maybe long after its call
            call = open_calls.pop(rng.randrange(len(open_calls)))
            chunks.append(Chunk(f"c{number}", "tool", f"result {call}", call_id=call))
        elif rng.random() < 0.2:
            open_calls.append(f"call-{number}")
            chunks.append(Chunk(f"c{number}", "assistant", f"calling {number}", call_id=open_calls[-1]))
        else:
            chunks.append(Chunk(f"c{number}", rng.choice(["user", "assistant"]), f"message {number}"))
        if rng.random() < 0.5:
            before = len(cache.units)
            start = cache.update(tuple(chunks))
            assert cache.units == units_of(chunks) and start <= before  # the units from ``start`` on are new
    cache.update(tuple(chunks))
    added = cache.extend([Chunk("c400", "user", "the last word")])
    chunks.append(Chunk("c400", "user", "the last word"))
    assert cache.units == units_of(chunks) and added == len(cache.units) - 1
    call = len(cache.units)  # a call, a message, then its result: only the units from the call's on are built again
    chunks += [Chunk("c401", "assistant", "calling", call_id="late"), Chunk("c402", "user", "meanwhile")]
    cache.update(tuple(chunks))
    chunks.append(Chunk("c403", "tool", "the result", call_id="late"))
    assert cache.update(tuple(chunks)) == call and cache.units == units_of(chunks)


def test_a_timeline_grown_across_compactions_is_the_timeline_built_afresh(make_manager):
    from memdir.threads.context import ContextBuilder
    from tests.threads.conftest import say

    manager = make_manager(thread_compact_chunks=6, thread_compact_keep_recent=2)
    kept = ContextBuilder("t", manager.settings)
    for turn in range(80):
        say(manager, "t", "user" if turn % 2 else "assistant", f"turn {turn} about topic {turn % 9}",
            **({"importance": 0.9} if turn % 13 == 0 else {}))
        if turn % 3 == 0:
            state = manager.state("t")
            assert kept.turns(state) == ContextBuilder("t", manager.settings).turns(state)
    state = manager.state("t")
    assert state.archive and [unit.key for unit in kept.turns(state)] == [chunk.id for chunk in state.timeline()]
