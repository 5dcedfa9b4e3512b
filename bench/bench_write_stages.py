"""Where one `Memory.write` spends its time: the median wall and CPU time of each stage, per write.

Usage::

    python bench/bench_write_stages.py [--writes 300] [--model]

Writes ~57-word entries, as `bench_floor`'s write row does, into a fresh directory store of 200
entries, with each stage of the write path wrapped in a timer: the functions and the entering and
leaving of the context managers below. Times are the calling thread's (``time.thread_time``: the
CPU this thread spent, the kernel's share included), so a flush's wait shows as wall time only.
The embedder is a fixed hash of the text unless ``--model`` asks for the real model (its call is
then a stage of its own, and the stages after it run with the caches it left cold).

The stages are nested (a context manager's entering holds the stages it runs), and each is the
median over the writes of its time in one write, so the rows do not add up to the whole.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import bench_floor  # noqa: E402

from memdir.core import files  # noqa: E402
from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from memdir.memory.embedding import Embedding  # noqa: E402
from memdir.memory.keeper import IndexKeeper  # noqa: E402
from memdir.memory.ownership import Ownership  # noqa: E402
from memdir.memory.writes import Writes  # noqa: E402
from memdir.storage.directory import atomic, filesystem, index_db  # noqa: E402
from memdir.storage.directory.index import DerivedIndex  # noqa: E402
from memdir.storage.directory.locking import RootLock  # noqa: E402

CALLS: list[tuple[Any, str]] = [
    (Writes, "prepared"), (Embedding, "embed"), (RootLock, "_acquire_file"), (DerivedIndex, "behind_files"),
    (Ownership, "present"), (filesystem.FilesystemAdapter, "_staged"), (filesystem, "dump_sidecar"),
    (atomic, "_write_new_file"), (IndexKeeper, "index_entry"), (index_db, "write_row"), (DerivedIndex, "_apply"),
    (Ownership, "record"), (files, "fsync_each"), (atomic, "_roll_forward"), (Writes, "stored"),
]
"""Functions timed per call (summed per write)."""
BLOCKS: list[tuple[Any, str]] = [(IndexKeeper, "changing"), (filesystem.FilesystemAdapter, "write")]
"""Context managers whose entering and leaving are timed apart."""

times: dict[str, list[tuple[float, float]]] = defaultdict(list)
"""Stage -> (wall ms, CPU ms) of every call during the current write."""


def timed(name: str, call: Callable[[], Any]) -> Any:
    wall, cpu = time.perf_counter(), time.thread_time()
    try:
        return call()
    finally:
        times[name].append(((time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000))


def wrap_call(owner: Any, attribute: str) -> None:
    real = getattr(owner, attribute)
    name = f"{getattr(owner, '__name__', owner).rpartition('.')[2]}.{attribute}"

    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return timed(name, lambda: real(*args, **kwargs))

    setattr(owner, attribute, wrapper)


def wrap_block(owner: Any, attribute: str) -> None:
    real = getattr(owner, attribute)
    name = f"{owner.__name__}.{attribute}"

    @functools.wraps(real)
    @contextlib.contextmanager
    def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
        block = real(*args, **kwargs)
        value = timed(f"{name} (entering)", block.__enter__)
        try:
            yield value
        except BaseException:
            if not block.__exit__(*sys.exc_info()):
                raise
        else:
            timed(f"{name} (leaving)", lambda: block.__exit__(None, None, None))

    setattr(owner, attribute, wrapper)


class HashEmbedder:
    """A vector from a hash of the text: no model."""

    model_id = "hash-384"
    dimensions = 384
    source = "bench"

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = [np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")).standard_normal(384)
                for t in texts]
        return np.asarray([row / np.linalg.norm(row) for row in rows], dtype=np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--model", action="store_true", help="embed with the real model (default: a hash of the text)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-floor")
    args = parser.parse_args()
    for owner, attribute in CALLS:
        wrap_call(owner, attribute)
    for owner, attribute in BLOCKS:
        wrap_block(owner, attribute)
    per_write: dict[str, list[tuple[float, float]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp, Memory.open(
        Settings(root=Path(tmp) / "memory", cache_dir=args.cache / "model"), **({} if args.model else {"embedder": HashEmbedder()})
    ) as memory:
        if args.model and memory.model.get() is None:
            raise SystemExit(f"no model: {memory.model.reason}")
        write = bench_floor.writer(memory, bench_floor.bench_words())
        for _ in range(args.writes):
            times.clear()
            timed("Memory.write (whole)", write)
            for name, calls in times.items():
                per_write[name].append((sum(w for w, _ in calls), sum(c for _, c in calls)))
    print(f"{'stage':48} {'wall ms':>8} {'CPU ms':>8}")
    for name, values in sorted(per_write.items(), key=lambda item: -statistics.median(v[0] for v in item[1])):
        print(f"{name:48} {statistics.median(v[0] for v in values):8.3f} {statistics.median(v[1] for v in values):8.3f}")
    print(f"(medians of {args.writes} writes, {'the real model' if args.model else 'a hash embedder'}; load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
