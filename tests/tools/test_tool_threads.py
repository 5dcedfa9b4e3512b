"""The thread tools: ThreadAppend, ThreadContext, ThreadControl, ThreadList — as functions and through an MCP client."""

from __future__ import annotations

import anyio
import pytest

from memdir.core.errors import InputValidationError, InvalidPathError, ThreadNotFoundError
from memdir.tools.memory_glob import memory_glob
from memdir.tools.thread_append import thread_append
from memdir.tools.thread_context import thread_context
from memdir.tools.thread_control import thread_control
from memdir.tools.thread_list import thread_list


def test_append_then_context_shows_the_messages_with_strategy_and_tokens(memory):
    assert thread_append(memory, "chat", "user", "Book the flight to Lisbon.") == "Appended c2 to thread chat (strategy virtual)."
    thread_append(memory, "chat", "assistant", "Booked: TP 1351, 9:40.", importance=0.8)
    text = thread_context(memory, "chat", 500)
    head, _, body = text.partition("\n\n")
    assert head.startswith("Thread chat · strategy virtual · ") and "of 500 tokens · 2 of 2 messages shown verbatim" in head
    assert body == "[c2 user] Book the flight to Lisbon.\n[c3 assistant] Booked: TP 1351, 9:40."


def test_the_marker_switches_the_strategy_and_an_unknown_one_keeps_the_message_and_is_reported(memory):
    thread_append(memory, "chat", "user", "hello")
    reply = thread_append(memory, "chat", "assistant", "Switching. @@memory('hnsw')@@")
    assert reply == "Appended c3 to thread chat (strategy semantic; switched to semantic by the marker)."
    reply = thread_append(memory, "chat", "user", "Use the quantum one. @@memory('quantum')@@ @@ref('page-3')@@")
    assert reply.startswith("Appended c4 to thread chat (strategy semantic).")
    assert "Ignored @@memory('quantum')@@: unknown context strategy 'quantum'" in reply
    assert "Ignored @@ref('page-3')@@: 'page-3' names no page or chunk" in reply
    assert "strategy semantic · mode auto" in thread_control(memory, "chat", "state")
    assert "version 4 (4 events), 3 chunks" in thread_control(memory, "chat", "state")


def test_control_actions(memory):
    thread_append(memory, "chat", "user", "one")
    assert thread_control(memory, "chat", "strategy", "fragment") == (
        "Thread chat now uses the fragment strategy (was virtual); every event is kept.")
    assert "is stepping" in thread_control(memory, "chat", "mode", "stepping")
    assert thread_append(memory, "chat", "user", "two").startswith("Queued as #1 in thread chat (the thread is stepping)")
    assert "queue 1 waiting (blocked: stepping)" in thread_control(memory, "chat", "state")
    assert "next queued: user: two" in thread_control(memory, "chat", "state")
    assert thread_control(memory, "chat", "step") == "Step: wrote c5. 0 messages still queued."
    assert thread_control(memory, "chat", "mode", "auto") == "Thread chat is in auto mode; 0 queued messages processed."
    assert thread_control(memory, "chat", "compact").startswith("Nothing to compact in thread chat")  # all recent
    assert thread_control(memory, "chat", "fork", "chat-2").startswith("Forked chat into chat-2: 2 chunks, strategy fragment")
    assert thread_control(memory, "chat", "ref", "p0") == "Pages and chunks referenced in thread chat: p0."
    assert thread_control(memory, "chat", "unref", "p0") == "Pages and chunks referenced in thread chat: none."
    assert "paused" in thread_control(memory, "chat", "pause")
    assert thread_control(memory, "chat", "resume") == "Thread chat resumed; 0 queued messages processed."
    listing = thread_list(memory)
    assert listing.startswith("Threads (2):") and "- chat-2 · 2 chunks" in listing and "forked from chat" in listing


@pytest.mark.parametrize(("action", "value", "message"), [
    ("explode", None, "unknown action 'explode'"),
    ("strategy", None, "action 'strategy' needs a value"),
    ("mode", "turbo", "mode must be auto or stepping"),
    ("step", None, "not in stepping mode"),
    ("ref", "page-three", "names no page"),
])
def test_control_refuses_bad_actions_clearly(memory, action, value, message):
    thread_append(memory, "chat", "user", "one")
    with pytest.raises(InputValidationError, match=message):
        thread_control(memory, "chat", action, value)


def test_unknown_thread_and_bad_ids_are_clear_errors(memory):
    with pytest.raises(ThreadNotFoundError, match="no thread 'ghost'"):
        thread_context(memory, "ghost", 100)
    with pytest.raises(InputValidationError, match="thread id"):
        thread_append(memory, "../../etc", "user", "x")
    assert thread_list(memory) == "No threads yet. ThreadAppend starts one."


def test_thread_logs_are_never_memory_entries(memory, session):
    from memdir.tools.memory_write import memory_write

    thread_append(memory, "chat", "user", "private working memory")
    assert "chat" not in memory_glob(memory, session, "**/*")
    assert [info.path for info in memory.list(include_virtual=False)] == []
    with pytest.raises(InvalidPathError, match="reserved for working-memory threads"):
        memory_write(memory, session, "threads/chat/notes.md", "x", "T", "fact", [], [], "d")
    (memory.root / "threads").mkdir(exist_ok=True)  # the PostgreSQL store keeps its logs in the database
    (memory.root / "threads" / "stray.md").write_text("a hand-made file")
    assert [info.path for info in memory.list(include_virtual=False)] == []


# ---------------------------------------------------------------- through the MCP client
def _server(tmp_path, **settings):
    from memdir.core.settings import Settings
    from memdir.server.app import build_server
    from tests.fakes import FakeEmbedder

    return build_server(Settings(root=tmp_path / "memory", **settings), embedder=FakeEmbedder())


def test_compaction_asks_the_clients_model_through_mcp_sampling(tmp_path):
    import mcp_types as types
    from mcp import Client

    server = _server(tmp_path, thread_compact_chunks=3, thread_compact_keep_recent=1)
    prompts: list[str] = []

    async def sampler(_context, params):
        prompts.append(params.messages[0].content.text)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="The user greeted twice."),
                                         model="test")

    async def scenario():
        async with Client(server, mode="legacy", sampling_callback=sampler) as client:
            replies = [await client.call_tool("ThreadAppend", {"thread": "t", "role": "user", "content": f"hello {i}"})
                       for i in range(4)]
            context = await client.call_tool("ThreadContext", {"thread": "t", "budget_tokens": 200})
            return [reply.content[0].text for reply in replies], context.content[0].text

    replies, context = anyio.run(scenario)
    assert "Compacted 3 chunks" in replies[-1] and "(model summary" in replies[-1]
    assert len(prompts) == 1 and "[c2 user] hello 0" in prompts[0]
    assert "The user greeted twice." in context


def test_without_sampling_the_summary_is_extractive(tmp_path):
    from mcp import Client

    server = _server(tmp_path, thread_compact_chunks=3, thread_compact_keep_recent=1)

    async def scenario():
        async with Client(server, mode="legacy") as client:
            for i in range(4):
                reply = await client.call_tool("ThreadAppend", {"thread": "t", "role": "user", "content": f"hello {i}"})
            refused = await client.call_tool("ThreadControl", {"thread": "t", "action": "strategy", "value": "quantum"})
            return reply.content[0].text, refused

    reply, refused = anyio.run(scenario)
    assert "(extractive summary" in reply
    assert refused.is_error and "unknown context strategy 'quantum'" in refused.content[0].text
