"""The Claude Code hooks' stdin/stdout formats: `memdir hook session-end` and `memdir hook session-start`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.entry import EPISODES_PREFIX
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.server.modes import MODES, tools_for_mode

runner = CliRunner()


@pytest.fixture(autouse=True)
def keyword_only(monkeypatch):
    """Hooks open the configured model; tests keep them off onnxruntime."""
    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")


@pytest.fixture
def transcript(tmp_path):
    path = tmp_path / "abc.jsonl"
    lines = [
        {"type": "user", "sessionId": "abc", "cwd": "/src/memdir", "timestamp": "2025-06-01T10:00:00Z",
         "message": {"role": "user", "content": "Fix the KeyError in loader.py"}},
        {"type": "assistant", "sessionId": "abc", "cwd": "/src/memdir", "timestamp": "2025-06-01T10:02:00Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Fixed; all tests pass."}]}},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def episodes(root):
    with Memory.open(Settings(root=root), load_model=False) as memory:
        return [info.path for info in memory.list(EPISODES_PREFIX)]


def end_payload(transcript, event="SessionEnd"):
    return json.dumps({"session_id": "abc", "transcript_path": str(transcript), "cwd": "/src/memdir",
                       "hook_event_name": event, "reason": "exit"})


@pytest.mark.parametrize("event", ["SessionEnd", "Stop"])
def test_session_end_ingests_the_transcript(tmp_path, transcript, event):
    root = tmp_path / "memory"
    result = runner.invoke(app, ["hook", "session-end", "--root", str(root)], input=end_payload(transcript, event))
    assert result.exit_code == 0 and result.stdout == ""
    assert "1 episode: 1 new" in result.stderr
    assert len(episodes(root)) == 1
    again = runner.invoke(app, ["hook", "session-end", "--root", str(root)], input=end_payload(transcript, event))
    assert again.exit_code == 0 and "0 new, 0 updated, 1 unchanged" in again.stderr


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("", "no transcript_path"),
        ("not json", "no transcript_path"),
        (json.dumps({"transcript_path": "/nonexistent/x.jsonl"}), "does not exist"),
    ],
)
def test_session_end_never_fails_the_session(tmp_path, stdin, message):
    result = runner.invoke(app, ["hook", "session-end", "--root", str(tmp_path / "m")], input=stdin)
    assert result.exit_code == 0 and result.stdout == "" and message in result.stderr


def test_session_end_survives_a_broken_transcript(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[{broken", encoding="utf-8")
    payload = json.dumps({"transcript_path": str(bad)})
    result = runner.invoke(app, ["hook", "session-end", "--root", str(tmp_path / "m")], input=payload)
    assert result.exit_code == 0 and "could not ingest the session" in result.stderr


def test_session_start_prints_nothing_without_episodes(tmp_path):
    payload = json.dumps({"session_id": "new", "cwd": "/src/memdir", "hook_event_name": "SessionStart", "source": "startup"})
    result = runner.invoke(app, ["hook", "session-start", "--root", str(tmp_path / "m")], input=payload)
    assert result.exit_code == 0 and result.stdout == ""


def test_session_start_prints_the_reminder_as_additional_context(tmp_path, transcript):
    root = tmp_path / "memory"
    runner.invoke(app, ["hook", "session-end", "--root", str(root)], input=end_payload(transcript))
    payload = json.dumps({"session_id": "new", "cwd": "/src/memdir", "hook_event_name": "SessionStart", "source": "startup"})
    result = runner.invoke(app, ["hook", "session-start", "--root", str(root)], input=payload)
    assert result.exit_code == 0
    output = json.loads(result.stdout)
    assert list(output) == ["hookSpecificOutput"]
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = output["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("<system-reminder>\n🧭 Where we left off in memdir")
    assert '"Fix the KeyError in loader.py"' in context
    other = json.dumps({"cwd": "/src/elsewhere", "hook_event_name": "SessionStart"})
    assert runner.invoke(app, ["hook", "session-start", "--root", str(root)], input=other).stdout == ""


def test_session_start_names_only_tools_every_mode_offers(tmp_path, transcript):
    """The hook does not know the server's mode: the assistant (default) and retrieval modes have no EpisodeList."""
    root = tmp_path / "memory"
    runner.invoke(app, ["hook", "session-end", "--root", str(root)], input=end_payload(transcript))
    result = runner.invoke(app, ["hook", "session-start", "--root", str(root)], input=json.dumps({"cwd": "/src/memdir"}))
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    named = set(re.findall(r"`([A-Z]\w+)[`(]", context))  # `Tool(...)` or `Tool`
    in_every_mode = set.intersection(*(set(tools_for_mode(mode)) for mode in MODES))
    assert named and named <= in_every_mode, context


def test_session_start_never_fails_the_session(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("x")
    result = runner.invoke(app, ["hook", "session-start", "--root", str(blocked / "sub")], input="{}")
    assert result.exit_code == 0 and result.stdout == "" and "could not build" in result.stderr


def test_hooks_run_as_real_commands(tmp_path, transcript):
    """The installed entry point reads real stdin and writes real stdout (what Claude Code runs)."""
    env = {**os.environ, "MEMDIR_ROOT": str(tmp_path / "memory")}
    command = [sys.executable, "-c", "from memdir.cli import app; app()"]
    end = subprocess.run([*command, "hook", "session-end"], input=end_payload(transcript), env=env,
                         capture_output=True, text=True, timeout=120)
    assert end.returncode == 0, end.stderr
    start = subprocess.run([*command, "hook", "session-start"], input=json.dumps({"cwd": "/src/memdir"}), env=env,
                           capture_output=True, text=True, timeout=120)
    assert start.returncode == 0 and json.loads(start.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


def test_ingest_command(tmp_path, transcript):
    root = tmp_path / "memory"
    first = runner.invoke(app, ["ingest", str(transcript), "--root", str(root), "--json"])
    assert first.exit_code == 0, first.output
    assert len(json.loads(first.stdout)["created"]) == 1
    second = runner.invoke(app, ["ingest", str(transcript), "--root", str(root)])
    assert second.exit_code == 0 and "0 new, 0 updated, 1 unchanged" in second.stdout
    missing = runner.invoke(app, ["ingest", str(tmp_path / "nope.jsonl"), "--root", str(root)])
    assert missing.exit_code == 1 and "Cannot read transcript" in missing.stderr
