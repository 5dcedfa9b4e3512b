"""recall@10 of pgvector's HNSW graph by how it was built: over all of a store's vectors at once, or
over most of them with the rest inserted one by one afterwards (as a store's later writes are).

    python bench/bench_hnsw_graph.py --cluster-dir DIR [--size 100000] [--texts 40000] [--lists 100 304 1000]

It reads the store ``bench/bench_team_scale.py`` kept in ``--cluster-dir`` (schema ``bench_<size>``,
read only) and builds its graphs in a scratch schema of the same cluster, dropped at the end. Each
graph is the store's (`memdir.storage.postgres.schema.HNSW_OPTIONS`) over a two-column copy of
the vectors:

* the bench store's vectors: its bulk-loaded entries (``id <= size``: convex mixes of LoCoMo
  turns' embeddings, `bench_postgres.mixed_vectors`) and the entries written later through the
  product (``id > size``: the model's embeddings of what was written): the bulk alone; all of them in one
  ``CREATE INDEX`` (a rebuild: it inserts the rows in the table's order); and the bulk's graph with
  the later ones inserted after it (the store's own history); and all of them with twice the links a
  node (m 32);
* real texts, embedded by the model (``--texts`` sentences of the docstrings of Python's standard
  library and the installed packages, none of them a query of the ``Python docs`` set, and the
  LoCoMo turns of the conversations no held-out query comes from), the graph built over all, and
  over the sentences with the turns inserted after (a store whose subject changes); and the bench's
  mixes at the same size, for the data's part.

Queries are `bench_hnsw_list.py`'s six sets; each walk is a search's (50 candidates, iterative
scan in relaxed order, the top 10 by cosine) against exact search over the same rows, its recall@10
strict and counting ties (`bench_hnsw_list.TIE`: ann-benchmarks' k-nn recall). In brackets
the share of exact search's 10 nearest that are the later entries (the bench store's written ones,
the LoCoMo turns of the real texts). Recall is
what is measured; the walk's median time is printed with the load average (2 shared cores).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import statistics
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from bench_hnsw_list import POOL, TIE, embedded_query_sets, with_query_sets  # noqa: E402
from bench_team_scale import STOCK  # noqa: E402
from corpora import docs_corpus, locomo_corpora, real_embedder  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

from memdir.storage.postgres.schema import HNSW_OPTIONS  # noqa: E402

SCRATCH = "hnsw_graph_bench"
HELD_OUT = {"conv-44", "conv-47", "conv-48", "conv-49", "conv-50"}  # (`bench_hnsw_list.query_sets`' held-out conversations)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def docstring_sentences(limit: int, queries: set[str]) -> list[str]:
    """Up to ``limit`` distinct English sentences (6-40 words, nearly all letters) from the docstrings
    of the standard library and the installed packages, none of ``queries``, in a fixed shuffled order."""
    roots = [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    seen: set[str] = set()
    found: list[str] = []
    for root in roots:
        for file in sorted(root.rglob("*.py")):
            if {"test", "tests"} & set(file.parts):
                continue
            try:
                tree = ast.parse(file.read_text(errors="ignore"))
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for paragraph in re.split(r"\n\s*\n", ast.get_docstring(node) or ""):
                    for sentence in SENTENCE_END.split(" ".join(paragraph.split())):
                        letters = sum(ch.isalpha() or ch == " " for ch in sentence) / max(1, len(sentence))
                        if (6 <= len(sentence.split()) <= 40 and letters >= 0.9 and sentence[-1] in ".!?"
                                and sentence[0].isalpha() and sentence.lower() not in seen):
                            seen.add(sentence.lower())
                            found.append(sentence)
    order = np.random.default_rng(5).permutation(len(found))
    asked = {query.lower() for query in queries}
    return [found[i] for i in order if found[i].lower() not in asked][:limit]


def build(conn: psycopg.Connection, table: str, vectors: np.ndarray, later: np.ndarray, m: int = HNSW_OPTIONS["m"]) -> float:
    """Table ``table`` holding ``vectors`` with the store's HNSW graph built over them (with ``m``
    links a node), then ``later`` inserted one by one; returns the build's seconds. Ids follow the rows' order."""
    conn.execute(f"DROP TABLE IF EXISTS {SCRATCH}.{table}")
    conn.execute(f"CREATE TABLE {SCRATCH}.{table} (id int, embedding vector({vectors.shape[1]}))")
    with conn.cursor().copy(f"COPY {SCRATCH}.{table} (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int4", "vector"])
        for i, vector in enumerate(vectors):
            copy.write_row((i, vector))
    conn.execute("SET maintenance_work_mem = '2GB'")  # the graph is built in memory
    started = time.perf_counter()
    conn.execute(f"CREATE INDEX ON {SCRATCH}.{table} USING hnsw (embedding vector_cosine_ops)"
                 f" WITH (m = {int(m)}, ef_construction = {HNSW_OPTIONS['ef_construction']})")
    took = time.perf_counter() - started
    for i, vector in enumerate(later, start=len(vectors)):
        conn.execute(f"INSERT INTO {SCRATCH}.{table} VALUES (%s, %s)", (i, vector))
    conn.execute(f"VACUUM ANALYZE {SCRATCH}.{table}")
    return took


def measure(conn: psycopg.Connection, label: str, table: str, rows: np.ndarray, first_later: int,
            sets: dict[str, np.ndarray], lists: list[int]) -> None:
    """Print recall@10 of each set's walks on ``table`` (whose rows are ``rows``, those from
    ``first_later`` on inserted after the graph) by list length."""
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    cosines = {name: queries @ unit.T for name, queries in sets.items()}
    exact = {name: np.argsort(-every, axis=1)[:, :10] for name, every in cosines.items()}
    statement = f"SELECT id FROM {SCRATCH}.{table} ORDER BY embedding <=> %s LIMIT {POOL}"
    for length in lists:
        shown, took = [], []
        for name, queries in sets.items():
            found, ties = [], []
            for vector, wanted, every in zip(queries, exact[name], cosines[name]):
                started = time.perf_counter()
                with conn.transaction():
                    conn.execute(f"SET LOCAL hnsw.ef_search = {int(length)}")
                    conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                    conn.execute("SET LOCAL enable_seqscan = off")
                    ids = [row[0] for row in conn.execute(statement, (vector,)).fetchall()]
                took.append(time.perf_counter() - started)
                top = sorted(ids, key=lambda i: -float(every[i]))[:10]
                found.append(len(set(wanted.tolist()) & set(top)) / 10)
                ties.append(float(np.mean(every[top] >= every[wanted[-1]] - TIE)))
            later = float(np.mean(exact[name] >= first_later))
            shown.append(f"{name} {np.mean(found):.3f}/{np.mean(ties):.3f} ({later:.2f})")
        print(f"  {label}, list {length:>4}: {'  '.join(shown)}   walk p50 {1000 * statistics.median(took):.1f} ms"
              f" (load {os.getloadavg()[0]:.1f})", flush=True)


def bench_store_vectors(conn: psycopg.Connection, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The bench store's bulk-loaded vectors and those its served runs wrote later, in id order."""
    bulk: list[np.ndarray] = []
    later: list[np.ndarray] = []
    for entry_id, vector in conn.execute(
        f"SELECT id, embedding FROM bench_{size}.entries WHERE embedding IS NOT NULL AND stub_kind IS NULL ORDER BY id"
    ):
        (bulk if entry_id <= size else later).append(vector.to_numpy())
    return np.array(bulk, dtype=np.float32), np.array(later, dtype=np.float32).reshape(-1, 384)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster-dir", type=Path, required=True, help="a cluster kept by bench_team_scale.py")
    parser.add_argument("--size", type=int, default=100_000, help="the bench store's size (schema bench_<size>)")
    parser.add_argument("--texts", type=int, default=40_000, help="docstring sentences in the real texts' store")
    parser.add_argument("--lists", type=int, nargs="+", default=[100, 304, 1000])
    args = with_query_sets(parser).parse_args(argv)
    sets, _ = embedded_query_sets(args)
    texts = real_embedder(args.cache, "realtext")
    turns = texts.embed([doc.content for corpus in locomo_corpora(args.data) if corpus.name not in HELD_OUT
                         for doc in corpus.docs])
    sentences = texts.embed(docstring_sentences(args.texts, {query.text for query in docs_corpus().queries}))
    texts.save()
    from tests.pg_cluster import Cluster

    cluster = Cluster(args.cluster_dir).start(STOCK)
    try:
        with psycopg.connect(cluster.url(), autocommit=True) as conn:
            register_vector(conn)
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCRATCH}")
            bulk, later = bench_store_vectors(conn, args.size)
            every = np.vstack([bulk, later])
            print(f"== the bench store: {len(bulk):,} bulk-loaded vectors, {len(later):,} written later", flush=True)
            for label, first, rest, m in (
                ("the bulk alone", bulk, later[:0], HNSW_OPTIONS["m"]), ("graph over all", every, later[:0], HNSW_OPTIONS["m"]),
                ("graph over the bulk, later ones inserted", bulk, later, HNSW_OPTIONS["m"]), ("graph over all, m 32", every, later[:0], 32),
            ):
                took = build(conn, "store", first, rest, m)
                print(f"  ({label}: built in {took:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)
                measure(conn, label, "store", np.vstack([first, rest]), len(bulk), sets, args.lists)
            real = np.vstack([sentences, turns])
            print(f"== real texts: {len(sentences):,} docstring sentences, {len(turns):,} LoCoMo turns", flush=True)
            for label, first, rest in (("graph over all", real, turns[:0]), ("graph over the sentences, turns inserted", sentences, turns)):
                build(conn, "texts", first, rest)
                measure(conn, label, "texts", real, len(sentences), sets, args.lists)
            mixes = bulk[:len(real)]
            build(conn, "mixes", mixes, mixes[:0])
            measure(conn, f"the bench's mixes, {len(mixes):,}", "mixes", mixes, len(mixes), sets, args.lists)
            conn.execute(f"DROP SCHEMA {SCRATCH} CASCADE")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
