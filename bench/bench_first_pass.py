"""The directory store's semantic stage against the exact scan, on real embeddings: recall and time.

Usage::

    python bench/bench_first_pass.py [--cache DIR] [--data locomo10.json] [--runs 5] [--min-rows N]

The stores are the model's vectors cached by the recall benches (``<cache>/*.npz``: LoCoMo turns, the
Python documentation corpus, the docstring sentences and LoCoMo turns of ``realtext``, the small
``stores`` and ``duplicates`` sets), each without the vectors of the questions asked of it; all of them
together make a store of ~81K. The questions are real ones, embedded by the model: LoCoMo's (conversations
0-4 are the set the first pass's constants were chosen on; 5-9 held out) and the documentation corpus's
first sentences. For each store and question set it prints the semantic stage's recall@10 and @50
(`VectorMatrix.ranked` asked for 50, as a search asks) against an exact scan of the full rows, the
first pass's pool (rows whose full vectors were compared) and how often it fell back to the full scan.
Stores below the first pass's size (`projection.MIN_ROWS`) are searched exactly; ``--min-rows 0``
puts them through the first pass as well.

Then, on the stores of 5K rows and more, the time of `VectorMatrix.ranked` (first pass, pool, exact
cosines, top 50) against numpy's exact scan of the same matrix (``matrix @ q`` + top 10, the floor of
`bench_floor.py`) and the full scan `VectorMatrix.scan`, query by query in turns; medians, load printed;
and the time a fit of the basis takes (the first search's, and again after as many changes as rows).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from corpora import CACHED, DEFAULT_LOCOMO, CachedEmbedder, cached, docs_corpus, locomo_corpora, unit  # noqa: E402

from memdir.storage.directory import projection  # noqa: E402
from memdir.storage.directory.top_k import top_of  # noqa: E402
from memdir.storage.directory.vectors import VectorMatrix  # noqa: E402

K = 50


def question_sets(cache: Path, data: Path) -> dict[str, np.ndarray]:
    """LoCoMo questions of conversations 0-4 (tuned on) and 5-9 (held out), and the documentation queries."""
    locomo, docs, key = cached(cache, "locomo"), cached(cache, "docs"), CachedEmbedder.key
    conversations = locomo_corpora(data)
    asked = {name: [locomo[key(q.text)] for c in part for q in c.queries if key(q.text) in locomo]
             for name, part in (("LoCoMo 0-4 (tuned)", conversations[:5]), ("LoCoMo 5-9", conversations[5:]))}
    asked["documentation"] = [docs[key(q.text)] for q in docs_corpus().queries if key(q.text) in docs]
    return {name: unit(np.array(vectors)) for name, vectors in asked.items()}


def stores(cache: Path, questions: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each cached corpus's vectors without the questions', and all of them together."""
    asked = {vector.tobytes() for vectors in questions.values() for vector in vectors}
    found = {}
    for name in CACHED:
        vectors = unit(np.array(list(cached(cache, name).values())))
        keep = [i for i, vector in enumerate(vectors) if vector.tobytes() not in asked]
        found[name] = vectors[keep]
    every = np.vstack(list(found.values()))
    found["all together"] = every[np.unique(every, axis=0, return_index=True)[1]]
    return found


def matrix_of(rows: np.ndarray) -> VectorMatrix:
    matrix = VectorMatrix()
    n = len(rows)
    matrix.load([f"e/{i}.md" for i in range(n)], rows.copy(), ["fact"] * n, [None] * n, ["model"] * n)
    return matrix


def recall(matrix: VectorMatrix, queries: np.ndarray) -> tuple[float, float, list[int], int]:
    """(recall@10, recall@50 against the exact scan, pool sizes, searches that scanned every row)."""
    data = matrix.data
    hits10, hits50, pools, full = [], [], [], 0
    for query in queries:
        exact = top_of(np.vecdot(data, query), K)
        first = matrix._first_pass()  # (what `ranked` uses: to report its pool)
        pool = None if first is None else first.pool(query, len(matrix), K, None)
        if pool is None:
            full += 1
        else:
            pools.append(len(pool))
        found = matrix.ranked(query, K).rows
        hits10.append(len(set(found[:10].tolist()) & set(exact[:10].tolist())) / 10)
        hits50.append(len(set(found.tolist()) & set(exact.tolist())) / K)
    return float(np.mean(hits10)), float(np.mean(hits50)), pools, full


def timed(matrix: VectorMatrix, queries: np.ndarray, runs: int) -> dict[str, float]:
    """Median ms of `ranked`, numpy's scan + top 10 and the full scan, query by query in turns."""
    data = matrix.data.copy()
    spent: dict[str, list[float]] = {"ranked": [], "numpy": [], "full scan": []}
    for _ in range(runs):
        for query in queries:
            for name in spent:
                start = time.perf_counter()
                if name == "ranked":
                    matrix.ranked(query, K)
                elif name == "numpy":
                    scores = data @ query
                    best = np.argpartition(scores, len(scores) - 10)[-10:]
                    best[np.argsort(-scores[best])]
                else:
                    matrix.scan(query, K)
                spent[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(values) for name, values in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--runs", type=int, default=5, help="timed passes over the questions")
    parser.add_argument("--min-rows", type=int, help="the first pass's size (default: the store's)")
    args = parser.parse_args()
    if args.min_rows is not None:
        projection.MIN_ROWS = args.min_rows
    questions = question_sets(args.cache, args.data)
    found = stores(args.cache, questions)
    print(f"first pass: {projection.DIMENSIONS} directions, margin {projection.MARGIN}, from {projection.MIN_ROWS:,} rows;"
          f" load {os.getloadavg()[0]:.1f}", flush=True)
    for name, rows in found.items():
        matrix = matrix_of(rows)
        for asked, queries in questions.items():
            r10, r50, pools, full = recall(matrix, queries)
            pool = f"pool p50 {np.percentile(pools, 50):.0f} p95 {np.percentile(pools, 95):.0f}" if pools else "no first pass"
            print(f"{name:>13} ({len(rows):>6,} rows), {asked:>18}: recall@10 {r10:.4f} @50 {r50:.4f}; {pool};"
                  f" full scans {full}/{len(queries)}", flush=True)
    print(f"time, median ms (load {os.getloadavg()[0]:.1f}):", flush=True)
    for name, rows in found.items():
        if len(rows) < 5_000:
            continue
        queries = np.vstack(list(questions.values()))
        matrix = matrix_of(rows)
        started = time.perf_counter()
        projection.Projection(matrix.data, len(matrix))
        fit = (time.perf_counter() - started) * 1e3
        took = timed(matrix, queries, args.runs)
        print(f"{name:>13} ({len(rows):>6,} rows): ranked {took['ranked']:.3f}, numpy scan + top 10 {took['numpy']:.3f}"
              f" ({took['ranked'] / took['numpy']:.2f}x), full scan {took['full scan']:.3f}; fitting the basis {fit:.0f}; load {os.getloadavg()[0]:.1f}",
              flush=True)


if __name__ == "__main__":
    main()
