"""recall@10 of the PostgreSQL store's vector search by the HNSW candidate list's length, on queries of several kinds.

    python bench/bench_hnsw_list.py --cluster-dir DIR [--sizes 100000 1000000] [--lists 50 80 ...] [--queries 100]

It reads stores that ``bench/bench_team_scale.py`` or ``bench/bench_postgres.py`` loaded and kept in
``--cluster-dir`` (schema ``bench_<size>``; started here with PostgreSQL's stock configuration,
changed in nothing). Their entries' vectors are convex mixes of the model's embeddings of the first
1,024 LoCoMo turns (conversations conv-26, conv-30 and part of conv-41); entries written later
through the served product hold the model's embeddings of what was written. Six query sets, each
embedded by the real model; the first three are what a user sends, the last three stress sets:

* ``held-out questions``: questions of conv-44 to conv-50 as written (no entry is made of their
  conversations' turns);
* ``held-out statements``: turns of conv-48 to conv-50 (statements, not questions);
* ``Python docs``: the first sentences of standard-library docstrings (`corpora.docs_corpus`), a
  subject no entry is about;
* ``tuned + words``: questions of conv-26 and conv-30 with three words of the corpus's generated
  pseudo-English added (what the search benchmarks ask; the default list was chosen on these);
* ``held-out + words``: the held-out questions above with three such words added (they pull a
  query toward entries written in that pseudo-English);
* ``pseudo-English``: 4-12 of those words alone.

For each list length, each query's walk runs as the store's search runs it (a search's 50
candidates, iterative scan in relaxed order, the top 10 by cosine), and it prints recall@10
against exact search (every cosine, numpy over all vectors) two ways: strict (the share of exact
search's 10 entries found) and counting ties (ann-benchmarks' k-nn recall, `TIE`: a found entry
counts when its cosine distance is within 1e-3 of exact search's 10th, so an entry exactly as near
as the 10th is not a miss); then how far the 10th found falls short of exact search's 10th (mean,
cosine x 1000; exact search's 10th itself is printed once a size: how near a set's nearest entries
are), the walk's median time and the pages it reads (shared hits plus reads, from
``EXPLAIN (ANALYZE, BUFFERS)`` on 20 held-out questions). The store's own list at that size
(`memdir.storage.postgres.index.EF_SEARCH`) is marked. The machine is shared: the load average
is printed with the timings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from bench_postgres import exact_top_10, list_length  # noqa: E402
from bench_search import TextGenerator  # noqa: E402
from bench_team_scale import STOCK, schema_url  # noqa: E402
from corpora import DEFAULT_LOCOMO, docs_corpus, locomo_corpora, real_embedder  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

from memdir.core.settings import Settings  # noqa: E402
from memdir.storage.postgres.database import scalar  # noqa: E402
from memdir.storage.postgres.search import WALK_ORDER  # noqa: E402

POOL = 50  # what a search asks the vector index for (``search_candidates``)
TIE = 1e-3
"""How much farther than exact search's 10th a found entry may be and still count, in cosine distance:
ann-benchmarks' k-nn recall (``knn_threshold``, epsilon 1e-3, in ann_benchmarks/plotting/metrics.py)."""
WALK = ("SELECT e.path, 1 - (e.embedding <=> %s) FROM entries e WHERE e.embedding IS NOT NULL AND e.stub_kind IS NULL"
        f" AND e.vector_model = %s ORDER BY {WALK_ORDER} LIMIT %s")


def query_sets(data: Path, count: int) -> dict[str, list[str]]:
    """The six query sets of the module docstring, ``count`` texts each (the user's first)."""
    corpora = {corpus.name: corpus for corpus in locomo_corpora(data)}
    gen = TextGenerator(seed=99)
    rng = np.random.default_rng(7)

    def pick(texts: list[str]) -> list[str]:
        return [texts[i] for i in sorted(rng.choice(len(texts), min(count, len(texts)), replace=False))]

    def words(texts: list[str]) -> list[str]:
        return [f"{text} {' '.join(gen.sample(3))}" for text in texts]

    tuned = [q.text for name in ("conv-26", "conv-30") for q in corpora[name].queries]
    held = [q.text for name in ("conv-44", "conv-47", "conv-48", "conv-49", "conv-50") for q in corpora[name].queries]
    turns = [doc.content for name in ("conv-48", "conv-49", "conv-50") for doc in corpora[name].docs]
    tuned_words, held_picked = words(pick(tuned)), pick(held)
    held_words, statements = words(held_picked), pick(turns)
    pseudo = [" ".join(gen.sample(int(rng.integers(4, 13)))) for _ in range(count)]
    return {
        "held-out questions": held_picked,
        "held-out statements": statements,
        "Python docs": pick([q.text for q in docs_corpus().queries]),
        "tuned + words (stress)": tuned_words,
        "held-out + words (stress)": held_words,
        "pseudo-English (stress)": pseudo,
    }


def with_query_sets(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with the arguments `embedded_query_sets` reads."""
    parser.add_argument("--queries", type=int, default=100, help="queries in each set")
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo's locomo10.json")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    return parser


def embedded_query_sets(args: argparse.Namespace) -> tuple[dict[str, np.ndarray], str]:
    """The query sets' vectors by the real model (through the bench's cache), and the model's id."""
    embedder = real_embedder(args.cache, "locomo")
    sets = {name: embedder.embed(texts) for name, texts in query_sets(args.data, args.queries).items()}
    embedder.save()
    return sets, embedder.model_id


def walk(conn: psycopg.Connection, vector: np.ndarray, model_id: str, length: int, statement: str = WALK) -> list[tuple]:
    """The rows of one walk with a list of ``length``, run as the store's search runs it."""
    with conn.transaction():
        conn.execute(f"SET LOCAL hnsw.ef_search = {int(length)}")
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        return conn.execute(statement, (vector, model_id, vector, POOL)).fetchall()


def top_ten(conn: psycopg.Connection, vector: np.ndarray, model_id: str, length: int) -> list[tuple[str, float]]:
    """The walk's 10 best (path, cosine), best first."""
    return sorted(walk(conn, vector, model_id, length), key=lambda row: -row[1])[:10]


def tenth_cosine(conn: psycopg.Connection, vector: np.ndarray, paths: set[str]) -> float:
    """The lowest cosine among ``paths`` (exact search's 10th)."""
    return float(scalar(conn, "SELECT min(1 - (embedding <=> %s)) FROM entries WHERE path = ANY(%s)", (vector, list(paths))))


def pages_read(conn: psycopg.Connection, vector: np.ndarray, model_id: str, length: int) -> int:
    """Pages one walk reads: shared buffers hit plus pages read into them."""
    plan = walk(conn, vector, model_id, length, f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {WALK}")[0][0][0]["Plan"]
    return int(plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0))


def recalls(top: list[tuple[str, float]], wanted: set[str], exact_tenth: float) -> tuple[float, float]:
    """recall@10 of one walk's ``top`` (path, cosine) against exact search's 10 (``wanted``, the 10th at
    cosine ``exact_tenth``): strict, and counting a found entry within `TIE` of the 10th."""
    strict = len(wanted & {path for path, _ in top}) / 10
    ties = sum(cosine >= exact_tenth - TIE for _, cosine in top) / 10
    return strict, ties


def bench_size(base_url: str, n: int, sets: dict[str, np.ndarray], lengths: list[int], model_id: str) -> None:
    url = schema_url(base_url, n)
    default = list_length(url, Settings().storage.hnsw_ef_search, POOL)
    print(f"\n== {n:,} entries (the store's own list at this size: {default})", flush=True)
    names = list(sets)
    exact_all = exact_top_10(url, np.vstack([sets[name] for name in names]), model_id)
    exact, start = {}, 0
    for name in names:
        exact[name] = exact_all[start:start + len(sets[name])]
        start += len(sets[name])
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        tenth = {name: [tenth_cosine(conn, v, wanted) for v, wanted in zip(sets[name], exact[name])] for name in names}
        print("  exact search's 10th nearest, mean cosine: "
              + ", ".join(f"{name} {np.mean(tenth[name]):.2f}" for name in names), flush=True)
        for vector in sets[names[0]][:20]:  # the graph's upper pages into the cache, as in a running server
            top_ten(conn, vector, model_id, default)
        for length in sorted({*lengths, default}):
            took, lines = [], []
            for name in names:
                strict, ties, short = [], [], []
                for vector, wanted, best_tenth in zip(sets[name], exact[name], tenth[name]):
                    started = time.perf_counter()
                    top = top_ten(conn, vector, model_id, length)
                    took.append(time.perf_counter() - started)
                    one, tied = recalls(top, wanted, best_tenth)
                    strict.append(one)
                    ties.append(tied)
                    short.append(best_tenth - top[-1][1])
                lines.append(f"    {name:<27} strict {np.mean(strict):.3f}   counting ties {np.mean(ties):.3f}"
                             f"   (10th short by {1000 * np.mean(short):.1f})")
            pages = statistics.median(pages_read(conn, v, model_id, length) for v in sets[names[0]][:20])
            mark = " (the store's own)" if length == default else ""
            print(f"  list {length:>4}{mark}: walk p50 {1000 * statistics.median(took):.1f} ms, {pages:.0f} pages"
                  f"   (load {os.getloadavg()[0]:.1f})", flush=True)
            print("\n".join(lines), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster-dir", type=Path, required=True, help="a cluster kept by bench_team_scale.py or bench_postgres.py")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--lists", type=int, nargs="+", default=[50, 80, 120, 160, 200, 300])
    args = with_query_sets(parser).parse_args(argv)
    sets, model_id = embedded_query_sets(args)
    print(json.dumps({name: len(vectors) for name, vectors in sets.items()}), flush=True)
    from tests.pg_cluster import Cluster

    cluster = Cluster(args.cluster_dir).start(STOCK)
    try:
        for n in args.sizes:
            bench_size(cluster.url(), n, sets, args.lists, model_id)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
