"""`memdir add`, `read`, `list`, `delete`, `--version` and `-h`: the entries from a person's shell."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from memdir.cli import app

runner = CliRunner()
NOTE = "The staging database is reset every Sunday at 02:00 UTC.\n"


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")
    return tmp_path / "memory"


def memdir(root, *args: str, stdin: str | None = None):
    return runner.invoke(app, [*args, "--root", str(root)], input=stdin)


def test_add_from_stdin_then_read_list_search_and_delete(root):
    added = memdir(root, "add", "fact/ops/staging-reset.md", "--tag", "staging", stdin=NOTE)
    assert added.exit_code == 0, added.output
    assert added.output.startswith("Added fact/ops/staging-reset.md (staging reset)")
    assert (root / "fact" / "ops" / "staging-reset.md").read_text() == NOTE  # byte for byte, an ordinary file

    assert memdir(root, "read", "fact/ops/staging-reset.md").output == NOTE
    assert memdir(root, "list", "fact/**").output == "fact/ops/staging-reset.md\n"
    assert "skill/meta/deep-learning.md" in memdir(root, "list").output  # the built-in skill is an entry too
    long = memdir(root, "list", "fact/**", "--long").output
    assert long.startswith("fact/ops/staging-reset.md\tstaging reset\t57\t")
    assert "fact/ops/staging-reset.md" in memdir(root, "search", "when is staging reset").output

    deleted = memdir(root, "delete", "fact/ops/staging-reset.md")
    assert deleted.exit_code == 0 and deleted.output == "Deleted fact/ops/staging-reset.md\n"
    assert not (root / "fact" / "ops" / "staging-reset.md").exists()
    assert memdir(root, "list", "fact/**").stdout == ""


def test_add_from_a_file_takes_its_heading_as_title_and_replacing_says_so(root, tmp_path):
    source = tmp_path / "deploy.md"
    source.write_text("# How we deploy\n\nMerge to main; the pipeline ships it.\n")
    assert memdir(root, "add", "skill/ops/deploy.md", str(source)).output.startswith("Added skill/ops/deploy.md (How we deploy)")
    again = memdir(root, "add", "skill/ops/deploy.md", str(source), "--title", "Deploying")
    assert again.exit_code == 0 and again.output.startswith("Replaced skill/ops/deploy.md (Deploying)")
    assert (root / "skill" / "ops" / "deploy.md").read_text() == source.read_text()


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["add", "notes/x.md"], "text", "start it with concept/, fact/, skill/, experience/"),
        (["add", "fact/x.md"], "   \n", "content is empty"),
        (["add", "fact/x.md"], "word " * 300, "250-word limit"),
        (["add", "fact/../../etc/x.md"], "text", "fact/../../etc/x.md"),
        (["add", "fact/x.md", "--title", "two\nlines"], "text", "on one line"),
    ],
)
def test_bad_input_to_add_says_what_is_wrong_and_writes_nothing(root, args, stdin, message):
    result = memdir(root, *args, stdin=stdin)
    assert result.exit_code in (1, 2)
    assert message in " ".join(result.output.split()), result.output
    assert not any(path.suffix == ".md" for path in root.rglob("*")) if root.exists() else True


def test_errors_name_the_commands_a_person_types(root):
    memdir(root, "add", "fact/a.md", stdin="A note.\n")
    for args in (["read", "fact/missing.md"], ["delete", "fact/missing.md"]):
        result = memdir(root, *args)
        assert result.exit_code == 1
        assert "memory://fact/missing.md not found." in result.output
        assert "`memdir list`" in result.output and "MemoryGlob" not in result.output


def test_version_and_short_help():
    assert runner.invoke(app, ["--version"]).output == f"memdir {version('memdir')}\n"
    short = runner.invoke(app, ["-h"])
    assert short.exit_code == 0 and "add" in short.output and "Usage: memdir" in short.output
    assert "Usage: memdir add" in runner.invoke(app, ["add", "-h"]).output


def test_rebuild_refuses_a_mistyped_directory_and_creates_nothing(tmp_path):
    missing = tmp_path / "memroy"
    result = runner.invoke(app, ["rebuild", str(missing)])
    assert result.exit_code == 1 and f"There is no memory root at {missing}; nothing was created." in result.output
    assert not missing.exists()


def test_a_broken_redirect_read_from_the_shell_names_shell_commands(root):
    (root / "fact").mkdir(parents=True)  # two stubs written by hand, each redirecting to the other
    (root / "fact" / "a.md").write_text("# merged → fact/b.md\n")
    (root / "fact" / "b.md").write_text("# merged → fact/a.md\n")
    result = memdir(root, "read", "fact/a.md")
    assert result.exit_code == 1 and "Circular redirect" in result.output
    assert "`memdir delete PATH`" in result.output and "MemoryDelete" not in result.output
