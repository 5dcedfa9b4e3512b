"""A search in a process forked after its parent searched: the query embedding's worker threads
(`memdir.search.hybrid`) are the child's own, so its search finishes."""

from __future__ import annotations

import os
import select

from fakes import FakeEmbedder

from memdir.core.settings import Settings
from memdir.memory import Memory


def test_a_forked_child_searches_after_its_parent_did(tmp_path):
    memory = Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder())
    try:
        memory.write("concept/otters.md", "Otters hold hands while they sleep.")
        assert [r.path for r in memory.search("otters")] == ["concept/otters.md"]  # (the parent's threads exist)
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover (the child reports through the pipe)
            try:
                found = [r.path for r in memory.search("otters sleep")]
                os.write(write, ",".join(found).encode())
            finally:
                os._exit(0)
        os.close(write)
        ready, _, _ = select.select([read], [], [], 30)
        answer = os.read(read, 1000).decode() if ready else None
        os.close(read)
        if not ready:
            os.kill(child, 9)
        os.waitpid(child, 0)
        assert answer == "concept/otters.md"
    finally:
        memory.close()
