"""Fixtures for the working-memory tests: a thread manager on a fresh root with the fake embedder."""

from __future__ import annotations

import pytest

from memdir.core.settings import Settings
from memdir.threads.manager import ThreadManager
from memdir.threads.messages import message
from tests.fakes import FakeEmbedder


@pytest.fixture
def make_manager(tmp_path):
    """``make_manager(**settings)``: a `ThreadManager` on ``tmp_path/memory`` with the fake embedder."""
    embedder = FakeEmbedder()

    def make(**overrides):
        settings = Settings(root=tmp_path / "memory", **overrides)
        return ThreadManager(settings.store_root, settings, lambda: embedder)

    return make


@pytest.fixture
def manager(make_manager):
    return make_manager()


def say(manager: ThreadManager, thread: str, role: str, content: str, **fields):
    """Append one message (checked as the tools check it)."""
    return manager.append(thread, message(role, content, max_bytes=manager.settings.storage.max_entry_size, **fields))
