"""Memories of one shared root, each opened as a different agent."""

from __future__ import annotations

import pytest

from memdir.core.settings import Settings
from memdir.memory import Memory
from tests.fakes import FakeEmbedder


@pytest.fixture
def open_as(tmp_path):
    """``open_as(agent, role=None, admin=False)``: the shared root ``tmp_path/memory`` as that agent."""
    opened: list[Memory] = []

    def open_as(agent: str | None = None, role: str | None = None, admin: bool = False, **settings) -> Memory:
        memory = Memory.open(
            Settings(root=tmp_path / "memory", agent=agent, role=role, admin=admin, shared_store=True, **settings),
            embedder=FakeEmbedder(),
        )
        opened.append(memory)
        return memory

    yield open_as
    for memory in opened:
        memory.close()
