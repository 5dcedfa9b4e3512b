"""`memdir thread …`: every command through typer's CliRunner."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.tools.thread_append import thread_append

runner = CliRunner()


def seed_thread(root, turns=12):
    with Memory.open(Settings(root=root), load_model=False) as memory:
        for turn in range(turns):
            role = "user" if turn % 2 == 0 else "assistant"
            thread_append(memory, "demo", role, f"Turn {turn}: fixing the ValueError in store.py. Then more.")


def run(*args):
    result = runner.invoke(app, ["thread", *args])
    return result.exit_code, result.output


def test_list_show_and_replay(tmp_path):
    root = tmp_path / "memory"
    seed_thread(root)
    code, out = run("list", "--root", str(root))
    assert code == 0 and out.startswith("Threads (1):\n- demo · 12 chunks · 13 events · strategy virtual · mode auto")
    code, out = run("list", "--root", str(root), "--json")
    assert json.loads(out)[0] == {"thread": "demo", "chunks": 12, "events": 13, "strategy": "virtual", "mode": "auto",
                                  "forked_from": None}
    code, out = run("show", "demo", "--root", str(root), "--budget", "60")
    assert code == 0 and "Thread demo: version 13" in out and "Thread demo · strategy virtual ·" in out
    code, out = run("replay", "demo", "--root", str(root), "--events")
    assert code == 0 and "Replayed 13 events: 12 chunks" in out and "identical" in out and "\tADD\tc2" in out


def test_compact_fork_mode_step_and_strategy(tmp_path):
    root = tmp_path / "memory"
    seed_thread(root)
    code, out = run("compact", "demo", "--root", str(root))
    assert code == 0 and out.startswith("Compacted 4 chunks") and "extractive summary" in out
    assert run("fork", "demo", "demo-2", "--root", str(root))[1].startswith("Forked demo into demo-2")
    assert "is stepping" in run("mode", "demo", "stepping", "--root", str(root))[1]
    assert run("step", "demo", "--root", str(root))[1].startswith("Step: nothing to do")
    assert run("strategy", "demo", "hnsw", "--root", str(root))[1].startswith("Thread demo now uses the semantic strategy")
    code, out = run("strategy", "demo", "quantum", "--root", str(root))
    assert code == 1 and "unknown context strategy 'quantum'" in out


def test_unknown_thread_is_a_clear_error(tmp_path):
    code, out = run("show", "ghost", "--root", str(tmp_path / "memory"))
    assert code == 1 and "no thread 'ghost'" in out


def test_a_thread_becomes_episodes_once(tmp_path):
    root = tmp_path / "memory"
    seed_thread(root)
    code, out = run("episodes", "demo", "--root", str(root), "--no-topic")
    assert code == 0 and "1 episode: 1 new" in out
    code, out = run("episodes", "demo", "--root", str(root), "--no-topic")
    assert "1 episode: 0 new, 0 updated, 1 unchanged" in out
    with Memory.open(Settings(root=root), load_model=False) as memory:
        paths = [info.path for info in memory.list("experience/episodes/")]
        assert len(paths) == 1 and memory.read(paths[0]).metadata.model_dump()["session_id"] == "thread-demo"


def test_every_thread_command_has_help():
    for command in ("list", "show", "replay", "compact", "step", "fork", "strategy", "mode", "episodes"):
        code, out = run(command, "--help")
        assert code == 0 and "Usage" in out, command
