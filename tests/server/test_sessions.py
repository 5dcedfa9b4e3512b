"""Per-client-session state: one read tracker and one loaded skill per session, never shared."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import anyio
import pytest

from memdir.server.state import SessionRegistry


class Outbound:
    """Stands in for a connection's outbound channel (weak-referenceable, compared by identity)."""


def ctx(outbound=None, session_id=None):
    connection = SimpleNamespace(outbound=outbound, session_id=session_id)
    return SimpleNamespace(session=SimpleNamespace(_connection=connection))


def test_each_connection_has_its_own_state_for_all_its_requests():
    registry = SessionRegistry()
    first, second = Outbound(), Outbound()
    state = registry.for_context(ctx(first))
    assert registry.for_context(ctx(first)) is state  # a later request on the same connection
    assert registry.for_context(ctx(second)) is not state
    state.session.activate_skill("skill/a.md", ["Read"], {})
    assert registry.for_context(ctx(second)).session.skill_tools == []


def test_transport_session_ids_win_over_connections():
    registry = SessionRegistry()
    state = registry.for_context(ctx(Outbound(), session_id="abc"))
    assert registry.for_context(ctx(Outbound(), session_id="abc")) is state
    assert registry.for_context(ctx(Outbound(), session_id="def")) is not state


def test_state_goes_away_with_its_connection():
    registry = SessionRegistry()
    outbound = Outbound()
    registry.for_context(ctx(outbound))
    assert len(registry._by_connection) == 1
    del outbound
    gc.collect()
    assert len(registry._by_connection) == 0


def test_requests_without_a_connection_share_one_state():
    registry = SessionRegistry()
    assert registry.for_context(SimpleNamespace(session=SimpleNamespace())) is registry.for_context(
        SimpleNamespace(session=SimpleNamespace())
    )


# --------------------------------------------------------------------------- over a shared server
@pytest.fixture
def http_server(tmp_path):
    """One memdir server over streamable HTTP (several client sessions on one process)."""
    from memdir.core.settings import Settings
    from memdir.server.app import build_server
    from tests.fakes import FakeEmbedder
    from tests.server.http_process import serving

    server = build_server(Settings(root=tmp_path / "memory", workspace=tmp_path), embedder=FakeEmbedder())
    with serving(server.streamable_http_app()) as base:
        yield f"{base}/mcp"


def test_two_sessions_on_one_server_have_their_own_toolsets_and_reads(http_server, tmp_path):
    from mcp import Client

    (tmp_path / "notes.txt").write_text("hello\n")

    async def scenario():
        async with Client(http_server, mode="legacy") as first, Client(http_server, mode="legacy") as second:
            skill = {"file_path": "skill/reader.md", "content": "Read the notes.", "title": "Reader", "type": "skill",
                     "tags": [], "related": [], "domain": "d", "tools": ["Read"]}
            assert not (await first.call_tool("MemoryWrite", skill)).is_error
            assert not (await first.call_tool("LoadSkill", {"file_path": "skill/reader.md"})).is_error
            first_tools = [t.name for t in (await first.list_tools()).tools]
            second_tools = [t.name for t in (await second.list_tools()).tools]
            assert "Read" in first_tools and "Read" not in second_tools
            refused = await second.call_tool("Read", {"file_path": "notes.txt"})
            assert refused.is_error and "not in your current toolset" in refused.content[0].text
            # reads are per session too: the first session read the skill (LoadSkill), the second did not
            edit = {"file_path": "skill/reader.md", "old_string": "notes", "new_string": "notes.txt"}
            assert (await second.call_tool("MemoryEdit", edit)).is_error
            assert not (await first.call_tool("MemoryEdit", edit)).is_error

    anyio.run(scenario)


# --------------------------------------------------------------------------- the memory's opening
def test_the_memory_opens_after_the_handshake_not_during_it(tmp_path, monkeypatch):
    from memdir.core.settings import Settings
    from memdir.server import state as server_state
    from memdir.server.state import AppState, MemoryHost, open_after_handshake
    from memdir.workspace.tools import Workspace
    from tests.fakes import FakeEmbedder

    monkeypatch.setattr(server_state, "OPENING_DELAY", 0.05)
    settings = Settings(root=tmp_path / "root")
    host = MemoryHost(settings, embedder=FakeEmbedder())
    state = AppState(settings, host, SessionRegistry(), Workspace.create(tmp_path), (), ())

    async def answer(_ctx):
        return {}

    async def request(method):
        return await open_after_handshake(SimpleNamespace(method=method, lifespan_context=state), answer)

    async def connect_and_list():
        for method in ("initialize", "notifications/initialized", "server/discover"):  # (server/discover: 2026-era)
            await request(method)
        assert host._opening is None  # the handshake opened nothing: tools/list comes right behind it
        await request("tools/list")
        assert host._opening is None  # nor that answer, while it is on its way out
        await anyio.sleep(0.3)
        assert host._opening is not None  # then, in the background

    try:
        anyio.run(connect_and_list)
        assert [info.path for info in host.memory().list()] == ["skill/meta/deep-learning.md"]
    finally:
        host.close()


def test_a_server_closed_before_the_memory_opened_does_not_open_it_after(tmp_path, monkeypatch, caplog):
    from memdir.core.settings import Settings
    from memdir.server import state as server_state
    from memdir.server.state import MemoryHost
    from tests.fakes import FakeEmbedder

    monkeypatch.setattr(server_state, "OPENING_DELAY", 0.05)
    host = MemoryHost(Settings(root=tmp_path / "root"), embedder=FakeEmbedder())

    async def list_then_leave():
        host.start_soon()
        host.close()  # the client left at once
        await anyio.sleep(0.2)

    anyio.run(list_then_leave)
    assert host._opening is None and not (tmp_path / "root").exists()
    assert not [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
