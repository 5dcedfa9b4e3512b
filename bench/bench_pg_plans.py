"""How the PostgreSQL store's vector search reads a large store: the plan, pages and time of each kind of search.

    python bench/bench_pg_plans.py --cluster-dir DIR [--sizes 2000 20000 100000] [--queries 30]

On the stores `bench/bench_team_scale.py` loads (the cluster in ``--cluster-dir``, PostgreSQL's stock
configuration: 128 MB of shared buffers), for LoCoMo questions embedded by the real model, it sends the vector
search's statement as `memdir.storage.postgres.index.PostgresIndex.semantic_hits` sends it (50 nearest,
the store's candidate list) with four filters: none, one type, three types, one folder. For each it prints
the plan the planner chose (an HNSW walk, or the filter's own index and a sort of every cosine), the pages
read (from shared buffers, and from outside them: the OS cache or the disk) and the time, with PostgreSQL's
default ``cpu_operator_cost`` and with the store's (`WALK_OPERATOR_COST`). Each question goes to one pricing
only (they alternate), so neither finds the pages the other just read.

Then the keyword search by type (`PostgresIndex.keyword_hits`, as MemoryDiscover's two searches ask: skills,
16 hits; three other types, 72), its filter tested on the best-scored entries first (`KEYWORD_OVERFETCH`)
and on every entry holding one of the words (the code before), the two in turns: whether the hits are the
same, and the time. Medians; the load is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from bench_team_scale import STOCK, schema_url  # noqa: E402
from corpora import DEFAULT_LOCOMO, locomo_corpora, real_embedder  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

import memdir.storage.postgres.index as postgres_index  # noqa: E402
from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from memdir.storage.postgres.index import EF_SEARCH, WALK_OPERATOR_COST  # noqa: E402
from memdir.storage.postgres.search import WALK_ORDER  # noqa: E402

DEFAULT_OPERATOR_COST = 0.0025  # PostgreSQL's
FILTERS = {
    "no filter": ("", []),
    "type skill": (" AND e.type = ANY(%s)", [["skill"]]),
    "three types": (" AND e.type = ANY(%s)", [["concept", "fact", "experience"]]),
    "one folder": (" AND e.path LIKE %s", ["skill/topic6/%"]),
}


def plan_nodes(node: dict) -> list[dict]:
    return [node, *(child for sub in node.get("Plans", []) for child in plan_nodes(sub))]


def measure(url: str, vectors, model_id: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        entries, ef = conn.execute(f"SELECT entries, {EF_SEARCH} FROM store_state", (300, 300, 50)).fetchone()
        conn.execute(f"SET hnsw.ef_search = {int(ef)}")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        print(f"\n== {entries:,} entries (candidate list {ef}; load {os.getloadavg()[0]:.1f})", flush=True)
        for name, (where, params) in FILTERS.items():
            found: dict[float, list[tuple[float, int, int, str]]] = {DEFAULT_OPERATOR_COST: [], WALK_OPERATOR_COST: []}
            for i, vector in enumerate(vectors):
                cost = (DEFAULT_OPERATOR_COST, WALK_OPERATOR_COST)[i % 2]
                conn.execute(f"SET cpu_operator_cost = {cost}")
                plan = conn.execute(
                    "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT e.path, 1 - (e.embedding <=> %s) FROM entries e"
                    f" WHERE e.embedding IS NOT NULL AND e.stub_kind IS NULL AND e.vector_model = %s{where}"
                    f" ORDER BY {WALK_ORDER} LIMIT 50", (vector, model_id, *params, vector),
                ).fetchone()[0][0]
                top = plan["Plan"]
                scans = [node.get("Index Name", node["Node Type"]) for node in plan_nodes(top) if "Scan" in node["Node Type"]]
                found[cost].append((plan["Execution Time"], top["Shared Hit Blocks"], top["Shared Read Blocks"], "+".join(scans)))
            for cost, rows in found.items():
                plans = Counter(row[3] for row in rows).most_common()
                print(f"  {name:<12} cpu_operator_cost {cost:<6}: {statistics.median(row[0] for row in rows):7.1f} ms,"
                      f" pages {statistics.median(row[1] + row[2] for row in rows):7.0f}"
                      f" ({statistics.median(row[2] for row in rows):6.0f} from outside shared buffers); plan {plans}", flush=True)


def keyword_by_type(url: str, questions: list[str]) -> None:
    """The filtered keyword search, best-scored first vs every holder tested (see the module docstring)."""
    import time

    settings = Settings(root=Path(tempfile.mkdtemp(prefix="memdir-bench-plans-")), store=url, evolution_enabled=False)
    overfetch = postgres_index.KEYWORD_OVERFETCH
    took: dict[str, list[float]] = {"best-scored first": [], "every holder": []}
    differ = 0
    with Memory.open(settings) as memory:
        for i, question in enumerate(questions):
            terms = list(memory.term_weights(question))
            for types, limit in ((["skill"], 16), (["concept", "fact", "experience"], 72)):
                hits = {}
                for name in (list(took) if i % 2 == 0 else list(took)[::-1]):
                    postgres_index.KEYWORD_OVERFETCH = overfetch if name == "best-scored first" else 0  # 0: none tested first
                    started = time.perf_counter()
                    hits[name] = list(memory.index.keyword_hits(terms, limit, types=types).items())
                    took[name].append(time.perf_counter() - started)
                differ += hits["best-scored first"] != hits["every holder"]
    postgres_index.KEYWORD_OVERFETCH = overfetch
    print(f"  keyword search by type, {2 * len(questions)} searches: {differ} with other hits; "
          + "; ".join(f"{name} p50 {1000 * statistics.median(values):.1f} ms" for name, values in took.items())
          + f" (load {os.getloadavg()[0]:.1f})", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster-dir", type=Path, required=True, help="the cluster bench_team_scale.py loaded")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 20_000, 100_000])
    parser.add_argument("--queries", type=int, default=30, help="questions per filter (half for each pricing)")
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo's locomo10.json")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args(argv)
    questions = [query.text for corpus in locomo_corpora(args.data) for query in corpus.queries]
    embedder = real_embedder(args.cache, "locomo")
    vectors = embedder.embed(questions[-args.queries:])
    from tests.pg_cluster import Cluster

    cluster = Cluster(args.cluster_dir).start(STOCK)
    try:
        for n in args.sizes:
            measure(schema_url(cluster.url(), n), vectors, embedder.model_id)
            keyword_by_type(schema_url(cluster.url(), n), questions[-2 * args.queries:-args.queries])
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
