"""End to end: a merge's stub stays its owner's, and `memdir defrag --undo` undoes only your own runs.

Agents are stdio servers on one shared root driven by the official MCP client; the undo is the CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.server.test_e2e_access import agent
from tests.server.test_e2e_stdio import call, refused, write

pytestmark = pytest.mark.anyio

TEXT = "The release checklist: tag the commit, build the wheels, upload them, announce the version."


def defrag(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMDIR_EMBEDDINGS_ENABLED": "false"}
    return subprocess.run([sys.executable, "-m", "memdir", "defrag", "--root", str(tmp_path / "memory"), *args], check=False,
                          capture_output=True, text=True, timeout=120, env=env)


def stubs_of(tmp_path) -> list[str]:
    folder = tmp_path / "memory" / "fact"
    return sorted(f"fact/{file.name}" for file in folder.glob("*.md") if file.read_text().startswith("# merged"))


async def test_a_merge_stub_keeps_its_owner_and_only_the_runs_agent_undoes_it(tmp_path):
    async with agent(tmp_path, "--agent", "alice", "--shared") as alice:
        await write(alice, "fact/release.md", TEXT, "fact", title="Release")
        await write(alice, "fact/release-copy.md", TEXT, "fact", title="Release")
        merged = await call(alice, "MemoryDefrag", action="merge_duplicates", dry_run=False)
        assert "merged" in merged.lower(), merged
    [stub] = stubs_of(tmp_path)

    async with agent(tmp_path, "--agent", "bob", "--shared") as bob:
        taken = await refused(bob, "MemoryWrite", file_path=stub, content="Bob's release steps.", title="Mine",
                              type="fact", tags=[], related=[], domain="ops")
        assert f"memory://{stub} belongs to alice; bob may not" in taken
        assert "belongs to alice" in await refused(bob, "MemoryDelete", file_path=stub)
        await call(bob, "MemoryDefrag", action="cleanup_stubs", dry_run=False, age_days=0, max_hits=1000)
        assert stubs_of(tmp_path) == [stub]  # bob's cleanup leaves alice's stub
        assert "tag the commit" in await call(bob, "MemoryRead", file_path=stub)  # readers still reach alice's entry

    refused_undo = defrag(tmp_path, "--agent", "bob", "--shared", "--undo")
    assert refused_undo.returncode == 1
    assert "no live defrag run of bob's to undo" in refused_undo.stderr and "was run by alice" in refused_undo.stderr
    assert stubs_of(tmp_path) == [stub]
    undone = defrag(tmp_path, "--agent", "alice", "--shared", "--undo")
    assert undone.returncode == 0, undone.stderr
    assert stubs_of(tmp_path) == []  # alice's own run is undone: both entries are back
