"""The thread manager: the log on disk, compaction, execution modes and stepping, pause, fork, strategy switches."""

from __future__ import annotations

import json
import os

import pytest

from memdir.core.errors import InputValidationError, ThreadNotFoundError
from memdir.threads.queue import BlockingReason, QueueBlockedError
from tests.threads.conftest import say


def test_messages_are_appended_as_readable_json_lines_and_replay_to_the_same_state(manager, tmp_path):
    say(manager, "chat", "user", "Where is the invoice for März? ✓")
    say(manager, "chat", "assistant", "In fact/invoices.md.\nSecond line.")
    lines = (tmp_path / "memory" / "threads" / "chat" / "events.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    assert [event["op"] for event in events] == ["BATCH", "ADD", "ADD"]  # the first: strategy, owner, visibility
    assert "März? ✓" in lines[1]  # human-readable, not \u-escaped
    assert events[2]["chunk"]["content"] == "In fact/invoices.md.\nSecond line."
    assert manager.replay("chat") == manager.state("chat")


def test_a_second_manager_sees_what_the_first_appended(make_manager):
    first, second = make_manager(), make_manager()
    say(first, "t", "user", "one")
    assert [c.content for c in second.state("t").chunks] == ["one"]
    say(second, "t", "user", "two")
    say(first, "t", "user", "three")
    assert [c.content for c in first.state("t").chunks] == [c.content for c in second.state("t").chunks] == ["one", "two", "three"]


def test_a_tail_left_by_a_killed_writer_is_ignored_then_cut_by_the_next_append(manager, make_manager, tmp_path):
    say(manager, "t", "user", "kept")
    log = tmp_path / "memory" / "threads" / "t" / "events.jsonl"
    with open(log, "ab") as handle:
        handle.write(b'{"seq": 3, "op": "ADD", "chunk": {"id": "c3", "ro')  # no newline: killed mid-write
    fresh = make_manager()
    assert [c.content for c in fresh.state("t").chunks] == ["kept"]
    say(fresh, "t", "user", "after")
    assert [c.content for c in make_manager().state("t").chunks] == ["kept", "after"]
    assert all(json.loads(line) for line in log.read_text().splitlines())


def test_bad_input_is_refused_with_a_clear_error_and_writes_nothing(manager):
    say(manager, "t", "user", "hello")
    for role, content, fields in [("robot", "x", {}), ("user", "  ", {}), ("user", "x", {"importance": 2}),
                                  ("user", "x", {"retention": "forever"}), ("user", "x", {"chunk_type": "poem"})]:
        with pytest.raises(InputValidationError):
            say(manager, "t", role, content, **fields)
    assert manager.state("t").version == 2
    with pytest.raises(InputValidationError, match="thread id"):
        say(manager, "../escape", "user", "x")
    with pytest.raises(ThreadNotFoundError):
        manager.state("nobody")


def test_compaction_replaces_compressible_chunks_but_keeps_critical_ones_and_tool_pairs(make_manager):
    manager = make_manager(thread_compact_chunks=3, thread_compact_keep_recent=2)
    say(manager, "t", "system", "You are a careful agent.")  # critical by default
    say(manager, "t", "user", "Please list the files.")
    say(manager, "t", "assistant", "ls -la", call_id="call-1")
    say(manager, "t", "user", "a user remark between the call and its result", importance=0.9)
    say(manager, "t", "tool", "README.md setup.py", retention="critical")  # answers call-1; critical
    say(manager, "t", "assistant", "There are two files.")
    say(manager, "t", "user", "Thanks.")
    say(manager, "t", "assistant", "You are welcome.")
    result = say(manager, "t", "user", "Now the next task.")
    state = manager.state("t")
    contents = [chunk.content for chunk in state.chunks]
    assert "You are a careful agent." in contents  # critical
    assert "ls -la" in contents and "README.md setup.py" in contents  # the pair stayed together
    assert "a user remark between the call and its result" in contents  # important: pinned
    summaries = [chunk for chunk in state.chunks if chunk.subtype == "compacted"]
    assert len(summaries) == 1 and result.compacted is not None and result.compacted.source == "extractive"
    assert set(summaries[0].parents) == {"c3", "c7", "c8"}
    assert "Please list the files." in summaries[0].content
    assert manager.replay("t") == state


def test_compaction_asks_the_clients_model_and_falls_back_when_it_fails(make_manager):
    manager = make_manager(thread_compact_chunks=0, thread_compact_keep_recent=0)
    for i in range(4):
        say(manager, "t", "user", f"message {i}")
    assert manager.compact("t", summarize=lambda chunks: f"MODEL: {len(chunks)} messages").source == "model"
    assert manager.state("t").chunks[0].content == "MODEL: 4 messages"
    say(manager, "t", "user", "more")

    def broken(_):
        raise RuntimeError("client does not support sampling")

    assert manager.compact("t", summarize=broken).source == "extractive"


def test_stepping_queues_messages_and_runs_a_due_compaction_before_the_next_event(make_manager):
    manager = make_manager(thread_compact_chunks=2, thread_compact_keep_recent=0)
    say(manager, "t", "user", "one")
    manager.set_mode("t", "stepping")
    queued = [say(manager, "t", "user", text) for text in ("two", "three", "four")]
    assert all(result.chunk_id is None for result in queued) and manager.queued("t") == 3
    assert [c.content for c in manager.state("t").chunks] == ["one"]
    first = manager.step("t")
    assert first.compacted is None and first.processed.result().chunk_id and first.remaining == 2
    second = manager.step("t")  # two compressible chunks now: compaction comes before "three"
    assert second.compacted is not None and second.processed is None and second.remaining == 2
    third = manager.step("t")
    assert third.processed.result() and [c.content for c in manager.state("t").chunks][-1] == "three"
    assert manager.set_mode("t", "auto") == 1  # back to auto drains the rest
    assert manager.queued("t") == 0 and "four" in manager.state("t").chunks[-1].content  # auto compacted it at once


def test_stepping_is_kept_in_the_log_and_a_new_process_resumes_stepping(make_manager):
    manager = make_manager()
    say(manager, "t", "user", "one")
    manager.set_mode("t", "stepping")
    again = make_manager()
    assert say(again, "t", "user", "two").chunk_id is None and again.blocked_by("t") is BlockingReason.STEPPING


def test_pause_holds_messages_until_resume_and_cannot_be_doubled(manager):
    say(manager, "t", "user", "one")
    manager.pause("t")
    assert say(manager, "t", "user", "two").queued_at == 1
    with pytest.raises(QueueBlockedError):
        manager.pause("t")
    with pytest.raises(InputValidationError, match="paused"):
        manager.set_mode("t", "stepping")
    assert manager.resume("t") == 1 and [c.content for c in manager.state("t").chunks] == ["one", "two"]
    with pytest.raises(InputValidationError, match="not paused"):
        manager.resume("t")


def test_fork_copies_every_event_and_records_its_origin(manager):
    for text in ("a", "b", "c"):
        say(manager, "t", "user", text)
    manager.set_strategy("t", "fragment")
    forked = manager.fork("t", "t2")
    original = manager.state("t")
    assert forked.chunks == original.chunks and forked.strategy == "fragment" and forked.forked_from == "t"
    say(manager, "t2", "user", "only in the fork")
    assert len(manager.state("t").chunks) == 3
    with pytest.raises(InputValidationError, match="already exists"):
        manager.fork("t", "t2")


@pytest.mark.parametrize("switch", ["tool", "marker"])
def test_switching_strategy_mid_thread_loses_no_event(manager, switch):
    for i in range(30):
        say(manager, "t", "user" if i % 2 == 0 else "assistant", f"turn {i} about the garden and the roses")
    before = manager.state("t").chunks
    for name in ("fragment", "hnsw", "virtual", "semantic"):
        if switch == "tool":
            manager.set_strategy("t", name)
        else:
            say(manager, "t", "user", f"switching now @@memory('{name}')@@")
        assert manager.state("t").strategy == ("semantic" if name == "hnsw" else name)
        assert manager.context("t", 500, "roses").tokens <= 500
    after = manager.state("t").chunks
    assert after[: len(before)] == before
    assert len(after) == len(before) + (4 if switch == "marker" else 0)
    with pytest.raises(InputValidationError, match="unknown context strategy"):
        manager.set_strategy("t", "quantum")
    assert manager.state("t").strategy == "semantic" and manager.state("t").chunks == after


def _append_many(root: str, writer: int, count: int) -> None:
    from memdir.core.settings import Settings
    from memdir.threads.manager import ThreadManager

    settings = Settings(root=root, thread_compact_chunks=0, thread_compact_tokens=0)  # every message stays a chunk
    manager = ThreadManager(settings.store_root, settings)
    for i in range(count):
        say(manager, "shared", "user", f"writer {writer} message {i}")


@pytest.mark.slow
def test_concurrent_writers_in_several_processes_lose_nothing(make_manager, tmp_path):
    import multiprocessing

    say(make_manager(), "shared", "system", "start")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(tmp_path / "memory"), w, 40)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    manager = make_manager(thread_compact_chunks=0, thread_compact_tokens=0)
    state = manager.state("shared")
    events = list(manager.events("shared"))
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    contents = [chunk.content for chunk in state.chunks]
    assert len(contents) == 161 and len(set(contents)) == 161
    for writer in range(4):  # each writer's messages in its own order
        mine = [c for c in contents if c.startswith(f"writer {writer} ")]
        assert mine == [f"writer {writer} message {i}" for i in range(40)]
    assert manager.replay("shared") == state


# ---------------------------------------------------------------- queued messages survive the process
def test_queued_messages_wait_on_disk_and_a_new_process_processes_them_in_order(make_manager):
    server = make_manager()
    say(server, "t", "user", "one")
    server.set_mode("t", "stepping")
    for text in ("two", "three"):
        say(server, "t", "user", text)
    del server  # the server goes away with two messages queued
    cli = make_manager()
    assert cli.queued("t") == 2
    assert cli.step("t").processed.result().chunk_id
    cli.set_mode("t", "auto")
    assert [c.content for c in make_manager().state("t").chunks] == ["one", "two", "three"]


def test_a_message_processed_by_another_process_is_not_written_twice(make_manager):
    server = make_manager()
    say(server, "t", "user", "one")
    server.set_mode("t", "stepping")
    say(server, "t", "user", "two")
    other = make_manager()
    assert other.step("t").processed.result().chunk_id  # e.g. `memdir thread step`
    stepped = server.step("t")  # the server's copy left its queue: nothing to process
    assert stepped.processed is None and server.queued("t") == 0
    assert [c.content for c in server.state("t").chunks] == ["one", "two"]


def test_a_writer_killed_between_writing_and_dequeuing_leaves_no_duplicate(make_manager):
    server = make_manager()
    say(server, "t", "user", "one")
    server.set_mode("t", "stepping")
    say(server, "t", "user", "two")
    queue_file = server.folder / "t" / "queue.jsonl"
    saved = queue_file.read_bytes()
    server.step("t")
    queue_file.write_bytes(saved)  # as if killed after the log write, before the queue rewrite
    fresh = make_manager()
    assert fresh.queued("t") == 0 and [c.content for c in fresh.state("t").chunks] == ["one", "two"]
    assert fresh.step("t").processed is None


def test_a_new_threads_first_message_is_written_with_its_creation_in_one_durable_step(manager, monkeypatch):
    say(manager, "older", "user", "the threads folder exists already")
    syncs: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda fd, real=real, name=name: (syncs.append(name), real(fd))[1])
    say(manager, "t", "user", "hello")
    # the log written whole and synced, then its folder and the threads folder (which gained the thread's folder)
    assert syncs == ["fsync", "fsync", "fsync"]
    lines = (manager.folder / "t" / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["op"] for line in lines] == ["BATCH", "ADD"]
    assert [chunk.content for chunk in manager.state("t").chunks] == ["hello"] and manager.replay("t") == manager.state("t")
