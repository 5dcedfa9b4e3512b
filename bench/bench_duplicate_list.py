"""How often the near-duplicate check's short HNSW list misses a true near-duplicate, on real entries.

    python bench/bench_duplicate_list.py --cluster-dir DIR [--sizes 100000] [--lists 10 20 40 127] [--probes 150]

It reads stores that ``bench/bench_team_scale.py`` loaded and kept in ``--cluster-dir`` (schema
``bench_<size>``, started here with PostgreSQL's stock configuration, changed in nothing). The probes are
the entries those runs wrote through the served product: LoCoMo turns (conv-42, conv-43) embedded by the
real model, in a graph of mostly synthetic vectors. For each of ``--probes`` of them, three second
entries an agent might write about the same thing, embedded as a write embeds them (its searchable
text, the real model): the content cut to its first 70% of words, the content with every fifth word
left out, the same content under another title. A true near-duplicate of such a write is an entry that
exact search (every cosine, numpy over all vectors) finds among its nearest ``duplicates_shown`` at
cosine >= ``duplicate_cosine``: what the write's reply should name. The runs wrote some turns more than
once, so entries tie: a reply is counted by how many near-duplicates it names, not which.

For each list length, the walk runs as `memdir.memory.searching.Searching.nearest` runs it (the
nearest ``duplicates_shown`` + 1, iterative scan in relaxed order), and it prints the share of
writes with a true near-duplicate whose reply would name all of them and at least one of them, the
walk's median time, and the pages it reads (shared hits plus reads, ``EXPLAIN (ANALYZE, BUFFERS)``).
The store's own list at that size is marked. The machine is shared: the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import random
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
from bench_team_scale import STOCK, schema_url  # noqa: E402
from corpora import real_embedder  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

from memdir.core.settings import Settings  # noqa: E402
from memdir.embeddings.text import searchable_text  # noqa: E402
from memdir.storage.postgres.search import WALK_ORDER  # noqa: E402

WALK = ("SELECT e.path, 1 - (e.embedding <=> %s) FROM entries e WHERE e.embedding IS NOT NULL AND e.stub_kind IS NULL"
        f" AND e.vector_model = %s ORDER BY {WALK_ORDER} LIMIT %s")
PROBES = "fact/team-bench/%"
"""Where `bench_team_scale.py`'s timed MemoryWrites put their entries."""


def rewrites(title: str, content: str) -> list[tuple[str, str]]:
    """(title, content) of three second entries about what ``content`` says."""
    words = content.split()
    return [
        (title, " ".join(words[: max(3, int(len(words) * 0.7))])),
        (title, " ".join(word for i, word in enumerate(words) if i % 5 != 4)),
        (f"Note: {title}", content),
    ]


def walk(conn: psycopg.Connection, vector: np.ndarray, model_id: str, length: int, limit: int,
         statement: str = WALK) -> list[tuple]:
    with conn.transaction():
        conn.execute(f"SET LOCAL hnsw.ef_search = {int(length)}")
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        return conn.execute(statement, (vector, model_id, vector, limit)).fetchall()


def pages_read(conn: psycopg.Connection, vector: np.ndarray, model_id: str, length: int, limit: int) -> int:
    plan = walk(conn, vector, model_id, length, limit, f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {WALK}")[0][0][0]["Plan"]
    return int(plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0))


def bench_size(base_url: str, n: int, lengths: list[int], probes: int, cache: Path) -> None:
    settings = Settings()
    shown, threshold = settings.search.duplicates_shown, settings.search.duplicate_cosine
    url = schema_url(base_url, n)
    own = list_length(url, settings.storage.hnsw_ef_search_duplicates, shown + 1)
    embedder = real_embedder(cache, "duplicates")
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        rows = conn.execute("SELECT title, content, metadata FROM entries WHERE path LIKE %s ORDER BY id",
                            (PROBES,)).fetchall()
        random.Random(5).shuffle(rows)
        texts = [searchable_text(title, metadata, content, settings.embeddings.max_chars, summary=settings.embeddings.summary)
                 for stored_title, stored_content, metadata in rows[:probes]
                 for title, content in rewrites(stored_title, stored_content)]
        vectors = embedder.embed(texts)
        embedder.save()
        model_id = embedder.model_id
        exact = exact_top_10(url, vectors, model_id)
        wanted = []
        for vector, paths in zip(vectors, exact):
            cosines = conn.execute("SELECT path, 1 - (embedding <=> %s) FROM entries WHERE path = ANY(%s)",
                                   (vector, list(paths))).fetchall()
            best = sorted(cosines, key=lambda row: -row[1])[:shown]
            wanted.append({path for path, cosine in best if cosine >= threshold})
        having = [i for i, paths in enumerate(wanted) if paths]
        print(f"\n== {n:,} entries: {len(texts)} writes of {min(probes, len(rows))} real entries rewritten, "
              f"{len(having)} with a true near-duplicate (cosine >= {threshold}); the store's own list: {own}", flush=True)
        for vector in vectors[:20]:  # the graph's upper pages into the cache, as in a running server
            walk(conn, vector, model_id, own, shown + 1)
        for length in sorted({*lengths, own}):
            every = some = 0
            took = []
            for i in having:
                started = time.perf_counter()
                found = walk(conn, vectors[i], model_id, length, shown + 1)
                took.append(time.perf_counter() - started)
                named = sum(cosine >= threshold for _, cosine in sorted(found, key=lambda row: -row[1])[:shown])
                every += named >= len(wanted[i])  # (by count: a turn written in several runs has copies that tie)
                some += named > 0
            pages = statistics.median(pages_read(conn, vectors[i], model_id, length, shown + 1) for i in having[:30])
            mark = " (the store's own)" if length == own else ""
            print(f"  list {length:>4}{mark}: all named {every}/{len(having)}, at least one {some}/{len(having)}; "
                  f"walk p50 {1000 * statistics.median(took):.1f} ms, {pages:.0f} pages (load {os.getloadavg()[0]:.1f})",
                  flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster-dir", type=Path, required=True, help="a cluster kept by bench_team_scale.py")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--lists", type=int, nargs="+", default=[10, 20, 40, 127])
    parser.add_argument("--probes", type=int, default=150, help="real entries rewritten (three writes each)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args(argv)
    from tests.pg_cluster import Cluster

    cluster = Cluster(args.cluster_dir).start(STOCK)
    try:
        for n in args.sizes:
            bench_size(cluster.url(), n, args.lists, args.probes, args.cache)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
