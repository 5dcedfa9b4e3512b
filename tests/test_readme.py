"""The README as a new user follows it: the quick start, the client configurations, what the server offers."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import anyio

from memdir.core.settings import Settings
from memdir.storage.virtual import VIRTUAL_ENTRIES

PROJECT = Path(__file__).resolve().parents[1]
README = (PROJECT / "README.md").read_text(encoding="utf-8")


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


def section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def memdir_commands() -> list[list[str]]:
    """Every way the README has a client start memdir: JSON configs, `claude mcp add`, the Python SDK."""
    commands = []
    for block in code_blocks("json"):
        data = json.loads(block)
        for server in data.get("mcpServers", {}).values():
            commands.append([server["command"], *server["args"]])
        for hooks in data.get("hooks", {}).values():
            commands += [shlex.split(hook["command"]) for group in hooks for hook in group["hooks"]]
    for line in "\n".join(code_blocks("bash")).splitlines():
        if line.startswith("claude mcp add") and " -- " in line:  # not `--transport http URL`: nothing started
            commands.append(shlex.split(line.split(" -- ", 1)[1].replace('"$(which memdir)"', "/abs/memdir")))
    for block in code_blocks("python"):
        found = re.search(r'StdioServerParameters\(command="([^"]+)", args=(\[[^\]]*\])', block)
        commands.append([found.group(1), *json.loads(found.group(2))])
    return commands


def test_every_client_configuration_names_memdir_by_absolute_path_and_gives_the_root():
    commands = memdir_commands()
    assert len(commands) >= 7  # Desktop, two Claude Code servers, three hooks, the Python SDK
    for command in commands:
        assert command[0].startswith("/") and command[0].endswith("/memdir"), command
        assert "--root" in command or "--connect" in command, command  # a --connect front uses the server's root


def test_the_quick_start_is_two_commands_from_a_fresh_shell_as_ci_runs_them():
    (block,) = re.findall(r"```bash\n(.*?)```", section("Quick start"), flags=re.DOTALL)
    install, tests = block.strip().splitlines()
    steps = install.split(" && ")
    assert steps[0].startswith("python3 -m venv .venv") and steps[-1] == "memdir serve"
    ci = (PROJECT / ".ci" / "run").read_text()
    for step in steps[2:-1]:  # the installs
        assert step.replace("pip install ", "pip install --quiet ") in ci, step
    assert tests == ".venv/bin/python -m pytest" and "python -m pytest" in ci


def test_every_prompt_and_built_in_skill_is_listed():
    from memdir.server.app import build_server

    async def prompt_names() -> list[str]:
        return [prompt.name for prompt in await build_server(Settings()).list_prompts()]

    names = anyio.run(prompt_names)
    assert "where_we_left_off" in names
    (row,) = [line for line in README.splitlines() if line.startswith("| prompts |")]
    for name in names:
        assert f"`{name}" in row, name
    for path in VIRTUAL_ENTRIES:
        assert f"`{path}`" in README

