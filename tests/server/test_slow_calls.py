"""Through the real server and the official MCP client: a costly or slow grep harms no other call.

A grep whose pattern backtracks runs until the time limit; a MemoryRead sent while it runs
must come back first (read-only tools run beside each other), and a pattern too costly to
compile comes back as the tool's clear message, not a bare "Error executing tool".
"""

from __future__ import annotations

import anyio
import pytest

from tests.server.test_e2e_stdio import call, connect, refused, text, write

pytestmark = pytest.mark.anyio


@pytest.fixture
def dirs(tmp_path):
    (tmp_path / "ws").mkdir()
    # A runaway grep runs this long; a read made to wait behind it would take as long.
    (tmp_path / "memdir.toml").write_text("grep_time_limit = 8\n")
    return tmp_path


@pytest.mark.slow
async def test_a_read_sent_during_a_slow_grep_finishes_before_it(dirs):
    finished: list[str] = []
    async with connect(dirs) as client:
        await write(client, "fact/runaway.md", "a" * 3000 + "!", "fact", title="Runaway")
        await write(client, "fact/note.md", "A short note.", "fact", title="Note")
        grep_result = {}

        async def slow_grep() -> None:
            grep_result["result"] = await client.call_tool("MemoryGrep", {"pattern": "(a|aa)+$"})
            finished.append("grep")

        async with anyio.create_task_group() as group:
            group.start_soon(slow_grep)
            await anyio.sleep(1)  # the grep is under way
            assert "A short note." in await call(client, "MemoryRead", file_path="fact/note.md")
            finished.append("read")
            assert "Note" in await call(client, "MemoryGlob", pattern="fact/*")
            finished.append("glob")

        assert finished == ["read", "glob", "grep"]
        assert grep_result["result"].is_error
        assert "took longer than 8 s to match" in text(grep_result["result"])


async def test_a_pattern_too_costly_to_compile_gets_a_clear_message(dirs):
    async with connect(dirs) as client:
        await write(client, "fact/note.md", "A short note.", "fact", title="Note")
        for pattern in ("a{10000000}", "((a{1000}){1000}){1000}"):
            message = await refused(client, "MemoryGrep", pattern=pattern)
            assert "is too costly to search with" in message, message
        assert "memory://fact/note.md" in await call(client, "MemoryGrep", pattern="short")
