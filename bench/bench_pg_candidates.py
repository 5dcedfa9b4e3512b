"""What in MemoryDiscover's candidates statement grows with a PostgreSQL store's size.

    python bench/bench_pg_candidates.py --cluster-dir DIR [--sizes 100000 1000000] [--messages 30]

On the stores ``bench/bench_team_scale.py`` or ``bench/bench_postgres.py`` kept in ``--cluster-dir`` (read
only, PostgreSQL's stock configuration), `memdir.tools.discovery.discover` answers held-out messages
(``bench/bench_discovery_walk.py``'s) with the real model, and each candidates statement it sends
(`memdir.storage.postgres.search.candidates_sql`) is kept. Then each is sent again, as sent (timed: the
pages it touches come from outside PostgreSQL's buffers as they did), then under ``EXPLAIN (ANALYZE)``
(its pages now in the buffers). Printed: how many postings of the message's words it read (to find which
candidates and neighbours hold them), medians of both times, and the load.
"""

from __future__ import annotations

import os
import re
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

CANDIDATES = "WITH c AS MATERIALIZED"


def bench_size(url: str, n: int, texts: list[str], embedder: Any) -> None:
    sent: list[tuple[str, Any]] = []
    rows = PostgresIndex._rows

    def keeping(index: PostgresIndex, *statements: Any, rows_of: int = -1) -> list[Any]:
        sent.extend(statement for statement in statements if CANDIDATES in statement[0])
        return rows(index, *statements, rows_of=rows_of)

    PostgresIndex._rows = keeping  # type: ignore[method-assign]
    try:
        with Memory.open(Settings(root=Path(tempfile.mkdtemp(prefix="memdir-bench-cand-")), store=url), embedder=embedder) as memory:
            for text in texts:
                discover(memory, text)
            conn = memory.index._conn()
            postings, executed, first = [], [], []
            for sql, params in sent:
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                started = time.perf_counter()
                conn.execute(sql, params).fetchall()
                first.append(1000 * (time.perf_counter() - started))
                plan = [row[0] for row in conn.execute("EXPLAIN (ANALYZE) " + sql, params)]
                conn.execute("ROLLBACK")
                scans = [re.search(r"actual time=\S+ rows=([0-9.]+)", line) for line in plan if " on postings " in line]
                postings.append(sum(float(found.group(1)) for found in scans if found))
                executed.append(float(re.search(r"Execution Time: ([0-9.]+)", plan[-1]).group(1)))  # type: ignore[union-attr]
    finally:
        PostgresIndex._rows = rows  # type: ignore[method-assign]
    print(f"== {n:,} entries, {len(sent)} candidates statements of {len(texts)} messages: postings of the words read"
          f" p50 {statistics.median(postings):,.0f}, max {max(postings):,.0f}; as sent p50 {statistics.median(first):.1f} ms,"
          f" again (pages in the buffers) p50 {statistics.median(executed):.1f} ms   (load {os.getloadavg()[0]:.1f})", flush=True)


def main(argv: list[str] | None = None) -> None:
    run(__doc__.split("\n\n")[0], bench_size, argv)


if __name__ == "__main__":
    main()
