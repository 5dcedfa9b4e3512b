"""Read counts and read times in a table of their own on a PostgreSQL store: the orders that use them,
and a store made before they had one.

The recently-used and most-important orders (what a server prefetches when a session starts) must
give what they gave when the read time was a column of the entry's row, and what the directory store
gives after the same writes and reads.
"""

from __future__ import annotations

import psycopg
import pytest

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.storage.postgres import schema
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.postgres

_OLD_RECENT = (
    "SELECT path FROM entries WHERE stub_kind IS NULL AND NOT builtin AND NOT hidden"
    " ORDER BY coalesce(accessed_at, updated_at) DESC, path"
)
_OLD_IMPORTANT = (
    "SELECT path FROM entries WHERE stub_kind IS NULL AND NOT builtin AND NOT hidden AND importance >= 8"
    " ORDER BY importance DESC, coalesce(accessed_at, updated_at) DESC, path"
)


def test_a_store_made_before_keeps_its_read_counts_times_and_orders(pg_url, tmp_path):
    # (path, hits, last read, last change, importance, archived): read counts and times in the entry's row, as that code kept them
    rows = [
        ("fact/a.md", 4, "2026-01-05", "2026-01-01", 9, False),
        ("fact/b.md", 0, None, "2026-01-03", 9, False),
        ("fact/c.md", 1, "2026-01-02", "2026-01-01", 5, False),
        ("fact/d.md", 2, None, "2026-01-03", 8, False),
        ("fact/e.md", 7, "2026-01-09", "2026-01-01", 9, True),
    ]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE memdir_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        for name, script in schema.MIGRATIONS[:10]:  # the schema the code before made
            conn.execute(script)
            conn.execute("INSERT INTO memdir_migrations (name) VALUES (%s)", (name,))
        for version, (path, hits, read_at, changed, importance, archived) in enumerate(rows, 1):
            archival = ', "archived_at": "2026-01-04T00:00:00Z"' if archived else ""
            metadata = f'{{"type": "fact", "importance": {importance}{archival}}}'
            conn.execute(
                "INSERT INTO entries (path, content, title, metadata, updated_at, size, hits, accessed_at, type, folder,"
                " importance, hidden, version) VALUES (%s, 'Text.', 'T', %s, %s, 5, %s, %s, 'fact', 'fact', %s, %s, %s)",
                (path, metadata, changed, hits, read_at, importance, archived, version),
            )
        recent = [row[0] for row in conn.execute(_OLD_RECENT)]
        important = [row[0] for row in conn.execute(_OLD_IMPORTANT)]
    assert recent == ["fact/a.md", "fact/b.md", "fact/d.md", "fact/c.md"]
    with Memory.open(Settings(root=tmp_path, store=pg_url), embedder=FakeEmbedder()) as memory:  # upgrades the store
        assert memory.index.recently_used(10) == recent
        assert memory.index.most_important(8.0, 10) == important == ["fact/a.md", "fact/b.md", "fact/d.md"]
        assert {info.path: info.hits for info in memory.adapter.iter_entries()} == {row[0]: row[1] for row in rows}
        facts = memory.index.rank_facts(["fact/a.md", "fact/b.md"])
        assert (facts["fact/a.md"].hits, facts["fact/a.md"].accessed_at[:10]) == (4, "2026-01-05")
        assert facts["fact/b.md"].accessed_at[:10] == "2026-01-03"  # never read: its last change
        assert memory.read("fact/c.md", count_hit=True).hits == 2
        assert memory.index.recently_used(1) == ["fact/c.md"]  # read now: the most recent
        memory.delete("fact/c.md")
    with psycopg.connect(pg_url) as conn:
        kept = {row[0] for row in conn.execute("SELECT path FROM entry_reads WHERE path LIKE 'fact/%'")}
    assert kept == {"fact/a.md", "fact/b.md", "fact/d.md", "fact/e.md"}  # a deleted entry's row goes with it


def _used(settings: Settings) -> tuple[list[str], list[str], dict[str, int]]:
    """The same writes, reads and archival on a store; its recent and important orders and read counts."""
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        for i in range(6):
            memory.write(f"fact/n{i}.md", f"Note {i}.", metadata={"type": "fact", "importance": 9 if i % 2 else 5})
        memory.read("fact/n1.md", count_hit=True)
        memory.read("fact/n4.md", count_hit=True)
        memory.read("fact/n1.md", count_hit=True)
        memory.write("fact/n0.md", "Note 0, changed.", metadata={"type": "fact", "importance": 9})  # never read: its change counts
        memory.write("fact/n4.md", "Note 4, changed.", metadata={"type": "fact", "importance": 9})  # read: its last read counts
        memory.update_metadata("fact/n3.md", {"archived_at": "2026-01-04T00:00:00Z"})
        hits = {info.path: info.hits for info in memory.list("fact", include_virtual=False)}
        return memory.index.recently_used(5), memory.index.most_important(8.0, 10), hits


def test_the_orders_follow_writes_reads_and_archival_as_on_the_directory_store(pg_url, tmp_path):
    on_postgres = _used(Settings(root=tmp_path / "pg", store=pg_url))
    assert on_postgres == _used(Settings(root=tmp_path / "dir"))
    recent, important, hits = on_postgres
    assert recent == ["fact/n0.md", "fact/n1.md", "fact/n4.md", "fact/n5.md", "fact/n2.md"]
    assert important == ["fact/n0.md", "fact/n1.md", "fact/n4.md", "fact/n5.md"]
    assert (hits["fact/n1.md"], hits["fact/n4.md"], hits["fact/n0.md"]) == (2, 1, 0)
