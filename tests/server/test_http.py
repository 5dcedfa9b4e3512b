"""`memdir serve --http`: a real server process, real HTTP, the official MCP client.

Auth: no token, a wrong one, a revoked one, a bad Host, a bad Origin are refused (401/403) and
a good request passes; two clients keep their own session state; a session belongs to the
token that opened it; a server with no token creates one and never falls open (the last one
revoked); a plain token writes as the server, an agent's token as that agent; SIGTERM lets the
writes in flight finish.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import anyio
import httpx2
import pytest

from memdir.server.tokens import HttpClient, TokenFile
from tests.server.http_process import mcp_client, running_server

pytestmark = pytest.mark.slow

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture
def tokens(tmp_path) -> TokenFile:
    return TokenFile(tmp_path / "http-tokens.json")  # the file conftest points MEMDIR_HTTP_TOKENS_FILE at


@pytest.fixture
def server(tokens, tmp_path):
    tokens.create("alice")  # auth is on once a token exists
    with running_server(cwd=tmp_path) as running:
        yield running


def post(url: str, token: str | None = None, **headers: str) -> httpx2.Response:
    sent = dict(MCP_HEADERS)
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    sent.update({name.replace("_", "-"): value for name, value in headers.items()})
    return httpx2.post(url, json=INITIALIZE, headers=sent, timeout=30)


def text(result) -> str:
    return "\n".join(block.text for block in result.content)


ENTRY = {"file_path": "fact/team/standup.md", "content": "Standup is at 9:30 every weekday.", "title": "Standup",
         "type": "fact", "tags": ["team"], "related": [], "domain": "team"}


def test_requests_without_a_good_token_are_refused_and_good_ones_pass(server, tokens):
    token = tokens.create("bob")
    missing = post(server.url)
    assert missing.status_code == 401
    assert "needs a token" in missing.json()["error"]["message"]  # a JSON-RPC error an MCP client shows
    assert post(server.url, "mdt_not-a-token").status_code == 401
    assert post(server.url, authorization="Basic YWxpY2U6eA==").status_code == 401  # not a bearer token
    assert post(server.url, token).status_code == 200

    async def scenario():
        async with mcp_client(server.url, token) as client:
            assert not (await client.call_tool("MemoryWrite", ENTRY)).is_error
            assert "9:30" in text(await client.call_tool("MemoryRead", {"file_path": ENTRY["file_path"]}))

    anyio.run(scenario)

    # Revoked with the CLI while the server runs: refused from the next request on.
    revoked = subprocess.run([sys.executable, "-m", "memdir", "token", "revoke", "bob"], capture_output=True, text=True)
    assert revoked.returncode == 0, revoked.stderr
    assert post(server.url, token).status_code == 401


def test_a_bad_host_or_origin_is_refused_even_with_a_good_token(server, tokens):
    token = tokens.create("carol")
    rebound = post(server.url, token, host="attacker.example")  # DNS rebinding: the page's own name as Host
    assert rebound.status_code == 403 and "Host" in rebound.json()["error"]["message"]
    assert post(server.url, token, origin="http://attacker.example").status_code == 403
    assert post(server.url, token, origin="null").status_code == 403
    assert post(server.url, token, origin=f"http://127.0.0.1:{server.port}").status_code == 200
    assert post(server.url, token, host=f"localhost:{server.port}").status_code == 200
    # the web view is behind the same gate
    assert httpx2.get(server.base + "/", headers={"host": "attacker.example"}).status_code == 403
    assert httpx2.get(server.base + "/").status_code == 401


def test_the_web_view_takes_the_token_once_then_a_cookie_which_the_mcp_endpoint_refuses(server, tokens):
    token = tokens.create("browser")
    assert httpx2.get(f"{server.base}/?token=mdt_wrong").status_code == 401
    login = httpx2.get(f"{server.base}/?token={token}&page=1", follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == "/?page=1"  # the token leaves the address
    cookie = login.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and token in cookie
    jar = {"memdir_token": token}
    assert httpx2.get(server.base + "/health", cookies=jar).status_code == 200
    assert httpx2.get(server.base + "/health", cookies={"memdir_token": "mdt_wrong"}).status_code == 401
    # a page the user visits cannot spend the cookie on the MCP endpoint
    assert httpx2.post(server.url, json=INITIALIZE, headers=MCP_HEADERS, cookies=jar).status_code == 401


def test_two_clients_keep_their_own_session_state_and_sessions_belong_to_their_token(server, tokens):
    alice, bob = tokens.create("alice2"), tokens.create("bob2")

    async def scenario():
        async with mcp_client(server.url, alice) as first, mcp_client(server.url, bob) as second:
            assert not (await first.call_tool("MemoryWrite", ENTRY)).is_error
            assert not (await first.call_tool("MemoryRead", {"file_path": ENTRY["file_path"]})).is_error
            edit = {"file_path": ENTRY["file_path"], "old_string": "9:30", "new_string": "10:00"}
            refused = await second.call_tool("MemoryEdit", edit)  # the second session read nothing
            assert refused.is_error and "read" in text(refused).lower()
            assert not (await first.call_tool("MemoryEdit", edit)).is_error
            assert "10:00" in text(await second.call_tool("MemoryRead", {"file_path": ENTRY["file_path"]}))

    anyio.run(scenario)

    opened = post(server.url, alice)
    session = opened.headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    hijack = httpx2.post(server.url, json=ping, timeout=30, headers={
        **MCP_HEADERS, "authorization": f"Bearer {bob}", "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"})
    assert hijack.status_code == 404  # another token cannot use a session it learnt the id of


def test_clients_of_the_sessionless_protocol_keep_their_state_per_token(server, tokens):
    """2026-07-28 over HTTP has no sessions (and the SDK one shared connection for all): state goes by token."""
    alice, bob = tokens.create("alice3"), tokens.create("bob3")

    async def scenario():
        async with mcp_client(server.url, alice, mode="2026-07-28") as first, \
                mcp_client(server.url, bob, mode="2026-07-28") as second:
            assert not (await first.call_tool("MemoryWrite", ENTRY)).is_error
            assert not (await first.call_tool("MemoryRead", {"file_path": ENTRY["file_path"]})).is_error
            edit = {"file_path": ENTRY["file_path"], "old_string": "9:30", "new_string": "10:00"}
            assert (await second.call_tool("MemoryEdit", edit)).is_error  # bob read nothing
            assert not (await first.call_tool("MemoryEdit", edit)).is_error  # alice's read lasted between requests

    anyio.run(scenario)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memdir", *args], check=False, capture_output=True, text=True, timeout=120)


def test_a_server_without_tokens_creates_one_shows_it_once_and_never_falls_open(tmp_path):
    with running_server(cwd=tmp_path) as server:
        printed = re.search(r"^    (mdt_\S+)$", server.stderr_text(), re.MULTILINE)
        assert printed, server.stderr_text()
        token = printed.group(1)
        assert f"{server.base}/?token={token}" in server.stderr_text()
        assert f"Authorization: Bearer {token}" in server.stderr_text()
        assert post(server.url).status_code == 401  # loopback too: another local user gets nothing
        assert httpx2.get(server.base + "/").status_code == 401
        assert post(server.url, token).status_code == 200
        assert post(server.url, token, host="attacker.example").status_code == 403
        assert cli("token", "revoke", "first").returncode == 0  # the last token: nothing passes any more
        assert post(server.url).status_code == 401
        assert post(server.url, token).status_code == 401
        assert httpx2.get(server.base + "/health").status_code == 401
    with running_server(cwd=tmp_path) as again:  # started once more: a new first token, the old one stays dead
        assert "mdt_" in again.stderr_text() and token not in again.stderr_text()
        assert post(again.url, token).status_code == 401
    cli("token", "create", "laptop")
    with running_server(cwd=tmp_path) as later:  # tokens exist: none is created or printed
        assert "mdt_" not in later.stderr_text()


def test_a_plain_token_writes_as_the_server_and_an_agent_token_as_its_agent(tmp_path):
    """One person with a laptop token and a stdio server is one owner; a token made for an agent is that agent."""
    laptop = cli("token", "create", "laptop")
    assert "owned by the server's own agent" in laptop.stderr
    helper = cli("token", "create", "helper", "--agent", "helper-bot")
    assert "owned by agent 'helper-bot'" in helper.stderr
    mine = {**ENTRY, "file_path": "fact/mine.md"}
    theirs = {**ENTRY, "file_path": "fact/theirs.md"}

    async def over_http(url: str) -> None:
        async with mcp_client(url, laptop.stdout.strip()) as client:
            assert not (await client.call_tool("MemoryWrite", mine)).is_error
        async with mcp_client(url, helper.stdout.strip()) as client:
            assert not (await client.call_tool("MemoryWrite", theirs)).is_error

    with running_server(cwd=tmp_path) as server:
        anyio.run(over_http, server.url)

    async def over_stdio() -> None:  # the same person's editor, a stdio server without --agent
        from mcp import Client, StdioServerParameters

        params = StdioServerParameters(command=sys.executable, args=["-m", "memdir", "serve", "--mode", "researcher"],
                                       env={**os.environ, "MEMDIR_EMBEDDINGS_ENABLED": "false"}, cwd=str(tmp_path))
        async with Client(params, mode="legacy") as client:
            for path in ("fact/mine.md", "fact/theirs.md"):
                assert not (await client.call_tool("MemoryRead", {"file_path": path})).is_error
            edit = {"old_string": "9:30", "new_string": "10:00"}
            assert not (await client.call_tool("MemoryEdit", {"file_path": "fact/mine.md", **edit})).is_error
            assert not (await client.call_tool("MemoryDelete", {"file_path": "fact/mine.md"})).is_error
            refused = await client.call_tool("MemoryEdit", {"file_path": "fact/theirs.md", **edit})
            assert refused.is_error and "belongs to helper-bot" in text(refused)

    anyio.run(over_stdio)


def test_sigterm_lets_the_writes_in_flight_finish(server, tokens, tmp_path):
    """24 writes wait for the root's lock (held here) when SIGTERM arrives: each is still done and answered."""
    from memdir.storage.directory.locking import RootLock

    token = tokens.create("writer")
    writers = 24
    acknowledged: list[str] = []
    failed: list[str] = []
    connected = 0
    go = anyio.Event()

    async def writer(number: int) -> None:
        nonlocal connected
        path = f"fact/load/entry-{number:03d}.md"
        try:
            async with mcp_client(server.url, token) as client:
                if number == 0:  # the memory is open before the lock is taken
                    assert not (await client.call_tool("MemoryGlob", {"pattern": "**/*"})).is_error
                connected += 1
                await client.list_tools()  # as clients do first (else call_tool lists them: a request after the signal)
                await go.wait()
                result = await client.call_tool("MemoryWrite", {**ENTRY, "file_path": path,
                                                                "content": f"Entry {number}: " + "words " * 200})
                (failed if result.is_error else acknowledged).append(path)
        except Exception as exc:  # cut off by the shutdown: not acknowledged
            failed.append(f"{path}: {exc!r}")

    lock = RootLock(tmp_path / "memory" / ".lock", timeout=30)
    signalled = 0.0

    async def scenario():
        nonlocal signalled
        async with anyio.create_task_group() as group:
            for number in range(writers):
                group.start_soon(writer, number)
            while connected < writers:
                await anyio.sleep(0.01)
            with lock.exclusive():
                go.set()  # every session sends its write; they queue behind the lock
                await anyio.sleep(2)
                server.process.send_signal(15)
                signalled = time.monotonic()
                await anyio.sleep(0.5)

    anyio.run(scenario)
    status = server.process.wait(timeout=30)
    assert status in (-15, 143), server.stderr_text()
    assert time.monotonic() - signalled < 15
    assert len(acknowledged) == writers, failed  # answered, though the signal came first

    from memdir.core.settings import Settings
    from memdir.memory import Memory

    with Memory.open(Settings(root=tmp_path / "memory"), load_model=False) as memory:  # the lock was released
        assert sorted(info.path for info in memory.list("fact/load")) == sorted(acknowledged)
        for path in acknowledged:
            assert memory.read(path).content == f"Entry {int(path[-6:-3])}: " + "words " * 200


def test_token_commands_create_list_and_revoke(tmp_path):
    def memdir(*args: str) -> subprocess.CompletedProcess:
        return cli("token", *args)

    created = memdir("create", "laptop")
    assert created.returncode == 0 and created.stdout.startswith("mdt_")
    assert "owned by the server's own agent" in created.stderr
    token = created.stdout.strip()
    path = tmp_path / "http-tokens.json"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert token not in path.read_text()  # stored hashed
    assert TokenFile(path).client_of(token) == HttpClient("laptop", None, None)  # the server's agent and role
    assert memdir("create", "laptop").returncode == 1  # names are unique
    assert "not allowed" in memdir("create", "../x").stderr
    assert "is not a role" in memdir("create", "ci", "--role", "boss").stderr
    reviewer = memdir("create", "ci", "--role", "Reviewer").stdout.strip()
    assert TokenFile(path).client_of(reviewer) == HttpClient("ci", "reviewer", "ci")  # a team member is somebody
    assert "not allowed" in memdir("create", "bot", "--agent", "../up").stderr
    listed = json.loads(memdir("list", "--json").stdout)
    assert [(row["name"], row["role"], row["agent"]) for row in listed] == [("laptop", None, None), ("ci", "reviewer", "ci")]
    assert memdir("revoke", "laptop").returncode == 0
    assert TokenFile(path).client_of(token) is None
    assert "no token named" in memdir("revoke", "laptop").stderr.lower()
