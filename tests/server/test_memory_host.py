"""`MemoryHost`: writes one at a time in order; read-only calls beside them, after the writes sent before."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from memdir.core.settings import Settings
from memdir.server.state import MemoryHost
from tests.fakes import FakeEmbedder


@pytest.fixture
def host(tmp_path):
    host = MemoryHost(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder())
    yield host
    host.close()


def test_a_read_waits_for_the_writes_sent_before_it(host):
    def slow_write(memory):
        time.sleep(0.3)
        memory.write("fact/new.md", "Fresh content.", title="New", metadata={"type": "fact"})

    async def scenario():
        writing = asyncio.ensure_future(host.run(slow_write))
        await asyncio.sleep(0)  # the write is submitted
        content = await host.run(lambda memory: memory.read("fact/new.md").content, read_only=True)
        await writing
        return content

    assert asyncio.run(scenario()) == "Fresh content."


def test_reads_run_beside_a_long_read(host):
    release = threading.Event()

    async def scenario():
        long_read = asyncio.ensure_future(host.run(lambda memory: release.wait(30), read_only=True))
        await asyncio.sleep(0)
        listed = await host.run(lambda memory: [info.path for info in memory.list()], read_only=True)
        written = await host.run(lambda memory: memory.write("fact/x.md", "x", metadata={"type": "fact"}).entry.path)
        done_first = not long_read.done()
        release.set()
        await long_read
        return listed, written, done_first

    listed, written, done_first = asyncio.run(scenario())
    assert done_first and written == "fact/x.md" and isinstance(listed, list)


def test_a_failed_write_does_not_stop_the_reads_after_it(host):
    def failing(memory):
        raise RuntimeError("boom")

    async def scenario():
        failed = asyncio.ensure_future(host.run(failing))
        await asyncio.sleep(0)
        exists = await host.run(lambda memory: memory.exists("fact/none.md"), read_only=True)
        with pytest.raises(RuntimeError):
            await failed
        return exists

    assert asyncio.run(scenario()) is False
