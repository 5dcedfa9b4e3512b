"""`memdir serve` loads only what its first answers need: the store, the model and their libraries, the tools'
modules and argument models come after, the command line (typer) never."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mcp import Client, StdioServerParameters

from tests.server.launch_report import LAUNCH_AND_REPORT

FIRST_ANSWERS = """
import json, sys
import anyio
from memdir import launch  # what `memdir serve` imports to read its command line
from memdir.core.settings import Settings
from memdir.server.app import build_server

tools = anyio.run(build_server(Settings(root=sys.argv[1], mode=sys.argv[2])).list_tools)
heavy = ("numpy", "onnxruntime", "tokenizers", "sqlite3", "portalocker", "yaml", "typer", "rich", "memdir.cli",
         "pydantic_settings", "memdir.server.registration")  # the tools' modules and models: at each tool's first call
tool_modules = [name for name in sys.modules if name.startswith("memdir.tools.")
                and name.rpartition(".")[2] in {"memory_write", "memory_read", "memory_search", "memory_edit", "thread_append"}]
print(json.dumps({"tools": len(tools), "loaded": [name for name in heavy if name in sys.modules] + tool_modules}))
"""


def test_tools_are_listed_before_the_store_and_the_model_are_imported(tmp_path):
    for mode in ("assistant", "researcher"):
        done = subprocess.run([sys.executable, "-c", FIRST_ANSWERS, str(tmp_path / "memory"), mode],
                              capture_output=True, text=True, check=True)
        answer = json.loads(done.stdout)
        assert answer["tools"] > 10 and answer["loaded"] == [], (mode, answer)


@pytest.mark.anyio
@pytest.mark.parametrize("options", [[], ["--mode", "researcher", "--agent", "ada"]], ids=["plain", "with-options"])
async def test_a_client_starting_memdir_serve_never_waits_for_the_command_line(tmp_path, options):
    report = tmp_path / "modules.json"
    env = {"MEMDIR_ROOT": str(tmp_path / "memory"), "MEMDIR_CONFIG": str(tmp_path / "memdir.toml"),
           "MEMDIR_EMBEDDINGS_ENABLED": "false", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    params = StdioServerParameters(command=sys.executable, args=["-c", LAUNCH_AND_REPORT, str(report), "serve", *options],
                                   env=env, cwd=str(tmp_path))
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        written = await client.call_tool("MemoryWrite", {"file_path": "fact/a", "content": "served", "title": "A",
                                                         "type": "fact", "tags": [], "related": [], "domain": "test"})
    assert "MemoryWrite" in names and not written.is_error
    loaded = set(json.loads(report.read_text()))
    assert "memdir.server.app" in loaded and not loaded & {"typer", "memdir.cli"}
    assert json.loads((tmp_path / "modules.json.gc").read_text()) is True  # off while starting, on once built
