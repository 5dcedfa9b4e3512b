"""A damaged thread log: bad lines are skipped with a warning, numbering goes on, other threads are untouched.

Each case writes a line by hand into a thread's ``events.jsonl`` (as a crash, a bad edit or
a hostile process could) and then uses the thread through the tools and the CLI.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.tools.thread_append import thread_append
from memdir.tools.thread_context import thread_context
from memdir.tools.thread_control import thread_control
from memdir.tools.thread_list import thread_list

DAMAGE = {
    "backwards seq": '{"seq": 1, "at": "x", "op": "ADD", "chunk": {"id": "c1", "role": "user", "content": "old"}}',
    "strategy out of the root": '{"seq": 4, "at": "x", "op": "CONFIGURE", "key": "strategy", "value": "../../etc"}',
    "seq 1e999": '{"seq": 1e999, "at": "x", "op": "CONFIGURE", "key": "mode", "value": "auto"}',
    "nested too deeply": '{"seq": 4, "op": "ADD", "chunk": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "not JSON": '{"seq": 4, "op": "ADD", "chunk": {"id": "c4", "ro',
    "no object": "[1, 2, 3]",
}


@pytest.fixture
def memory(tmp_path):
    with Memory.open(Settings(root=tmp_path / "memory"), load_model=False) as opened:
        yield opened


def _damage(memory, thread, line):
    with (memory.root / "threads" / thread / "events.jsonl").open("a", encoding="utf-8") as log:
        log.write(line + "\n")


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_line_is_skipped_and_the_thread_goes_on(memory, kind):
    thread_append(memory, "t", "user", "first")  # c2 (c1 is the thread's creation)
    thread_append(memory, "t", "assistant", "second")  # c3
    thread_append(memory, "other", "user", "untouched")
    _damage(memory, "t", DAMAGE[kind])
    listing = thread_list(memory)
    assert "- t · 2 chunks" in listing and "- other · 1 chunk" in listing
    state = thread_control(memory, "t", "state")
    assert "strategy virtual" in state and "1 damaged log line skipped (the events around them count)" in state
    reply = thread_append(memory, "t", "user", "third")
    after = 5 if kind == "strategy out of the root" else 4  # after the highest seq read: 4 there, else 3
    assert reply == f"Appended c{after} to thread t (strategy virtual)."
    assert "[c2 user] first\n[c3 assistant] second\n[c" in thread_context(memory, "t", 500)
    assert thread_context(memory, "t", 500).endswith("] third")
    assert thread_append(memory, "t", "assistant", "fourth") == f"Appended c{after + 1} to thread t (strategy virtual)."


def test_numbering_continues_after_the_highest_seq_seen(memory):
    thread_append(memory, "t", "user", "first")
    _damage(memory, "t", '{"seq": 9, "at": "x", "op": "ADD", "chunk": {"id": "c2", "role": "user", "content": "dup"}}')
    assert thread_append(memory, "t", "user", "next") == "Appended c10 to thread t (strategy virtual)."


def test_thread_show_says_a_line_was_skipped(memory, tmp_path):
    thread_append(memory, "t", "user", "first")
    _damage(memory, "t", DAMAGE["not JSON"])
    result = CliRunner().invoke(app, ["thread", "show", "t", "--root", str(memory.root)])
    assert result.exit_code == 0, result.output
    assert "1 damaged log line skipped" in result.output and "- c2 user working-flow/user" in result.output


def test_a_lone_surrogate_in_content_is_a_validation_error_and_writes_nothing(memory):
    thread_append(memory, "t", "user", "first")
    with pytest.raises(InputValidationError, match="half of a surrogate pair"):
        thread_append(memory, "t", "user", "broken \ud800 text")
    assert "version 2 (2 events), 1 chunk" in thread_control(memory, "t", "state")
    lines = (memory.root / "threads" / "t" / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2]
