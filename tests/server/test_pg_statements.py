"""What a call sends to a PostgreSQL store: a search takes one snapshot; a read counts itself without
waiting for the disk (a write's commit still does) nor for a writer holding the store's lock.

The official MCP client calls the server (built in this process, the fake embedder behind it); every
statement the server's connections execute meanwhile is recorded (the session's prefetch of a
search's results, which runs on its own thread after the answer, is left out).
"""

from __future__ import annotations

import threading
from collections import Counter

import anyio
import psycopg
import pytest
from mcp import Client

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.server.app import build_server
from tests.fakes import FakeEmbedder

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


def recorded(monkeypatch) -> list[str]:
    """The statements the server's connections execute from now on (not the prefetch's), in order."""
    sent: list[str] = []
    execute = psycopg.Connection.execute

    def recording(self, query, params=None, **kwargs):
        if not threading.current_thread().name.startswith("memdir-prefetch"):
            sent.append(str(query))
        return execute(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", recording)
    return sent


def filled(pg_url, tmp_path) -> Settings:
    settings = Settings(root=tmp_path, store=pg_url, evolution_enabled=False)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        for i in range(30):
            memory.write(f"fact/topic{i % 3}/entry{i}.md", f"Note {i} about the ledger migration and marker{i}.",
                         title=f"Entry {i}", metadata={"type": "fact", "tags": [f"tag{i}"]})
    return settings


async def test_a_search_opens_one_snapshot(pg_url, tmp_path, monkeypatch):
    server = build_server(filled(pg_url, tmp_path), embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemorySearch", {"query": "ledger migration"})  # (the server opens the store)
        sent = recorded(monkeypatch)
        result = await client.call_tool("MemorySearch", {"query": "ledger migration marker7"})
    assert not result.is_error, result
    answer = result.content[0].text
    assert "memory://fact/topic1/entry7.md" in answer and "marker7" in answer  # a snippet weighed by the query's words
    kinds = Counter(statement.split()[0] for statement in sent)
    statistics = [statement for statement in sent if "FROM term_stats" in statement]
    # The snippets' word weights used to take a snapshot of their own (BEGIN, the statistics, COMMIT):
    # now the search's snapshot is the only one, and the weights are one statement beside it.
    assert (kinds["BEGIN"], kinds["COMMIT"], len(statistics)) == (1, 1, 2), sent


async def test_a_read_counts_itself_without_waiting_for_the_disk_and_a_write_waits(pg_url, tmp_path, monkeypatch):
    server = build_server(filled(pg_url, tmp_path), embedder=FakeEmbedder())
    asynchronous = "SELECT set_config('synchronous_commit', 'off', true)"
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemoryRead", {"file_path": "fact/topic0/entry3.md"})  # (the server opens the store)
        sent = recorded(monkeypatch)
        written = await client.call_tool("MemoryWrite", {
            "file_path": "fact/new/note.md", "content": "A new note.", "title": "New", "type": "fact", "tags": [],
            "related": [], "domain": "notes"})
        assert not written.is_error, written
        assert asynchronous not in sent  # an entry's commit waits until it is on disk
        sent.clear()
        for _ in range(2):
            read = await client.call_tool("MemoryRead", {"file_path": "fact/topic1/entry4.md"})
            assert not read.is_error and "Note 4" in read.content[0].text, read
        assert sent.count(asynchronous) == 2, sent  # each read's count: its own transaction, not waited for
    with psycopg.connect(pg_url) as conn:
        hits, accessed = conn.execute(
            "SELECT hits, accessed_at FROM entries WHERE path = 'fact/topic1/entry4.md'").fetchone()
    assert hits == 2 and accessed is not None  # counted, and its time kept for ranking's recency


async def test_a_read_does_not_wait_for_a_writer_holding_the_store_lock(pg_url, tmp_path):
    from memdir.storage.postgres.database import STORE_LOCK

    server = build_server(filled(pg_url, tmp_path), embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemoryRead", {"file_path": "fact/topic0/entry3.md"})  # (the server opens the store)
        with psycopg.connect(pg_url) as writer:  # another server, mid-change: it holds the store's lock
            writer.execute("SELECT pg_advisory_xact_lock(%s)", (STORE_LOCK,))
            with anyio.fail_after(10):  # (before, the read queued for the lock: up to its timeout, then failed)
                read = await client.call_tool("MemoryRead", {"file_path": "fact/topic2/entry5.md"})
            assert not read.is_error and "Note 5" in read.content[0].text, read
            writer.rollback()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT hits FROM entries WHERE path = 'fact/topic2/entry5.md'").fetchone()[0] == 1
