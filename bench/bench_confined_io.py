"""What confining every open to the root costs: listing and reading a root of many entries.

Usage::

    python bench/bench_confined_io.py [--entries 2000] [--runs 7]

Every file of a root is opened through `memdir.core.files` (confined to the root with links
resolved, regular files only, never blocking). This times the adapter's hot paths on a root of
``--entries`` entries (no model): the listing with metadata (each .yml read), the fast listing
(each .md's first bytes sniffed for a stub), reading every entry (.md, .yml, .emb) and reading
every entry's content (grep's path). CPU time (`time.process_time`), so that other processes on
the machine weigh less; prints the median of ``--runs`` runs. To compare with another version,
run it with that version first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))  # after PYTHONPATH, so another version can be measured the same way

from memdir.storage.base import committed
from memdir.storage.directory.filesystem import FilesystemAdapter  # noqa: E402


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        action()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        adapter = FilesystemAdapter(Path(tmp) / "memory")
        paths = [f"concept/t{i % 20}/e{i}.md" for i in range(args.entries)]
        for i, path in enumerate(paths):
            committed(adapter.write(path, f"# Entry {i}\n\nsome content {i}\n", title=f"Entry {i}",
                          metadata={"type": "concept", "tags": ["x"]}, embedding=[0.1] * 384))
        print(f"memdir from {sys.modules['memdir'].__file__}; {args.entries} entries, median CPU time of {args.runs} runs")
        print(f"  listing with metadata: {median_ms(lambda: list(adapter.iter_entries()), args.runs):8.1f} ms")
        print(f"  fast listing:          {median_ms(lambda: list(adapter.iter_entries(with_metadata=False)), args.runs):8.1f} ms")
        print(f"  read every entry:      {median_ms(lambda: [adapter.read_entry(p) for p in paths], args.runs):8.1f} ms")
        print(f"  read every content:    {median_ms(lambda: adapter.read_contents(paths), args.runs):8.1f} ms")


if __name__ == "__main__":
    main()
