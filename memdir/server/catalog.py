"""The tool definitions ``tools/list`` answers with, built from the tool functions once and stored.

Building a tool's definition means importing its module and letting the SDK derive a pydantic
model and a JSON schema from its function's signature: most of what a client would wait for
between starting ``memdir serve`` and its tool list. So the definitions (name, title,
description, lean input schema, annotations) of every tool are built ahead, by
``python -m memdir.server.catalog``, into ``tool_definitions.json`` beside this module; the
server reads them from there and registers a tool with the SDK at its first call
(`memdir.server.registration`). tests/server/test_catalog.py builds them from the functions
again and fails, naming that command, when the stored file differs.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcp_types import Tool as MCPTool

from memdir.server.modes import MODE_TOOLS, TOOLS, WORKSPACE_SPECS, offers_skills, tools_for_mode

STORED = Path(__file__).with_name("tool_definitions.json")
REBUILD = "python -m memdir.server.catalog"


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema without what pydantic adds and the model does not need: the titles it derives
    from names (``"title": "File Path"``) and ``"default": null`` (an optional parameter says so
    by not being required)."""
    lean = {key: value for key, value in schema.items() if key != "title" and not (key == "default" and value is None)}
    if isinstance(lean.get("properties"), dict):
        lean["properties"] = {name: lean_schema(value) for name, value in lean["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(lean.get(key), dict):
            lean[key] = lean_schema(lean[key])
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(lean.get(key), list):
            lean[key] = [lean_schema(value) if isinstance(value, dict) else value for value in lean[key]]
    return lean


def installed(name: str) -> bool:
    """False for an optional tool whose module is not installed (the server leaves it out)."""
    spec = TOOLS.get(name)
    if spec is None or not spec.optional:
        return True
    return importlib.util.find_spec(spec.target.partition(":")[0]) is not None


def offered(mode: str) -> tuple[str, ...]:
    """The tools a server in ``mode`` registers, in the order clients list them: the mode's
    installed memory tools, then (in modes with LoadSkill) the workspace tools."""
    workspace = tuple(WORKSPACE_SPECS) if offers_skills(mode) else ()
    return (*(name for name in tools_for_mode(mode) if installed(name)), *workspace)


@functools.cache
def _stored() -> dict[str, dict[str, Any]]:
    with STORED.open(encoding="utf-8") as file:
        return {tool["name"]: tool for tool in json.load(file)}


def definitions(names: Iterable[str]) -> list[MCPTool]:
    """The stored definitions of the tools ``names``, as ``tools/list`` sends them."""
    stored = _stored()
    return [MCPTool.model_validate(stored[name]) for name in names]


def input_schema(name: str) -> dict[str, Any] | None:
    """The stored input schema of tool ``name``; None for a name that is no tool."""
    tool = _stored().get(name)
    return None if tool is None else tool["inputSchema"]


async def built(mode: str) -> list[dict[str, Any]]:
    """The definitions of ``mode``'s tools built from their functions now, as JSON objects."""
    from mcp.server.mcpserver import MCPServer

    from memdir.server.registration import register

    server: MCPServer[Any] = MCPServer("catalog")
    for name in offered(mode):
        register(server, name, mode)
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            | {"inputSchema": lean_schema(tool.input_schema)} for tool in await server.list_tools()]


async def build_all() -> list[dict[str, Any]]:
    """Every tool's definition, each once (a tool's definition is the same in every mode that has it)."""
    found: dict[str, dict[str, Any]] = {}
    for mode in MODE_TOOLS:
        for tool in await built(mode):
            found.setdefault(tool["name"], tool)
    return list(found.values())


def main() -> None:
    """Write the definitions built from the tool functions to `STORED`."""
    import anyio

    tools = anyio.run(build_all)
    STORED.write_text(json.dumps(tools, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    sys.stdout.write(f"{len(tools)} tool definitions written to {STORED}\n")


if __name__ == "__main__":
    main()


__all__ = ["REBUILD", "STORED", "built", "definitions", "input_schema", "installed", "lean_schema", "offered"]
