"""What a write costs besides its embedding: files flushed together against one after the other.

Usage::

    python bench/bench_flush.py [--rounds 30] [--batch 100]

`Memory.write` of ~57-word entries with the deterministic fake embedder (so the figure is the
files, index and audit, not the model), in turns of five writes: with memdir's flushes (a
write's staged files, journal and audit record flushed together, `memdir.core.files.fsync_each`)
and with the same files flushed one after the other. Then `Memory.write_many` of
``--batch`` entries against the same entries written one by one, in entries/s. Medians, load
printed; the turns alternate, so a busy disk slows both alike.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TypeVar

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import bench_discover_hook  # noqa: E402

from memdir.core import files  # noqa: E402
from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory, NewEntry  # noqa: E402
from memdir.storage.directory import atomic  # noqa: E402
from tests.fakes import FakeEmbedder  # noqa: E402

T = TypeVar("T")
META = {"type": "fact", "tags": ["bench", "write"], "domain": "bench"}


def one_after_another(paths: Collection[T], flush: Callable[[T], None]) -> None:
    """The flushes as they were: each waits for the one before."""
    for path in paths:
        flush(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    words = bench_discover_hook.TOPICS + bench_discover_hook.VERBS + bench_discover_hook.NOUNS
    rng = random.Random(3)
    counter = iter(range(10**9))

    def entry() -> NewEntry:
        i = next(counter)
        return NewEntry(f"fact/bench/t{i % 30}/w{i}", " ".join(rng.choice(words) for _ in range(57)), f"Entry {i}", META)

    print(f"load {os.getloadavg()[0]:.1f} at the start", flush=True)
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Settings(root=Path(tmp) / "root"), embedder=FakeEmbedder()) as memory:
        for _ in range(100):
            memory.write_many([entry()])
        times: dict[str, list[float]] = {"together": [], "one after another": []}
        together_flushes = files.fsync_each
        for _ in range(args.rounds):
            for name, flushes in (("together", together_flushes), ("one after another", one_after_another)):
                files.fsync_each = atomic.fsync_each = flushes
                for _ in range(5):
                    w = entry()
                    started = time.perf_counter()
                    memory.write(w.path, w.content, title=w.title, metadata=w.metadata)
                    times[name].append((time.perf_counter() - started) * 1000)
        files.fsync_each = atomic.fsync_each = together_flushes
        together, apart = (statistics.median(times[name]) for name in times)
        print(f"Memory.write without the model: flushed together {together:.1f} ms, one after another {apart:.1f} ms "
              f"= {together / apart:.2f}x; load {os.getloadavg()[0]:.1f}")

        rates: dict[str, list[float]] = {"write_many": [], "write one by one": []}
        for _ in range(max(1, args.rounds // 10)):
            batch = [entry() for _ in range(args.batch)]
            started = time.perf_counter()
            memory.write_many(batch)
            rates["write_many"].append(args.batch / (time.perf_counter() - started))
            batch = [entry() for _ in range(args.batch)]
            started = time.perf_counter()
            for w in batch:
                memory.write(w.path, w.content, title=w.title, metadata=w.metadata)
            rates["write one by one"].append(args.batch / (time.perf_counter() - started))
        many, single = (statistics.median(rates[name]) for name in rates)
        print(f"{args.batch} entries without the model: write_many {many:.0f} entries/s, one by one {single:.0f} entries/s "
              f"= {many / single:.1f}x; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
