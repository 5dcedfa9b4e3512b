"""Discovery on a large PostgreSQL store with its keyword searches by type scored once, against scored each.

    python bench/bench_discovery_keyword.py --cluster-dir DIR [--sizes 100000 1000000] [--messages 50]

It reads stores that ``bench/bench_team_scale.py`` or ``bench/bench_postgres.py`` loaded and kept in
``--cluster-dir`` (schema ``bench_<size>``; started here with PostgreSQL's stock configuration; nothing
is written). With the real model, `memdir.tools.discovery.discover` answers held-out messages
(``bench/bench_discovery_walk.py``'s: LoCoMo questions whose turns are in no entry, with three corpus
words added) twice each, the order alternating: as it runs (the skills' keyword search reads the best of
the message's ranking with their types, the other types' search takes its hits from them) and with each
keyword search scoring on its own (the reading's ``one_query`` off for them alone: the vector walk is
still shared). It prints both medians of the whole discovery and of its keyword searches, the scoring
statements per message, and how many messages got the same keyword hits and the same reminders both
ways. The machine is shared: the load average is printed with the timings.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_discovery_walk import run  # noqa: E402

from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from memdir.storage.postgres.index import PostgresIndex  # noqa: E402
from memdir.tools.discovery import discover  # noqa: E402

SCORING = "JOIN postings p ON p.term = q.term"


class Keyword:
    """Wraps the index's keyword search: times it, keeps its hits, counts the scoring statements sent,
    and, while ``alone``, runs each search as outside a reading of one query."""

    def __init__(self) -> None:
        self.alone = False
        self.seconds = 0.0
        self.scorings = 0
        self.hits: list[dict[str, float]] = []
        search, send = PostgresIndex.keyword_hits, PostgresIndex._rows
        bench = self

        def keyword_hits(index: PostgresIndex, *args: Any, **kwargs: Any) -> dict[str, float]:
            state = index._search()
            shared = state.one_query if state is not None else False
            if state is not None and bench.alone:
                state.one_query = False
            started = time.perf_counter()
            try:
                found = search(index, *args, **kwargs)
            finally:
                bench.seconds += time.perf_counter() - started
                if state is not None:
                    state.one_query = shared
            bench.hits.append(found)
            return found

        def rows(index: PostgresIndex, *statements: Any, rows_of: int = -1) -> list[Any]:
            bench.scorings += sum(SCORING in sql for sql, _ in statements)
            return send(index, *statements, rows_of=rows_of)

        PostgresIndex.keyword_hits = keyword_hits  # type: ignore[method-assign]
        PostgresIndex._rows = rows  # type: ignore[method-assign]

    def answer(self, memory: Memory, text: str, alone: bool) -> tuple[str, list[dict[str, float]], float, float, int]:
        """Discovery's reminders, its keyword hits, its time and its keyword searches', its scoring statements."""
        self.alone, self.seconds, self.scorings, self.hits = alone, 0.0, 0, []
        started = time.perf_counter()
        found = discover(memory, text)
        return found, self.hits, time.perf_counter() - started, self.seconds, self.scorings


def bench_size(url: str, n: int, texts: list[str], embedder: Any, keyword: Keyword) -> None:
    with Memory.open(Settings(root=Path(tempfile.mkdtemp(prefix="memdir-bench-disc-")), store=url), embedder=embedder) as memory:
        for text in texts[:5]:  # the model, the indexes' upper pages and the statements' plans warm first
            keyword.answer(memory, text, False)
            keyword.answer(memory, text, True)
        took: dict[bool, list[float]] = {True: [], False: []}
        scoring: dict[bool, list[float]] = {True: [], False: []}
        statements = {True: 0, False: 0}
        same_hits = same_text = 0
        for i, text in enumerate(texts[5:]):
            found = {}
            for alone in (True, False) if i % 2 else (False, True):
                reminders, hits, seconds, keyword_seconds, sent = keyword.answer(memory, text, alone)
                found[alone] = (reminders, hits)
                took[alone].append(seconds)
                scoring[alone].append(keyword_seconds)
                statements[alone] += sent
            same_text += found[True][0] == found[False][0]
            same_hits += [list(hits.items()) for hits in found[True][1]] == [list(hits.items()) for hits in found[False][1]]
        asked = len(texts) - 5
        once, each = (1000 * statistics.median(took[alone]) for alone in (False, True))
        k_once, k_each = (1000 * statistics.median(scoring[alone]) for alone in (False, True))
        print(f"== {n:,} entries, {asked} messages: discover p50 {once:.1f} ms scored once, {each:.1f} ms scored per search"
              f" ({once / each:.2f}x); its keyword searches p50 {k_once:.1f} / {k_each:.1f} ms; scoring statements per"
              f" message {statements[False] / asked:.2f} / {statements[True] / asked:.2f}; the same keyword hits for"
              f" {same_hits} of {asked}, the same reminders for {same_text}   (load {os.getloadavg()[0]:.1f})", flush=True)


def main(argv: list[str] | None = None) -> None:
    keyword = Keyword()
    run(__doc__.split("\n\n")[0], lambda url, n, texts, embedder: bench_size(url, n, texts, embedder, keyword), argv)


if __name__ == "__main__":
    main()
