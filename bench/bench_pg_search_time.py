"""Where a MemorySearch's time goes on the PostgreSQL store, by store size: each round trip, the model, the rest.

    python bench/bench_pg_search_time.py --cluster-dir DIR [--sizes 2000 100000] [--queries 30]

On the stores `bench/bench_team_scale.py` loaded (the cluster in ``--cluster-dir``, PostgreSQL's stock
configuration), it answers LoCoMo questions with the MemorySearch tool's own function, in this process, the
real model embedding each query (each question is asked once per store, so no query vector is remembered
between calls): the stores in turns, each question on every store before the next, the order alternating.
For every call it times the whole tool call, `Memory.search` inside it, the model embedding the query
(on its own thread, beside the keyword side), each round trip the search index makes (`PostgresIndex._rows`,
named by its statements; a pipeline of several is one), every other statement, and the entries' text read
for the snippets. What MCP and HTTP add is not in it (`bench_team_scale.py` times the served call).

Then, for the HNSW walks it caught, the server's own time: ``EXPLAIN (ANALYZE, BUFFERS)`` of each walk as
sent, with the settings it was sent with, medians of execution time and pages. Medians per call (a part
a call does twice counts twice); the load is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from bench_team_scale import STOCK, schema_url  # noqa: E402
from corpora import DEFAULT_LOCOMO, locomo_corpora  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

from memdir.core.settings import Settings  # noqa: E402
from memdir.embeddings.minilm import OnnxEmbedder  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from memdir.storage.postgres.index import PostgresIndex  # noqa: E402
from memdir.storage.postgres.search import WALK_ORDER  # noqa: E402
from memdir.tools.memory_search import memory_search  # noqa: E402

KINDS = (
    ("WITH c AS", "candidates (rows, cosines, neighbours)"),
    (f"ORDER BY {WALK_ORDER}", "HNSW walk (with its settings)"),
    ("json_object_agg", "statistics (+ hidden entries)"),
    ("WITH scored", "keyword ranking"),
    ("SELECT EXISTS (SELECT 1 FROM entries WHERE indexed", "index behind the files?"),
    ("SELECT path, content FROM", "entries' text (snippets)"),
    ("COMMIT", "COMMIT"),
)


def kind(sql: object) -> str:
    text = str(sql)
    return next((name for key, name in KINDS if key in text), " ".join(text.split())[:48])


class Timings:
    """Seconds spent per (store size, part) in the calls of the main and query-embedding threads."""

    def __init__(self) -> None:
        self.size = 0
        self.spent: dict[tuple[int, str], float] = defaultdict(float)
        self.calls: dict[int, list[dict[str, float]]] = defaultdict(list)
        self.walks: dict[int, list[tuple[str, list[Any], list[Any]]]] = defaultdict(list)
        self.inside = threading.local()

    def add(self, part: str, seconds: float) -> None:
        if not threading.current_thread().name.startswith("memdir-prefetch"):  # (after the answer: not the call's)
            self.spent[(self.size, part)] += seconds

    def timed(self, part: str | Callable[..., str], function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.add(part(*args, **kwargs) if callable(part) else part, time.perf_counter() - start)
        return run

    def call(self, memory: Memory, question: str) -> None:
        """One MemorySearch; what its parts took is kept per call."""
        self.spent.clear()
        start = time.perf_counter()
        memory_search(memory, question)
        parts = {part: seconds for (_, part), seconds in self.spent.items()}
        parts["whole tool call"] = time.perf_counter() - start
        self.calls[self.size].append(parts)


def instrument(timings: Timings) -> None:
    """Time the parts (see the module docstring) by wrapping the functions that do them."""
    rows, execute = PostgresIndex._rows, psycopg.Connection.execute

    def round_trip(self: PostgresIndex, *statements: tuple[str, Sequence[Any]], rows_of: int = -1) -> list[tuple[Any, ...]]:
        timings.inside.rows = True
        try:
            return rows(self, *statements, rows_of=rows_of)
        finally:
            timings.inside.rows = False
            if any("hnsw.ef_search" in sql for sql, _ in statements) and len(statements) >= 3:
                settings, walk = statements[-3], statements[-2]
                timings.walks[timings.size].append((walk[0], list(walk[1]), [settings]))

    def statement(self: psycopg.Connection, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if getattr(timings.inside, "rows", False):
            return execute(self, query, params, **kwargs)
        start = time.perf_counter()
        try:
            return execute(self, query, params, **kwargs)
        finally:
            timings.add("SQL: " + kind(query), time.perf_counter() - start)

    PostgresIndex._rows = timings.timed(lambda self, *statements, **_: "SQL: " + " + ".join(  # type: ignore[method-assign]
        dict.fromkeys(kind(sql) for sql, _ in statements if not str(sql).startswith(("BEGIN", "SELECT set_config")))),
        round_trip)
    psycopg.Connection.execute = statement  # type: ignore[method-assign,assignment]
    OnnxEmbedder.embed = timings.timed("the model embedding the query", OnnxEmbedder.embed)  # type: ignore[method-assign]
    Memory.search = timings.timed("Memory.search (inside the call)", Memory.search)  # type: ignore[method-assign]


Explained = tuple[float, float, float, float, float]
"""Medians of EXPLAIN's execution time (ms), planning time (ms), pages found in shared buffers, pages read from
outside, and of the statement's time sent as the call sent it, from this client (ms)."""


def walk_server_times(url: str, walks: list[tuple[str, list[Any], list[Any]]]) -> tuple[Explained, Explained]:
    """The caught walks run again under EXPLAIN, each twice in a row: first with its pages as the
    calls since left them, then with all of them in shared buffers (what the misses cost); after
    each, the walk as sent, timed from the client."""
    runs: list[list[tuple[float, float, int, int, float]]] = [[], []]
    with psycopg.connect(url) as conn:
        register_vector(conn)
        for sql, params, settings in walks:
            for run in runs:
                for setting_sql, setting_params in settings:
                    conn.execute(setting_sql, setting_params)
                plan = [line for (line,) in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()]
                start = time.perf_counter()
                conn.execute(sql, params).fetchall()
                sent = (time.perf_counter() - start) * 1000
                conn.rollback()
                counts = dict(part.split("=") for part in next(line for line in plan if "Buffers:" in line).split() if "=" in part)
                run.append((float(next(line for line in plan if line.startswith("Execution Time")).split()[2]),
                            float(next(line for line in plan if line.startswith("Planning Time")).split()[2]),
                            int(counts.get("hit", 0)), int(counts.get("read", 0)), sent))
    first, again = (tuple(statistics.median(column) for column in zip(*run, strict=True)) for run in runs)
    return first, again


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster-dir", type=Path, required=True, help="the cluster bench_team_scale.py loaded")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 100_000])
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo's locomo10.json")
    args = parser.parse_args(argv)
    questions = list(dict.fromkeys(query.text for corpus in locomo_corpora(args.data) for query in corpus.queries))
    warm, asked = questions[:5], questions[-args.queries:]
    from tests.pg_cluster import Cluster

    cluster = Cluster(args.cluster_dir).start(STOCK)
    timings = Timings()
    memories: dict[int, Memory] = {}
    urls = {size: schema_url(cluster.url(), size) for size in args.sizes}
    try:
        for size in args.sizes:
            settings = Settings(root=Path(tempfile.mkdtemp()), store=urls[size],
                                hook_socket=False, evolution_enabled=False)
            memories[size] = Memory.open(settings)
            for question in warm:
                memory_search(memories[size], question)
        instrument(timings)
        load = os.getloadavg()[0]
        for turn, question in enumerate(asked):
            for size in (args.sizes if turn % 2 == 0 else args.sizes[::-1]):
                timings.size = size
                timings.call(memories[size], question)
        print(f"== {len(asked)} MemorySearch calls per store, in-process, median ms per call"
              f" (load {load:.1f} -> {os.getloadavg()[0]:.1f})")
        parts = sorted({part for calls in timings.calls.values() for call in calls for part in call},
                       key=lambda part: (part != "whole tool call", not part.startswith("Memory.search"), part))
        print(f"  {'':56}" + "".join(f"{size:>10,}" for size in args.sizes))
        for part in parts:
            medians = [statistics.median(call.get(part, 0.0) for call in timings.calls[size]) * 1000 for size in args.sizes]
            print(f"  {part[:56]:56}" + "".join(f"{median:10.2f}" for median in medians))
        print("  the HNSW walks again under EXPLAIN (ANALYZE, BUFFERS), each twice in a row:"
              " execution / planning ms, pages in / outside shared buffers; then the walk as sent, from this client")
        for size in args.sizes:
            for name, (executing, planning, hits, reads, sent) in zip(("first", "again"), walk_server_times(urls[size], timings.walks[size]),
                                                                 strict=True):
                print(f"  {size:>10,} entries, {name}: {executing:.2f} / {planning:.2f} ms, {hits:,.0f} / {reads:,.0f} pages; {sent:.2f} ms"
                      f" ({len(timings.walks[size])} walks; load {os.getloadavg()[0]:.1f})")
    finally:
        for memory in memories.values():
            memory.close()
        cluster.stop()


if __name__ == "__main__":
    main()
