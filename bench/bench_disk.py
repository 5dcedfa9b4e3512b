"""Disk use of the derived index: how far its write-ahead log grows, and what bounding it costs a write.

Usage::

    python bench/bench_disk.py [--writes 500] [--entries 200]

The issue measured the index's WAL growing ~82 KB per write (SQLite checkpoints only at
1000 pages, 16 MB with 16 KiB pages, and never shrinks the file, so a small disk filled
with log). This writes ``--writes`` ~200-word entries, keyword-only (no model: the timing
is the files and the index alone), into a root already holding ``--entries`` entries, and
prints the log's growth over the first writes, its largest and final size, the root's
bytes on disk while open, and the write latency (p50/p99) including the checkpoints.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402


def content(i: int) -> str:
    return " ".join(f"word{(i * 31 + k) % 4001}" for k in range(200))


def size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--entries", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(root=Path(tmp) / "root", embeddings_enabled=False)
        with Memory.open(settings) as memory:
            for i in range(args.entries):
                memory.write(f"fact/filler/f{i}", content(100_000 + i), title=f"Filler {i}")
            wal = memory.index.path.with_name(memory.index.path.name + "-wal")
            memory.index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every run starts from an empty log
            latencies, sizes = [], []
            for i in range(args.writes):
                started = time.perf_counter()
                memory.write(f"fact/bench/w{i}", content(i), title=f"Entry {i}", metadata={"tags": ["bench"]})
                latencies.append((time.perf_counter() - started) * 1000)
                sizes.append(size(wal))
            on_disk = sum(f.stat().st_size for f in (Path(tmp) / "root").rglob("*") if f.is_file())
    latencies.sort()
    first = min(20, args.writes)
    print(f"writes: {args.writes} into a root of {args.entries}; index_wal_limit {settings.storage.index_wal_limit / 1024:.0f} KiB")
    print(f"WAL growth over the first {first} writes: {sizes[first - 1] / first / 1024:.1f} KiB per write")
    print(f"WAL size: largest {max(sizes) / 1024:.0f} KiB, at the end {sizes[-1] / 1024:.0f} KiB")
    print(f"root on disk at the end (open, WAL included): {on_disk / 1024:.0f} KiB")
    print(f"write latency: p50 {statistics.median(latencies):.2f} ms, p99 {latencies[int(0.99 * (len(latencies) - 1))]:.2f} ms")


if __name__ == "__main__":
    main()
