"""MemoryWrites that several clients send at once reach the model in shared batches, two batches at a
time, and each is stored whole.

Four client sessions (the official MCP client over streamable HTTP) write to one server at the same
time. With one batch at a time, the model (a fake that holds its first call a moment) sees the first
write alone and the three sent meanwhile in one call; by default a second write does not wait for the
first's call. Every entry is read back with its content and its own vector.
"""

from __future__ import annotations

import anyio
from mcp import Client

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.server.app import build_server
from tests.fakes import FakeEmbedder, HoldingEmbedder
from tests.server.http_process import serving

CLIENTS = 4


def entry(number: int) -> dict:
    return {"file_path": f"fact/team/client{number}.md", "content": f"Client {number} notes the deploy window {number}.",
            "title": f"Client {number}", "type": "fact", "tags": ["team"], "related": [], "domain": "ops"}


def written_at_once(tmp_path, embedder: HoldingEmbedder, **settings: object) -> dict[int, str]:
    """Each client's reply to its MemoryWrite, the four sent at the same time to one server."""
    server = build_server(Settings(root=tmp_path / "memory", hook_socket=False, evolution_enabled=False, **settings),
                          embedder=embedder)
    replies: dict[int, str] = {}

    async def client(url: str, number: int) -> None:
        async with Client(url, mode="legacy") as session:
            await session.list_tools()  # (the memory opens after the handshake)
            result = await session.call_tool("MemoryWrite", entry(number))
            assert not result.is_error, result.content[0].text
            replies[number] = result.content[0].text

    async def scenario(url: str) -> None:
        async with Client(url, mode="legacy") as first:
            await first.read_resource("memdir://status")  # opened: the writes below are all that embeds
        embedder.hold_next()
        async with anyio.create_task_group() as group:
            for number in range(CLIENTS):
                group.start_soon(client, url, number)

    with serving(server.streamable_http_app()) as base:
        anyio.run(scenario, f"{base}/mcp")
    return replies


def test_writes_sent_at_once_by_several_clients_share_one_model_call(tmp_path):
    embedder = HoldingEmbedder(others=CLIENTS - 1)
    replies = written_at_once(tmp_path, embedder, embed_batches_at_once=1)
    assert sorted(len(batch) for batch in embedder.batches) == [1, CLIENTS - 1]
    stored_whole(tmp_path, replies)


def test_a_write_sent_while_another_is_embedded_does_not_wait_for_it(tmp_path):
    embedder = HoldingEmbedder(others=1, hold=10.0)  # the first call ends when a second comes in
    replies = written_at_once(tmp_path, embedder)
    assert embedder.released_in_time  # a second write's call reached the model while the first's ran
    assert sum(len(batch) for batch in embedder.batches) == CLIENTS
    stored_whole(tmp_path, replies)


def stored_whole(tmp_path, replies: dict[int, str]) -> None:
    """Every client's entry acknowledged, and read back with its content and its own vector."""
    assert sorted(replies) == list(range(CLIENTS))
    assert all(reply.startswith(f"Stored at memory://fact/team/client{n}.md") for n, reply in replies.items())
    with Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder()) as memory:
        for number in range(CLIENTS):
            stored = memory.read(f"fact/team/client{number}.md")
            assert stored.content == entry(number)["content"]
            assert stored.embedding is not None
            # its own vector, not another write's of the batch: nearest to itself alone
            (nearest, score), *_ = memory.nearest(stored.embedding, 2)
            assert nearest == stored.path and score > 0.999
