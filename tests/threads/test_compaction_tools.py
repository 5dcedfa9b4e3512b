"""Compaction that loses nothing retrievable, through the MCP client with the default settings.

The defaults compact once 40 compressible messages wait outside the 8 most recent ones;
every test here passes that point and then asks for what was compacted.
"""

from __future__ import annotations

import re

import anyio
from mcp import Client

FILLER = ("The weather in {i} was mild.", "We talked about lunch option {i}.", "Reminder {i} about nothing much.",
          "Checked the coffee machine, number {i}.")


def _server(tmp_path, **settings):
    from memdir.core.settings import Settings
    from memdir.server.app import build_server
    from tests.fakes import FakeEmbedder

    return build_server(Settings(root=tmp_path / "memory", **settings), embedder=FakeEmbedder())


def _run(server, steps):
    """Run ``steps(call)`` against ``server`` with an MCP client; ``call(tool, **args)`` returns the reply text."""

    async def scenario():
        async with Client(server, mode="legacy") as client:
            async def call(tool, **arguments):
                reply = await client.call_tool(tool, arguments)
                assert not reply.is_error, reply.content[0].text
                return reply.content[0].text

            return await steps(call)

    return anyio.run(scenario)


async def _fill(call, thread, count, start=0):
    replies = []
    for i in range(start, start + count):
        role = "user" if i % 2 == 0 else "assistant"
        replies.append(await call("ThreadAppend", thread=thread, role=role, content=FILLER[i % len(FILLER)].format(i=i)))
    return replies


def test_semantic_finds_a_compacted_turn_and_shows_it_verbatim(tmp_path):
    async def steps(call):
        await call("ThreadAppend", thread="sre", role="user", content="Why is the terraform state locked in prod?")
        await call("ThreadAppend", thread="sre", role="assistant",
                   content="The terraform state is locked by a stale DynamoDB lease from the crashed CI job.")
        replies = await _fill(call, "sre", 60)
        await call("ThreadControl", thread="sre", action="strategy", value="semantic")
        context = await call("ThreadContext", thread="sre", budget_tokens=300, query="terraform state locked")
        state = await call("ThreadControl", thread="sre", action="state")
        return replies, context, state

    replies, context, state = _run(_server(tmp_path), steps)
    assert any("Compacted" in reply for reply in replies)
    assert "version 65 (65 events), 23 chunks" in state  # the turns were compacted in the thread's state ...
    assert "[c3 assistant] The terraform state is locked by a stale DynamoDB lease" in context  # ... yet found verbatim
    assert "[c2 user] Why is the terraform state locked in prod?" in context


def test_remember_and_decided_messages_are_never_compacted_and_stay_in_the_virtual_window(tmp_path):
    async def steps(call):
        await call("ThreadAppend", thread="t", role="user", content="Remember: the launch code is PURPLE-42.")
        await call("ThreadAppend", thread="t", role="assistant", content="We decided to ship on Friday.")
        await call("ThreadAppend", thread="t", role="user", content="A plain remark about the build.", importance=0.2)
        replies = await _fill(call, "t", 60)
        return replies, await call("ThreadContext", thread="t", budget_tokens=300)

    replies, context = _run(_server(tmp_path), steps)
    assert any("Compacted" in reply for reply in replies)
    assert "[c2 user] Remember: the launch code is PURPLE-42." in context
    assert "[c3 assistant] We decided to ship on Friday." in context
    assert "[c4 user] A plain remark" not in context


def test_ref_of_a_summary_brings_its_originals_back_within_the_budget_and_says_when_clipped(tmp_path):
    async def steps(call):
        await call("ThreadAppend", thread="t", role="user", content="The staging host is db-7.internal on port 6432.")
        replies = await _fill(call, "t", 60)
        compacted = next(reply for reply in replies if "Compacted" in reply)
        summary_id = compacted.split(" into ")[1].split(" ")[0]
        before = await call("ThreadContext", thread="t", budget_tokens=2000)
        ref = await call("ThreadControl", thread="t", action="ref", value=summary_id)
        after = await call("ThreadContext", thread="t", budget_tokens=2000)
        small = await call("ThreadContext", thread="t", budget_tokens=400)
        return summary_id, before, ref, after, small

    summary_id, before, ref, after, small = _run(_server(tmp_path), steps)
    assert f"[{summary_id} summary of 40 messages c2–" in before and f"ref {summary_id} brings them back" in before
    assert "- c2 user: The staging host is db-7.internal on port 6432." in before  # a summary line names its chunk
    assert "[c2 user] The staging host is db-7.internal on port 6432." not in before
    assert ref == f"Pages and chunks referenced in thread t: {summary_id}."
    assert "[c2 user] The staging host is db-7.internal on port 6432." in after
    assert "[c41 user] Reminder 38 about nothing much." in after  # every original is back
    assert " · 61 of 61 messages shown verbatim" in after
    assert f"({summary_id}: " in small and "of its 40 messages shown" in small and "larger budget_tokens" in small
    head = small.split("\n", 1)[0]
    assert int(head.split(" · ")[2].split(" of ")[0]) <= 400


def test_a_tool_call_waiting_for_its_result_is_not_compacted_and_the_result_joins_it(tmp_path):
    async def steps(call):
        await call("ThreadAppend", thread="t", role="assistant", content="run_tests(suite='all')", call_id="call-9")
        replies = await _fill(call, "t", 60)
        await call("ThreadAppend", thread="t", role="tool", content="412 passed, 3 failed")
        context = await call("ThreadContext", thread="t", budget_tokens=4000)
        return replies, context

    replies, context = _run(_server(tmp_path), steps)
    assert any("Compacted" in reply for reply in replies)
    assert re.search(r"\[c2 assistant tool call call-9\] run_tests\(suite='all'\)\n"
                     r"\[c\d+ tool result call-9\] 412 passed, 3 failed", context)


def test_a_query_the_strategy_does_not_use_is_reported(tmp_path):
    async def steps(call):
        await call("ThreadAppend", thread="t", role="user", content="hello")
        return await call("ThreadContext", thread="t", budget_tokens=100, query="what did we say?")

    context = _run(_server(tmp_path), steps)
    assert "(the virtual strategy does not use query; ThreadControl(action='strategy', value='semantic')" in context

