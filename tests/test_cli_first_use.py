"""The command line as a new user meets it: hand-written notes, --root everywhere, clear answers to bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memdir.cli import app

runner = CliRunner()


@pytest.fixture
def hand_written_root(tmp_path, monkeypatch):
    """A root holding one note written with an editor: a .md under concept/, no metadata at all."""
    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")
    root = tmp_path / "notes"
    (root / "concept").mkdir(parents=True)
    (root / "concept" / "ruby.md").write_text("# Ruby classes\n\nClasses in Ruby are open: reopen them to add methods.\n")
    return root


def test_a_hand_written_note_takes_its_folders_type(hand_written_root):
    found = runner.invoke(app, ["search", "ruby classes", "--root", str(hand_written_root), "--type", "concept", "--json"])
    assert found.exit_code == 0, found.output
    assert [(hit["path"], hit["type"]) for hit in json.loads(found.output)] == [("concept/ruby.md", "concept")]
    health = json.loads(runner.invoke(app, ["defrag", "--root", str(hand_written_root), "--json"]).output)
    assert health["by_type"] == {"concept": 1} and sum(health["by_type"].values()) == health["total_entries"]


@pytest.mark.parametrize("command", ["setup", "status", "rebuild", "search", "serve", "discover", "defrag", "ingest",
                                     "hook session-start", "hook session-end"])
def test_every_command_on_a_root_takes_root(command):
    result = runner.invoke(app, [*command.split(), "--help"])
    assert "--root" in result.output


@pytest.mark.parametrize("command", ["rebuild", "defrag"])
def test_rebuild_and_defrag_take_root_as_an_option_and_as_the_older_positional(command, hand_written_root, tmp_path):
    for args in (["--root", str(hand_written_root)], [str(hand_written_root)]):
        result = runner.invoke(app, [command, *args])
        assert result.exit_code == 0, result.output
    assert (hand_written_root / ".memdir").is_dir() and not (tmp_path / "memory").exists()  # not the default root
    both = runner.invoke(app, [command, str(tmp_path / "other"), "--root", str(hand_written_root)])
    assert both.exit_code == 2 and "different roots" in both.output


def test_a_mistyped_type_names_the_types_and_the_closest(hand_written_root):
    result = runner.invoke(app, ["search", "ruby", "--root", str(hand_written_root), "--type", "concepts"])
    assert result.exit_code == 2
    assert "'concepts' is not an entry type" in result.output and "concept, fact, skill, experience" in result.output
    assert "Did you mean 'concept'?" in result.output


@pytest.mark.parametrize("option", [["--threshold", "2"], ["--threshold", "-0.1"], ["--top-k", "0"]])
def test_search_refuses_numbers_out_of_range(hand_written_root, option):
    result = runner.invoke(app, ["search", "ruby", "--root", str(hand_written_root), *option])
    assert result.exit_code == 2 and f"Invalid value for '{option[0]}'" in result.output


def test_a_search_that_finds_nothing_says_so(hand_written_root):
    plain = runner.invoke(app, ["search", "zeppelin", "--root", str(hand_written_root)])
    assert plain.exit_code == 0 and "No results for 'zeppelin'." in plain.output
    narrowed = runner.invoke(app, ["search", "ruby", "--root", str(hand_written_root), "--type", "fact"])
    assert "No results for 'ruby' within --type." in narrowed.output


@pytest.mark.parametrize("content, problem", [
    ('{"not": "a list"}', "not Claude Code transcript JSONL"),
    ("just some notes\nin a text file\n", "not Claude Code transcript JSONL"),
    ('[{"role": "user", "content": "hi"}, 3]', "Message 1 of the transcript is int 3, not an object"),
])
def test_ingest_of_something_that_is_no_transcript_is_an_error(hand_written_root, tmp_path, content, problem):
    transcript = tmp_path / "transcript.json"
    transcript.write_text(content)
    result = runner.invoke(app, ["ingest", str(transcript), "--root", str(hand_written_root), "--no-topic"])
    assert result.exit_code == 1 and problem in result.output and "Traceback" not in result.output
    assert "role" in result.output  # the hint names the formats it takes
