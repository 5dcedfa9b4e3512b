"""The ways a client installs memdir: the Claude Code plugin (from this repository as a local marketplace),
the Claude Desktop bundle, and the MCP registry's server.json; each checked with its own tools."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
import zipfile
from pathlib import Path

from tests.prerequisites import missing_prerequisite

PROJECT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["version"]


def tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        missing_prerequisite(f"`{name}` is missing: npm install -g {package}")
    return found


def run(*command: str, cwd: Path = PROJECT, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home or PROJECT), "DISABLE_TELEMETRY": "1",
           "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False)


def test_the_plugin_and_its_marketplace_pass_claude_codes_validation_and_install(tmp_path):
    claude = tool("claude", "@anthropic-ai/claude-code")
    for target in ("plugin", "."):
        checked = run(claude, "plugin", "validate", target, home=tmp_path)
        assert checked.returncode == 0 and "Validation passed" in checked.stdout, checked.stdout + checked.stderr
    assert run(claude, "plugin", "marketplace", "add", "./", home=tmp_path).returncode == 0
    installed = run(claude, "plugin", "install", "memdir@memdir", home=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = run(claude, "plugin", "list", home=tmp_path).stdout
    assert "memdir@memdir" in listed and VERSION in listed


def test_the_plugin_brings_the_server_the_four_hooks_and_the_commands():
    plugin = PROJECT / "plugin"
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "memdir" and manifest["version"] == VERSION
    assert json.loads((plugin / ".mcp.json").read_text())["mcpServers"]["memdir"] == {"command": "memdir", "args": ["serve"]}
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "SessionStart", "SessionEnd", "PreCompact"}
    for name in ("remember", "recall"):
        text = (plugin / "commands" / f"{name}.md").read_text()
        assert text.startswith("---\ndescription: ") and "$ARGUMENTS" in text


def test_the_desktop_bundle_validates_and_packs(tmp_path):
    mcpb = tool("mcpb", "@anthropic-ai/mcpb")
    checked = run(mcpb, "validate", "desktop/manifest.json")
    assert checked.returncode == 0 and "validation passes" in checked.stdout, checked.stdout + checked.stderr
    packed = run(mcpb, "pack", "desktop", str(tmp_path / "memdir.mcpb"))
    assert packed.returncode == 0, packed.stdout + packed.stderr
    with zipfile.ZipFile(tmp_path / "memdir.mcpb") as bundle:
        manifest = json.loads(bundle.read("manifest.json"))
    assert manifest["version"] == VERSION and manifest["server"]["mcp_config"] == {"command": "memdir", "args": ["serve"]}


def test_server_json_follows_the_mcp_registrys_schema():
    """The rules of https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json that apply here."""
    server = json.loads((PROJECT / "server.json").read_text())
    assert server["$schema"] == "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
    assert {"name", "description", "version"} <= set(server)
    assert set(server) <= {"$schema", "_meta", "name", "title", "description", "version", "packages", "remotes",
                           "repository", "websiteUrl", "icons"}
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", server["name"]) and 3 <= len(server["name"]) <= 200
    assert 1 <= len(server["description"]) <= 100 and 1 <= len(server["title"]) <= 100
    assert server["version"] == VERSION
    (package,) = server["packages"]
    assert {"registryType", "identifier", "transport"} <= set(package)
    assert package["registryType"] == "pypi" and package["identifier"] == "memdir" and package["version"] == VERSION
    assert package["transport"] == {"type": "stdio"}
    for argument in package["packageArguments"]:
        assert argument["type"] == "positional" and ("value" in argument or "valueHint" in argument)
    for variable in package["environmentVariables"]:
        assert variable["name"].startswith("MEMDIR_") and variable.get("format", "string") in ("string", "number", "boolean", "filepath")
