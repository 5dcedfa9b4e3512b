"""Threads on the PostgreSQL store: every server on the database shares them, appends ordered and atomic."""

from __future__ import annotations

import json
import threading

import pytest

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.tools.thread_append import thread_append
from memdir.tools.thread_context import thread_context
from memdir.tools.thread_list import thread_list
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.postgres


def _server(tmp_path, name, pg_url):
    """One server's memory: its own local folder and connections, the shared database."""
    return Memory.open(Settings(root=tmp_path / name, store=pg_url), embedder=FakeEmbedder())


def test_two_servers_on_one_database_share_threads_and_lose_no_append(tmp_path, pg_url):
    first, second = _server(tmp_path, "a", pg_url), _server(tmp_path, "b", pg_url)
    try:
        thread_append(first, "team", "user", "Remember: the release branch is release-7.")
        assert "- team · 1 chunk" in thread_list(second)
        assert "[c2 user] Remember: the release branch is release-7." in thread_context(second, "team", 200)

        def burst(memory, who):
            for i in range(30):
                thread_append(memory, "team", "assistant", f"{who} says {i}")

        workers = [threading.Thread(target=burst, args=(memory, who)) for memory, who in ((first, "a"), (second, "b"))]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        lines = [json.loads(line) for (line,) in first.adapter.db.connection().execute(
            "SELECT line FROM thread_events WHERE thread = 'team' ORDER BY id")]
        seqs = [event["seq"] for event in lines]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # one order, no number twice
        said = [event["chunk"]["content"] for event in lines if event.get("op") == "ADD"]
        for who in "ab":
            assert [text for text in said if text.startswith(f"{who} says")] == [f"{who} says {i}" for i in range(30)]
        assert first.root / "threads" != second.root / "threads"
        assert not (tmp_path / "a" / "threads" / "team" / "events.jsonl").exists()  # in the database, not a local file
        assert " of 61 messages shown verbatim" in thread_context(first, "team", 5000)
    finally:
        first.close()
        second.close()
