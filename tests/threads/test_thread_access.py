"""Threads have an owner and a visibility like entries: agents on one root, each its own `memdir serve` over stdio,
driven by the official MCP client."""

from __future__ import annotations

import json

import pytest

from tests.server.test_e2e_access import agent
from tests.server.test_e2e_stdio import call, refused

pytestmark = pytest.mark.anyio


async def test_a_thread_is_its_creators_seen_by_its_role_view_and_audited(tmp_path):
    async with agent(tmp_path, "--agent", "alice", "--role", "executor") as alice:
        await call(alice, "ThreadAppend", thread="plan", role="user", content="Remember: deploy after 5 pm.")
        await call(alice, "ThreadControl", thread="plan", action="strategy", value="semantic")
    async with agent(tmp_path, "--agent", "bob", "--role", "reviewer") as bob:  # an executor's thread: in his view
        assert "- plan · 1 chunk" in await call(bob, "ThreadList")
        assert "[c2 user] Remember: deploy after 5 pm." in await call(bob, "ThreadContext", thread="plan", budget_tokens=200)
        message = await refused(bob, "ThreadAppend", thread="plan", role="user", content="Deploy now.")
        assert message.endswith("thread 'plan' belongs to alice; bob (reviewer) may not append to it.\n"
                                "Fork it into a thread of your own (ThreadControl action='fork'), ask alice, "
                                "or act as an admin.")
        for action, value in (("strategy", "virtual"), ("mode", "stepping"), ("compact", None), ("ref", "p0")):
            assert "belongs to alice" in await refused(bob, "ThreadControl", thread="plan", action=action, value=value)
        assert (await call(bob, "ThreadControl", thread="plan", action="fork", value="plan-bob")).startswith(
            "Forked plan into plan-bob")
        assert (await call(bob, "ThreadAppend", thread="plan-bob", role="user", content="My copy.")).startswith(
            "Appended c5 to thread plan-bob")
    async with agent(tmp_path, "--agent", "carol", "--role", "orchestrator") as carol:  # outside her view
        assert await call(carol, "ThreadList") == "No threads yet. ThreadAppend starts one."
        assert "no thread 'plan'" in await refused(carol, "ThreadContext", thread="plan", budget_tokens=100)
    events = [json.loads(line) for line in (tmp_path / "memory" / "threads" / "plan" / "events.jsonl").read_text().splitlines()]
    assert [event.get("by") for event in events] == ["alice", "alice", "alice"]
    records = [json.loads(line) for file in sorted((tmp_path / "memory" / "audit").glob("*.jsonl"))
               for line in file.read_text().splitlines()]
    assert [(r["agent"], r["action"], r["path"], r["owner"], r["details"]) for r in records] == [
        ("alice", "thread-create", "threads/plan", "alice", {}),
        ("alice", "thread-configure", "threads/plan", "alice", {"strategy": "semantic"}),
        ("bob", "thread-fork", "threads/plan-bob", "bob", {"forked_from": "plan"}),
    ]
