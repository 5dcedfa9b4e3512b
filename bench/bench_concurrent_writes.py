"""Write latency and reader throughput while 8 processes write to one root at once.

Usage::

    python bench/bench_concurrent_writes.py [--writers 8] [--writes 25] [--entries 200] [--repeat 3]

The issue's target: p99 write latency <= 1 s with 8 concurrent writer processes (on this
2-core machine at load ~2), no `LockTimeoutError`, and a reader that keeps going
meanwhile. Each writer is a separate process with its own `Memory` and the real model
(all-MiniLM-L6-v2 through onnxruntime, as a user's processes run it), loaded before the
clock starts; all writers start together and each writes ``--writes`` different
~100-word entries (LoCoMo text when ``--data`` exists) into a root already holding
``--entries`` entries. One reader process meanwhile loops rounds of search + read +
glob. Printed per run and as medians over ``--repeat`` runs: write latency p50 / p99 /
max, timeouts, the spread of the writers' finishing times (fairness: a fair lock lets
them finish close together), and reader rounds per second with the longest round.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_write import words_source  # noqa: E402  (the same LoCoMo words as the write bench)

from memdir.core.errors import LockTimeoutError  # noqa: E402
from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402

SPAWN = multiprocessing.get_context("spawn")
QUERIES = ["what did she research", "camping trip with the kids", "painting a sunrise", "adoption agency"]


def text_at(words: list[str], rng: random.Random, length: int = 100) -> str:
    start = rng.randrange(0, len(words) - length)
    return " ".join(words[start:start + length])


def open_memory(root: str, cache: str) -> Memory:
    memory = Memory.open(Settings(root=Path(root), cache_dir=Path(cache)))
    if memory.model.get() is None:
        sys.exit(f"no model: {memory.model.reason}")
    return memory


def writer(root: str, cache: str, data: str, worker: int, writes: int, start, results) -> None:
    words = words_source(Path(data))
    rng = random.Random(worker)
    with open_memory(root, cache) as memory:
        start.wait()
        began = time.monotonic()
        latencies, timeouts = [], 0
        for i in range(writes):
            content = text_at(words, rng)
            meta = {"type": "fact", "tags": ["bench", f"w{worker}"], "domain": "bench/concurrent"}
            started = time.perf_counter()
            try:
                memory.write(f"fact/bench/w{worker}/e{i}", content, title=f"Writer {worker} entry {i}", metadata=meta)
            except LockTimeoutError:
                timeouts += 1
            latencies.append(time.perf_counter() - started)
        results.put(("writer", worker, latencies, timeouts, time.monotonic() - began))


def reader(root: str, cache: str, start, stop, results) -> None:
    rng = random.Random(99)
    with open_memory(root, cache) as memory:
        paths = [info.path for info in memory.list("fact/bench/fill", include_virtual=False)]
        start.wait()
        began = time.monotonic()
        rounds, longest = 0, 0.0
        while not stop.is_set():
            started = time.perf_counter()
            memory.search(rng.choice(QUERIES), top_k=5)
            memory.read(rng.choice(paths))
            memory.glob("fact/bench/w1/*")
            longest = max(longest, time.perf_counter() - started)
            rounds += 1
        results.put(("reader", rounds / (time.monotonic() - began), longest))


def fill(root: Path, cache: Path, words: list[str], count: int) -> None:
    rng = random.Random(7)
    with open_memory(str(root), str(cache)) as memory:
        for i in range(count):
            memory.write(f"fact/bench/fill/e{i}", text_at(words, rng), title=f"Filler {i}",
                         metadata={"type": "fact", "tags": ["fill"]})


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def run_once(args: argparse.Namespace, words: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root, cache = Path(tmp) / "root", Path(tmp) / "cache"
        fill(root, cache, words, args.entries)
        start = SPAWN.Barrier(args.writers + 2)
        stop, results = SPAWN.Event(), SPAWN.Queue()
        common = (str(root), str(cache))
        writers = [SPAWN.Process(target=writer, args=(*common, str(args.data), w, args.writes, start, results))
                   for w in range(args.writers)]
        read = SPAWN.Process(target=reader, args=(*common, start, stop, results))
        for process in [*writers, read]:
            process.start()
        start.wait()  # every process has its model loaded: the clock starts for all at once
        load_before = os.getloadavg()[0]
        outcome = [results.get(timeout=900) for _ in writers]
        stop.set()
        outcome.append(results.get(timeout=120))
        for process in [*writers, read]:
            process.join(60)
    latencies = [s for item in outcome if item[0] == "writer" for s in item[2]]
    finished = [item[4] for item in outcome if item[0] == "writer"]
    _, rounds_per_s, longest_round = next(item for item in outcome if item[0] == "reader")
    figures = {
        "p50_s": percentile(latencies, 0.50),
        "p99_s": percentile(latencies, 0.99),
        "max_s": max(latencies),
        "timeouts": sum(item[3] for item in outcome if item[0] == "writer"),
        "first_done_s": min(finished),
        "last_done_s": max(finished),
        "reader_rounds_per_s": rounds_per_s,
        "reader_longest_round_s": longest_round,
        "load_1min": load_before,
    }
    print("  " + "  ".join(f"{key} {value:.3f}" if isinstance(value, float) else f"{key} {value}"
                           for key, value in figures.items()), flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--writes", type=int, default=25, help="writes per writer process")
    parser.add_argument("--entries", type=int, default=200, help="entries in the root before the run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "locomo10.json")
    args = parser.parse_args()
    words = words_source(args.data)
    print(f"{args.writers} writer processes x {args.writes} writes (real model), 1 reader, "
          f"{args.entries}-entry root, {os.cpu_count()} CPUs")
    runs = [run_once(args, words) for _ in range(args.repeat)]
    print(f"medians over {len(runs)} runs:")
    for key in runs[0]:
        print(f"  {key:24s} {statistics.median(run[key] for run in runs):8.3f}")


if __name__ == "__main__":
    main()
