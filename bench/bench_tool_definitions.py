"""What the tool definitions cost a client: the JSON of `tools/list` per mode, in characters and tokens.

Usage::

    python bench/bench_tool_definitions.py

For each mode it starts ``memdir serve --mode MODE`` over stdio with the official MCP client
(as Claude Desktop and Claude Code do), lists the tools, and prints the size of their JSON
(name, title, description, input schema, annotations: what a client puts in front of the
model with every request), the approximate tokens (characters / 4), and the largest tools.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.server.test_tool_definitions import tool_definitions

MODES = ("retrieval", "assistant", "researcher")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for mode in MODES:
            tools = anyio.run(tool_definitions, Path(folder), mode)
            size = len(json.dumps(tools))
            print(f"{mode:>10}: {len(tools)} tools, {size:,} characters of JSON, ~{size // 4:,} tokens")
            largest = sorted(tools, key=lambda tool: -len(json.dumps(tool)))[:3]
            print("            largest: " + ", ".join(f"{tool['name']} {len(json.dumps(tool)):,}" for tool in largest))


if __name__ == "__main__":
    main()
