"""``resources/list`` in pages: each page read alone, the next asked for with the reply's cursor."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.server.app import build_server
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.anyio


async def test_pages_follow_each_other_and_a_foreign_cursor_is_refused(store_kind, tmp_path):
    settings = Settings(root=tmp_path / "memory", resources_page_size=2, hook_socket=False, evolution_enabled=False)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        for name in ("e", "a", "d", "b", "c"):
            memory.write(f"fact/{name}.md", f"Note {name}.", title=name.upper(), metadata={"type": "fact"})
    async with Client(build_server(settings, embedder=FakeEmbedder()), mode="legacy") as client:
        pages, cursor = [], None
        while True:
            listed = await client.list_resources(cursor=cursor) if cursor else await client.list_resources()
            pages.append([str(resource.uri) for resource in listed.resources])
            cursor = listed.next_cursor
            if not cursor:
                break
        with pytest.raises(MCPError, match="not given by this server"):
            await client.list_resources(cursor="somewhere-else")
    entries = [uri for page in pages for uri in page if uri.startswith("memory://")]
    assert "memdir://status" in pages[0] and all("memdir://status" not in page for page in pages[1:])
    assert entries == [f"memory://fact/{name}.md" for name in "abcde"] + ["memory://skill/meta/deep-learning.md"]
    assert [len([uri for uri in page if uri.startswith("memory://")]) for page in pages] == [2, 2, 2]
