"""Search latency, open time and memory of the derived index at 10K and 100K entries.

    python bench/bench_search.py [--sizes 10000 100000] [--queries 200]

For each size it builds (once; cached under ``--cache``) a synthetic root through the
index API: random unit vectors and generated text (Zipf-distributed words whose most
frequent ones are real English stop words, 40-200 words per entry, titles, 3 tags from
300, 4 types in 200 folders). It then prints median and p95 of:

* hybrid search without the query embedding (vector given): targets <= 2 ms at 10K, <= 12 ms at 100K;
* the same with the real model embedding the query (if installed): targets <= 8 / <= 15 ms;
* a filtered search (type + folder), to show filters cost nothing extra;
* SwarmMemory's way: read every ``.emb`` file of a real directory per query and compute
  the cosines (files written once to a temp dir), and the ratio to memdir;
* opening the index (loading the vector matrix) in a fresh process, and its RSS.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from memdir.core.entry import Entry, Metadata
from memdir.core.keywords import STOP_WORDS
from memdir.core.settings import Settings
from memdir.search.hybrid import HybridSearcher
from memdir.storage.directory.index import DerivedIndex, FileStats

DIM = 384
MODEL = "synthetic/random-384"
TYPES = ("concept", "fact", "skill", "experience")
VOCAB = 30_000
_SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"]


class TextGenerator:
    """Pseudo-English: a Zipf vocabulary headed by real stop words, sampled in bulk with numpy."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)
        stop = sorted(STOP_WORDS)
        made = []
        i = 0
        while len(made) < VOCAB - len(stop):
            n, word = i + 1, ""
            while n:
                word += _SYLLABLES[n % len(_SYLLABLES)]
                n //= len(_SYLLABLES)
            if word not in STOP_WORDS:
                made.append(word)
            i += 1
        self.words = np.array(stop + made)
        weights = 1.0 / np.arange(1, VOCAB + 1) ** 1.07
        self.cdf = np.cumsum(weights / weights.sum())
        self.tags = [f"tag{self.words[len(stop) + 50 + 7 * i]}" for i in range(300)]

    def sample(self, n: int) -> np.ndarray:
        return self.words[np.minimum(np.searchsorted(self.cdf, self.rng.random(n)), VOCAB - 1)]

    def texts(self, lengths: np.ndarray) -> list[str]:
        words = self.sample(int(lengths.sum()))
        ends = np.cumsum(lengths)
        return [" ".join(words[end - n : end]) for n, end in zip(lengths, ends)]


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def build(root: Path, n: int, real: np.ndarray | None = None) -> None:
    """A synthetic root of ``n`` entries, written with `DerivedIndex.upsert_many` in batches; ``real``:
    the entries' vectors (default: random unit vectors)."""
    gen = TextGenerator()
    rng = np.random.default_rng(11)
    index = DerivedIndex(root)
    batch = 5_000
    for start in range(0, n, batch):
        count = min(batch, n - start)
        titles = gen.texts(rng.integers(3, 7, count))
        contents = gen.texts(rng.integers(40, 200, count))
        vectors = unit_vectors(rng, count)  # (drawn either way: the same texts follow)
        if real is not None:
            vectors = real[start : start + count]
        items = []
        for j in range(count):
            i = start + j
            kind = TYPES[i % 4]
            meta = Metadata(type=kind, tags=[gen.tags[t] for t in rng.integers(0, 300, 3)], domain=f"domain{i % 20}")
            entry = Entry(path=f"{kind}/topic{i % 200}/entry{i}.md", title=titles[j], content=contents[j],
                          metadata=meta, embedding=vectors[j])
            items.append((entry, FileStats(), "h", MODEL))
        index.upsert_many(items)
    index.optimize()  # as a reconcile does after a rebuild or bulk import
    index.close()
    (root / ".memdir" / f"complete-{n}").touch()


def cached_root(cache: Path, n: int, real: np.ndarray | None = None) -> Path:
    """The synthetic root of ``n`` entries under ``cache``, built if missing (``real``: its vectors, `build`)."""
    root = cache / (f"synthetic-{n}" if real is None else f"synthetic-real-vectors-{n}")
    if not (root / ".memdir" / f"complete-{n}").exists():
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        build(root, n, real)
        print(f"  built {n} entries in {time.perf_counter() - started:.1f} s ({root})", flush=True)
    return root


class Samples(list):
    """Wall-clock milliseconds per call, plus the process CPU milliseconds beside them.

    This machine is shared: when other jobs hold the cores, wall time grows while CPU
    time (all threads of this process) stays about what the work costs, so both are shown.
    """

    def __init__(self) -> None:
        super().__init__()
        self.cpu: list[float] = []


def timed(fn, runs) -> Samples:
    out = Samples()
    for arg in runs:
        start, cpu = time.perf_counter(), time.process_time()
        fn(arg)
        out.append((time.perf_counter() - start) * 1000)
        out.cpu.append((time.process_time() - cpu) * 1000)
    return out


def summary(samples: Samples) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    cpu = statistics.median(samples.cpu)
    return f"p50 {statistics.median(ordered):8.2f} ms   p95 {p95:8.2f} ms   (CPU p50 {cpu:7.2f} ms)"


def swarm_style(emb_dir: Path, paths: list[str], query: np.ndarray, top_k: int = 10) -> list[str]:
    """SwarmMemory's search: open and read every .emb file, cosine each, sort."""
    scored = []
    for path in paths:
        vector = np.fromfile(emb_dir / path, dtype="<f4")
        scored.append((float(vector @ query) / float(np.linalg.norm(vector) * np.linalg.norm(query)), path))
    scored.sort(reverse=True)
    return [p for _, p in scored[:top_k]]


def write_emb_files(index: DerivedIndex, target: Path) -> list[str]:
    paths, matrix = index.vectors.snapshot()
    names = []
    for path, vector in zip(paths, matrix):
        name = path[:-3] + ".emb"
        file = target / name
        file.parent.mkdir(parents=True, exist_ok=True)
        vector.astype("<f4").tofile(file)
        names.append(name)
    return names


# VmRSS/VmHWM, not getrusage: Linux carries ru_maxrss across fork+exec, so a child of a
# big parent would report the parent's peak.
_OPEN_PROBE = """
import sys, time
from memdir.storage.directory.index import DerivedIndex
def mb(field):
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith(field)) / 1024
before = mb('VmRSS:')
start = time.perf_counter()
index = DerivedIndex(sys.argv[1])
opened = time.perf_counter()
print(f"{(opened - start) * 1000:.0f} {mb('VmRSS:'):.0f} {mb('VmHWM:'):.0f} {before:.0f} {len(index.vectors)}")
"""


def open_in_fresh_process(root: Path) -> tuple[float, float, float, float, int]:
    """(ms to open incl. loading the matrix, RSS MB after, peak RSS MB, RSS MB before (imports), rows)."""
    out = subprocess.run([sys.executable, "-c", _OPEN_PROBE, str(root)], check=True, capture_output=True, text=True)
    ms, rss, peak, before, rows = out.stdout.split()
    return float(ms), float(rss), float(peak), float(before), int(rows)


def bench_size(n: int, args, embedder) -> None:
    print(f"\n== {n:,} entries")
    root = cached_root(args.cache, n)
    opens = [open_in_fresh_process(root) for _ in range(3)]
    print(f"  open index in a fresh process (median of 3): {statistics.median(o[0] for o in opens):.0f} ms"
          f" ({opens[0][4]:,} vectors)")
    print(f"  RSS of that process: {statistics.median(o[1] for o in opens):.0f} MB after open"
          f" (peak {statistics.median(o[2] for o in opens):.0f} MB; {opens[0][3]:.0f} MB of it imports)")
    index = DerivedIndex(root)
    searcher = HybridSearcher(index, Settings())
    gen = TextGenerator(seed=99)
    rng = np.random.default_rng(5)
    queries = gen.texts(rng.integers(4, 12, args.queries))
    vectors = unit_vectors(rng, args.queries)
    pairs = list(zip(queries, vectors))
    for q, v in pairs[:10]:  # warm caches
        searcher.search(q, query_vector=v, query_model=MODEL)
    hybrid = timed(lambda p: searcher.search(p[0], query_vector=p[1], query_model=MODEL), pairs)
    print(f"  hybrid search, query vector given        {summary(hybrid)}")
    filtered = timed(
        lambda p: searcher.search(
            p[0], query_vector=p[1], query_model=MODEL, types=["fact"], path_prefix="fact/topic3"
        ),
        pairs,
    )
    print(f"  hybrid search, type + folder filters     {summary(filtered)}")
    if embedder is not None:
        with_model = HybridSearcher(index, Settings(), embedder)
        with_model.search("warm up")
        # The synthetic vectors are not the model's: compare against them anyway (query_model
        # names the synthetic model) so the timing covers embedding + the full search.
        embedded = timed(
            lambda p: with_model.search(p[0], query_vector=embedder.embed([p[0]])[0], query_model=MODEL), pairs
        )
        embed_only = timed(lambda p: embedder.embed([p[0]]), pairs)
        print(f"  hybrid search incl. query embedding      {summary(embedded)}")
        print(f"    (query embedding alone                 {summary(embed_only)})")
    with tempfile.TemporaryDirectory(prefix="memdir-emb-") as tmp:
        emb_dir = Path(tmp)
        names = write_emb_files(index, emb_dir)
        runs = max(3, min(20, 200_000 // n))
        swarm = timed(lambda v: swarm_style(emb_dir, names, v), vectors[:runs])
        print(f"  SwarmMemory-style (read every .emb)      {summary(swarm)}   ({runs} queries)")
        print(f"  -> memdir hybrid is {statistics.median(swarm) / statistics.median(hybrid):,.0f}x faster (median)")
    print(f"  (load average now {os.getloadavg()[0]:.1f})")
    index.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    parser.add_argument("--no-model", action="store_true", help="skip the timings with the real embedder")
    args = parser.parse_args(argv)
    embedder = None
    if not args.no_model:
        try:
            from memdir.embeddings import load_embedder

            embedder = load_embedder(None, args.cache / "model")
            embedder.embed(["warm up"])
        except Exception as exc:  # no model installed: the rest still runs
            print(f"(real model unavailable: {exc}; skipping timings with query embedding)")
            embedder = None
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs;"
          f" load average {os.getloadavg()[0]:.1f} (other jobs on the machine inflate wall times)")
    for n in args.sizes:
        bench_size(n, args, embedder)


if __name__ == "__main__":
    main()
