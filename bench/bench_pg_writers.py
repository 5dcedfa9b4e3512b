"""Writers queueing for a PostgreSQL store's lock: many threads writing and editing through one `Memory`.

Usage::

    python bench/bench_pg_writers.py --store URL [--threads 16] [--writes 40]

Every change to the store takes its lock, and the other writers wait for each round trip it makes
while it holds it. This bench makes that wait the whole cost: the model is left out (a deterministic
stand-in embedder that costs nothing makes each entry's vector, so the HNSW insert still happens),
and ``--threads`` threads of one process each write ``--writes`` new entries through
`Memory.write`, each followed by an edit of it (`Memory.write` with the content it expects, the
compare-and-swap MemoryEdit does). Printed: changes per second, and p50 / p95 of writes and edits,
with the load. Use a fresh, empty schema: the entries stay.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from tests.fakes import FakeEmbedder  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="a PostgreSQL URL (a fresh schema)")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--writes", type=int, default=40, help="new entries per thread, each edited once")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as root:
        settings = Settings(root=Path(root), store=args.store, evolution_enabled=False)
        with Memory.open(settings, embedder=FakeEmbedder()) as memory:
            memory.write("fact/warm/up.md", "Opens the store before the clock starts.", metadata={"type": "fact"})
            took: dict[str, list[float]] = {"write": [], "edit": []}
            guard = threading.Lock()

            def writer(number: int) -> None:
                mine: dict[str, list[float]] = {"write": [], "edit": []}
                for i in range(args.writes):
                    path = f"fact/writer{number}/entry{i}.md"
                    content = f"Writer {number} wrote entry {i} about the deploy window and the release train."
                    started = time.perf_counter()
                    memory.write(path, content, title=f"Entry {i}", metadata={"type": "fact", "tags": ["bench"]})
                    mine["write"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    memory.write(path, content.replace("deploy", "freeze"), title=f"Entry {i}",
                                 metadata={"type": "fact", "tags": ["bench"]}, expected_content=content)
                    mine["edit"].append(time.perf_counter() - started)
                with guard:
                    for kind, values in mine.items():
                        took[kind] += values

            threads = [threading.Thread(target=writer, args=(n,)) for n in range(args.threads)]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            seconds = time.perf_counter() - started
    changes = sum(len(values) for values in took.values())
    print(f"{args.threads} threads x {args.writes} writes + edits: {changes / seconds:.1f} changes/s in {seconds:.1f} s"
          f" (load {os.getloadavg()[0]:.1f})")
    for kind, values in took.items():
        print(f"  {kind:5}  p50 {statistics.median(values) * 1000:7.1f} ms  p95 {percentile(values, 0.95) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
