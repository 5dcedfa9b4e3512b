"""What every request to the model carries: the tool definitions of `tools/list`, lean and written for the model."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio

BUDGET = {"assistant": 12_000, "researcher": 20_000}
"""Most characters of tools/list JSON per mode (about 3,000 and 5,000 tokens)."""


async def tool_definitions(tmp_path: Path, mode: str) -> list[dict]:
    """The tools `memdir serve --mode MODE` offers a client over stdio, as the JSON objects it sends."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "memdir", "serve", "--root", str(tmp_path), "--mode", mode],
                                   env={"MEMDIR_EMBEDDINGS_ENABLED": "false", "MEMDIR_CONFIG": str(tmp_path / "none.toml")})
    async with Client(params) as client:
        listed = await client.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]


def derived_noise(schema: dict):
    """The titles pydantic derives from names and the ``"default": null`` of a schema, wherever they are."""
    for key, value in schema.items():
        if key == "title" or (key == "default" and value is None):
            yield key
        elif key == "properties":
            for prop in value.values():
                yield from derived_noise(prop)
        elif isinstance(value, dict):
            yield from derived_noise(value)


@pytest.mark.parametrize("mode", list(BUDGET))
async def test_the_tool_definitions_fit_their_budget(tmp_path, mode):
    tools = await tool_definitions(tmp_path, mode)
    size = len(json.dumps(tools))
    assert size <= BUDGET[mode], f"{mode}: {size:,} characters of tool definitions, over {BUDGET[mode]:,}"
    for tool in tools:
        description = tool["description"]
        assert not re.search(r"^[ \t]", description, flags=re.MULTILINE), f"{tool['name']}: indented lines"
        assert not re.search(r"[^\n]\n(?![\n-])", description), f"{tool['name']}: a paragraph broken over lines"
        assert "Returns:" not in description and "Args:" not in description, tool["name"]
        assert not list(derived_noise(tool["inputSchema"])), (tool["name"], list(derived_noise(tool["inputSchema"])))
        assert all(prop.get("description") for prop in tool["inputSchema"].get("properties", {}).values()), tool["name"]
