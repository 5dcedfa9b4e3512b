"""The thread tools over stdio against the real server: a thread and its strategy outlive the server process."""

from __future__ import annotations

import pytest

from tests.server.test_e2e_stdio import call, connect, refused

pytestmark = pytest.mark.anyio


async def test_a_thread_switched_by_marker_is_resumed_by_a_new_server_with_its_strategy(tmp_path):
    (tmp_path / "ws").mkdir()
    async with connect(tmp_path) as client:
        await call(client, "ThreadAppend", thread="trip", role="user", content="Book Lisbon for May.")
        reply = await call(client, "ThreadAppend", thread="trip", role="assistant", content="Done. @@memory('fragment')@@")
        assert "switched to fragment by the marker" in reply
        assert "unknown context strategy 'quantum'" in await refused(
            client, "ThreadControl", thread="trip", action="strategy", value="quantum")
        await call(client, "ThreadControl", thread="trip", action="mode", value="stepping")
        assert "Queued as #1" in await call(client, "ThreadAppend", thread="trip", role="user", content="And a hotel.")
    async with connect(tmp_path, "retrieval") as client:  # a new server process, read-only mode
        assert "- trip · 2 chunks · 4 events · strategy fragment · mode stepping" in await call(client, "ThreadList")
    async with connect(tmp_path) as client:
        assert (await call(client, "ThreadControl", thread="trip", action="step")).startswith("Step: wrote c5.")
        context = await call(client, "ThreadContext", thread="trip", budget_tokens=300)
        assert context.startswith("Thread trip · strategy fragment ·")
        assert context.endswith("[c2 user] Book Lisbon for May.\n[c3 assistant] Done. @@memory('fragment')@@\n[c5 user] And a hotel.")
