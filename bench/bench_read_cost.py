"""What a counted read (MemoryRead) costs a large PostgreSQL store: row versions, pages, WAL and time.

    python bench/bench_read_cost.py [--size 100000] [--reads 1000] [--rounds 3] [--cluster-dir DIR] [--before DIR]

A store of ``--size`` entries is loaded with COPY as ``bench/bench_team_scale.py`` loads it (synthetic
entries and vectors, PostgreSQL's stock configuration, kept in ``--cluster-dir`` for a re-run). Each
round, ``Memory.read(path, count_hit=True)`` (what MemoryRead calls) reads ``--reads`` entries picked at
random; PostgreSQL's own statistics say what the reads wrote and touched, per read:

* row versions written (updates of any table; HOT: left every index as it was), and index entries
  added to the entries table's indexes (the HNSW graph's among them);
* pages touched (buffer hits and reads of the tables and indexes) and WAL bytes written;
* the read's wall time, median and p95.

With ``--before DIR`` (a checkout of older code) a second store of the same entries is loaded and read
by that code (in a process of its own), the rounds alternating between the two, so both are measured
under the same load. The machine is shared: the load average is printed with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TREE = "MEMDIR_BENCH_TREE"
"""Set for a child process: the checkout whose code it runs (else this one's)."""
sys.path.insert(0, os.environ.get(TREE) or str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# isort: off
import memdir  # noqa: E402, F401  (first: the other benches put this checkout first on the path when imported)
# isort: on
import psycopg  # noqa: E402
from bench_postgres import TYPES, base_vectors, load  # noqa: E402
from bench_team_scale import STOCK, WORDS  # noqa: E402
from corpora import DEFAULT_LOCOMO  # noqa: E402

from memdir.core.settings import Settings  # noqa: E402
from memdir.embeddings.text import text_recipe  # noqa: E402

_TOUCHED = """
SELECT coalesce(sum(n_tup_upd), 0), coalesce(sum(n_tup_upd - n_tup_hot_upd) FILTER (WHERE relname = 'entries'), 0),
       coalesce(sum(n_tup_ins), 0),
       (SELECT coalesce(sum(heap_blks_hit + heap_blks_read + coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0)
                            + coalesce(toast_blks_hit, 0) + coalesce(toast_blks_read, 0)), 0)
        FROM pg_statio_user_tables WHERE schemaname = current_schema()),
       (SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
        WHERE c.relname = 'entries' AND c.relnamespace = current_schema()::regnamespace),
       pg_current_wal_lsn()
FROM pg_stat_user_tables WHERE schemaname = current_schema()
"""


def schema_url(base_url: str, schema: str) -> str:
    return base_url + ("&" if "?" in base_url else "?") + f"options=-c%20search_path%3D{schema}%2Cpublic"


def entry_path(i: int) -> str:
    """The path `bench_postgres.load` gives its ``i``-th entry."""
    return f"{TYPES[i % 4]}/topic{i % 200}/entry{i}.md"


def counters(url: str) -> tuple[int, int, int, int, int, str]:
    """Row versions written by updates (of any table; of the entries table's, those not HOT), rows
    inserted, pages touched, the entries table's indexes, and the WAL position."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(_TOUCHED).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2]), int(row[3]), int(row[4]), str(row[5])


def read_round(url: str, size: int, reads: int, seed: int) -> dict[str, float]:
    """In this process (this ``PYTHONPATH``'s code): ``reads`` counted reads; what they cost, per read."""
    from memdir.memory import Memory

    rng = np.random.default_rng(seed)
    paths = [entry_path(int(i)) for i in rng.integers(1, size + 1, reads)]
    settings = Settings(root=Path(tempfile.mkdtemp(prefix="memdir-bench-reads-")), store=url, prefetch_size=0,
                        evolution_enabled=False)
    with Memory.open(settings) as memory:
        flush = memory.adapter.db.connection  # (this thread's connection, the reads')
        memory.read(paths[0], count_hit=True)  # (the store opened, its statements prepared)
        flush().execute("SELECT pg_stat_force_next_flush()")  # (its counts: flushed once it is idle)
        before = counters(url)
        took = []
        for path in paths:
            started = time.perf_counter()
            memory.read(path, count_hit=True)
            took.append((time.perf_counter() - started) * 1000)
        flush().execute("SELECT pg_stat_force_next_flush()")
        after = counters(url)
    with psycopg.connect(url, autocommit=True) as conn:
        wal = int(conn.execute("SELECT pg_wal_lsn_diff(%s, %s)", (after[5], before[5])).fetchone()[0])
    moved = (after[1] - before[1]) / reads  # new versions of an entry's row that are not HOT: one entry in each index
    return {
        "row versions": (after[0] - before[0]) / reads, "entry rows not HOT": moved, "entry index entries": moved * after[4],
        "rows inserted": (after[2] - before[2]) / reads, "pages touched": (after[3] - before[3]) / reads, "WAL bytes": wal / reads,
        "ms p50": statistics.median(took), "ms p95": float(np.percentile(took, 95)),
    }


def ensure(base_url: str, schema: str, size: int, tree: Path, cache: Path, data: Path) -> str:
    """The URL of ``schema`` holding ``size`` loaded entries, loaded by ``tree``'s code unless a former run left them."""
    url = schema_url(base_url, schema)
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        loaded = conn.execute("SELECT to_regclass(%s)", (f"{schema}.bench_load",)).fetchone()[0] is not None
        if not loaded:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            conn.execute(f"CREATE SCHEMA {schema}")
    if not loaded:
        child(tree, ["--load", url, "--size", str(size), "--cache", str(cache), "--data", str(data)])
    return url


def child(tree: Path, args: list[str]) -> str:
    """This script run with ``tree``'s code (its own process: two versions of memdir never meet); its output."""
    done = subprocess.run([sys.executable, __file__, *args], env={**os.environ, "PYTHONPATH": str(tree), TREE: str(tree)},
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{tree}: {done.stderr[-3000:]}")
    return done.stdout


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=1000, help="counted reads per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cluster-dir", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-reads-pg")
    parser.add_argument("--before", type=Path, help="a checkout of older code: its own store, read in alternate rounds")
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo's locomo10.json")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    parser.add_argument("--load", help=argparse.SUPPRESS)  # (a child: load this URL's empty schema)
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # (a child: one round of reads of this URL)
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load:
        bases, _, embedder = base_vectors(args.cache, args.data)
        settings = Settings(root=Path(tempfile.mkdtemp(prefix="memdir-bench-reads-")))
        weights = np.asarray(settings.search.bm25_column_weights, dtype=np.float32)
        load(args.load, args.size, bases, embedder.model_id, text_recipe(settings.embeddings.max_chars, settings.embeddings.summary),
             weights, WORDS)
        return
    if args.measure:
        print(json.dumps(read_round(args.measure, args.size, args.reads, args.seed)))
        return
    from tests.pg_cluster import Cluster

    this = Path(__file__).resolve().parents[1]
    sides = [("this code", this), *([("before", args.before.resolve())] if args.before else [])]
    cluster = Cluster(args.cluster_dir).start(STOCK)  # PostgreSQL's stock configuration
    try:
        urls = {name: ensure(cluster.url(), f"reads_{i}_{args.size}", args.size, tree, args.cache, args.data)
                for i, (name, tree) in enumerate(sides)}
        found: dict[str, list[dict[str, float]]] = {name: [] for name, _ in sides}
        for round_ in range(args.rounds):
            for name, tree in sides if round_ % 2 == 0 else sides[::-1]:
                out = child(tree, ["--measure", urls[name], "--size", str(args.size), "--reads", str(args.reads),
                                   "--seed", str(round_ + 1)])
                found[name].append(json.loads(out.strip().splitlines()[-1]))
                print(f"  round {round_ + 1} {name}: {found[name][-1]} (load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        cluster.stop()
    print(f"\n== a counted read on a PostgreSQL store of {args.size:,} entries, {args.rounds} x {args.reads} reads,"
          f" medians of the rounds (load {os.getloadavg()[0]:.1f})")
    for name, rounds in found.items():
        figures = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
        print(f"  {name:<10} " + ", ".join(f"{key} {value:.2f}" for key, value in figures.items()))


if __name__ == "__main__":
    main()
