"""Two servers on one PostgreSQL store: a write that waits for the other's lock longer than the root's
lock timeout fails with a clear error, changes nothing, and the next write goes through."""

from __future__ import annotations

import threading

import pytest

from memdir.core.errors import LockTimeoutError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.storage.postgres.database import Database
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
