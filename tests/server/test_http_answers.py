"""How `memdir serve --http` answers: each call with one JSON body, while what the server asks of a
client unprompted (MCP sampling, when a thread is compacted) still reaches the client's model."""

from __future__ import annotations

import anyio
import httpx2
import mcp_types as types
import pytest

from memdir.server.tokens import TokenFile
from tests.server.http_process import running_server
from tests.server.test_http import INITIALIZE, MCP_HEADERS


@pytest.fixture
def token(tmp_path) -> str:
    return TokenFile(tmp_path / "http-tokens.json").create("alice")  # the file conftest points MEMDIR_HTTP_TOKENS_FILE at


def test_a_call_is_answered_with_one_json_body(token, tmp_path):
    with running_server(cwd=tmp_path) as server:
        answer = httpx2.post(server.url, json=INITIALIZE, headers={**MCP_HEADERS, "authorization": f"Bearer {token}"},
                             timeout=30)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")  # not an event stream opened for it
    assert answer.json()["result"]["serverInfo"]["name"]


def test_compaction_asks_the_clients_model_over_http(token, tmp_path):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    prompts: list[str] = []

    async def sampler(_context, params):
        prompts.append(params.messages[0].content.text)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="The user greeted twice."),
                                         model="test")

    async def scenario(url: str) -> list[str]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy", sampling_callback=sampler) as client:
                replies = [await client.call_tool("ThreadAppend", {"thread": "t", "role": "user", "content": f"hello {i}"})
                           for i in range(4)]
                return [reply.content[0].text for reply in replies]

    env = {"MEMDIR_THREAD_COMPACT_CHUNKS": "3", "MEMDIR_THREAD_COMPACT_KEEP_RECENT": "1"}
    with running_server(env=env, cwd=tmp_path) as server:
        replies = anyio.run(scenario, server.url)
    assert "Compacted 3 chunks" in replies[-1] and "(model summary" in replies[-1], replies
    assert len(prompts) == 1 and "[c2 user] hello 0" in prompts[0]
