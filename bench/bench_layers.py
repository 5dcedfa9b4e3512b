"""The cost of memdir's own layers per call, compared between two checkouts, interleaved.

Usage::

    python bench/bench_layers.py --trees OLD_CHECKOUT NEW_CHECKOUT [--rounds 9] [--entries 400]

What a restructure may change is the work memdir does around the store and the model, not the
model: each round runs one process per checkout (alternating which goes first) that times, in
a fresh directory store, `Memory.write`, counted reads, search, glob, paged listing, a batched
metadata change, delete, and building `Settings`. The embedder is a fixed hash of the text (no
model: its 5-15 ms per write would hide a change of a fraction of a millisecond). Each call is
timed twice: wall time, and the process's CPU time (what memdir's own layers cost; on a machine
shared with other work the wall times vary far more). Prints each call's median per checkout
(medians over rounds of per-call medians) and the ratio new / old.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = r'''
import hashlib, json, statistics, sys, tempfile, time
import numpy as np
from memdir.core.settings import Settings
from memdir.memory import Memory

class HashEmbedder:
    model_id = "hash-384"
    dimensions = 384
    source = "bench"
    def embed(self, texts):
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            row = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return np.stack(rows) if rows else np.zeros((0, 384), np.float32)

WORDS = ("deploy rollback ledger invoice retry timeout cache schema index migration queue worker "
         "token budget latency region replica backup alert owner review release branch").split()

def text(i):
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(60)) + f" entry {i}"

def timed(call, times):
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    times.append(((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
    return result

entries = int(sys.argv[1])
figures = {}
settings_times = []
for _ in range(200):
    timed(lambda: Settings(root="/tmp/unused", embeddings_enabled=True), settings_times)
def medians(name, values):
    figures[name] = statistics.median(v[0] for v in values)
    figures[name + " (cpu)"] = statistics.median(v[1] for v in values)

medians("Settings()", settings_times)
with tempfile.TemporaryDirectory() as root:
    with Memory.open(Settings(root=root), embedder=HashEmbedder()) as memory:
        times = {name: [] for name in ("write", "read (counted)", "search", "glob", "list_page", "update_metadata_many", "delete")}
        paths = [f"fact/topic-{i % 20}/entry-{i}.md" for i in range(entries)]
        for i, path in enumerate(paths):
            timed(lambda: memory.write(path, text(i), title=f"Entry {i}", metadata={"type": "fact", "tags": [WORDS[i % len(WORDS)]]}), times["write"])
        for path in paths[:200]:
            timed(lambda: memory.read(path, count_hit=True), times["read (counted)"])
        for i in range(60):
            timed(lambda: memory.search(" ".join(WORDS[i % 20: i % 20 + 3]), top_k=10), times["search"])
        for i in range(60):
            timed(lambda: memory.glob(f"fact/topic-{i % 20}/*.md"), times["glob"])
        for i in range(60):
            timed(lambda: memory.list_page(None, 50, under="fact"), times["list_page"])
        for k in range(5):
            batch = paths[k * 40:(k + 1) * 40]
            timed(lambda: memory.update_metadata_many({p: {"importance": 6 + k % 3} for p in batch}), times["update_metadata_many"])
        for path in paths[-50:]:
            timed(lambda: memory.delete(path), times["delete"])
        for name, values in times.items():
            medians(name, values)
print(json.dumps(figures))
'''


def run(tree: Path, entries: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "MEMDIR_CONFIG": os.devnull}
    done = subprocess.run([sys.executable, "-c", WORKER, str(entries)], env=env, cwd=tree,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", nargs=2, type=Path, required=True, metavar=("OLD", "NEW"))
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--entries", type=int, default=400)
    args = parser.parse_args()
    old, new = (tree.resolve() for tree in args.trees)
    results: dict[Path, list[dict[str, float]]] = {old: [], new: []}
    for round_ in range(args.rounds):
        order = (old, new) if round_ % 2 == 0 else (new, old)
        for tree in order:
            results[tree].append(run(tree, args.entries))
        print(f"round {round_ + 1}/{args.rounds} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print(f"{'call':24} {'old ms':>9} {'new ms':>9} {'new/old':>8}")
    for name in results[old][0]:
        before = statistics.median(r[name] for r in results[old])
        after = statistics.median(r[name] for r in results[new])
        print(f"{name:24} {before:9.3f} {after:9.3f} {after / before:8.3f}")
    print(f"(medians over {args.rounds} interleaved rounds of per-call medians; {args.entries} entries; "
          f"load {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
