"""What a PostgreSQL search's round trips and its candidates statement cost, part by part.

    python bench/bench_pg_search_parts.py --cluster-dir DIR [--size 100000] [--queries 12] [--turns 8]

On a store `bench/bench_team_scale.py` loaded (the cluster in ``--cluster-dir``, PostgreSQL's stock
configuration), it times one round trip (``SELECT 1``, and a read-only snapshot's ``BEGIN`` and ``COMMIT``):
what sending two statements together instead of one after the other saves. Then it asks discovery for LoCoMo
questions with the real model, keeps the candidates statement each of its searches sent
(`memdir.storage.postgres.search.candidates_sql`; a MemorySearch reads its candidates with its vector walk, in
the walk's statement: `walk_candidates_sql`) and runs it again as sent and without each of its parts (the
folder neighbours context coverage reads, the cosines of the keyword-only candidates, the tags), in turns,
prepared as the server's connection prepares it. Medians; the load is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import psycopg  # noqa: E402
from bench_team_scale import STOCK, schema_url  # noqa: E402
from corpora import DEFAULT_LOCOMO, locomo_corpora  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from memdir.storage.postgres.search import TAGS  # noqa: E402
from memdir.tools.discovery import discover  # noqa: E402

Statement = tuple[str, list[Any]]


def without_window(sql: str, params: list[Any]) -> Statement:
    """The statement without the candidates' folder neighbours (its two ``window`` parameters dropped)."""
    cut = sql[:sql.index(", n AS MATERIALIZED")] + sql[sql.index(", h AS"):]
    cut = cut.replace("SELECT id FROM c UNION SELECT id FROM n", "SELECT id FROM c")
    return cut[:cut.index(" UNION ALL SELECT n.pos")], params[:-3] + params[-1:]


def without_cosines(sql: str, params: list[Any]) -> Statement:
    return (sql.replace("THEN 1 - (e.embedding <=> %s) END", "THEN 0 END"),
            [param for param in params if not isinstance(param, np.ndarray)])


def without_tags(sql: str, params: list[Any]) -> Statement:
    return sql.replace(TAGS, "NULL::text[]"), params


VARIANTS: dict[str, Callable[[str, list[Any]], Statement]] = {
    "as sent": lambda sql, params: (sql, params),
    "without the folder neighbours": without_window,
    "without the cosines": without_cosines,
    "without the tags": without_tags,
}


def median_ms(run: Callable[[], object], times: int) -> float:
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        spent.append((time.perf_counter() - start) * 1000)
    return statistics.median(spent)


def candidates_statements(url: str, questions: list[str]) -> list[Statement]:
    """The candidates statement of each search of each question's discovery, as the store sent it (after a few
    discoveries to warm up)."""
    caught: list[Statement] = []
    execute = psycopg.Connection.execute

    def recording(self: psycopg.Connection, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if str(query).startswith("WITH c AS"):
            caught.append((str(query), list(params)))
        return execute(self, query, params, **kwargs)

    settings = Settings(root=Path(tempfile.mkdtemp()), store=url, hook_socket=False, evolution_enabled=False)
    with Memory.open(settings) as memory:
        for question in questions[:3]:
            discover(memory, question)
        psycopg.Connection.execute = recording  # type: ignore[method-assign,assignment]
        try:
            for question in questions[3:]:
                discover(memory, question)
        finally:
            psycopg.Connection.execute = execute  # type: ignore[method-assign]
    return caught


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster-dir", type=Path, required=True, help="the cluster bench_team_scale.py loaded")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=12)
    parser.add_argument("--turns", type=int, default=8, help="runs of every statement in every variant")
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo's locomo10.json")
    args = parser.parse_args(argv)
    questions = [query.text for corpus in locomo_corpora(args.data) for query in corpus.queries][-args.queries - 3:]
    from tests.pg_cluster import Cluster

    cluster = Cluster(args.cluster_dir).start(STOCK)
    try:
        url = schema_url(cluster.url(), args.size)
        statements = candidates_statements(url, questions)
        with psycopg.connect(url, autocommit=True) as conn:
            register_vector(conn)
            print(f"== {args.size:,} entries (load {os.getloadavg()[0]:.1f})")
            print(f"  a round trip (SELECT 1)                 {median_ms(lambda: conn.execute('SELECT 1').fetchall(), 2000):.3f} ms")
            snapshot = median_ms(lambda: (conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"), conn.execute("COMMIT")), 2000)
            print(f"  a read-only snapshot's BEGIN and COMMIT {snapshot:.3f} ms")
            spent: dict[str, list[float]] = {name: [] for name in VARIANTS}
            for turn in range(args.turns):
                for name, variant in VARIANTS.items():
                    for sql, params in statements:
                        query, values = variant(sql, params)
                        start = time.perf_counter()
                        conn.execute(query, values, prepare=True).fetchall()
                        if turn >= 2:  # (the first turns prepare and warm the pages)
                            spent[name].append((time.perf_counter() - start) * 1000)
            for name, times in spent.items():
                print(f"  candidates statement, {name:<30} {statistics.median(times):6.2f} ms")
            print(f"  ({len(statements)} searches' statements, {args.turns - 2} turns; load {os.getloadavg()[0]:.1f})")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
