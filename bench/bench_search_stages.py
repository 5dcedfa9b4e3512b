"""Where an in-process search's time goes, stage by stage, with the CPU's caches as a served search finds them.

Usage::

    python bench/bench_search_stages.py [--sizes 10000 100000] [--runs 600] [--before TREE] [--turns 2] [--real-vectors DIR]

`HybridSearcher.search` with the query vector given, on the synthetic roots of `bench_search` (as
`bench_floor.py`'s search rows), each search right after ``matrix @ q`` and ``einsum`` over the
whole matrix (as `bench_floor.py` asks them in turn): those push the search's data out of the
caches, as the model's run and the server's own work do between a user's searches. Each stage
(the methods below, where the code measured has them) is timed in the searching thread's CPU time
(``time.thread_time``: a busy machine's waits left out; the scan's helper thread is not counted),
and its median printed beside the whole search's and numpy's exact scan + top 10 on the same matrix
(the timing wrappers add their own few microseconds to each: compare trees, not these with `bench_floor.py`).
With ``--before``, the older code is measured too, each tree in a process of its own, in turns.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

STAGES = {
    "memdir.search.hybrid": "HybridSearcher.search HybridSearcher._ranked HybridSearcher._fuse HybridSearcher._beyond_text "
                            "context_coverage _Signals.of _Ranked.order _Signals.breakdowns _Ranked.matched",
    "memdir.storage.directory.index": "DerivedIndex.keyword_hits DerivedIndex.semantic_hits DerivedIndex.candidates",
    "memdir.storage.directory.vectors": "VectorMatrix.ranked VectorMatrix.scan",
    "memdir.storage.directory.projection": "Projection.pool Projection.__init__",
    "memdir.storage.directory.postings": "KeywordIndex.neighbours KeywordIndex.holding KeywordIndex.tags_at",
    "memdir.search.tags": "TagMatcher.counts",
}
"""The stages timed: per module, its functions and methods (``Class.method``)."""


def measure(tree: Path, cache: Path, n: int, runs: int, real: Path | None = None) -> None:
    """Time the stages of ``runs`` searches of the ``n``-entry root with the code of ``tree`` (this process);
    ``real``: the root's and queries' vectors are the model's cached there (`bench_floor.real_vectors`)."""
    import importlib

    import numpy as np

    sys.path[:0] = [str(tree), str(HERE)]
    importlib.import_module("memdir")  # (this tree's, before bench_floor puts its own first)
    import bench_floor
    import bench_search

    from memdir.core.settings import Settings
    from memdir.search.hybrid import HybridSearcher
    from memdir.storage.directory.index import DerivedIndex

    spent: dict[str, list[float]] = collections.defaultdict(list)

    def timed(owner: object, name: str, label: str) -> None:
        function = getattr(owner, name, None)
        if function is None:  # (not in the code measured)
            return

        @functools.wraps(function)
        def wrapper(*args: object, **kwargs: object) -> object:
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label].append(time.thread_time() - started)

        setattr(owner, name, wrapper)

    for module_name, labels in STAGES.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:  # (not in the code measured)
            continue
        for label in labels.split():
            owner_name, _, name = label.rpartition(".")
            owner = getattr(module, owner_name, None) if owner_name else module
            if owner is not None:
                timed(owner, name, label)
    settings = Settings()
    root = bench_search.cached_root(cache, n, None if real is None else bench_floor.real_vectors(real, n)[0])
    index = DerivedIndex(root, context_window=settings.search.context_window)
    searcher = HybridSearcher(index, settings)
    _, matrix = index.vectors.snapshot()
    floor: list[float] = []
    for at, (text, vector) in enumerate(bench_floor.search_queries(runs // 3 + 1, real)[:runs]):
        matrix @ vector
        np.einsum("ij,j->i", matrix, vector)
        started = time.thread_time()
        scores = np.vecdot(matrix, vector)
        best = np.argpartition(scores, len(scores) - 10)[-10:]
        best[np.argsort(-scores[best])]
        floor.append(time.thread_time() - started)
        if at == 10:
            spent.clear()  # (the first searches warm up)
        searcher.search(text, query_vector=vector, query_model=bench_search.MODEL)
    whole = statistics.median(spent["HybridSearcher.search"])
    print(f"{n:,} entries, {tree} (load {os.getloadavg()[0]:.1f}): search {whole * 1e3:.3f} ms, numpy exact scan + top 10 "
          f"{statistics.median(floor[11:]) * 1e3:.3f} ms = {whole / statistics.median(floor[11:]):.2f}x")
    for label, times in sorted(spent.items(), key=lambda item: -statistics.median(item[1])):
        print(f"  {label:<34} {statistics.median(times) * 1e6:8.1f} us  ({len(times) / len(spent['HybridSearcher.search']):.2f} per search)")
    index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=600, help="searches per size and tree")
    parser.add_argument("--before", type=Path, help="a checkout of older code, measured in turns with this code")
    parser.add_argument("--turns", type=int, default=2, help="processes per tree and size, in turns")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-floor")
    parser.add_argument("--real-vectors", type=Path, metavar="DIR", help="the roots' entries and queries carry the model's"
                        " vectors the recall benches cached in DIR (`bench_floor.py --real-vectors`)")
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)  # (one process's measurement)
    args = parser.parse_args()
    if args.tree is not None:
        measure(args.tree, args.cache, args.sizes[0], args.runs, args.real_vectors)
        return
    trees = [REPO, *([args.before] if args.before else [])]
    for n in args.sizes:
        for turn in range(args.turns):
            for tree in trees if turn % 2 == 0 else trees[::-1]:
                subprocess.run([sys.executable, __file__, "--tree", str(tree), "--sizes", str(n), "--runs", str(args.runs),
                                "--cache", str(args.cache), *(["--real-vectors", str(args.real_vectors)] if args.real_vectors else [])],
                               check=True, env={**os.environ, "PYTHONPATH": str(tree)})


if __name__ == "__main__":
    main()
