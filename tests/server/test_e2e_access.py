"""End to end: agents with identities and roles on one shared root, each its own `memdir serve` over stdio,
driven by the official MCP client: ownership refusals, the admin override, role views, the audit trail."""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.server.test_e2e_stdio import call, refused, text, write

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def agent(tmp_path: Path, *identity: str, mode: str = "researcher"):
    """A client of a server started as ``memdir serve --root ROOT --mode MODE *identity``."""
    args = ["-m", "memdir", "serve", "--root", str(tmp_path / "memory"), "--mode", mode, *identity]
    env = {"MEMDIR_CONFIG": str(tmp_path / "memdir.toml"), "MEMDIR_EMBEDDINGS_ENABLED": "false",
           "MEMDIR_HOOK_SOCKET": "false", "MEMDIR_ADMIN": "true"}  # the environment never makes an admin
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(tmp_path))
    async with Client(params, mode="legacy") as client:
        yield client


async def test_a_non_owner_is_refused_over_mcp_and_an_admin_is_not(tmp_path):
    async with agent(tmp_path, "--agent", "alice", "--role", "executor") as alice:
        await write(alice, "fact/deploy.md", "Deploys run ops/deploy.sh after the tests pass.", "fact", kind="implementation")
    async with agent(tmp_path, "--agent", "bob", "--role", "reviewer") as bob:
        message = await refused(bob, "MemoryWrite", file_path="fact/deploy.md", content="Bob's version.", title="Deploy",
                                type="fact", tags=[], related=[], domain="ops")
        assert message == (
            "Error executing tool MemoryWrite: memory://fact/deploy.md belongs to alice; bob (reviewer) may not update it.\n"
            "Ask alice to make the change, write your own entry under another path, or act as an admin "
            "(`--admin`, or admin = true in your own owner-only config file).")
        await call(bob, "MemoryRead", file_path="fact/deploy.md")  # reading is not refused
        message = await refused(bob, "MemoryEdit", file_path="fact/deploy.md", old_string="Deploys", new_string="Releases")
        assert message.endswith("memory://fact/deploy.md belongs to alice; bob (reviewer) may not update it.\n"
                                "Ask alice to make the change, write your own entry under another path, or act as "
                                "an admin (`--admin`, or admin = true in your own owner-only config file).")
        message = await refused(bob, "MemoryDelete", file_path="fact/deploy.md")
        assert "memory://fact/deploy.md belongs to alice; bob (reviewer) may not delete it." in message
        assert "Deploys run ops/deploy.sh" in await call(bob, "MemoryRead", file_path="fact/deploy.md")
    async with agent(tmp_path, "--agent", "carol", "--shared", "--admin") as carol:
        assert await call(carol, "MemoryDelete", file_path="fact/deploy.md") == "Deleted memory://fact/deploy.md"
    records = [json.loads(line) for file in sorted((tmp_path / "memory" / "audit").glob("*.jsonl"))
               for line in file.read_text().splitlines()]
    assert [(r["agent"], r["role"], r["action"], r["owner"], r["admin"]) for r in records] == [
        ("alice", "executor", "create", "alice", False), ("carol", None, "delete", "alice", True)]


async def test_roles_see_their_kinds_and_may_ask_for_all(tmp_path):
    async with agent(tmp_path, "--agent", "ann", "--shared") as ann:  # no role: visible to every role
        await write(ann, "fact/bug.md", "The login page crashes on empty passwords.", "fact", kind="bug", tags=["login"])
        await write(ann, "fact/arch.md", "The login service sits behind the gateway.", "fact", kind="architecture",
                    tags=["login"])
        both = await call(ann, "MemorySearch", query="login")
        assert "fact/bug.md" in both and "fact/arch.md" in both
    async with agent(tmp_path, "--agent", "rita", "--role", "reviewer", mode="retrieval") as rita:
        mine = await call(rita, "MemorySearch", query="login")
        assert "fact/bug.md" in mine and "fact/arch.md" not in mine
        everything = await call(rita, "MemorySearch", query="login", view_all=True)
        assert "fact/arch.md" in everything
        listed = await call(rita, "MemoryGlob", pattern="fact/*")
        assert "fact/bug.md" in listed and "fact/arch.md" not in listed
        resources = [str(r.uri) for r in (await rita.list_resources()).resources]
        assert "memory://fact/bug.md" in resources and "memory://fact/arch.md" not in resources


async def test_the_status_resource_shows_identity_and_the_prefetch_hit_rate(tmp_path):
    async with agent(tmp_path, "--agent", "alice", "--role", "executor") as alice:
        await write(alice, "fact/deploy.md", "Deploys run ops/deploy.sh.", "fact", kind="implementation")
    async with agent(tmp_path, "--agent", "alice", "--role", "executor") as alice:  # a new session: warmed
        for _ in range(3):
            await call(alice, "MemoryRead", file_path="fact/deploy.md")
        contents = (await alice.read_resource("memdir://status")).contents
        status = json.loads(contents[0].text)
    assert (status["agent"], status["role"], status["admin"]) == ("alice", "executor", False)
    prefetch = status["prefetch"]
    assert (prefetch["hits"], prefetch["misses"], prefetch["prefetched"]) == (3, 0, 1)  # prefetched at session start
    assert prefetch["hit_rate"] == 1.0


@pytest.mark.slow
def test_over_http_each_client_acts_as_the_agent_its_token_names(tmp_path):
    """One `memdir serve --http`, two clients with tokens made for their agents: each owns what it writes."""
    import anyio

    from memdir.server.tokens import TokenFile
    from tests.server.http_process import mcp_client, running_server

    tokens = TokenFile(tmp_path / "http-tokens.json")  # the file conftest points MEMDIR_HTTP_TOKENS_FILE at
    alice, bob = tokens.create("alice", agent="alice"), tokens.create("bob", agent="bob")
    entry = {"file_path": "fact/standup.md", "content": "Standup is at 9:30.", "title": "Standup", "type": "fact",
             "tags": [], "related": [], "domain": "team"}

    async def scenario():
        async with mcp_client(server.url, alice) as first, mcp_client(server.url, bob) as second:
            assert not (await first.call_tool("MemoryWrite", entry)).is_error
            refused = await second.call_tool("MemoryWrite", {**entry, "content": "Standup is at 10:00."})
            assert refused.is_error and "belongs to alice; bob (reviewer) may not update it." in text(refused)
            assert not (await first.call_tool("MemoryDelete", {"file_path": "fact/standup.md"})).is_error

    with running_server(["--root", str(tmp_path / "memory"), "--role", "reviewer", "--mode", "researcher"],
                        cwd=tmp_path) as server:
        anyio.run(scenario)
    records = [json.loads(line) for file in (tmp_path / "memory" / "audit").glob("*.jsonl")
               for line in file.read_text().splitlines()]
    assert [(r["agent"], r["action"]) for r in records] == [("alice", "create"), ("alice", "delete")]


@pytest.mark.slow
def test_over_http_a_token_gives_its_client_a_role(tmp_path):
    """A role per connection over HTTP: one server without a role, a reviewer's token and a plain one;
    the reviewer sees its kinds (and ranks by its role's importance), the other client everything."""
    import anyio

    from memdir.server.tokens import TokenFile
    from tests.server.http_process import mcp_client, running_server

    tokens = TokenFile(tmp_path / "http-tokens.json")  # the file conftest points MEMDIR_HTTP_TOKENS_FILE at
    ann, rita = tokens.create("ann"), tokens.create("rita", "reviewer")

    async def scenario():
        async with mcp_client(server.url, ann) as writer, mcp_client(server.url, rita) as reviewer:
            for path, kind in (("fact/bug.md", "bug"), ("fact/arch.md", "architecture")):
                entry = {"file_path": path, "content": "The login page and its service.", "title": kind, "type": "fact",
                         "tags": [], "related": [], "domain": "team", "kind": kind}
                assert not (await writer.call_tool("MemoryWrite", entry)).is_error
            everything = text(await writer.call_tool("MemorySearch", {"query": "login page service"}))
            assert "fact/bug.md" in everything and "fact/arch.md" in everything
            mine = text(await reviewer.call_tool("MemorySearch", {"query": "login page service", "explain": True}))
            assert "fact/bug.md" in mine and "fact/arch.md" not in mine and "importance" in mine

    with running_server(["--root", str(tmp_path / "memory"), "--mode", "researcher"], cwd=tmp_path) as server:
        anyio.run(scenario)


@pytest.mark.slow
def test_over_http_a_session_in_another_role_starts_with_its_view_prefetched(tmp_path):
    """A server in the executor's role warms the executor's view when it opens; a reviewer's session
    (its token's role) gets the reviewer's view warmed before its first call: its first read is a hit."""
    import anyio

    from memdir.core.settings import Settings
    from memdir.memory import Memory
    from memdir.server.tokens import TokenFile
    from tests.server.http_process import mcp_client, running_server

    with Memory.open(Settings(root=tmp_path / "memory", embeddings_enabled=False)) as memory:
        memory.write("fact/ledger-decision.md", "The ledger stays on Postgres 16.", title="Ledger decision",
                     metadata={"type": "fact", "kind": "decision"})  # in a reviewer's view, not an executor's
    rita = TokenFile(tmp_path / "http-tokens.json").create("rita", "reviewer")

    async def scenario():
        async with mcp_client(server.url, rita) as reviewer:
            assert not (await reviewer.call_tool("MemoryRead", {"file_path": "fact/ledger-decision.md"})).is_error
            status = json.loads((await reviewer.read_resource("memdir://status")).contents[0].text)
        assert status["role"] == "reviewer"
        assert (status["prefetch"]["hits"], status["prefetch"]["misses"]) == (1, 0)

    with running_server(["--root", str(tmp_path / "memory"), "--role", "executor"], cwd=tmp_path) as server:
        anyio.run(scenario)


async def test_an_agent_reads_what_its_search_found_from_the_cache(tmp_path):
    """Not only the best results: an agent reading the 1st, 4th and 5th finds all three cached."""
    import re

    import anyio

    from memdir.core.settings import Settings
    from memdir.memory import Memory

    with Memory.open(Settings(root=tmp_path / "memory", embeddings_enabled=False)) as memory:
        for number in range(6):
            memory.write(f"fact/ledger-{number}.md", "The ledger database. " * (6 - number), title=f"Ledger {number}")
        for number in range(25):  # newer than them: the session-start warming takes 20 recent entries
            memory.write(f"fact/note-{number}.md", f"Note {number} about lunch.")
    async def status(client) -> dict:
        return json.loads((await client.read_resource("memdir://status")).contents[0].text)["prefetch"]

    async with agent(tmp_path) as client:
        warmed = (await status(client))["prefetched"]
        found = re.findall(r"^\d+\. memory://(\S+)", await call(client, "MemorySearch", query="ledger database", top_k=5),
                           re.MULTILINE)
        assert len(found) == 5
        with anyio.fail_after(10):  # the agent's turn: the prefetch runs after the search has answered
            while (await status(client))["prefetched"] < warmed + 5:
                await anyio.sleep(0.02)
        for rank in (1, 4, 5):
            await call(client, "MemoryRead", file_path=found[rank - 1])
        after = await status(client)
    assert (after["hits"], after["misses"]) == (3, 0)
