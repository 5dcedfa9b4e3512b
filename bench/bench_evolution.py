"""Benchmark the evolution jobs on a 10K-entry memory (targets: each <= 5 s, consolidation <= 10 s).

Usage::

    python bench/bench_evolution.py [--n 10000] [--runs 3] [--root /tmp/memdir-bench-evolution]

Builds (once; reused while the parameters match) a root of N entries written through the
filesystem adapter, with bench_defrag's content (LoCoMo dialogue turns, or synthetic words)
and topic vectors, plus what the jobs look at:

* ages spread over two years (``updated_at``), reads (``hits``) Zipf-like, a fifth never read;
* a third of the entries with a stated importance (1-10);
* 2% planted near-duplicates (bench_defrag's: 1-3 words changed, a perturbed vector: half
  of them close copies, cosine ~0.995, half looser, ~0.93), so consolidation has clusters to
  find and the strict rule some to supersede;
* a third of the entries holding 1-3 typed links to others (most made by the system), made
  and last traversed at spread-out times, some to deleted entries (orphans).

For each job it prints the median of ``--runs`` wall times of

* a dry run (everything but the writes: reading the store, the rules, the clustering), and
* a live run, each on a fresh copy of the built root (the first run over a store is the one
  that changes most), wall and CPU time, with how many items it looked at and changed, and
  the next live run on the same copy (what a schedule meets once the first pass is done).

No model is loaded: the jobs compare stored vectors and never embed (consolidation without
a client's model only supersedes). Timings on this shared 2-core machine are noisy: the load
average is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_defrag import DIM, DUPLICATE_SHARE, BagOfWordsEmbedder, conversations, synthetic_conversations  # noqa: E402

from memdir.core.settings import Settings  # noqa: E402
from memdir.evolution import JOBS  # noqa: E402
from memdir.evolution.runner import run_job  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from memdir.storage.base import committed
from memdir.storage.directory.filesystem import FilesystemAdapter  # noqa: E402

TARGETS = {"importance": 5.0, "links": 5.0, "archival": 5.0, "consolidation": 10.0}


def build(root: Path, n: int, seed: int, data: Path) -> None:
    rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    convs = conversations(data) if data.is_file() else synthetic_conversations(rng)
    centroids = np_rng.normal(size=(len(convs), DIM)).astype(np.float32)
    adapter = FilesystemAdapter(root)
    now = datetime.now(UTC)
    paths = [f"fact/topic-{k % 40:02d}/entry-{k:05d}.md" for k in range(n)]
    written: list[tuple[str, np.ndarray]] = []
    started = time.perf_counter()
    for k, path in enumerate(paths):
        if written and rng.random() < DUPLICATE_SHARE:
            content, base = written[rng.randrange(len(written))]
            words = content.split()
            for _ in range(rng.randint(1, 3)):
                words[rng.randrange(len(words))] = rng.choice(words)
            content = " ".join(words)
            # half of them close copies (cosine ~0.995: the rule supersedes them), half looser (~0.93)
            vector = base + np_rng.normal(scale=rng.choice((0.005, 0.02)), size=DIM).astype(np.float32)
        else:
            topic = rng.randrange(len(convs))
            content = " ".join(rng.sample(convs[topic], min(len(convs[topic]), rng.randint(4, 12))))
            vector = 0.7 * centroids[topic] + np_rng.normal(size=DIM).astype(np.float32)
        vector = (vector / np.linalg.norm(vector)).astype(np.float32)
        written.append((content, vector))
        metadata: dict = {"type": "fact"}
        if rng.random() < 1 / 3:
            metadata["importance"] = rng.randint(1, 10)
        if rng.random() < 1 / 3:
            metadata["links"] = [_link(rng, now, paths, n) for _ in range(rng.randint(1, 3))]
        hits = 0 if rng.random() < 0.2 else int(rng.paretovariate(1.2))
        committed(adapter.write(path, content, title=f"Entry {k}", metadata=metadata, embedding=vector, hits=hits,
                      updated_at=now - timedelta(days=rng.uniform(0, 730)), embedding_model=BagOfWordsEmbedder.model_id))
        if k % 1000 == 999:
            print(f"  wrote {k + 1} entries ({time.perf_counter() - started:.0f} s)", flush=True)


def _link(rng: random.Random, now: datetime, paths: list[str], n: int) -> dict:
    made = now - timedelta(days=rng.uniform(0, 730))
    link = {
        "target": paths[rng.randrange(n)] if rng.random() < 0.97 else f"fact/deleted/entry-{rng.randrange(n)}.md",
        "kind": rng.choice(["references", "extends", "implements"]), "strength": round(rng.uniform(0.2, 1.0), 2),
        "origin": "system" if rng.random() < 0.8 else "user", "created_at": made.isoformat(),
    }
    if rng.random() < 0.5:
        link["traversed_at"] = (made + (now - made) * rng.random()).isoformat()
    return link


def timed_run(root: Path, job: str, dry_run: bool) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, processed, changed) of one run of ``job`` on the root (opened beforehand, not timed)."""
    with Memory.open(Settings(root=root), embedder=BagOfWordsEmbedder()) as memory:
        started, cpu = time.perf_counter(), time.process_time()
        record = run_job(memory, JOBS[job], dry_run=dry_run)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert record is not None and record.status == "complete", record
    return seconds, cpu, record.processed, record.changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--jobs", nargs="*", default=list(JOBS))
    parser.add_argument("--root", type=Path, default=Path("/tmp/memdir-bench-evolution"))
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "locomo10.json")
    args = parser.parse_args()

    built = args.root / f"n{args.n}-seed{args.seed}"
    marker = built / ".memdir" / "bench-complete"
    if not marker.exists():
        print(f"Building {args.n} entries under {built} (once) ...", flush=True)
        build(built, args.n, args.seed, args.data)
        Memory.open(Settings(root=built), embedder=BagOfWordsEmbedder()).close()  # the derived index, once
        marker.touch()
    scratch = args.root / "scratch"
    print(f"\nEvolution jobs on {args.n} entries, median of {args.runs} runs (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; noisy):")
    for job in args.jobs:
        dry = [timed_run(built, job, True) for _ in range(args.runs)]
        live, again = [], []
        for _ in range(args.runs):
            shutil.rmtree(scratch, ignore_errors=True)
            shutil.copytree(built, scratch, symlinks=True)
            os.sync()  # the copy written out first: a job's own sync would otherwise wait for it too
            live.append(timed_run(scratch, job, False))
            again.append(timed_run(scratch, job, False))  # the next pass over the same store: what a schedule meets
        med = lambda runs, i: statistics.median(r[i] for r in runs)  # noqa: E731
        print(f"  {job:<14} dry run {med(dry, 0):6.2f} s   first live pass {med(live, 0):6.2f} s wall / "
              f"{med(live, 1):5.2f} s CPU ({live[0][2]} looked at, {live[0][3]} changed)   next pass {med(again, 0):5.2f} s "
              f"({again[0][3]} changed)   target <= {TARGETS[job]:g} s", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
