"""`memdir discover` as a Claude Code UserPromptSubmit hook: JSON in on stdin, hook JSON out, never a failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memdir.core.settings import Settings
from tests.server.launch_report import LAUNCH_AND_REPORT


def run_hook(stdin: str, *args: str, env_overrides: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMDIR_EMBEDDINGS_ENABLED": "false", **(env_overrides or {})}
    return subprocess.run(
        [sys.executable, "-m", "memdir", "discover", *args],
        input=stdin, capture_output=True, text=True, env=env, timeout=120,
    )


def payload(prompt: str, cwd: str = "/tmp/project") -> str:
    return json.dumps({
        "session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": cwd,
        "hook_event_name": "UserPromptSubmit", "prompt": prompt,
    })


@pytest.fixture
def root(tmp_path):
    from memdir.memory import Memory

    root = tmp_path / "memory"
    with Memory.open(Settings(root=root, embeddings_enabled=False)) as memory:
        memory.write("skill/git/rebase.md", "Fetch, rebase the branch onto main, run the tests, push.",
                     title="Rebase a git branch", metadata={"type": "skill", "tags": ["git", "rebase", "branch"]})
        memory.write("fact/git/remotes.md", "origin is GitHub; backup is the NAS.",
                     title="Git remotes", metadata={"type": "fact", "tags": ["git", "remotes"]})
    return root


def test_relevant_memories_become_additional_context(root):
    result = run_hook(payload("how do I rebase my git branch?"), "--root", str(root))
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert list(output) == ["hookSpecificOutput"]
    assert output["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = output["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("<system-reminder>\n🎯 Found ")
    assert 'To use: `LoadSkill(file_path: "skill/git/rebase.md")`' in context


def test_retrieval_mode_shows_no_skills(root):
    result = run_hook(payload("rebase git branch remotes"), "--root", str(root), "--mode", "retrieval")
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "🎯" not in context and "📋 **Git remotes** `fact/git/remotes.md` (fact," in context


def test_with_no_server_running_the_hook_answers_without_loading_the_command_line(root, tmp_path):
    report = tmp_path / "modules.json"
    result = subprocess.run(
        [sys.executable, "-c", LAUNCH_AND_REPORT, str(report), "discover", "--root", str(root), "--mode", "retrieval"],
        input=payload("rebase git branch remotes"), capture_output=True, text=True, timeout=120,
        env={**os.environ, "MEMDIR_EMBEDDINGS_ENABLED": "false"},
    )
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "🎯" not in context and "📋 **Git remotes** `fact/git/remotes.md` (fact," in context
    loaded = set(json.loads(report.read_text()))
    assert "memdir.memory" in loaded and not loaded & {"typer", "memdir.cli"}
    # A search answered from the index parses no YAML, and a store without episodes loads no episode code.
    assert not loaded & {"yaml", "memdir.episodes.recall"}


@pytest.mark.parametrize("prompt", ["", "   ", "what is the capital of Mongolia"])
def test_nothing_relevant_prints_nothing(root, prompt):
    result = run_hook(payload(prompt), "--root", str(root))
    assert (result.returncode, result.stdout) == (0, "")


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"prompt": 42}'])
def test_odd_input_never_fails_the_prompt(root, stdin):
    result = run_hook(stdin, "--root", str(root))
    assert (result.returncode, result.stdout) == (0, "")


def test_errors_go_to_stderr_with_exit_code_0(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = run_hook(payload("rebase my branch"), "--root", str(blocker / "memory"))
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr.startswith("memdir discover: ")


LEDGER = ("fact/ledger/database.md", "Decision: the ledger stays on Postgres 16. Owners: Priya and Tom.",
          "Ledger database decision", "fact", ["ledger", "decision"])
FEEDBACK = ("fact/feedback.md", "Merchants sent many thanks for the faster refunds; hello to the new team.",
            "Merchant feedback", "fact", ["merchants"])


def open_store(root):
    """A keyword-only `Memory` at ``root`` (the caller closes it)."""
    from memdir.memory import Memory

    return Memory.open(Settings(root=root, embeddings_enabled=False))


def write_all(memory, entries) -> None:
    """Write each (path, content, title, type, tags) as an agent would."""
    for path, content, title, kind, tags in entries:
        memory.write(path, content, title=title, metadata={"type": kind, "tags": tags})


@pytest.fixture
def payments(tmp_path):
    from memdir.tools.episode_record import episode_record

    root = tmp_path / "payments"
    with open_store(root) as memory:
        write_all(memory, [LEDGER, FEEDBACK, ("skill/test/checklist.md", "Run the contract tests, then the integration "
                                              "suite.", "Test checklist", "skill", ["testing"])])
        episode_record(memory, None, name="Refund release", outcome="success",
                       summary="Shipped the refund fix; thanks everyone, hello from the release train.")
    return root


def context_of(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] if result.stdout else ""


@pytest.mark.parametrize("prompt", ["Can you ask Bob about the ledger decision?",
                                    "Should we move the ledger database decision to CockroachDB?"])
def test_a_name_the_store_has_never_seen_does_not_silence_the_reminder(payments, prompt):
    assert "`fact/ledger/database.md`" in context_of(run_hook(payload(prompt), "--root", str(payments)))


@pytest.mark.parametrize("prompt", ["thanks!", "hello", "thanks, hello"])
def test_pleasantries_get_no_reminder(payments, prompt):
    assert context_of(run_hook(payload(prompt), "--root", str(payments))) == ""


def test_a_short_message_gets_the_entries_that_name_its_words(payments):
    context = context_of(run_hook(payload("hello test"), "--root", str(payments)))
    assert "`skill/test/checklist.md`" in context
    assert "feedback" not in context and "Refund release" not in context


@pytest.fixture
def team(tmp_path):
    root = tmp_path / "team"
    with open_store(root) as memory:
        write_all(memory, [
            LEDGER,
            ("fact/ledger/replication.md", "Priya researched synchronous and asynchronous replication for the ledger.",
             "Replication options", "fact", ["ledger"]),
            FEEDBACK,
            ("fact/payouts/schedule.md", "Merchant payouts run daily at 02:00 UTC; new merchants wait 7 days.",
             "Payout schedule", "fact", ["payouts"]),
        ])
    return root


def test_a_short_question_naming_someone_the_store_knows_gets_the_entry_holding_its_words(team):
    context = context_of(run_hook(payload("What did Priya research?"), "--root", str(team)))
    assert "`fact/ledger/replication.md`" in context
    assert "fact/ledger/database.md" not in context  # names Priya, not what she researched


@pytest.mark.parametrize("prompt", ["Can we revisit the ledger database decision in June?",
                                    "Can we revisit the ledger database decision on Monday?"])
def test_a_month_or_a_weekday_is_a_time_not_a_name_the_store_never_saw(team, prompt):
    assert "`fact/ledger/database.md`" in context_of(run_hook(payload(prompt), "--root", str(team)))


def test_a_long_message_naming_someone_the_store_knows_needs_only_the_short_threshold(team):
    prompt = "Can we revisit the ledger database decision that Priya made, and whether the team should keep it?"
    assert "`fact/ledger/database.md`" in context_of(run_hook(payload(prompt), "--root", str(team)))


def test_the_reminder_names_as_many_memories_as_fit_its_byte_budget(tmp_path):
    from memdir.memory import Memory

    root = tmp_path / "memory"
    with Memory.open(Settings(root=root, embeddings_enabled=False)) as memory:
        for number in range(12):
            memory.write(f"fact/ledger/{number}.md", f"Ledger migration rollback step {number}.", metadata={"type": "fact"})
    prompt = payload("ledger migration rollback step")
    for budget, lines in (("660", 7), ("0", 10)):  # keyword-only: the reminder says so, in 100 of its bytes
        result = run_hook(prompt, "--root", str(root), "--mode", "retrieval",
                          env_overrides={"MEMDIR_DISCOVERY_REMINDER_BYTES": budget})
        context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
        assert context.count("`fact/ledger/") == lines, context
        assert len(context.encode()) <= int(budget) or budget == "0"


@pytest.mark.model
def test_with_no_server_the_hook_waits_for_the_model_it_loads_beside_the_store(tmp_path):
    """The model loads on a thread of its own while the store opens; the hook's searches wait for
    all of it, however short the wait a search would otherwise give a model still loading."""
    from memdir.memory import Memory

    root = tmp_path / "memory"
    with Memory.open(Settings(root=root)) as memory:
        memory.write("fact/deploy/restarts.md", "The container restarts because its health check times out after a deploy.",
                     title="Why the container restarts", metadata={"type": "fact", "tags": ["docker"]})
    result = run_hook(payload("my docker container keeps restarting after the deploy, why?"), "--root", str(root),
                      env_overrides={"MEMDIR_EMBEDDINGS_ENABLED": "true", "MEMDIR_SEARCH_MODEL_WAIT": "0"})
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "`fact/deploy/restarts.md` (fact, " in context and "% match)" in context, context
    assert "keyword" not in context


@pytest.mark.model
def test_with_the_model_loading_a_root_that_is_not_there_still_fails_quietly(tmp_path):
    result = run_hook(payload("rebase my branch"), "--root", str(tmp_path / "missing"),
                      env_overrides={"MEMDIR_EMBEDDINGS_ENABLED": "true"})
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr.startswith("memdir discover: ") and "Traceback" not in result.stderr
