"""``tools/list`` is answered from stored tool definitions: they must be the ones the tool functions give."""

from __future__ import annotations

import json

import anyio
import pytest

from memdir.core.settings import Settings
from memdir.server import catalog
from memdir.server.app import build_server
from memdir.server.modes import MODES


@pytest.mark.parametrize("mode", MODES)
def test_the_stored_definitions_are_the_ones_the_tool_functions_give(mode, tmp_path):
    built = anyio.run(catalog.built, mode)
    listed = anyio.run(build_server(Settings(root=tmp_path / "memory", mode=mode)).list_tools)
    served = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]
    assert json.dumps(served, indent=1) == json.dumps(built, indent=1), (
        f"{catalog.STORED.name} is out of date with the tool functions: run `{catalog.REBUILD}`"
    )


def test_a_tool_is_registered_with_the_sdk_at_its_first_call_only(tmp_path):
    server = build_server(Settings(root=tmp_path / "memory", mode="researcher"))
    anyio.run(server.list_tools)
    assert server._tool_manager.list_tools() == []  # listed from the stored definitions
    with pytest.raises(Exception, match="does not take 'bogus'"):
        anyio.run(server.call_tool, "MemoryDefrag", {"action": "analyze", "bogus": 1})
    assert server._tool_manager.list_tools() == []  # refused before anything was built
    with pytest.raises(Exception, match="Invalid arguments for MemoryGrep"):
        anyio.run(server.call_tool, "MemoryGrep", {"pattern": "x", "case_insensitive": "perhaps"})
    assert [tool.name for tool in server._tool_manager.list_tools()] == ["MemoryGrep"]
    with pytest.raises(Exception, match="Unknown tool"):
        anyio.run(server.call_tool, "Nonsense", {})


def test_the_prompts_are_built_at_the_first_request_for_them(tmp_path):
    server = build_server(Settings(root=tmp_path / "memory"))
    anyio.run(server.list_tools)
    assert server._prompt_manager.list_prompts() == []  # a client's tool list did not wait for them
    prompt = anyio.run(server.get_prompt, "assistant")  # asked for by name, without listing first
    assert "memory" in prompt.messages[0].content.text.lower()
    assert {prompt.name for prompt in anyio.run(server.list_prompts)} >= {"assistant", "discover", "where_we_left_off"}
