"""A change writes its entry's row once on a PostgreSQL store.

Each version of a row is a new entry in every index of the table, the HNSW graph's among them (on a
large store its insert is the costliest part of a write): a MemoryWrite inserts the row and writes
nothing more to it, a MemoryEdit replaces it once, a MemoryRead leaves it as it is (its count and time are a
small row of their own). The official MCP client calls the server (built
in this process, the fake embedder behind it); PostgreSQL's own statistics count the row versions.
"""

from __future__ import annotations

import psycopg
import pytest
from mcp import Client

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.server.app import build_server
from tests.fakes import FakeEmbedder
from tests.server.test_rows_read import flush_statistics

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


def written(url: str) -> tuple[int, int]:
    """Rows inserted into and row versions written by updates of the store's entries table so far."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT n_tup_ins, n_tup_upd FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'entries'"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


async def test_a_write_and_an_edit_each_leave_one_version_of_the_row(pg_url, tmp_path):
    server = build_server(Settings(root=tmp_path, store=pg_url, evolution_enabled=False), embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        await client.read_resource("memdir://status")  # (opened: the built-in entries are stored)
        counts = []
        for call, arguments in [
            ("MemoryWrite", {"file_path": "fact/deploy/window.md", "content": "Deploys go out on Tuesday mornings.",
                             "title": "Deploy window", "type": "fact", "tags": ["deploy"], "related": [], "domain": "ops"}),
            ("MemoryEdit", {"file_path": "fact/deploy/window.md", "old_string": "Tuesday", "new_string": "Thursday"}),
        ]:
            if call == "MemoryEdit":
                await client.call_tool("MemoryRead", {"file_path": arguments["file_path"]})  # (an edit needs a read first)
            flush_statistics(server)
            before = written(pg_url)
            result = await client.call_tool(call, arguments)
            assert not result.is_error, result.content[0].text
            flush_statistics(server)
            after = written(pg_url)
            counts.append((after[0] - before[0], after[1] - before[1]))
        found = await client.call_tool("MemorySearch", {"query": "when do deploys go out on thursday"})
    assert counts == [(1, 0), (0, 1)]  # (inserted, updated): the write inserts the row, the edit replaces it
    assert "memory://fact/deploy/window.md" in found.content[0].text  # indexed with its new words


async def test_a_read_leaves_the_entrys_row_as_it_is_and_counts_in_its_own(pg_url, tmp_path):
    server = build_server(Settings(root=tmp_path, store=pg_url, evolution_enabled=False), embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        for name in ("window", "freeze"):
            result = await client.call_tool("MemoryWrite", {
                "file_path": f"fact/deploy/{name}.md", "content": f"Deploy {name}: Tuesday mornings.", "title": name,
                "type": "fact", "tags": ["deploy"], "related": [], "domain": "ops"})
            assert not result.is_error, result.content[0].text
        flush_statistics(server)
        before = written(pg_url)
        for _ in range(3):
            read = await client.call_tool("MemoryRead", {"file_path": "fact/deploy/window.md"})
            assert not read.is_error and "Tuesday" in read.content[0].text, read.content[0].text
        flush_statistics(server)
        after = written(pg_url)
    assert after == before  # no new version of the entry's row (nor of any of its indexes' entries)
    with psycopg.connect(pg_url) as conn:
        counted = dict(conn.execute("SELECT path, hits FROM entry_reads WHERE path LIKE 'fact/deploy/%'").fetchall())
    assert counted == {"fact/deploy/window.md": 3, "fact/deploy/freeze.md": 0}
    with Memory.open(Settings(root=tmp_path, store=pg_url), embedder=FakeEmbedder()) as memory:
        assert memory.index.recently_used(2) == ["fact/deploy/window.md", "fact/deploy/freeze.md"]  # read last, first
        assert memory.read("fact/deploy/window.md").hits == 3
