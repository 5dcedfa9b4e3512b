"""End to end: nothing an agent can write grants it privileges.

A skill with the file tools cannot write memdir's settings, tokens or memory through the
workspace; a ``memdir.toml`` in the working directory (which an agent may have written) cannot
make anyone admin, turn on Bash, move the workspace or change identity; the user's own config
file may, only while it is owner-only and outside the workspace and the memory root.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.server.test_e2e_stdio import call, refused, write

pytestmark = pytest.mark.anyio

FILE_TOOLS = {"tools": ["Read", "Write", "Edit", "Glob", "Grep"]}


def environment(tmp_path: Path) -> dict[str, str]:
    """The environment of a user whose config dir is ``tmp_path/home/.config`` (no MEMDIR_CONFIG)."""
    env = {key: value for key, value in os.environ.items() if key != "MEMDIR_CONFIG"}
    env.update({"XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"), "MEMDIR_EMBEDDINGS_ENABLED": "false",
                "MEMDIR_HOOK_SOCKET": "false"})
    return env


def user_config(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "home" / ".config" / "memdir" / "memdir.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def memdir(tmp_path: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memdir", *args], check=False, capture_output=True, text=True, timeout=120,
                          env=environment(tmp_path), cwd=cwd)


@pytest.fixture
def project(tmp_path) -> Path:
    """The folder an editor starts memdir in: the default workspace, with the memory root inside it."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("plain project file\n")
    return folder


async def test_the_workspace_tools_refuse_memdirs_own_files(tmp_path, project):
    token_file = project / "tokens.json"
    params = StdioServerParameters(
        command=sys.executable, cwd=str(project),
        args=["-m", "memdir", "serve", "--root", str(project / "memory"), "--mode", "assistant"],
        env={**environment(tmp_path), "MEMDIR_HTTP_TOKENS_FILE": str(token_file)})
    async with Client(params, mode="legacy") as client:
        await write(client, "skill/files.md", "Work on the project's files.", "skill", title="Files", **FILE_TOOLS)
        await call(client, "LoadSkill", file_path="skill/files.md")
        assert "plain project file" in await call(client, "Read", file_path="notes.txt")
        for path in ("memdir.toml", "sub/memdir.toml", "tokens.json", "memory/fact/planted.md", "memory/.memdir/x"):
            message = await refused(client, "Write", file_path=path, content="admin = true\n")
            assert "one of memdir's own files" in message, message
        assert "one of memdir's own files" in await refused(client, "Read", file_path="memory/skill/files.md")
        listed = await call(client, "Glob", pattern="**/*")
        assert "notes.txt" in listed and "memory/" not in listed
        found = await call(client, "Grep", pattern="Work on")
        assert "memory/" not in found
    assert not (project / "memdir.toml").exists() and not token_file.exists()
    assert not (project / "memory" / "fact" / "planted.md").exists()


@pytest.mark.parametrize("setting", ["admin = true", "allow_bash = true", 'workspace = "/"', 'agent = "alice"',
                                     'http_tokens_file = "tokens.json"'])
def test_a_memdir_toml_in_the_working_directory_cannot_widen_privileges(tmp_path, project, setting):
    (project / "memdir.toml").write_text(f"{setting}\nword_limit = 300\n")
    started = memdir(tmp_path, "token", "list", cwd=project)
    assert started.returncode == 1
    name = setting.split(" ")[0]
    assert f"sets {name}, which widen what clients may do" in started.stderr
    assert "chmod 600" in started.stderr and "command line" in started.stderr
    (project / "memdir.toml").write_text("word_limit = 300\n")  # plain settings are still read from there
    assert memdir(tmp_path, "token", "list", cwd=project).returncode == 0


def test_the_users_config_file_grants_privileges_only_owner_only_and_outside_the_workspace(tmp_path, project):
    from memdir.core.settings import Settings

    config = user_config(tmp_path, "admin = true\n", mode=0o644)
    refused_status = memdir(tmp_path, "token", "list", cwd=project)
    assert refused_status.returncode == 1 and "other users may change or read it" in refused_status.stderr
    assert f"chmod 600 {config}" in refused_status.stderr
    config.chmod(0o600)
    assert memdir(tmp_path, "token", "list", cwd=project).returncode == 0
    assert memdir(tmp_path, "token", "list", cwd=Path("/")).returncode == 0  # a desktop app's "/": no workspace tools
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path / "home" / ".config")
    try:
        os.environ.pop("MEMDIR_CONFIG")
        assert Settings(workspace=project).roles.admin is True
        inside = memdir(tmp_path, "token", "list", cwd=tmp_path / "home")  # the workspace is the home folder now
        assert inside.returncode == 1 and "lies inside the workspace" in inside.stderr
    finally:
        os.environ.pop("XDG_CONFIG_HOME")
