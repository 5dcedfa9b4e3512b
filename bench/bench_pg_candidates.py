"""What in MemoryDiscover's candidates statement grows with a PostgreSQL store's size.

    python bench/bench_pg_candidates.py --cluster-dir DIR [--sizes 100000 1000000] [--messages 30]

On the stores ``bench/bench_team_scale.py`` or ``bench/bench_postgres.py`` kept in ``--cluster-dir`` (read
only, PostgreSQL's stock configuration), `memdir.tools.discovery.discover` answers held-out messages
(``bench/bench_discovery_walk.py``'s) with the real model, and each candidates statement it sends
(`memdir.storage.postgres.search.candidates_sql`) is kept. Then each is sent again, as sent (timed: the
pages it touches come from outside PostgreSQL's buffers as they did), then under ``EXPLAIN (ANALYZE)``
(its pages now in the buffers). Printed: how many postings of the message's words it read (to find which
candidates and neighbours hold them), medians of both times, and the load. Then, in turns with the statement
as sent, the same statement asking each candidate's and neighbour's postings for the words instead (one probe
of the ``postings_entry`` index per entry): both medians, and whether the rows are the same.
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
HOLDING = "h AS (SELECT h.entry, array_agg(h.term) AS terms FROM postings h WHERE h.term = ANY(%s) AND h.entry IN ("


def probing(sql: str) -> str:
    """``sql`` with which entries hold the words asked of each entry's postings (a subquery per entry)."""
    head, rest = sql.split(HOLDING)
    ids, tail = rest.split(") GROUP BY h.entry)", 1)
    return (head + "h AS (SELECT i.id AS entry, ARRAY(SELECT x.term FROM postings x WHERE x.entry = i.id AND x.term = ANY(%s))"
            f" AS terms FROM ({ids}) i)" + tail.replace("JOIN h ON h.entry = n.id", "JOIN h ON h.entry = n.id WHERE cardinality(h.terms) > 0"))


def timed(conn: Any, sql: str, params: Any) -> tuple[float, list[Any]]:
    """Milliseconds to send ``sql`` in a snapshot of its own, and its rows in an order of their own."""
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    started = time.perf_counter()
    rows = conn.execute(sql, params).fetchall()
    took = 1000 * (time.perf_counter() - started)
    conn.execute("ROLLBACK")
    return took, sorted((row[0], row[1], row[2] or "", sorted(row[7])) for row in rows)


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
            took: dict[bool, list[float]] = {True: [], False: []}
            same = 0
            for i, (sql, params) in enumerate(sent):
                found = {}
                for probe in (True, False) if i % 2 else (False, True):
                    seconds, found[probe] = timed(conn, probing(sql) if probe else sql, params)
                    took[probe].append(seconds)
                same += found[True] == found[False]
    finally:
        PostgresIndex._rows = rows  # type: ignore[method-assign]
    print(f"== {n:,} entries, {len(sent)} candidates statements of {len(texts)} messages: postings of the words read"
          f" p50 {statistics.median(postings):,.0f}, max {max(postings):,.0f}; as sent p50 {statistics.median(first):.1f} ms,"
          f" again (pages in the buffers) p50 {statistics.median(executed):.1f} ms; in turns, as sent p50"
          f" {statistics.median(took[False]):.1f} ms vs probing each entry's postings {statistics.median(took[True]):.1f} ms,"
          f" the same rows for {same} of {len(sent)}   (load {os.getloadavg()[0]:.1f})", flush=True)


def main(argv: list[str] | None = None) -> None:
    run(__doc__.split("\n\n")[0], bench_size, argv)


if __name__ == "__main__":
    main()
