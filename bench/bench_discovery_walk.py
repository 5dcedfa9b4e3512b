"""Discovery on a large PostgreSQL store with one vector walk for its searches by type, against one walk each.

    python bench/bench_discovery_walk.py --cluster-dir DIR [--sizes 100000 1000000] [--messages 50]

It reads stores that ``bench/bench_team_scale.py`` or ``bench/bench_postgres.py`` loaded and kept in
``--cluster-dir`` (schema ``bench_<size>``; started here with PostgreSQL's stock configuration; nothing
is written). With the real model, `memdir.tools.discovery.discover` answers held-out messages
(LoCoMo questions of conv-47 to conv-50, whose turns are in no entry, with three corpus words added)
twice each, the order alternating: as it runs (its searches by type share one walk, `reading(one_query=True)`)
and with that reading's ``one_query`` off (a walk per search, as before). It prints both medians, the
walks each made per message, and how many messages got the same reminders both ways. The machine is
shared: the load average is printed with the timings.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import TextGenerator  # noqa: E402
from bench_team_scale import STOCK, schema_url  # noqa: E402
from corpora import DEFAULT_LOCOMO, locomo_corpora, real_embedder  # noqa: E402

from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from memdir.storage.postgres.index import PostgresIndex  # noqa: E402
from memdir.storage.postgres.search import WALK_ORDER  # noqa: E402
from memdir.tools.discovery import discover  # noqa: E402


def messages(data: Path, count: int) -> list[str]:
    corpora = {corpus.name: corpus for corpus in locomo_corpora(data)}
    gen = TextGenerator(seed=5)
    held = [q.text for name in ("conv-47", "conv-48", "conv-49", "conv-50") for q in corpora[name].queries]
    return [f"{text} {' '.join(gen.sample(3))}" for text in held[:: max(1, len(held) // count)][:count]]


class Walks:
    """Counts the vector walks the store's index sends (not the planner's EXPLAINs)."""

    def __init__(self) -> None:
        self.count = 0
        planned = PostgresIndex._planned

        def counting(index: PostgresIndex, planner: Any, statement: Any, limit: int, ef_search: int | None = None) -> list[Any]:
            self.count += f"ORDER BY {WALK_ORDER}" in statement[0] and not statement[0].startswith("EXPLAIN")
            return planned(index, planner, statement, limit, ef_search)

        PostgresIndex._planned = counting  # type: ignore[method-assign, assignment]


def bench_size(url: str, n: int, texts: list[str], embedder: Any, walks: Walks) -> None:
    with Memory.open(Settings(root=Path(tempfile.mkdtemp(prefix="memdir-bench-disc-")), store=url), embedder=embedder) as memory:
        reading = memory.reading

        def answer(text: str, shared: bool) -> str:
            def chosen(*, one_query: bool = False) -> AbstractContextManager[None]:
                return reading(one_query=shared and one_query)

            memory.reading = chosen  # type: ignore[method-assign]
            try:
                return discover(memory, text)
            finally:
                memory.reading = reading  # type: ignore[method-assign]

        for text in texts[:5]:  # the model, the graph's upper pages and the statements' plans warm first
            answer(text, True)
            answer(text, False)
        took: dict[bool, list[float]] = {True: [], False: []}
        walked = {True: 0, False: 0}
        same = 0
        for i, text in enumerate(texts[5:]):
            found = {}
            for shared in (True, False) if i % 2 else (False, True):
                before, started = walks.count, time.perf_counter()
                found[shared] = answer(text, shared)
                took[shared].append(time.perf_counter() - started)
                walked[shared] += walks.count - before
            same += found[True] == found[False]
        asked = len(texts) - 5
        one, each = (1000 * statistics.median(took[shared]) for shared in (True, False))
        print(f"== {n:,} entries, {asked} messages: discover p50 {one:.1f} ms with one walk, {each:.1f} ms with a walk"
              f" per search ({one / each:.2f}x); walks per message {walked[True] / asked:.2f} / {walked[False] / asked:.2f};"
              f" the same reminders for {same} of {asked}   (load {os.getloadavg()[0]:.1f})", flush=True)


def run(description: str, bench_size: Callable[[str, int, list[str], Any], None], argv: list[str] | None) -> None:
    """Parse a discovery bench's arguments, start the kept cluster, and run ``bench_size(url, n, messages,
    embedder)`` on each size's store."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cluster-dir", type=Path, required=True, help="a cluster kept by bench_team_scale.py or bench_postgres.py")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo's locomo10.json")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args(argv)
    embedder = real_embedder(args.cache, "locomo")
    texts = messages(args.data, args.messages + 5)
    from tests.pg_cluster import Cluster

    cluster = Cluster(args.cluster_dir).start(STOCK)
    try:
        for n in args.sizes:
            bench_size(schema_url(cluster.url(), n), n, texts, embedder.inner)
    finally:
        cluster.stop()


def main(argv: list[str] | None = None) -> None:
    walks = Walks()
    run(__doc__.split("\n\n")[0], lambda url, n, texts, embedder: bench_size(url, n, texts, embedder, walks), argv)


if __name__ == "__main__":
    main()
