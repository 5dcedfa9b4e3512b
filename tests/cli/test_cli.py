"""The command line: every command has help, and the core commands work end to end (keyword-only, fast)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.settings import Settings
from memdir.memory import Memory

runner = CliRunner()
COMMANDS = ["setup", "status", "model-path", "rebuild", "search", "serve", "discover", "defrag", "ingest", "audit", "graph",
            "link", "unlink"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


@pytest.fixture
def keyword_only_root(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")
    root = tmp_path / "cli-root"
    with Memory.open(Settings(root=root)) as memory:
        memory.write("fact/deploy", "We deploy with GitHub Actions on every merge.", title="Deploy",
                     metadata={"type": "fact", "tags": ["ci"]})
    return root


def test_status_reports_root_entries_and_the_missing_model(keyword_only_root):
    result = runner.invoke(app, ["status", "--root", str(keyword_only_root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["root"] == str(keyword_only_root)
    assert data["model_state"] == "disabled" and data["embedded"] == 0
    table = runner.invoke(app, ["status", "--root", str(keyword_only_root)])
    assert "keyword-only" in table.output


def test_search_prints_results_with_their_breakdown(keyword_only_root):
    result = runner.invoke(app, ["search", "deploy merge", "--root", str(keyword_only_root), "--json"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)
    assert hits[0]["path"] == "fact/deploy.md"
    assert hits[0]["breakdown"]["semantic"] is None and hits[0]["breakdown"]["bm25"] > 0
    listed = runner.invoke(app, ["search", "deploy", "--root", str(keyword_only_root), "--explain"])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert "keyword search only" in lines[0]
    assert lines[1].startswith('1. memory://fact/deploy.md "Deploy" (fact, score ')
    assert lines[2] == "   We deploy with GitHub Actions on every merge."
    assert lines[3].startswith("   [semantic n/a · bm25 1.000")
    refused = runner.invoke(app, ["search", "deploy", "--root", str(keyword_only_root), "--top-k", "99"])
    assert refused.exit_code == 1 and "top_k must be a whole number from 1 to 50" in refused.output


def test_search_threshold_leaves_weak_results_out(keyword_only_root):
    query = ["search", "deploy or learn a topic", "--type", "fact", "--type", "skill",
             "--root", str(keyword_only_root), "--json"]
    everything = json.loads(runner.invoke(app, query).output)  # the entry and the built-in skill (skills asked for)
    cut = (everything[0]["score"] + everything[-1]["score"]) / 2
    strong = runner.invoke(app, [*query, "--threshold", str(cut)])
    assert [hit["path"] for hit in json.loads(strong.output)] == [hit["path"] for hit in everything if hit["score"] >= cut]
    assert len(everything) > len(json.loads(strong.output))


def test_rebuild_without_a_model_says_nothing_was_embedded(keyword_only_root):
    result = runner.invoke(app, ["rebuild", str(keyword_only_root)])
    assert result.exit_code == 0, result.output
    assert "nothing was embedded" in result.output


def test_errors_are_one_clear_message_not_a_traceback(keyword_only_root):
    result = runner.invoke(app, ["search", "x", "--root", str(keyword_only_root), "--agent", "../escape"])
    assert result.exit_code == 1
    assert "Error:" in result.output and "agent" in result.output and "Traceback" not in result.output


@pytest.mark.model
def test_setup_and_model_path_with_the_real_model():
    result = runner.invoke(app, ["setup"])
    assert result.exit_code == 0, result.output
    assert "Semantic search is available" in result.output
    path = runner.invoke(app, ["model-path"])
    assert path.exit_code == 0 and path.output.strip()


def test_link_graph_unlink(keyword_only_root):
    with Memory.open(Settings(root=keyword_only_root)) as memory:
        memory.write("fact/ci", "CI runs the tests.", title="CI")
    root = ["--root", str(keyword_only_root)]
    linked = runner.invoke(app, ["link", "fact/deploy", "fact/ci", "--kind", "implements", "--strength", "0.7", *root])
    assert linked.exit_code == 0 and linked.output.strip() == "Linked memory://fact/deploy.md —implements 0.70→ memory://fact/ci.md"
    shown = runner.invoke(app, ["graph", "fact/ci", "--mermaid", *root])
    assert '—implements 0.70 (user)→ memory://fact/ci.md "CI"' in shown.output and "```mermaid" in shown.output
    wrong = runner.invoke(app, ["link", "fact/deploy", "fact/ci", "--kind", "implments", *root])
    assert wrong.exit_code == 1 and "Did you mean 'implements'?" in wrong.output
    removed = runner.invoke(app, ["unlink", "fact/deploy", "fact/ci", *root])
    assert removed.exit_code == 0 and "Removed 1 link" in removed.output


def test_a_defrag_dry_run_says_how_to_apply_it_in_the_commands_words(keyword_only_root):
    result = runner.invoke(app, ["defrag", "--action", "cleanup_stubs", "--root", str(keyword_only_root)])
    assert result.exit_code == 0, result.output
    assert "nothing was changed. Run again with --live to apply." in " ".join(result.output.split()).replace("`", "")
    assert "dry_run" not in result.output and "MemoryDefrag" not in result.output
