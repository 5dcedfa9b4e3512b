"""The event queue: FIFO order, blocking, results and errors reaching each caller."""

from __future__ import annotations

import pytest

from memdir.threads.queue import BlockingReason, EventQueue, QueueBlockedError


def recorder():
    seen: list[str] = []

    def handle(event: str) -> str:
        if event.startswith("bad"):
            raise ValueError(f"cannot process {event}")
        seen.append(event)
        return event.upper()

    return seen, handle


def test_unblocked_events_are_processed_at_once_and_callers_get_their_result():
    seen, handle = recorder()
    queue = EventQueue(handle)
    future = queue.submit("a")
    assert future.done() and future.result() == "A" and seen == ["a"] and len(queue) == 0


def test_blocked_events_wait_in_order_and_unblock_then_drain_processes_them_fifo():
    seen, handle = recorder()
    queue = EventQueue(handle)
    queue.block(BlockingReason.PAUSED)
    futures = [queue.submit(name) for name in ("a", "b", "c")]
    assert seen == [] and len(queue) == 3 and not any(f.done() for f in futures) and queue.peek() == "a"
    queue.unblock()
    assert queue.drain() == 3
    assert seen == ["a", "b", "c"] and [f.result() for f in futures] == ["A", "B", "C"]


def test_blocking_twice_is_refused_and_keeps_the_first_reason():
    queue = EventQueue(lambda event: event)
    queue.block(BlockingReason.STEPPING)
    with pytest.raises(QueueBlockedError, match="already blocked \\(stepping\\)"):
        queue.block(BlockingReason.COMPACTING)
    assert queue.blocked_by is BlockingReason.STEPPING


def test_a_processor_error_reaches_its_caller_and_the_queue_goes_on():
    seen, handle = recorder()
    queue = EventQueue(handle)
    queue.block(BlockingReason.PAUSED)
    first, bad, last = queue.submit("a"), queue.submit("bad-1"), queue.submit("c")
    queue.unblock()
    queue.drain()
    assert first.result() == "A" and last.result() == "C" and seen == ["a", "c"]
    with pytest.raises(ValueError, match="cannot process bad-1"):
        bad.result()


def test_process_one_steps_through_a_blocked_queue_one_event_at_a_time():
    seen, handle = recorder()
    queue = EventQueue(handle)
    queue.block(BlockingReason.STEPPING)
    for name in ("a", "b"):
        queue.submit(name)
    assert queue.process_one().result() == "A" and seen == ["a"] and len(queue) == 1
    assert queue.process_one().result() == "B" and queue.process_one() is None


def test_an_event_submitted_while_others_wait_queues_behind_them():
    seen, handle = recorder()
    queue = EventQueue(handle)
    queue.block(BlockingReason.PAUSED)
    queue.submit("a")
    queue.unblock()
    queue.submit("b")  # drains "a" first: order is kept
    assert seen == ["a", "b"]
