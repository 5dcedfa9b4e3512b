"""`memdir serve --connect URL`: editor windows share one HTTP server through stdio fronts.

End to end: the official MCP client starts `memdir serve --connect` as its stdio server (as an
editor does); the front forwards to a real `memdir serve --http` process.
"""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from memdir.server.tokens import TokenFile
from tests.server.http_process import running_server

pytestmark = pytest.mark.slow

ENTRY = {"file_path": "fact/team/standup.md", "content": "Standup is at 9:30 every weekday.", "title": "Standup",
         "type": "fact", "tags": ["team"], "related": [], "domain": "team"}


def front(url: str, token: str | None, tmp_path) -> StdioServerParameters:
    args = ["-m", "memdir", "serve", "--connect", url] + (["--token", token] if token else [])
    # The front's own root is never used: it must not open one (a distinct, absent root shows it).
    env = {**os.environ, "MEMDIR_ROOT": str(tmp_path / "front-root-unused")}
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(tmp_path))


def text(result) -> str:
    return "\n".join(block.text for block in result.content)


def leaves(error: BaseException) -> list[str]:
    """The messages of the MCP errors inside (possibly nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [message for inner in error.exceptions for message in leaves(inner)]
    return [str(error)] if isinstance(error, MCPError) else []


@pytest.fixture
def served(tmp_path):
    token = TokenFile(tmp_path / "http-tokens.json").create("editor")
    with running_server(cwd=tmp_path) as server:
        yield server, token


def test_two_editor_windows_share_one_server_with_their_own_sessions(served, tmp_path):
    server, token = served

    async def scenario():
        async with Client(front(server.url, token, tmp_path), mode="legacy") as first, \
                Client(front(server.url, token, tmp_path), mode="legacy") as second:
            assert "MemoryWrite" in [tool.name for tool in (await first.list_tools()).tools]
            assert not (await first.call_tool("MemoryWrite", ENTRY)).is_error
            assert "9:30" in text(await second.call_tool("MemoryRead", {"file_path": ENTRY["file_path"]}))
            edit = {"file_path": ENTRY["file_path"], "old_string": "9:30", "new_string": "10:00"}
            assert not (await second.call_tool("MemoryEdit", edit)).is_error  # it read the entry
            stale = await first.call_tool("MemoryEdit", {**edit, "old_string": "every", "new_string": "each"})
            assert stale.is_error  # the first window's read is older than the second's edit: per-session trackers

    anyio.run(scenario)
    assert not (tmp_path / "front-root-unused").exists()
    assert (tmp_path / "memory" / "fact" / "team" / "standup.md").read_text() == "Standup is at 10:00 every weekday."


def test_a_wrong_token_is_reported_to_the_editor(served, tmp_path):
    server, _ = served
    messages: list[str] = []

    async def scenario():
        try:
            async with Client(front(server.url, "mdt_wrong", tmp_path), mode="legacy"):
                pass
        except Exception as refused:  # the SDK's task groups wrap it
            messages.extend(leaves(refused))

    anyio.run(scenario)
    assert any("That token is not valid" in message for message in messages), messages


def test_no_server_at_the_address_is_said_at_once(tmp_path):
    import socket
    import subprocess

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = subprocess.run([sys.executable, "-m", "memdir", "serve", "--connect", f"http://127.0.0.1:{port}/mcp"],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert started.returncode == 1
    assert f"no memdir server answers at http://127.0.0.1:{port}/mcp" in started.stderr
    assert "memdir serve --http" in started.stderr


def test_a_server_that_stops_ends_the_front_instead_of_leaving_the_editor_waiting(served, tmp_path):
    server, token = served
    outcome: list[str] = []

    async def scenario():
        try:
            async with Client(front(server.url, token, tmp_path), mode="legacy") as client:
                assert not (await client.call_tool("MemoryWrite", ENTRY)).is_error
                server.stop()
                with anyio.fail_after(60):
                    result = await client.call_tool("MemoryRead", {"file_path": ENTRY["file_path"]})
                outcome.append("answered" if not result.is_error else "error result")
        except Exception as ended:  # the front ended: the client's connection closed
            outcome.extend(leaves(ended) or [repr(ended)])

    anyio.run(scenario)
    assert outcome and outcome[0] != "answered" and "TimeoutError" not in outcome[0], outcome


INITIALIZE = ('{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
              '"capabilities": {}, "clientInfo": {"name": "editor", "version": "1"}}}\n')


def started_front(url: str, token: str, tmp_path):
    """A front started as an editor starts it, that has answered the editor's `initialize`."""
    import subprocess

    spec = front(url, token, tmp_path)
    process = subprocess.Popen([spec.command, *spec.args], env=spec.env, cwd=spec.cwd, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdin.write(INITIALIZE)
    process.stdin.flush()
    assert '"id":1,"result"' in process.stdout.readline()
    return process


def test_the_front_stops_when_its_editor_closes_stdin(served, tmp_path):
    server, token = served
    process = started_front(server.url, token, tmp_path)
    process.stdin.close()  # the editor quit
    assert process.wait(timeout=60) == 0
    assert "the client closed its input; stopping." in process.stderr.read()


def test_an_idle_front_stops_when_its_server_goes_away(served, tmp_path):
    server, token = served
    process = started_front(server.url, token, tmp_path)
    server.stop()  # nothing is asked meanwhile: the front must notice by itself
    try:
        assert process.wait(timeout=60) == 1
    finally:
        process.kill()
    assert "lost the connection to the memdir server" in process.stderr.read()
