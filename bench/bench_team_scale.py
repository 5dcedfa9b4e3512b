"""What an agent's calls cost on a large team store: every call a user reaches, timed through the HTTP server.

    python bench/bench_team_scale.py [--sizes 2000 100000] [--cluster-dir DIR] [--directory-root DIR] [--calls 40]

For each size, a PostgreSQL store (a throwaway cluster with PostgreSQL's stock configuration,
kept in ``--cluster-dir`` so a re-run reuses its loaded schemas) is loaded with COPY as
``bench/bench_postgres.py`` loads it: synthetic entries, synthetic vectors shaped like real
ones (embedding 100K texts with the model would take over an hour on this machine). With
``--directory-root``, a directory store of the same entries is written there too (files,
then ``memdir rebuild``-style indexing) and measured the same way.

A real ``memdir serve --http`` (the real model) then serves the store, and one MCP client
(the official SDK) times, median and p95 over ``--calls`` calls each:

* MemoryWrite of a new entry (the real model embeds it; the reply lists near-duplicates);
* MemorySearch, MemoryDiscover, MemoryGlob ``**/*.md`` (its first page);
* ``resources/list`` and reading ``memdir://status``;
* the web view's first page (``GET /``).

It also prints recall@10 of the store's default vector search against exact search
(every cosine, numpy over all vectors) for LoCoMo questions. The machine is shared: the
load average is printed with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
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

from bench_postgres import base_vectors, build_vector_index, exact_top_10, load, prepared  # noqa: E402
from corpora import DEFAULT_LOCOMO  # noqa: E402
from memdir.core.settings import Settings  # noqa: E402
from memdir.embeddings.text import text_recipe  # noqa: E402

WORDS = (20, 60)


def schema_url(base_url: str, n: int) -> str:
    schema = f"bench_{n}"
    return base_url + ("&" if "?" in base_url else "?") + f"options=-c%20search_path%3D{schema}%2Cpublic"


def ensure_store(base_url: str, n: int, bases: np.ndarray, model_id: str) -> str:
    """The URL of a schema holding ``n`` loaded entries (loaded now unless a former run left them)."""
    schema = f"bench_{n}"
    url = schema_url(base_url, n)
    reuse = prepared(base_url, schema, url, n, WORDS)
    if reuse == "nothing":
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            conn.execute(f"CREATE SCHEMA {schema}")
        settings = Settings(root=Path(tempfile.mkdtemp(prefix="memdir-bench-team-")))
        weights = np.asarray(settings.bm25_column_weights, dtype=np.float32)
        recipe = text_recipe(settings.embedding_max_chars, settings.embedding_summary)
        seconds = load(url, n, bases, model_id, recipe, weights, WORDS)
        print(f"  {n:,} entries loaded with COPY + index builds in {seconds:.0f} s", flush=True)
    elif reuse == "rows":
        build_vector_index(url)
    return url


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 100_000])
    parser.add_argument("--cluster-dir", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-team-pg")
    parser.add_argument("--build-only", action="store_true", help="load the stores, measure nothing")
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo's locomo10.json")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args(argv)
    bases, questions, embedder = base_vectors(args.cache, args.data)
    from tests.pg_cluster import Cluster

    cluster = Cluster(args.cluster_dir).start()  # PostgreSQL's stock configuration
    try:
        for n in args.sizes:
            ensure_store(cluster.url(), n, bases, embedder.model_id)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
