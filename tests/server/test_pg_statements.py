"""What a call sends to a PostgreSQL store: a search takes one snapshot; a read counts itself without
waiting for the disk (a write's commit still does) nor for a writer holding the store's lock.

The official MCP client calls the server (built in this process, the fake embedder behind it); every
statement the server's connections execute meanwhile is recorded (the session's prefetch of a
search's results, which runs on its own thread after the answer, is left out).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from typing import Any

import anyio
import numpy as np
import psycopg
import pytest
from mcp import Client
from pgvector.psycopg import register_vector

from memdir.core.settings import Settings
from memdir.memory import Memory, NewEntry
from memdir.search import hybrid
from memdir.server.app import build_server
from memdir.storage.postgres.index import BEHIND_FILES, WALK_PLANNER
from memdir.storage.postgres.schema import VECTOR_INDEX_NAME
from memdir.storage.postgres.search import BEGIN, WALK_ORDER
from memdir.tools.memory_search import prefetch_soon
from tests.fakes import FakeEmbedder

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


CONNECTION_SET_UP = "SET TIME ZONE"
"""What a new connection of the store sends first (`memdir.storage.postgres.database`)."""


class Sent(list[str]):
    """The statements sent, in order, and the round trips they took (a pipeline, statements sent
    together, is one; each statement outside one is one), each as the statements it carried."""

    round_trips = 0

    def __init__(self) -> None:
        super().__init__()
        self.trips: list[list[str]] = []

    def held(self) -> list[list[str]]:
        """The round trips from the one that takes the store's lock to the one that commits."""
        start, end = self._held()
        return self.trips[start : end + 1]

    def after_held(self) -> list[list[str]]:
        """The round trips after the one that commits."""
        return self.trips[self._held()[1] + 1 :]

    def _held(self) -> tuple[int, int]:
        start = next(i for i, trip in enumerate(self.trips) if any("pg_advisory_xact_lock(" in s for s in trip))
        return start, next(i for i in range(start, len(self.trips)) if "COMMIT" in self.trips[i])


def recorded(monkeypatch) -> Sent:
    """The statements the server's connections execute from now on (not the prefetch's, nor a new
    connection's set-up: the pool's, once per connection, and whether a call opens one depends on what
    ran before it)."""
    sent = Sent()
    execute, pipeline = psycopg.Connection.execute, psycopg.Connection.pipeline

    def counted() -> bool:
        return not threading.current_thread().name.startswith("memdir-prefetch")

    def recording(self, query, params=None, **kwargs):
        if counted() and not str(query).startswith(CONNECTION_SET_UP):
            sent.append(str(query))
            sent.round_trips += self._pipeline is None
            if self._pipeline is None:
                sent.trips.append([])
            sent.trips[-1].append(str(query))
        return execute(self, query, params, **kwargs)

    def piping(self):
        if counted():
            sent.round_trips += 1
            if self._pipeline is None:
                sent.trips.append([])
        return pipeline(self)

    monkeypatch.setattr(psycopg.Connection, "execute", recording)
    monkeypatch.setattr(psycopg.Connection, "pipeline", piping)
    return sent


def snapshots_and_statistics(sent: Sent) -> tuple[int, int, int]:
    """The BEGINs, the COMMITs and the reads of the words' statistics among ``sent``."""
    kinds = Counter(statement.split()[0] for statement in sent)
    return kinds["BEGIN"], kinds["COMMIT"], sum("FROM term_stats" in statement for statement in sent)


def filled(pg_url, tmp_path) -> Settings:
    settings = Settings(root=tmp_path, store=pg_url, evolution_enabled=False)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        for i in range(30):
            memory.write(f"fact/topic{i % 3}/entry{i}.md", f"Note {i} about the ledger migration and marker{i}.",
                         title=f"Entry {i}", metadata={"type": "fact", "tags": [f"tag{i}"]})
    return settings


async def sent_by(pg_url, tmp_path, monkeypatch, tool: str, arguments: dict) -> tuple[Any, Sent]:
    """The answer to one call of ``tool`` on a server whose store is open, and the statements it sent."""
    server = build_server(filled(pg_url, tmp_path), embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemorySearch", {"query": "ledger migration"})  # (the server opens the store)
        sent = recorded(monkeypatch)
        return await client.call_tool(tool, arguments), sent


async def test_a_search_opens_one_snapshot(pg_url, tmp_path, monkeypatch):
    result, sent = await sent_by(pg_url, tmp_path, monkeypatch, "MemorySearch", {"query": "ledger migration marker7"})
    assert not result.is_error, result
    answer = result.content[0].text
    assert "memory://fact/topic1/entry7.md" in answer and "marker7" in answer  # a snippet weighed by the query's words
    # One snapshot, whose statistics are read once: the snippets' word weights are the search's
    # (they were read again after it, a round trip of their own).
    assert snapshots_and_statistics(sent) == (1, 1, 1), sent
    # The BEGIN, the index's check for a killed writer's change (the snapshot's first statement; it was a
    # round trip of its own before the BEGIN) and the statistics; the keyword query; the HNSW query with
    # the candidates' rows (they were a round trip of their own); the COMMIT; the snippets' content.
    assert sent.round_trips == 5, sent
    assert sent.trips[0][:2] == [BEGIN, BEHIND_FILES], sent.trips
    assert sum(statement.startswith("WITH w AS") for statement in sent) == 1, sent
    # The HNSW query's planner settings are put back by one statement (not a RESET of each).
    assert len([statement for statement in sent if statement.startswith("RESET") or "NULL, true)" in statement]) == 1, sent


async def test_a_search_catches_up_a_row_left_without_its_search_columns_before_it_reads(pg_url, tmp_path):
    settings = filled(pg_url, tmp_path)
    server = build_server(settings, embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemorySearch", {"query": "ledger migration"})  # (the server opens the store)
        with Memory.open(settings, embedder=FakeEmbedder()) as other:  # (another server of the store)
            with other.adapter.write("fact/topic1/entry7.md", "Rewritten about the zeppelin audit.", title="Entry 7",
                                     metadata={"type": "fact"}):
                pass  # (what a writer that stopped between the row and its search columns leaves)
            assert other.index.behind_files()
        result = await client.call_tool("MemorySearch", {"query": "zeppelin audit"})
        assert not result.is_error and "memory://fact/topic1/entry7.md" in result.content[0].text, result
        with Memory.open(settings, embedder=FakeEmbedder()) as other:
            assert not other.index.behind_files()


EMBEDDING_STARTED = "(the query's embedding started)"


@pytest.mark.parametrize(("tool", "arguments"), [("MemorySearch", {"query": "ledger migration marker7"}),
                                                 ("MemoryDiscover", {"message": "How did the ledger migration go?"})])
async def test_a_search_starts_embedding_its_query_before_its_first_statement(pg_url, tmp_path, monkeypatch, tool, arguments):
    server = build_server(filled(pg_url, tmp_path), embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemorySearch", {"query": "ledger migration"})  # (the server opens the store)
        sent = recorded(monkeypatch)
        pool = hybrid._EMBEDDING

        class Starting:
            def submit(self, *args):
                sent.append(EMBEDDING_STARTED)
                return pool.submit(*args)

        monkeypatch.setattr(hybrid, "_EMBEDDING", Starting())
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    # The model runs while the store catches up and the snapshot's first statements go (it started after them),
    # once for the call's searches; then the walk.
    assert sent[0] == EMBEDDING_STARTED and sent.count(EMBEDDING_STARTED) == 1, sent
    assert any(WALK_ORDER in statement for statement in sent), sent


async def test_a_search_reads_its_candidates_rows_by_path_not_the_whole_store(pg_url, tmp_path, monkeypatch):
    settings = Settings(root=tmp_path, store=pg_url, evolution_enabled=False)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write_many([NewEntry(f"fact/topic{i % 7}/entry{i}.md", f"Note {i} about the ledger migration, marker{i}.",
                                    f"Entry {i}", {"type": "fact", "tags": [f"tag{i}"]}) for i in range(600)])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ANALYZE")
    caught: list[tuple[str, Any]] = []
    execute = psycopg.Connection.execute

    def catching(self, query, params=None, **kwargs):
        if str(query).startswith(("WITH c AS", "WITH w AS")):
            caught.append((str(query), params))
        return execute(self, query, params, **kwargs)

    server = build_server(settings, embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        monkeypatch.setattr(psycopg.Connection, "execute", catching)
        result = await client.call_tool("MemorySearch", {"query": "ledger migration marker7"})
        monkeypatch.undo()
    assert not result.is_error and "fact/topic0/entry7.md" in result.content[0].text, result
    (statement, params), = caught
    with psycopg.connect(pg_url) as conn:  # (in a transaction: the walk's planner settings last until its end)
        register_vector(conn)
        for name, value in WALK_PLANNER:
            conn.execute("SELECT set_config(%s, %s, true)", (name, value))
        plan = "\n".join(line for (line,) in conn.execute("EXPLAIN " + statement, params))
    # The vector walk, read in the same statement, is still the walk of the graph; its ~100 candidates'
    # rows are probed by path. (Before, the planner joined them by hashing every row of a store this
    # size: 600 rows read for a search's candidates, 2,600 at 2K.)
    assert f"using {VECTOR_INDEX_NAME} " in plan and "Seq Scan on entries" not in plan, plan


async def test_a_searchs_prefetch_reads_its_results_in_one_statement(pg_url, tmp_path, monkeypatch):
    server = build_server(filled(pg_url, tmp_path), embedder=FakeEmbedder())
    prefetching: list[str] = []
    execute = psycopg.Connection.execute

    def recording(self, query, params=None, **kwargs):
        if threading.current_thread().name.startswith("memdir-prefetch"):
            prefetching.append(str(query))
        return execute(self, query, params, **kwargs)

    def prefetched(statements: list[str]) -> tuple[list[str], list[str]]:
        """The statements reading rows and those reading versions (anything else fails the test)."""
        rows = [statement for statement in statements if statement.startswith("SELECT path, content")]
        versions = [statement for statement in statements if statement.startswith("SELECT path, size, version")]
        assert not [statement for statement in statements if statement not in (*rows, *versions)
                    and not statement.startswith(CONNECTION_SET_UP)], statements  # (its connection's set-up)
        return rows, versions

    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemoryRead", {"file_path": "fact/topic0/entry3.md"})  # (the server opens the store)
        memory = server.app_state.host.memory()
        await anyio.to_thread.run_sync(prefetch_soon(memory, []).result)  # (the server's own prefetch is done)
        monkeypatch.setattr(psycopg.Connection, "execute", recording)
        result = await client.call_tool("MemorySearch", {"query": "ledger migration"})
        assert not result.is_error and result.content[0].text.startswith("10 results"), result
        await anyio.to_thread.run_sync(prefetch_soon(memory, []).result)  # (the search's, on that one thread, first)
        # The results not cached yet are read together: one statement. (Before: each one's stats, whether it is
        # a stub, its stats again and its row; ~40 round trips after each search.) Whether the cached ones are
        # still fresh is one statement too.
        rows, versions = prefetched(prefetching)
        assert len(rows) == 1 and len(versions) <= 1, prefetching
        shown = re.findall(r"memory://(\S+)", result.content[0].text)
        assert len(shown) == 10, result
        # Another writer changes one result; the same search again: the ten, all cached now, are checked in one
        # statement (before: one each), and the changed one is read again, not served as it was.
        changed = shown[1]
        with Memory.open(Settings(root=tmp_path, store=pg_url, evolution_enabled=False), embedder=FakeEmbedder()) as other:
            other.write(changed, "Rewritten by another writer: the ledger migration.", title="Rewritten",
                        metadata={"type": "fact"})
        prefetching.clear()
        again = await client.call_tool("MemorySearch", {"query": "ledger migration"})
        await anyio.to_thread.run_sync(prefetch_soon(memory, []).result)
        rows, versions = prefetched(prefetching)
        assert len(versions) == 1 and len(rows) == 1, prefetching
        assert not again.is_error, again
    # Read in one go (its rows in binary), each cached entry is the entry a read of it alone gives, the
    # changed one too.
    assert memory.cache.get(changed).title == "Rewritten"
    for path in [changed, *shown[:3]]:
        cached, alone = memory.cache.get(path), memory.adapter.read_entry(path)
        assert cached is not None and np.array_equal(cached.embedding, alone.embedding)
        assert cached.model_dump(exclude={"embedding"}) == alone.model_dump(exclude={"embedding"})


async def test_a_discovery_reads_its_statistics_once_in_one_snapshot(pg_url, tmp_path, monkeypatch):
    message = "What about Entry 7 and the ledger migration?"
    result, sent = await sent_by(pg_url, tmp_path, monkeypatch, "MemoryDiscover", {"message": message})
    assert not result.is_error and "fact/topic1/entry7.md" in result.content[0].text, result
    # Its skills' search and its other types' search share one snapshot: the message's words'
    # statistics read once, with the names' the gate asks about first (each search used to read them
    # in a snapshot of its own; then the gate's names and the searches' words were two reads).
    assert snapshots_and_statistics(sent) == (1, 1, 1), sent
    assert sum("indexed IS NULL" in statement for statement in sent) == 1, sent
    # Whether the planner walks the graph for a search by type is asked once: for skills (a few
    # built-in ones here), it reads them instead; the other types' search then walks for its own.
    # (It was asked again, for a walk that no search after it would take rows from.)
    assert sum(statement.startswith("EXPLAIN") for statement in sent) == 1, sent


async def test_discoveries_ask_whether_the_planner_walks_once_for_a_store_of_a_size(pg_url, tmp_path, monkeypatch):
    server = build_server(filled(pg_url, tmp_path), embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemorySearch", {"query": "ledger migration"})  # (the server opens the store)
        sent = recorded(monkeypatch)
        for message in ("What about Entry 7 and the ledger migration?", "Is the ledger migration of Entry 4 done?"):
            result = await client.call_tool("MemoryDiscover", {"message": message})
            assert not result.is_error and "fact/topic" in result.content[0].text, result
    # The planner's answer rests on the store's size and the types' shares, not on the message: the second
    # discovery takes it from the first. (Each asked it, in a statement planned for the purpose.)
    assert sum(statement.startswith("EXPLAIN") for statement in sent) == 1, sent


async def test_a_discovery_walks_the_graph_once_for_its_searches_by_type(pg_cluster, tmp_path, monkeypatch):
    from urllib.parse import quote

    url = pg_cluster.fresh_url() + quote(" -c enable_seqscan=off -c enable_sort=off", safe="")  # (the planner walks)
    message = "What about Entry 7 and the ledger migration?"
    result, sent = await sent_by(url, tmp_path, monkeypatch, "MemoryDiscover", {"message": message})
    assert not result.is_error and "fact/topic1/entry7.md" in result.content[0].text, result
    # Its skills' search walks unfiltered as far as a walk for skills would; the other types' search
    # takes its rows from that walk (each searched with a walk of its own before).
    walks = [statement for statement in sent if f"ORDER BY {WALK_ORDER}" in statement and "e.type = ANY" in statement
             and not statement.startswith("EXPLAIN")]
    assert len(walks) == 1, walks
    # That walk's statement reads the skills' search's candidates too; the other types' search reads its own
    # (each search read its candidates in a statement of its own, one round trip more).
    assert walks[0].startswith("WITH w AS"), walks
    assert sum(statement.startswith("WITH c AS") for statement in sent) == 1, sent


async def test_a_discovery_scores_the_messages_words_once_for_its_searches_by_type(pg_url, tmp_path, monkeypatch):
    message = "What about Entry 7 and the ledger migration?"
    result, sent = await sent_by(pg_url, tmp_path, monkeypatch, "MemoryDiscover", {"message": message})
    assert not result.is_error and "fact/topic1/entry7.md" in result.content[0].text, result
    # Its skills' search reads the best of the message's keyword ranking with their types; the other
    # types' search takes its hits from those (each scored the same postings again before).
    scorings = [statement for statement in sent if "JOIN postings p ON p.term = q.term" in statement]
    assert len(scorings) == 1, scorings


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
            "SELECT hits, read_at FROM entry_reads WHERE path = 'fact/topic1/entry4.md'").fetchone()
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
        assert conn.execute("SELECT hits FROM entry_reads WHERE path = 'fact/topic2/entry5.md'").fetchone()[0] == 1


async def test_a_write_and_an_edit_hold_the_store_lock_for_three_round_trips(pg_url, tmp_path, monkeypatch):
    server = build_server(filled(pg_url, tmp_path), embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemoryRead", {"file_path": "fact/topic0/entry3.md"})  # (opened; the edit's read first)
        held = []
        for tool, arguments in [
            ("MemoryWrite", {"file_path": "fact/new/note.md", "content": "A new note.", "title": "New", "type": "fact",
                             "tags": [], "related": [], "domain": "notes"}),
            ("MemoryWrite", {"file_path": "fact/new/note.md", "content": "The note again.", "title": "New",
                             "type": "fact", "tags": [], "related": [], "domain": "notes"}),
            ("MemoryEdit", {"file_path": "fact/topic0/entry3.md", "old_string": "ledger", "new_string": "journal"}),
        ]:
            sent = recorded(monkeypatch)
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result
            held.append(sent.held())
            monkeypatch.undo()
        sent = recorded(monkeypatch)
        answer = await client.call_tool("MemoryRead", {"file_path": "fact/topic0/entry3.md"})
        assert "journal migration" in answer.content[0].text, answer
    # A read (as the edit's first) takes the entry's row in one statement, whether it is a stub with it,
    # after its stored version, looked up once (it has changed since the cache kept it), and then counts
    # itself: three round trips. (Before: five, the version and the row each read twice.)
    assert sum(statement.startswith("SELECT path, content, title") for statement in sent) == 1, sent
    assert sum(statement.startswith("SELECT path, size, version") for statement in sent) == 1, sent
    assert not [statement for statement in sent if statement.startswith("SELECT stub_kind")], sent
    assert len(sent.trips) == 3, sent.trips
    # While the other writers wait: the lock, with the index's check for a killed writer's change and
    # the entry as it is (its owner, an edit's content); the change number; the row, its search columns
    # and audit record with the COMMIT. (Before: the check, whether the entry exists, an edit's
    # content and the entry each a round trip of their own, the search columns another: six, eight.)
    for trips in held:
        assert len(trips) == 3, trips
        taking = " ".join(trips[0])
        assert "indexed IS NULL" in taking and "SELECT path, content, title" in taking, trips
        assert not any("SELECT path, content, title" in statement for trip in trips[1:] for statement in trip), trips
    with psycopg.connect(pg_url) as conn:
        audited = conn.execute("SELECT action FROM audit WHERE path = 'fact/new/note.md' ORDER BY id").fetchall()
        indexed = conn.execute("SELECT count(*) FROM entries WHERE indexed IS NULL").fetchone()
    assert audited == [("create",), ("update",)] and indexed == (0,)



async def test_a_writes_near_duplicate_check_takes_three_round_trips_whatever_it_finds(pg_url, tmp_path, monkeypatch):
    server = build_server(filled(pg_url, tmp_path), embedder=FakeEmbedder())
    note = {"content": "The ledger migration runs on Fridays.", "title": "Ledger", "type": "fact", "tags": [],
            "related": [], "domain": "notes"}
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemoryRead", {"file_path": "fact/topic0/entry3.md"})  # (the server opens the store)
        for i in range(3):
            await client.call_tool("MemoryWrite", {**note, "file_path": f"fact/ledger/copy{i}.md", "title": f"Copy {i}"})
        sent = recorded(monkeypatch)
        result = await client.call_tool("MemoryWrite", {**note, "file_path": "fact/ledger/again.md"})
    answer = result.content[0].text
    assert not result.is_error and all(f'fact/ledger/copy{i}.md "Copy {i}"' in answer for i in range(3)), answer
    after = sent.after_held()
    # After the write's commit: the walk, its snapshot's end, and the three duplicates' titles in one
    # statement. (Before: the index's check for a killed writer's change first, which the write's lock
    # had just made, and each title a whole entry's row: seven round trips for three duplicates.)
    assert len(after) == 3, after
    assert not [statement for trip in after for statement in trip if "indexed IS NULL" in statement], after
    assert [statement.startswith("SELECT path, title, stub_kind") for (statement,) in after[2:]] == [True], after


async def test_titles_of_links_come_in_one_statement_stubs_and_built_ins_among_them(pg_url, tmp_path, monkeypatch):
    settings = filled(pg_url, tmp_path)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write_stub("fact/old/entry1.md", "fact/topic1/entry1.md")
        stub_title = memory.adapter.read_entry("fact/old/entry1.md", follow=False).title
        memory.write("fact/links.md", "Links.", title="Links", metadata={"type": "fact", "related": [
            "memory://fact/old/entry1.md", "memory://skill/meta/deep-learning.md", "memory://fact/topic2/entry2.md",
            "memory://fact/gone.md"]})
    server = build_server(settings, embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        await client.call_tool("MemorySearch", {"query": "ledger migration"})  # (the server opens the store)
        sent = recorded(monkeypatch)
        result = await client.call_tool("MemoryRead", {"file_path": "fact/links.md"})
    answer = result.content[0].text
    # As a read of each shows it: a stub's title from its text, a built-in's its own; a missing entry's path alone.
    assert f'memory://fact/old/entry1.md "{stub_title}"' in answer, answer
    assert 'memory://skill/meta/deep-learning.md "Deep Learning Protocol"' in answer, answer
    assert 'memory://fact/topic2/entry2.md "Entry 2"' in answer and "- memory://fact/gone.md\n" in answer + "\n", answer
    # (Before: each link's whole row read, a round trip each.)
    assert sum(statement.startswith("SELECT path, title, stub_kind") for statement in sent) == 1, sent
    assert not [statement for statement in sent if statement.startswith("SELECT path, content, title")
                and "path = %s" in statement], sent
