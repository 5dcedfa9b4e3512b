"""The server's memory host: an opening that failed is retried; a full disk is said plainly whatever hit it."""

from __future__ import annotations

import errno
import fcntl
import os

import anyio
import pytest

from memdir.core.errors import DiskFullError, LockTimeoutError
from memdir.core.settings import Settings
from memdir.server.state import MemoryHost
from tests.fakes import FakeEmbedder


def test_an_opening_that_timed_out_on_the_lock_is_retried_by_the_next_call(tmp_path):
    root = tmp_path / "memory"
    root.mkdir()
    host = MemoryHost(Settings(root=root, lock_timeout=0.2), embedder=FakeEmbedder())
    try:
        with open(root / ".lock", "a+b") as other_process:  # its own open file description: flock excludes us
            fcntl.flock(other_process, fcntl.LOCK_EX)
            with pytest.raises(LockTimeoutError, match="Timed out after 0.2 s"):
                host.memory()
            with pytest.raises(LockTimeoutError):  # a tool call meanwhile gets the same clear error
                anyio.run(host.run, lambda memory: memory.root)
            fcntl.flock(other_process, fcntl.LOCK_UN)

        async def list_entries():
            return await host.run(lambda memory: [info.path for info in memory.list()])

        assert anyio.run(list_entries) == ["skill/meta/deep-learning.md"]  # opened now, no restart
        assert host.memory().root == root.resolve()
    finally:
        host.close()


def test_a_tool_that_hits_a_full_disk_in_its_own_files_gets_the_clear_error(tmp_path):
    host = MemoryHost(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder())

    def write_a_journal(memory):  # say, a defrag journal written beside the entries
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(memory.root / ".memdir" / "journal"))

    try:
        with pytest.raises(DiskFullError, match="is full"):
            anyio.run(host.run, write_a_journal)
    finally:
        host.close()
