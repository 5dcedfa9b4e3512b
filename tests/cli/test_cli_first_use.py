"""The command line as a new user meets it: hand-written notes, --root everywhere, clear answers to bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
                                     "hook session-start", "hook session-end", "thread list", "thread show"])
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
    assert plain.exit_code == 0 and "No memory entries found for 'zeppelin'." in plain.output
    narrowed = runner.invoke(app, ["search", "ruby", "--root", str(hand_written_root), "--type", "fact"])
    assert "No memory entries found for 'ruby'." in narrowed.output


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


# --------------------------------------------------------------------------- small things a new user notices
def test_flags_show_as_flags_in_help():
    for command in (["status"], ["search"], ["defrag"], ["ingest"], ["thread", "list"]):
        help_text = runner.invoke(app, [*command, "--help"]).output
        assert "<bool>" not in help_text and "--json " in help_text


def test_counts_of_one_are_singular(hand_written_root, tmp_path):
    transcript = tmp_path / "chat.json"
    transcript.write_text(json.dumps([{"role": "user", "content": "Please fix the flaky upload test in CI"},
                                      {"role": "assistant", "content": "Fixed: the test waited on a real clock."}]))
    ingested = runner.invoke(app, ["ingest", str(transcript), "--root", str(hand_written_root), "--no-topic"])
    assert "1 episode: 1 new" in ingested.output
    (hand_written_root / "concept" / "ruby-copy.md").write_text((hand_written_root / "concept" / "ruby.md").read_text())
    merged = runner.invoke(app, ["defrag", "--root", str(hand_written_root), "--action", "merge_duplicates", "--live"])
    assert merged.exit_code == 0, merged.output
    undone = runner.invoke(app, ["defrag", "--root", str(hand_written_root), "--undo"])
    assert "Restored 1 entry and" in undone.output, undone.output


def test_defrag_names_the_command_to_type_next(hand_written_root):
    (hand_written_root / "concept" / "ruby-copy.md").write_text((hand_written_root / "concept" / "ruby.md").read_text())
    result = runner.invoke(app, ["defrag", "--root", str(hand_written_root), "--action", "find_duplicates"])
    assert "`memdir defrag --action merge_duplicates`" in result.output


def test_piped_output_never_wraps_a_path(hand_written_root):
    folder = hand_written_root / "concept" / "a-rather-long-folder-name-for-notes" / "about-the-ruby-language"
    folder.mkdir(parents=True)
    (folder / "open-classes-and-monkey-patching-explained.md").write_text("# Open classes\n\nRuby classes stay open.\n")
    path = "concept/a-rather-long-folder-name-for-notes/about-the-ruby-language/open-classes-and-monkey-patching-explained.md"
    found = runner.invoke(app, ["search", "open classes monkey patching", "--root", str(hand_written_root)])
    assert path in found.output  # one piece, on one line
    ingested = runner.invoke(app, ["rebuild", "--root", str(hand_written_root)])
    assert ingested.output.count("\n") <= 2, ingested.output


def test_a_missing_model_is_explained_once(hand_written_root, tmp_path):
    env = {**os.environ, "MEMDIR_EMBEDDINGS_ENABLED": "true", "MEMDIR_MODEL_DIR": str(tmp_path / "no-model-here")}

    def run(*args: str) -> str:  # a real process: the model's warning is logged to its stderr
        done = subprocess.run([sys.executable, "-m", "memdir", *args, "--root", str(hand_written_root)], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    rebuilt = run("rebuild")
    assert "nothing was embedded" in rebuilt and rebuilt.count("no-model-here") == 1, rebuilt
    status = run("status")
    assert status.count("no-model-here") == 2, status  # the warning, and the table's reason row


def test_a_new_user_without_the_model_package_hears_once_that_semantic_search_is_unavailable(hand_written_root, tmp_path):
    no_package = "import memdir.embeddings.resolve as r; r.find_package_model = lambda: None; from memdir.cli import app; app()"
    env = {**os.environ, "MEMDIR_EMBEDDINGS_ENABLED": "true", "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1",
           "MEMDIR_CACHE_DIR": str(tmp_path / "cache")}  # nor the files `memdir setup` fetches
    done = subprocess.run([sys.executable, "-c", no_package, "status", "--root", str(hand_written_root)], env=env,
                          capture_output=True, text=True, timeout=120)
    said = (done.stdout + done.stderr).lower()
    assert done.returncode == 0 and "no embedding model found" in said, said
    assert said.count("semantic search") == 1 and said.count("no embedding model found") == 2, said  # warning + reason row
    assert "search is keyword-only" in said


def test_an_ingested_episode_quotes_no_markers_and_tags_commands_named_in_prose(hand_written_root, tmp_path):
    transcript = tmp_path / "chat.json"
    transcript.write_text(json.dumps([
        {"role": "user", "content": "EPISODE: release 1.2\nPlease tag the release and push it."},
        {"role": "assistant", "content": "I ran pytest, then did git push with the tag."},
    ]))
    runner.invoke(app, ["ingest", str(transcript), "--root", str(hand_written_root), "--no-topic"])
    (entry,) = (hand_written_root / "experience" / "episodes").rglob("*.md")
    assert entry.read_text().startswith("# release 1.2\n") and "EPISODE:" not in entry.read_text()
    found = json.loads(runner.invoke(app, ["search", "release", "--root", str(hand_written_root), "--tag", "pytest",
                                           "--tag", "git", "--json"]).output)
    assert [hit["path"] for hit in found] == [entry.relative_to(hand_written_root).as_posix()]


@pytest.mark.parametrize("args, problem", [
    (["status", "--root", "{file}"], "Invalid value for '--root'"),
    (["rebuild", "{file}"], "Invalid value for 'DIR'"),
    (["search", "  ", "--root", "{root}"], "the query is empty"),
    (["serve", "--root", "{root}", "--workspace", "{root}/no-such-folder"], "Invalid value for '--workspace'"),
])
def test_other_bad_input_is_refused_before_anything_runs(hand_written_root, args, problem):
    a_file = hand_written_root / "concept" / "ruby.md"
    result = runner.invoke(app, [arg.format(file=a_file, root=hand_written_root) for arg in args])
    assert result.exit_code == 2 and problem in result.output, result.output


@pytest.mark.parametrize("args, suggestion", [
    (["--action", "analyse"], "Did you mean 'analyze'?"),
    (["--action", "merge_duplicates", "--strategy", "keep_newest"], "Did you mean 'keep_newer'?"),
])
def test_defrag_suggests_the_closest_choice(hand_written_root, args, suggestion):
    result = runner.invoke(app, ["defrag", "--root", str(hand_written_root), *args])
    assert result.exit_code == 1 and suggestion in result.output, result.output


@pytest.mark.model
def test_a_fresh_root_is_healthy_and_rebuild_says_what_it_did(tmp_path):
    root = tmp_path / "fresh"
    root.mkdir()
    first = json.loads(runner.invoke(app, ["status", "--root", str(root), "--json"]).output)
    assert (first["entries"], first["builtins"], first["embedded"], first["stale"], first["index_fresh"]) == (0, 1, 0, 0, True)
    table = runner.invoke(app, ["status", "--root", str(root)]).output
    assert "built-in entries" in table and "need embedding" not in table
    rebuilt = runner.invoke(app, ["rebuild", "--missing-only", "--root", str(root)])
    assert "Index rebuilt: 0 entries embedded (and 1 built-in entry)." in rebuilt.output
    again = json.loads(runner.invoke(app, ["status", "--root", str(root), "--json"]).output)
    assert (again["entries"], again["embedded"], again["stale"], again["index_fresh"]) == (0, 0, 0, True)
