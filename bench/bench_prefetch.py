"""Prefetch cache hit rate on replayed agent sessions over LoCoMo conversations.

    python bench/bench_prefetch.py [--conversations 3] [--reads 3] [--top-k 5]

Each conversation's turns are written as entries (`corpora.locomo_entries`, real model, vectors
cached under ``--cache``). Then an agent answers the conversation's questions (categories 1-4)
the way an agent does: MemorySearch with the question, then MemoryRead of the ``--reads`` best
hits — `Memory.search`, then `Memory.read(count_hit=True)`, the calls the tools make. The
questions are split in two sessions (two `Memory` objects, as two server processes would be):

* session 1 starts cold (nothing read yet: warming finds only the most recently written turns);
* session 2 starts after it, warmed with what session 1 read last (`memdir.server.prefetch`),
  and is also replayed without warming, to show what prefetching adds to the LRU cache alone.

Printed per conversation and pooled: reads, hits, hit rate, entries prefetched; and the median
time of a read served from the cache against one read from the files (2 shared cores: noisy).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from corpora import DEFAULT_LOCOMO, locomo_corpora, real_embedder, write_store

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.server.prefetch import warm


def replay(root: Path, questions: list[str], embedder, *, warmed: bool, top_k: int, reads: int) -> dict:
    """One session: open the root as an agent, warm it (or not), search and read; the cache's figures."""
    settings = Settings(root=root, agent="agent", shared_store=True)
    if not warmed:
        settings = settings.model_copy(update={"prefetch_recent": 0, "prefetch_important": 0})
    hit_times, miss_times = [], []
    with Memory.open(settings, embedder=embedder) as memory:
        prefetched = warm(memory)
        for question in questions:
            for result in memory.search(question, top_k=top_k)[:reads]:
                hits_before = memory.cache.hits
                started = time.perf_counter()
                memory.read(result.path, count_hit=True)
                elapsed = time.perf_counter() - started
                (hit_times if memory.cache.hits > hits_before else miss_times).append(elapsed)
        stats = memory.cache.stats()
    return {"reads": stats.hits + stats.misses, "hits": stats.hits, "rate": stats.hit_rate,
            "prefetched": prefetched, "hit_times": hit_times, "miss_times": miss_times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--conversations", type=int, default=3, help="How many LoCoMo conversations (of 10).")
    parser.add_argument("--top-k", type=int, default=5, help="Results per search.")
    parser.add_argument("--reads", type=int, default=3, help="Best hits the agent reads after each search.")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args()

    embedder = real_embedder(args.cache, "locomo")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for corpus in locomo_corpora(args.locomo)[: args.conversations]:
            root = Path(tmp) / corpus.name
            write_store(root, corpus.docs, Settings(), embedder).close()
            questions = [query.text for query in corpus.queries]
            first, second = questions[: len(questions) // 2], questions[len(questions) // 2:]
            one = replay(root, first, embedder, warmed=True, top_k=args.top_k, reads=args.reads)
            # Session 2 twice, from the same state: the cold replay goes to a copy of the root.
            cold_root = Path(tmp) / f"{corpus.name}-cold"
            shutil.copytree(root, cold_root)
            two = replay(root, second, embedder, warmed=True, top_k=args.top_k, reads=args.reads)
            cold = replay(cold_root, second, embedder, warmed=False, top_k=args.top_k, reads=args.reads)
            rows.append((corpus.name, len(corpus.docs), one, two, cold))
            print(f"{corpus.name}: {len(corpus.docs)} turns, {len(questions)} questions | session 1: "
                  f"{one['hits']}/{one['reads']} hits ({one['rate']:.1%}), {one['prefetched']} prefetched | "
                  f"session 2 warmed: {two['hits']}/{two['reads']} ({two['rate']:.1%}), {two['prefetched']} prefetched"
                  f" | session 2 not warmed: {cold['hits']}/{cold['reads']} ({cold['rate']:.1%})", flush=True)

    def pooled(index: int) -> str:
        hits = sum(row[index]["hits"] for row in rows)
        reads = sum(row[index]["reads"] for row in rows)
        median = statistics.median(row[index]["rate"] for row in rows)
        return f"{hits}/{reads} = {hits / reads:.1%} (median over conversations {median:.1%})"

    print(f"\nhit rate, session 1 (cold start):        {pooled(2)}")
    print(f"hit rate, session 2 warmed at start:     {pooled(3)}")
    print(f"hit rate, session 2 without prefetching: {pooled(4)}")
    hit_times = [t for row in rows for session in row[2:] for t in session["hit_times"]]
    miss_times = [t for row in rows for session in row[2:] for t in session["miss_times"]]
    if hit_times and miss_times:
        print(f"MemoryRead (counted) p50: served from the cache {statistics.median(hit_times) * 1000:.2f} ms, "
              f"from the files {statistics.median(miss_times) * 1000:.2f} ms "
              f"({len(hit_times)} / {len(miss_times)} reads)")


if __name__ == "__main__":
    main()
