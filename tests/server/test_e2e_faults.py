"""End to end over stdio: a server on a read-only mount, and one started while another process held the lock."""

from __future__ import annotations

import fcntl

import pytest

from memdir.core.settings import Settings
from memdir.memory import Memory
from tests.disks import remount, tmpfs
from tests.server.test_e2e_stdio import call, connect, refused

pytestmark = pytest.mark.anyio


@pytest.fixture
def dirs(tmp_path):
    (tmp_path / "ws").mkdir()
    return tmp_path


async def test_a_server_on_a_read_only_mount_reads_and_searches_and_refuses_writes(dirs):
    with tmpfs(dirs / "memory", "8m") as root:
        with Memory.open(Settings(root=root, embeddings_enabled=False)) as memory:
            memory.write("fact/tides.md", "The moon pulls the oceans twice a day.", title="Tides",
                         metadata={"type": "fact", "tags": ["moon"]})
        remount(root, "ro")
        try:
            async with connect(dirs) as client:
                assert "twice a day" in await call(client, "MemoryRead", file_path="fact/tides.md")
                assert "fact/tides.md" in await call(client, "MemoryGlob", pattern="fact/*")
                assert "fact/tides.md" in await call(client, "MemoryGrep", pattern="oceans")
                assert "fact/tides.md" in await call(client, "MemoryDiscover", message="moon oceans tides")
                refusal = await refused(client, "MemoryWrite", file_path="fact/x.md", content="x", title="x",
                                        type="fact", tags=[], related=[], domain="d")
                assert "is read-only (its filesystem is mounted read-only)" in refusal
                assert "Reading and search still work" in refusal
        finally:
            remount(root, "rw")


async def test_a_server_started_while_the_lock_was_held_opens_once_it_is_free(dirs):
    (dirs / "memdir.toml").write_text("lock_timeout = 0.5\n")
    (dirs / "memory").mkdir()
    with open(dirs / "memory" / ".lock", "a+b") as other_process:
        fcntl.flock(other_process, fcntl.LOCK_EX)
        async with connect(dirs) as client:
            assert "Timed out after 0.5 s" in await refused(client, "MemoryGlob", pattern="**/*")
            fcntl.flock(other_process, fcntl.LOCK_UN)
            assert "skill/meta/deep-learning.md" in await call(client, "MemoryGlob", pattern="**/*")
