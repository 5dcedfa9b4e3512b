"""Two `memdir serve --http --store postgresql://...` processes on one database share their threads (MCP client)."""

from __future__ import annotations

import re

import anyio
import pytest

from memdir.server.tokens import TokenFile
from tests.server.http_process import mcp_client, running_server
from tests.server.test_e2e_stdio import call

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_one_server_appends_and_another_reads_the_thread_as_it_grows(tmp_path, pg_url):
    token = TokenFile(tmp_path / "http-tokens.json").create("alice")  # the file both servers read (conftest)
    with running_server(["--root", str(tmp_path / "a"), "--store", pg_url], cwd=tmp_path) as writer_server, \
            running_server(["--root", str(tmp_path / "b"), "--store", pg_url], cwd=tmp_path) as reader_server:

        async def scenario():
            async with mcp_client(writer_server.url, token) as writer, mcp_client(reader_server.url, token) as reader:
                await call(writer, "ThreadAppend", thread="oncall", role="user",
                           content="Remember: the failover password rotates on Fridays.")
                assert "- oncall · 1 chunk" in await call(reader, "ThreadList")
                seen: list[int] = []

                async def append_all():
                    for i in range(40):
                        await call(writer, "ThreadAppend", thread="oncall", role="assistant", content=f"step {i} done")

                async def read_while_appending():
                    while len(seen) < 2 or seen[-1] < 41:
                        window = await call(reader, "ThreadContext", thread="oncall", budget_tokens=4000)
                        seen.append(int(re.search(r"of (\d+) messages", window).group(1)))
                        await anyio.sleep(0.05)

                async with anyio.create_task_group() as group:
                    group.start_soon(append_all)
                    group.start_soon(read_while_appending)
                assert seen == sorted(seen) and seen[-1] == 41  # never behind what it saw before, and all of it
                assert len(set(seen)) >= 3  # it read the thread while it grew
                window = await call(reader, "ThreadContext", thread="oncall", budget_tokens=4000)
                assert "Remember: the failover password rotates on Fridays." in window
                assert window.endswith("[c42 assistant] step 39 done")
                await call(reader, "ThreadAppend", thread="oncall", role="user", content="Thanks, closing the page.")
                assert (await call(writer, "ThreadContext", thread="oncall", budget_tokens=4000)).endswith(
                    "[c43 user] Thanks, closing the page.")

        anyio.run(scenario)
    for root in ("a", "b"):
        assert not (tmp_path / root / "threads" / "oncall" / "events.jsonl").exists()  # in the database only
