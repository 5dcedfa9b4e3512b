"""`MemoryHost`: each session's writes in order, sessions beside each other; read-only calls after the writes sent before."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from memdir.core.settings import Settings
from memdir.server.state import MemoryHost, SessionState
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


def test_one_sessions_slow_change_holds_no_other_sessions_write(host):
    """A change still computing (a slow embedding) delays its own session's next change, not another session's."""
    release = threading.Event()
    order = []

    def slow_change(memory):
        release.wait(30)
        order.append("a1")
        return memory.write("fact/a1.md", "first of a", metadata={"type": "fact"}).entry.path

    def change(name):
        def run(memory):
            order.append(name)
            return memory.write(f"fact/{name}.md", f"from {name}", metadata={"type": "fact"}).entry.path
        return run

    alice, bob = SessionState(), SessionState()

    async def scenario():
        first = asyncio.ensure_future(host.run(slow_change, writer=alice))
        second = asyncio.ensure_future(host.run(change("a2"), writer=alice))
        await asyncio.sleep(0)
        written = await asyncio.wait_for(host.run(change("b1"), writer=bob), 10)
        held = not first.done() and not second.done()
        release.set()
        return written, held, await first, await second

    written, held, *rest = asyncio.run(scenario())
    assert (written, held, rest) == ("fact/b1.md", True, ["fact/a1.md", "fact/a2.md"])
    assert order == ["b1", "a1", "a2"]
