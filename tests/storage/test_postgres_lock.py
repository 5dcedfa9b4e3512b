"""Two servers on one PostgreSQL store: a write that waits for the other's lock longer than the root's
lock timeout fails with a clear error, changes nothing, and the next write goes through. Repairing the
index takes its locks in the order a read's count does."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from memdir.core.errors import LockTimeoutError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.storage.postgres.adapter import CLAIM_CHANGE
from memdir.storage.postgres.database import Database
from memdir.storage.postgres.reads import COUNT_READ
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.postgres


def test_a_write_waiting_too_long_for_another_servers_lock_changes_nothing(pg_url, tmp_path):
    holding, release = threading.Event(), threading.Event()

    def other_server() -> None:
        with Database(pg_url, lock_timeout=5).lock.exclusive():
            holding.set()
            release.wait(30)

    with Memory.open(Settings(root=tmp_path / "memory", store=pg_url, lock_timeout=0.3), embedder=FakeEmbedder()) as memory:
        other = threading.Thread(target=other_server)
        other.start()
        try:
            assert holding.wait(10)
            with pytest.raises(LockTimeoutError, match="stayed locked by another server for 0.3 s") as raised:
                memory.write("fact/team/late.md", "Written while another server held the store.", metadata={"type": "fact"})
            assert "pg_stat_activity" in raised.value.hint
        finally:
            release.set()
            other.join(10)
        assert not memory.exists("fact/team/late.md")
        memory.write("fact/team/late.md", "Written once the store was free.", metadata={"type": "fact"})
        assert memory.read("fact/team/late.md").content == "Written once the store was free."


def test_repairing_the_index_waits_for_a_read_counting_the_same_entry(pg_url, tmp_path):
    """A row written without its search columns is indexed by the next write; a read counting that entry
    meanwhile (it holds the store's change number, then counts the row) and the repair both go through."""
    path = "fact/team/repaired.md"
    with Memory.open(Settings(root=tmp_path / "memory", store=pg_url), embedder=FakeEmbedder()) as memory:
        memory.write(path, "The first version.", metadata={"type": "fact"})
        with memory.adapter.write(path, "The version left unindexed.", title="repaired", metadata={"type": "fact"}):
            pass  # (what a writer that stopped between the row and its index leaves)
        assert memory.index.behind_files()
        with psycopg.connect(pg_url, autocommit=True) as reader:
            reader.execute("BEGIN")
            reader.execute(CLAIM_CHANGE)  # a read's count, between its change number and the entry's row
            failed: list[BaseException] = []

            def write_another() -> None:
                try:
                    memory.write("fact/team/other.md", "Another entry.", metadata={"type": "fact"})
                except BaseException as exc:
                    failed.append(exc)

            writer = threading.Thread(target=write_another)
            writer.start()
            _wait_for_a_lock_wait(pg_url)
            reader.execute("SET lock_timeout = '5s'")
            reader.execute(COUNT_READ, (path,))
            reader.execute("COMMIT")
            writer.join(30)
        assert not failed, failed
        assert not memory.index.behind_files()
        assert memory.search("unindexed", top_k=3)[0].path == path  # its words indexed
        assert memory.read(path).hits == 1


def _wait_for_a_lock_wait(url: str) -> None:
    """Until a session of the store's database waits for a lock."""
    deadline = time.monotonic() + 10
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            if conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone() != (0,):
                return
            time.sleep(0.05)
    raise AssertionError("the repairing write never waited for the read's change number")


def test_a_statement_sent_with_the_commit_that_fails_leaves_the_change_uncommitted(pg_url, tmp_path):
    with Memory.open(Settings(root=tmp_path / "memory", store=pg_url), embedder=FakeEmbedder()) as memory:
        with pytest.raises(psycopg.errors.UndefinedColumn):
            with memory.adapter.write("fact/team/a.md", "Never committed.", title="a", metadata={"type": "fact"}):
                memory.adapter.lock.at_commit("INSERT INTO audit (no_such_column) VALUES (%s)", [(1,)])
        assert not memory.exists("fact/team/a.md")
        memory.write("fact/team/b.md", "Committed with its audit record.", metadata={"type": "fact"})
        assert memory.exists("fact/team/b.md")
        assert [record.action for record in memory.adapter.audit.records(path="fact/team/b.md")] == ["create"]
