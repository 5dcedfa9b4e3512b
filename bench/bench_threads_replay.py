"""Working-memory replay: how long a new process takes to rebuild a long thread's state from its log.

    python bench/bench_threads_replay.py [--events 10000 100000] [--runs 5] [--logs DIR]

For each size, a log of that many events (messages of varied words and the compactions the
default settings run, as `bench_threads.py` writes them) is written to ``--logs`` once, then
timed in CPU seconds (best of ``--runs``, so the figure holds on a shared machine): parsing
its lines, replaying the events into a state (`memdir.threads.reducers.replay`), and a
directory store's first read of it (`ThreadManager.state`: read, parse, check, replay).

Any version of memdir put first on ``PYTHONPATH`` is measured on the same logs, e.g. the
code before a change: ``git worktree add /tmp/before HEAD~3`` and
``PYTHONPATH=/tmp/before python bench/bench_threads_replay.py`` (write the logs with this
checkout first: the writer uses today's compaction).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memdir.core.settings import Settings
from memdir.threads.manager import ThreadManager
from memdir.threads.reducers import replay


def best_cpu(runs: int, work: Callable[..., object], *args: Any) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        work(*args)
        best = min(best, time.process_time() - start)
    return best


def log_of(folder: Path, events: int) -> Path:
    """The log of an ``events``-event thread under ``folder`` (written the first time)."""
    path = folder / f"thread-{events}.jsonl"
    if not path.exists():
        from bench_threads import write_thread  # today's writer (the version measured may have another)

        root = Path(tempfile.mkdtemp())
        try:
            manager = ThreadManager(root, Settings(root=root))
            write_thread(manager, "t", events)
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(manager.logs.path("t"), path)  # type: ignore[attr-defined]  # the directory store's
        finally:
            shutil.rmtree(root)
    return path


def parse_all(lines: list[bytes]) -> list[Any]:
    return [json.loads(line) for line in lines]


def first_read(log: Path) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        (root / "threads" / "t").mkdir(parents=True)
        shutil.copyfile(log, root / "threads" / "t" / "events.jsonl")
        ThreadManager(root, Settings(root=root)).state("t")
    finally:
        shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--logs", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-replay")
    args = parser.parse_args()
    for events in args.events:
        log = log_of(args.logs, events)
        lines = log.read_bytes().splitlines()
        parse = best_cpu(args.runs, parse_all, lines)
        rebuild = best_cpu(args.runs, replay, parse_all(lines))
        read = best_cpu(args.runs, first_read, log)
        print(f"{events:,} events: parse {parse * 1000:.0f} ms, replay {rebuild * 1000:.0f} ms, "
              f"a new process's first read {read * 1000:.0f} ms (CPU, best of {args.runs})", flush=True)


if __name__ == "__main__":
    main()
