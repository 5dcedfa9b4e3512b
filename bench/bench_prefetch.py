"""Prefetch cache hit rate on replayed agent sessions over LoCoMo conversations.

    python bench/bench_prefetch.py [--conversations 3] [--top-k 5] [--ranks 1,2,3] [--turn 0.05]

Each conversation's turns are written as entries (`corpora.locomo_entries`, real model, vectors
cached under ``--cache``). Then an agent answers the conversation's questions (categories 1-4)
the way an agent does, through the tools' own functions: MemorySearch with the question
(``--top-k`` results), then, after its turn (``--turn``, 50 ms: a real one takes seconds),
MemoryRead of the results at ``--ranks`` (default the three best; ``--ranks 1,4,5`` reads two
past them). The questions are split in two sessions
(two `Memory` objects, as two server processes would be):

* session 1 starts cold (nothing read yet: warming finds only the most recently written turns);
* session 2 starts after it, warmed with what session 1 read last (`memdir.server.prefetch`);
  it is replayed three times from the same state: with the defaults, without prefetching a
  search's results (``prefetch_search = 0``: session-start warming only), and with no
  prefetching at all (the LRU cache alone).

Printed per conversation and pooled: reads, hits, hit rate, entries prefetched, and why each
miss missed (never cached: no prefetch chose it and no read before; evicted: cached once, pushed
out since; stale: cached, changed since); and the median time of a read served from the cache
against one read from the files (2 shared cores: noisy). ``--set name=value`` changes a setting
for every session (e.g. ``--set prefetch_search=3`` for what a search prefetched before).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench_recall_locomo import parse_overrides
from corpora import DEFAULT_LOCOMO, locomo_corpora, real_embedder, write_store

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.server.prefetch import warm
from memdir.tools.memory_read import memory_read
from memdir.tools.memory_search import memory_search
from memdir.tools.session import Session

RESULT = re.compile(r"^\d+\. memory://(\S+)", re.MULTILINE)
"""A result's line in MemorySearch's answer: ``1. memory://turn/d1/3.md ...``."""

NO_SEARCH_PREFETCH = {"prefetch_search": 0}
NO_PREFETCH = {"prefetch_recent": 0, "prefetch_important": 0, "prefetch_search": 0}


def replay(root: Path, questions: list[str], embedder, *, top_k: int, ranks: list[int], turn: float,
           overrides: dict) -> dict:
    """One session: open the root as an agent, warm it, search and read through the tools; the cache's figures."""
    settings = Settings(root=root, agent="agent", shared_store=True, **overrides)
    session = Session()
    hit_times, miss_times, search_times = [], [], []
    causes = dict.fromkeys(("never cached", "evicted", "stale"), 0)
    with Memory.open(settings, embedder=embedder) as memory:
        ever = set()  # every path the cache took, to tell a miss never cached from one evicted
        put = memory.cache.put

        def recording_put(entry, stats, *, prefetch=False):
            ever.add(entry.path)
            put(entry, stats, prefetch=prefetch)

        memory.cache.put = recording_put
        warm(memory)  # the session start, as a server does when it opens
        for question in questions:
            started = time.perf_counter()
            found = RESULT.findall(memory_search(memory, question, top_k=top_k))
            search_times.append(time.perf_counter() - started)
            time.sleep(turn)  # the agent's turn: it reads the results before it asks for an entry
            for path in [found[rank - 1] for rank in ranks if rank <= len(found)]:
                hits_before = memory.cache.hits
                cause = "stale" if path in memory.cache else "evicted" if path in ever else "never cached"
                started = time.perf_counter()
                memory_read(memory, session, path)
                elapsed = time.perf_counter() - started
                hit = memory.cache.hits > hits_before
                (hit_times if hit else miss_times).append(elapsed)
                causes[cause] += not hit
        stats = memory.cache.stats()
    return {"reads": stats.hits + stats.misses, "hits": stats.hits, "rate": stats.hit_rate,
            "prefetched": stats.prefetched, "hit_times": hit_times, "miss_times": miss_times,
            "search_times": search_times, "causes": causes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--conversations", type=int, default=3, help="How many LoCoMo conversations (of 10).")
    parser.add_argument("--top-k", type=int, default=5, help="Results per search.")
    parser.add_argument("--ranks", default="1,2,3", help="Which results (1 = the best) the agent reads after each search.")
    parser.add_argument("--turn", type=float, default=0.05,
                        help="Seconds between a search and the reads after it (an agent's turn; a real one takes seconds).")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="A setting for every session, e.g. prefetch_search=3.")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args()
    overrides = parse_overrides(args.overrides)

    embedder = real_embedder(args.cache, "locomo")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for corpus in locomo_corpora(args.locomo)[: args.conversations]:
            root = Path(tmp) / corpus.name
            write_store(root, corpus.docs, Settings(), embedder).close()
            questions = [query.text for query in corpus.queries]
            embedder.embed(questions)  # every replay's query vectors from the cache: their searches compare fairly
            first, second = questions[: len(questions) // 2], questions[len(questions) // 2:]
            ranks = [int(rank) for rank in args.ranks.split(",")]
            one = replay(root, first, embedder, top_k=args.top_k, ranks=ranks, turn=args.turn, overrides=overrides)
            # Session 2 three times, from the same state: each replay after the first goes to a copy of the root.
            copies = []
            for variant in ("start-only", "none"):
                copies.append(Path(tmp) / f"{corpus.name}-{variant}")
                shutil.copytree(root, copies[-1])
            two = replay(root, second, embedder, top_k=args.top_k, ranks=ranks, turn=args.turn, overrides=overrides)
            start_only = replay(copies[0], second, embedder, top_k=args.top_k, ranks=ranks, turn=args.turn,
                                overrides=overrides | NO_SEARCH_PREFETCH)
            cold = replay(copies[1], second, embedder, top_k=args.top_k, ranks=ranks, turn=args.turn,
                          overrides=overrides | NO_PREFETCH)
            rows.append((corpus.name, len(corpus.docs), one, two, start_only, cold))
            print(f"{corpus.name}: {len(corpus.docs)} turns, {len(questions)} questions | session 1: "
                  f"{one['hits']}/{one['reads']} hits ({one['rate']:.1%}), {one['prefetched']} prefetched | "
                  f"session 2: {two['hits']}/{two['reads']} ({two['rate']:.1%}), {two['prefetched']} prefetched"
                  f" | session-start warming only: {start_only['hits']}/{start_only['reads']} ({start_only['rate']:.1%})"
                  f" | no prefetching: {cold['hits']}/{cold['reads']} ({cold['rate']:.1%})", flush=True)

    def pooled(index: int) -> str:
        hits = sum(row[index]["hits"] for row in rows)
        reads = sum(row[index]["reads"] for row in rows)
        median = statistics.median(row[index]["rate"] for row in rows)
        return f"{hits}/{reads} = {hits / reads:.1%} (median over conversations {median:.1%})"

    print(f"\nhit rate, session 1 (cold start):                   {pooled(2)}")
    print(f"hit rate, session 2:                                {pooled(3)}")
    print(f"hit rate, session 2, session-start warming only:    {pooled(4)}")
    print(f"hit rate, session 2, no prefetching (LRU alone):    {pooled(5)}")
    for index, name in ((2, "session 1"), (3, "session 2")):
        causes = {cause: sum(row[index]["causes"][cause] for row in rows) for cause in rows[0][index]["causes"]}
        print(f"misses, {name}: " + ", ".join(f"{cause} {count}" for cause, count in causes.items()))
    def search_p50(index: int) -> str:
        return f"{statistics.median(t for row in rows for t in row[index]['search_times']) * 1000:.1f} ms"

    print(f"MemorySearch p50, session 2: {search_p50(3)} (prefetching the results it shows); "
          f"session-start warming only: {search_p50(4)}")
    hit_times = [t for row in rows for session in row[2:] for t in session["hit_times"]]
    miss_times = [t for row in rows for session in row[2:] for t in session["miss_times"]]
    if hit_times and miss_times:
        print(f"MemoryRead (counted) p50: served from the cache {statistics.median(hit_times) * 1000:.2f} ms, "
              f"from the files {statistics.median(miss_times) * 1000:.2f} ms "
              f"({len(hit_times)} / {len(miss_times)} reads)")


if __name__ == "__main__":
    main()
