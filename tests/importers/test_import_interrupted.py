"""An import stopped halfway is undone: killed (SIGKILL to a real `memdir import` process), by the next
import; stopped by Ctrl-C, at once.

For the kill, the store first holds an earlier import of three entities and an agent's own entry. A second
import of a changed, larger version of the source is killed once its first batch is on disk (so
it has created entries and changed the three); the next import (of another file) finds the
journal it left, puts every entry back as it was before the killed run, and says so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.settings import Settings
from memdir.importers.plan import BATCH
from memdir.memory import Memory

runner = CliRunner()
ENTITIES = BATCH * 3


def entities(path: Path, count: int, version: str) -> None:
    path.write_text("".join(json.dumps({"type": "entity", "name": f"Entity {i}", "entityType": "thing",
                                        "observations": [f"Entity {i} says {version}."]}) + "\n" for i in range(count)))


def imported(root: Path) -> dict[str, str]:
    with Memory.open(Settings(root=root), load_model=False, read_only=True) as memory:
        return {info.path: memory.read(info.path).content for info in memory.list("concept/")}


@pytest.mark.slow
def test_an_import_killed_halfway_is_undone_by_the_next(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")
    root, first, second, other = tmp_path / "memory", tmp_path / "v1.jsonl", tmp_path / "v2.jsonl", tmp_path / "other.jsonl"
    entities(first, 3, "one")
    assert runner.invoke(app, ["import", "--from", "mcp-memory", str(first), "--root", str(root)]).exit_code == 0
    with Memory.open(Settings(root=root), load_model=False) as memory:
        memory.write("concept/notes/mine.md", "An agent's own note.", title="Mine")
    before = imported(root)
    assert len(before) == 4 and "Entity 0 says one." in before["concept/thing/entity-0.md"]

    entities(second, ENTITIES, "two")
    process = subprocess.Popen([sys.executable, "-m", "memdir", "import", "--from", "mcp-memory", str(second),
                                "--root", str(root)], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journals = root / ".memdir" / "imports"
    deadline = time.monotonic() + 120
    while len(list((root / "concept" / "thing").glob("*.md"))) < BATCH + 20:  # into its second batch
        assert process.poll() is None, "the import ended before it could be stopped"
        assert time.monotonic() < deadline, "the import wrote too slowly to be stopped halfway"
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL
    half = imported(root)
    assert BATCH < len(half) - 1 < ENTITIES and "Entity 0 says two." in half["concept/thing/entity-0.md"]
    assert len(list(journals.glob("*.jsonl"))) == 1  # what it did is on record

    entities(other, 1, "other")  # another import: it undoes the stopped one first, then does its own
    other.write_text(other.read_text().replace("Entity 0", "Other"))
    result = runner.invoke(app, ["import", "--from", "mcp-memory", str(other), "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert f"An earlier mcp-memory import of {second} (started " in result.output
    assert "was stopped halfway; what it wrote was undone" in result.output
    assert "mcp-memory: 1 imported" in result.output
    after = imported(root)
    assert {path: text for path, text in after.items() if path != "concept/thing/other.md"} == before
    assert list(journals.glob("*.jsonl")) == []
    with Memory.open(Settings(root=root), load_model=False, read_only=True) as memory:
        found = {result.path for result in memory.search("Entity 300 says two", top_k=50)}
        assert "concept/thing/entity-300.md" not in found  # nothing of it left in the index either
        assert {path for path in found if path.startswith("concept/")} <= set(after)


def test_a_conversation_import_stopped_by_ctrl_c_is_undone_at_once(tmp_path, monkeypatch):
    from memdir.importers import conversations
    from tests.importers.test_import_cli import CLAUDE

    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")
    monkeypatch.setattr(conversations, "BATCH", 1)  # one conversation a batch: the second batch is stopped
    root, source = tmp_path / "memory", tmp_path / "conversations.json"
    second = {**CLAUDE[0], "uuid": "c0ffee00-0000-4000-8000-000000000009", "name": "Roll out the migration"}
    source.write_text(json.dumps([CLAUDE[0], second]))
    written = conversations.write_planned
    calls = []

    def stopped_on_the_second(memory, plans):
        calls.append(plans)
        if len(calls) == 2:
            written(memory, plans)  # the second batch is on disk when Ctrl-C comes
            raise KeyboardInterrupt
        return written(memory, plans)

    monkeypatch.setattr(conversations, "write_planned", stopped_on_the_second)
    result = runner.invoke(app, ["import", "--from", "claude", str(source), "--root", str(root)])
    assert result.exit_code != 0 and len(calls) == 2
    assert imported_episodes(root) == []  # neither the first batch nor the second is left
    assert list((root / ".memdir" / "imports").glob("*.jsonl")) == []
    monkeypatch.setattr(conversations, "write_planned", written)
    assert runner.invoke(app, ["import", "--from", "claude", str(source), "--root", str(root)]).exit_code == 0
    assert sorted(imported_episodes(root)) == ["Plan the database migration", "Roll out the migration"]


def imported_episodes(root: Path) -> list[str]:
    with Memory.open(Settings(root=root), load_model=False, read_only=True) as memory:
        return [memory.read(info.path).title for info in memory.list("experience/episodes/")]


def test_a_journal_planted_by_hand_is_set_aside_and_undoes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")
    root, source = tmp_path / "memory", tmp_path / "memory.jsonl"
    with Memory.open(Settings(root=root), load_model=False) as memory:
        memory.write("concept/notes/mine.md", "An agent's own note.", title="Mine")
    journals = root / ".memdir" / "imports"
    journals.mkdir(parents=True)
    (journals / "planted.jsonl").write_text(
        json.dumps({"type": "run", "format": "mcp-memory", "source": "x", "agent": None, "started": "now"}) + "\n"
        + json.dumps({"type": "before", "path": "../../outside.md", "state": {"state": "missing"}}) + "\n"
        + json.dumps({"type": "before", "path": "concept/notes/mine.md", "state": {"state": "missing"}}) + "\n")
    entities(source, 1, "one")
    result = runner.invoke(app, ["import", "--from", "mcp-memory", str(source), "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert "undone" not in result.output and "mcp-memory: 1 imported" in result.output
    assert "concept/notes/mine.md" in imported(root)  # nothing the planted journal names was touched
    assert [path.name for path in (journals / "quarantine").iterdir()] == ["planted.jsonl"]
