"""No call an agent makes reads every row of a PostgreSQL store: the rows each MCP call reads, by store size.

The official MCP client calls the server (built in this process, the fake embedder behind it) on
stores of two sizes; PostgreSQL's own statistics (rows read by sequential scans, index entries
read by index scans, on every table of the store) say what each call read. A call that scans the
store reads ~N rows more on the larger one; a call that reads its page, its counts and its
nearest neighbours through indexes reads about the same on both. The server's connections price
sequential scans and sorts out (``enable_seqscan=off``, ``enable_sort=off``): on stores this small
the planner would often scan and sort a table it holds in a few pages, where on a large store it
takes the index that gives the order (the HNSW graph, the newest-first index); a statement no index
can answer is still run as a scan, and counted.
"""

from __future__ import annotations

import json
import time
from urllib.parse import quote

import anyio
import psycopg
import pytest
from mcp import Client

from memdir.core import hook_socket
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.server.app import build_server
from tests.fakes import FakeEmbedder

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

SMALL, LARGE = 150, 1350


def fill(url: str, root, count: int, tags=lambda i: [f"tag{i}"]) -> None:
    """``count`` entries in 4 folders, each with words of its own (a search's words are in few of them)
    and the ``tags(i)`` of the i-th."""
    with Memory.open(Settings(root=root, store=url), embedder=FakeEmbedder()) as memory:
        for i in range(count):
            kind = ("concept", "fact", "skill", "experience")[i % 4]
            memory.write(f"{kind}/topic{i % 7}/entry{i}.md", f"Note {i}: marker{i} with token{i} on subject{i}.",
                         title=f"Entry {i}", metadata={"type": kind, "tags": tags(i)})
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")  # as autovacuum leaves a store that has grown


def flush_statistics(server) -> None:
    """Have the server's connections report what they read now (a backend otherwise reports when idle,
    at most once a second, else up to 10 s later)."""
    memory = server.app_state.host.memory()
    for _, conn in list(memory.index.db._all):
        if not conn.closed:
            conn.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(0.2)  # (each reports once idle again, just after answering)


def rows_read(url: str) -> int:
    """Rows and index entries the store's tables have had read so far (sequential and index scans)."""
    return read_so_far(url)[0]


def read_so_far(url: str) -> tuple[int, int]:
    """`rows_read`, and of those the rows of ``entries`` (read by a sequential scan or fetched through an index)."""
    with psycopg.connect(url, autocommit=True) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()[0]
        tables, entries = conn.execute(
            "SELECT coalesce(sum(seq_tup_read), 0), coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0))"
            " FILTER (WHERE relname = 'entries'), 0) FROM pg_stat_user_tables WHERE schemaname = %s", (schema,)
        ).fetchone()
        indexes = conn.execute(
            "SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes WHERE schemaname = %s", (schema,)
        ).fetchone()[0]
    return int(tables + indexes), int(entries)


CALLS = [
    ("MemoryWrite", lambda c, n: c.call_tool("MemoryWrite", {
        "file_path": f"fact/new/written{n}.md", "content": "A fresh note that says marker3 and token3 again.",
        "title": "Fresh note", "type": "fact", "tags": ["fresh"], "related": [], "domain": "notes"})),
    ("MemoryRead", lambda c, n: c.call_tool("MemoryRead", {"file_path": f"fact/new/written{n}.md"})),
    ("MemoryEdit", lambda c, n: c.call_tool("MemoryEdit", {
        "file_path": f"fact/new/written{n}.md", "old_string": "fresh", "new_string": "newer"})),
    ("MemorySearch", lambda c, n: c.call_tool("MemorySearch", {"query": "marker5 subject5"})),
    ("MemoryDiscover", lambda c, n: c.call_tool("MemoryDiscover", {"message": "What does marker7 say about subject7?"})),
    ("MemorySearch by type, a common word", lambda c, n: c.call_tool("MemorySearch", {"query": "note marker5", "type": ["skill"]})),
    ("MemoryGlob", lambda c, n: c.call_tool("MemoryGlob", {"pattern": "**/*.md"})),
    ("MemoryGlob folder", lambda c, n: c.call_tool("MemoryGlob", {"pattern": "skill/**"})),
    ("MemoryLink", lambda c, n: c.call_tool("MemoryLink", {"source": f"fact/new/written{n}.md", "target": "fact/topic5/entry5.md"})),
    ("MemoryGraph", lambda c, n: c.call_tool("MemoryGraph", {"path": f"fact/new/written{n}.md"})),
    ("resources/list", lambda c, n: c.list_resources()),
    ("memdir://status", lambda c, n: c.read_resource("memdir://status")),
]


def discover_hook(root):
    """The discover hook's call, as `memdir discover` makes it of a running server: over its local socket."""
    async def ask(client, n):
        request = {"kind": "discover", "prompt": "What does marker7 say about subject7?", "include_skills": True}
        answer = await anyio.to_thread.run_sync(hook_socket.ask, root, request, 30)
        assert answer is not None, "the server did not answer the hook"
        return answer
    return ask


COMMON_WORD = {"MemorySearch by type, a common word"}
"""Calls whose words include one every entry holds ("note"): BM25 reads that word's every posting (an
index-only scan of ``postings``), so what these must not read in proportion to the store is entries'
rows: a filter (by type) is tested on the best-scored entries until enough pass (about the hits asked
for over the filter's share: ~200 here), not on every entry holding the word."""

READS = {"discover hook", "MemoryRead", "MemorySearch", "MemoryDiscover", *COMMON_WORD, "MemoryGlob", "MemoryGlob folder", "MemoryGraph", "resources/list", "memdir://status"}


async def reads_per_call(url: str, root, count: int) -> dict[str, tuple[int, int]]:
    fill(url, root, count)
    # Pages and the HNSW scan's list (read whole on the small store) far below the store's size.
    settings = Settings(root=root, store=url, glob_max_results=20, resources_page_size=20, hnsw_ef_search=40, evolution_enabled=False)
    found = {}
    server = build_server(settings, embedder=FakeEmbedder())
    async with Client(server, mode="legacy") as client:
        status = json.loads((await client.read_resource("memdir://status")).contents[0].text)
        assert status["entries"] >= count and status["stale"] == 0  # opened, embedded: nothing left to catch up on
        time.sleep(0.5)  # (what the server does once open: prefetching for the session)
        for name, call in [*CALLS, ("discover hook", discover_hook(root))]:
            # A call that only reads runs twice and keeps the smaller count: what the server does in the
            # background meanwhile (its session's prefetch) is not charged to it, while a scan shows in both.
            counts = []
            for _ in range(2 if name in READS else 1):
                flush_statistics(server)
                before = read_so_far(url)
                result = await call(client, count)
                assert not getattr(result, "is_error", False), result
                flush_statistics(server)
                after = read_so_far(url)
                counts.append((after[0] - before[0], after[1] - before[1]))
            found[name] = min(counts)
    return found


def store_url(pg_cluster) -> str:
    return pg_cluster.fresh_url() + quote(" -c enable_seqscan=off -c enable_sort=off", safe="")


async def test_no_call_reads_every_row(pg_cluster, tmp_path):
    small = await reads_per_call(store_url(pg_cluster), tmp_path / "small", SMALL)
    large = await reads_per_call(store_url(pg_cluster), tmp_path / "large", LARGE)
    print(f"rows read per call, {SMALL} / {LARGE} entries:", {name: (small[name], large[name]) for name in small})
    grew = {name: large[name][0] - small[name][0] for name in small if name not in COMMON_WORD}
    # A scan of every row reads ~1,200 rows more on the larger store; an index's reading, a few dozen, and
    # an HNSW walk a little more of the graph (MemoryDiscover's two searches by type: ~1,270 on the small
    # store, 1,490-1,570 on the larger): what a call read on the small store may grow by a quarter too.
    assert {name: more for name, more in grew.items() if more > (LARGE - SMALL) // 4 + small[name][0] // 4} == {}, (small, large)
    # Testing the filter on every entry holding the common word read ~1,500 more entries' rows.
    grew = {name: large[name][1] - small[name][1] for name in COMMON_WORD}
    assert {name: more for name, more in grew.items() if more > (LARGE - SMALL) // 2} == {}, (small, large)
