"""The README and docs/ as a user follows them: every command, configuration and setting they show is true."""

from __future__ import annotations

import ast
import json
import re
import shlex
from pathlib import Path

import anyio
import pytest
import typer

from memdir.cli import app
from memdir.core.settings import SETTING_FIELDS, Settings
from memdir.storage.virtual import VIRTUAL_ENTRIES

PROJECT = Path(__file__).resolve().parents[1]
README = PROJECT / "README.md"
DOCS = sorted((PROJECT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
CLIENT_CONFIGS = [PROJECT / "plugin" / ".mcp.json", PROJECT / "plugin" / "hooks" / "hooks.json", PROJECT / "desktop" / "manifest.json"]
INTERNAL_WORDS = re.compile(r"\bseeds?\b|SwarmMemory|LoCoMo|SemanticMemory|\bissue \d+|\bschema \d+", re.IGNORECASE)


def text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def code_blocks(page: Path, *languages: str) -> list[str]:
    return [body for language, body in re.findall(r"```(\w*)\n(.*?)```", text(page), flags=re.DOTALL) if language in languages]


def shell_lines(page: Path) -> list[str]:
    """The commands of a page's bash and console blocks (a console line is a `$ ` prompt)."""
    lines = []
    for block in code_blocks(page, "bash", "console"):
        for line in block.splitlines():
            line = line.removeprefix("$ ").split("  #", 1)[0].strip()
            lines += [part.strip() for part in re.split(r"&&|\|", line)]
    return [line for line in lines if line]


def memdir_command_lines() -> list[tuple[Path, list[str]]]:
    """Every `memdir ...` a page tells a user or a client to run, or a client configuration starts, as argument lists."""
    found: list[tuple[Path, list[str]]] = []
    for page in PAGES:
        for line in shell_lines(page):
            if " -- " in line:  # claude mcp add NAME -- memdir serve ...
                line = line.split(" -- ", 1)[1]
            words = shlex.split(line.replace("$(which memdir)", "memdir"))
            if words and Path(words[0]).name == "memdir":
                found.append((page, words[1:]))
        for block in code_blocks(page, "json"):
            found += [(page, args) for args in configured_commands(json.loads(block))]
    for config in CLIENT_CONFIGS:
        found += [(config, args) for args in configured_commands(json.loads(config.read_text()))]
    return found


def configured_commands(data: dict) -> list[list[str]]:
    """The memdir argument lists a client configuration starts: MCP servers, hooks, a bundle's server."""
    servers = [*data.get("mcpServers", {}).values(), *([data["server"]["mcp_config"]] if "server" in data else [])]
    commands = [server["args"] for server in servers if Path(server["command"]).name == "memdir"]
    for groups in data.get("hooks", {}).values():
        for group in groups:
            for hook in group["hooks"]:
                words = shlex.split(hook["command"])
                assert Path(words[0]).name == "memdir", hook
                commands.append(words[1:])
    return commands


def is_group(command: object) -> bool:
    return hasattr(command, "list_commands")  # typer vendors click: no click.Group to check against


def parse(args: list[str]) -> typer.Context:
    """Parse ``args`` as `memdir` would, down to the command that runs, without running it."""
    command = typer.main.get_command(app)
    words = list(args)
    parent: typer.Context | None = None
    while is_group(command):
        parent = typer.Context(command, parent=parent)
        name, *words = words
        sub = command.get_command(parent, name)
        assert sub is not None, f"memdir has no command {name!r} ({args})"
        command = sub
    return command.make_context(command.name or "", words, parent=parent)


def test_every_memdir_command_shown_parses_with_the_real_command_line():
    commands = memdir_command_lines()
    assert len(commands) >= 12
    for page, args in commands:
        if args in (["--version"], ["-h"]):
            continue
        try:
            parse(args)
        except Exception as exc:  # click's usage errors (typer vendors click)
            if not hasattr(exc, "format_message"):
                raise
            pytest.fail(f"{page.name}: `memdir {' '.join(args)}`: {exc.format_message()}")


def test_every_command_named_in_prose_exists():
    group = typer.main.get_command(app)
    names = set(group.list_commands(typer.Context(group)))
    for page in PAGES:
        for name in re.findall(r"`memdir ([a-z][a-z-]*)", text(page)):
            assert name in names, f"{page.name} names `memdir {name}`, which does not exist"


def test_clients_start_memdir_from_the_path_on_the_default_root():
    """One default root everywhere: no client configuration or hook picks a root of its own."""
    for page, args in memdir_command_lines():
        assert "--root" not in args, f"{page.name}: memdir {' '.join(args)}"


def test_every_setting_is_documented_and_every_documented_setting_exists():
    page = text(PROJECT / "docs" / "configuration.md")
    documented = set()
    for row in re.findall(r"^\| ([a-z0-9_ /]+) \|", page, flags=re.MULTILINE):
        documented |= {name.strip() for name in row.split("/") if name.strip()}
    documented.discard("setting")
    fields = set(SETTING_FIELDS)
    assert documented <= fields, documented - fields
    assert fields <= documented, f"not in docs/configuration.md: {sorted(fields - documented)}"


def test_the_python_example_is_a_program():
    (block,) = code_blocks(README, "python")
    tree = ast.parse(block)  # top-level `async with` or `await` would not parse
    assert any(isinstance(node, ast.AsyncFunctionDef) for node in tree.body)


def test_the_docs_speak_the_users_language():
    for page in PAGES:
        for number, line in enumerate(text(page).splitlines(), 1):
            assert not INTERNAL_WORDS.search(line), f"{page.name}:{number}: {line[:120]}"


def test_every_link_between_pages_leads_somewhere():
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text(page)):
            assert (page.parent / target).exists(), f"{page.name} links to {target}"


def test_the_readme_is_a_short_guide_and_ci_runs_its_test_command():
    lines = text(README).splitlines()
    assert len(lines) <= 230 and max(map(len, lines)) <= 160
    (install,) = [line for line in shell_lines(README) if "pip install ." in line]
    assert "[test]" not in install and "--no-deps" not in install
    (development,) = code_blocks(PROJECT / "README.md", "bash")[-1:]
    assert "python -m pytest" in development
    ci = (PROJECT / ".ci" / "run").read_text()
    assert "python -m pytest" in ci and "--no-deps" not in ci


def test_every_prompt_and_built_in_skill_is_listed():
    from memdir.server.app import build_server

    async def prompt_names() -> list[str]:
        return [prompt.name for prompt in await build_server(Settings()).list_prompts()]

    names = anyio.run(prompt_names)
    assert "where_we_left_off" in names
    (row,) = [line for line in text(PROJECT / "docs" / "clients.md").splitlines() if line.startswith("| prompts |")]
    for name in names:
        assert f"`{name}" in row, name
    for path in VIRTUAL_ENTRIES:
        assert f"`{path}`" in text(README)
