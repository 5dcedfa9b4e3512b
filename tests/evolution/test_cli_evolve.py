"""`memdir evolve` and `memdir unarchive` from the command line."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import yaml
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.settings import Settings
from memdir.memory import Memory
from tests.fakes import FakeEmbedder

runner = CliRunner()


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "memory"
    long_ago = datetime.now(UTC) - timedelta(days=400)
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        memory.write("concept/forgotten.md", "Nobody reads this note about quasars.", title="Quasars", updated_at=long_ago)
        memory.write("concept/vital.md", "Key rotation happens every quarter.", title="Keys", metadata={"importance": 9})
    return root


def archived(root, path: str) -> bool:
    sidecar = yaml.safe_load((root / path).with_suffix(".yml").read_text())
    return "archived_at" in (sidecar.get("metadata") or {})


def evolve(root, *args: str):
    return runner.invoke(app, ["evolve", *args, "--root", str(root)])


def test_help_lists_the_jobs_and_options():
    result = runner.invoke(app, ["evolve", "--help"])
    assert result.exit_code == 0
    for word in ("importance", "links", "archival", "consolidation", "--dry-run", "--history", "--undo"):
        assert word in result.output


def test_a_dry_run_says_what_it_would_change_and_changes_nothing(root):
    result = evolve(root, "archival", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "archival: complete, 2 items looked at, 1 would change" in result.output
    assert "memory://concept/forgotten.md: archived (never read in 400 days)" in result.output
    assert not archived(root, "concept/forgotten.md")


def test_all_runs_every_job_and_the_history_shows_them(root):
    result = evolve(root, "all")
    assert result.exit_code == 0, result.output
    assert [line.split(":")[0] for line in result.output.splitlines() if not line.startswith(" ")] == [
        "importance", "links", "archival", "consolidation"]
    assert archived(root, "concept/forgotten.md")

    history = evolve(root, "--history", "--json")
    runs = json.loads(history.output)
    assert [(run["job"], run["status"], run["dry_run"]) for run in runs] == [
        ("importance", "complete", False), ("links", "complete", False), ("archival", "complete", False),
        ("consolidation", "complete", False)]
    table = evolve(root, "--history")
    assert "archival" in table.output and "complete" in table.output


def test_unarchive_and_undo(root):
    evolve(root, "archival")
    restored = runner.invoke(app, ["unarchive", "concept/forgotten.md", "--root", str(root)])
    assert restored.exit_code == 0 and "back in search" in restored.output
    assert not archived(root, "concept/forgotten.md")
    again = runner.invoke(app, ["unarchive", "concept/forgotten.md", "--root", str(root)])
    assert again.exit_code == 1 and "is not archived" in again.output

    evolve(root, "archival")  # nothing: the restore counted as a use
    assert not archived(root, "concept/forgotten.md")


def test_undo_reverts_the_last_archival_run(root):
    evolve(root, "archival")
    undone = evolve(root, "--undo")
    assert undone.exit_code == 0 and "restored memory://concept/forgotten.md" in undone.output
    assert not archived(root, "concept/forgotten.md")
    nothing = evolve(root, "--undo")
    assert nothing.exit_code == 1 and "no live archival or consolidation run to undo" in nothing.output


def test_bad_input_is_refused_clearly(root):
    assert "name a job" in evolve(root).output
    wrong = evolve(root, "importanse")
    assert wrong.exit_code == 2 and "importanse" in wrong.output
    missing = runner.invoke(app, ["unarchive", "concept/none.md", "--root", str(root)])
    assert missing.exit_code == 1 and "concept/none.md" in missing.output


def test_a_job_running_elsewhere_is_refused_with_a_clear_message(root):
    from memdir.evolution.runner import job_lock

    with job_lock(root, "archival"):
        result = evolve(root, "archival")
    assert result.exit_code == 1
    assert "The archival job is running in another process" in result.output and "--history" in result.output


def test_the_history_of_a_store_without_runs(root):
    assert "No evolution job has run on this memory yet" in evolve(root, "--history").output


def test_what_a_person_stated_as_important_is_never_archived_whatever_the_importance_job_computes(tmp_path):
    root = tmp_path / "memory"
    long_ago = datetime.now(UTC) - timedelta(days=400)
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        memory.write("fact/ledger.md", "The ledger stays on Postgres until 2027.", title="Ledger",
                     metadata={"importance": 9}, updated_at=long_ago)
    recalibrated = evolve(root, "importance")
    assert recalibrated.exit_code == 0, recalibrated.output
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        assert memory.importance("fact/ledger.md") < 7  # never read in 400 days: the job lowers it
    result = evolve(root, "archival")
    assert result.exit_code == 0, result.output
    assert not archived(root, "fact/ledger.md")
