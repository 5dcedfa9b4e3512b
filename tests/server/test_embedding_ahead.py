"""A search's query starts embedding as its call arrives, not once the call reaches the memory's threads."""

from __future__ import annotations

import threading
import time

import anyio
import pytest
from mcp import Client

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.search import hybrid
from memdir.server.app import build_server
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.anyio

WRITE = {"file_path": "fact/ledger", "content": "The ledger moved to the new cluster.", "title": "Ledger",
         "type": "fact", "tags": [], "related": [], "domain": "test"}


@pytest.mark.parametrize(("tool", "arguments", "embedded"), [
    ("MemorySearch", {"query": "  ledger migration "}, "ledger migration"),
    ("MemoryDiscover", {"message": "How did the ledger migration go?"}, "How did the ledger migration go?"),
])
async def test_a_search_behind_its_sessions_write_embeds_its_query_while_the_write_runs(tmp_path, monkeypatch, tool,
                                                                                       arguments, embedded):
    server = build_server(Settings(root=tmp_path, evolution_enabled=False), embedder=FakeEmbedder())
    writing, release = threading.Event(), threading.Event()
    write = Memory.write

    def slow_write(self, *args, **kwargs):
        writing.set()
        release.wait(10)
        return write(self, *args, **kwargs)

    started: list[tuple[str, bool]] = []  # (text, whether the write was done by then)
    pool = hybrid._EMBEDDING

    class Recording:
        def submit(self, fn, embedder, text):
            started.append((text, release.is_set()))
            return pool.submit(fn, embedder, text)

    answers = []
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemorySearch", {"query": "anything"})  # (the server opens the store)
        monkeypatch.setattr(Memory, "write", slow_write)
        monkeypatch.setattr(hybrid, "_EMBEDDING", Recording())

        async def call(name, given):
            answers.append(await client.call_tool(name, given))

        async with anyio.create_task_group() as group:
            group.start_soon(call, "MemoryWrite", WRITE)
            await anyio.to_thread.run_sync(writing.wait, 10)
            group.start_soon(call, tool, arguments)  # the same session: it waits for the write to be done
            deadline = time.monotonic() + 2
            while not any(text == embedded for text, _ in started) and time.monotonic() < deadline:
                await anyio.sleep(0.01)
            release.set()
    assert all(not answer.is_error for answer in answers), answers
    # Its query's embedding started while the write ran (it began once the write was done), and only once.
    assert [done for text, done in started if text == embedded] == [False], started
