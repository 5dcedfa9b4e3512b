"""The workspace tools' logic: confinement to the workspace, skill permissions, read-before-write, Bash rules."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.core.user_regex import RegexBudget
from memdir.workspace.bash import check_command, command_parts, run_bash
from memdir.workspace.tools import (
    FileReads,
    ToolPermissions,
    Workspace,
    WorkspaceError,
    WorkspacePermissionError,
    edit_file,
    glob_files,
    grep_files,
    path_matches,
    permissions_for,
    read_file,
    write_file,
)

NONE = ToolPermissions()


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "ws"
    (root / "src" / "secrets").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "src" / "secrets" / "key.txt").write_text("hunter2\n")
    (root / "README.md").write_text("# Demo\n")
    (tmp_path / "outside.txt").write_text("not yours\n")
    return root


@pytest.fixture
def workspace(root):
    return Workspace.create(root, allow_bash=True, bash_timeout=5)


@pytest.fixture
def reads():
    return FileReads()


# --------------------------------------------------------------------------- confinement
@pytest.mark.parametrize("path", ["../outside.txt", "src/../../outside.txt", "/etc/passwd"])
def test_paths_outside_the_workspace_are_refused(workspace, reads, path):
    with pytest.raises(WorkspacePermissionError, match="is outside the workspace"):
        read_file(workspace, reads, NONE, path)


def test_a_symlink_pointing_out_of_the_workspace_is_refused(workspace, reads, root):
    (root / "escape").symlink_to(root.parent / "outside.txt")
    with pytest.raises(WorkspacePermissionError, match="outside the workspace"):
        read_file(workspace, reads, NONE, "escape")
    with pytest.raises(WorkspacePermissionError, match="outside the workspace"):
        write_file(workspace, reads, NONE, "escape", "overwrite")
    assert (root.parent / "outside.txt").read_text() == "not yours\n"


def test_glob_and_grep_never_list_files_behind_outward_symlinks(workspace, root):
    (root / "linked").symlink_to(root.parent)
    assert "outside" not in glob_files(workspace, NONE, "**/*")
    assert grep_files(workspace, NONE, "not yours") == "No matches found for 'not yours'."


def test_absolute_paths_inside_the_workspace_are_fine(workspace, reads, root):
    assert "def main" in read_file(workspace, reads, NONE, str(root / "src" / "app.py"))


def test_a_filesystem_root_workspace_is_refused(reads):
    with pytest.raises(WorkspacePermissionError, match="filesystem root"):
        read_file(Workspace.create(os.path.abspath(os.sep)), reads, NONE, "etc/hostname")


# --------------------------------------------------------------------------- Read / Write / Edit
def test_read_numbers_lines_like_cat_n(workspace, reads):
    assert read_file(workspace, reads, NONE, "src/app.py") == "     1\tdef main():\n     2\t    return 1"


def test_read_offset_and_limit(workspace, reads, root):
    (root / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    text = read_file(workspace, reads, NONE, "long.txt", offset=3, limit=2)
    assert text.splitlines()[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "Showing lines 3-4 of 10" in text


def test_write_creates_files_and_folders(workspace, reads, root):
    assert write_file(workspace, reads, NONE, "docs/new.md", "hello") == "Created docs/new.md (5 bytes)."
    assert (root / "docs" / "new.md").read_text() == "hello"


def test_overwriting_needs_a_read_first_and_refuses_stale_content(workspace, reads, root):
    with pytest.raises(WorkspaceError, match="has not been read in this session"):
        write_file(workspace, reads, NONE, "README.md", "# New\n")
    read_file(workspace, reads, NONE, "README.md")
    (root / "README.md").write_text("# Changed by someone else\n")
    with pytest.raises(WorkspaceError, match="has changed since you last read it"):
        write_file(workspace, reads, NONE, "README.md", "# New\n")
    read_file(workspace, reads, NONE, "README.md")
    assert write_file(workspace, reads, NONE, "README.md", "# New\n") == "Updated README.md (6 bytes)."


def test_edit_replaces_unique_text_after_a_read(workspace, reads, root):
    with pytest.raises(WorkspaceError, match="has not been read"):
        edit_file(workspace, reads, NONE, "src/app.py", "return 1", "return 2")
    read_file(workspace, reads, NONE, "src/app.py")
    assert edit_file(workspace, reads, NONE, "src/app.py", "return 1", "return 2") == "Edited src/app.py: replaced 1 occurrence."
    assert (root / "src" / "app.py").read_text() == "def main():\n    return 2\n"


def test_edit_errors(workspace, reads, root):
    (root / "dup.txt").write_text("a a a\n")
    read_file(workspace, reads, NONE, "dup.txt")
    with pytest.raises(WorkspaceError, match="Found 3 occurrences"):
        edit_file(workspace, reads, NONE, "dup.txt", "a", "b")
    with pytest.raises(WorkspaceError, match="was not found"):
        edit_file(workspace, reads, NONE, "dup.txt", "zzz", "b")
    with pytest.raises(InputValidationError, match="the same"):
        edit_file(workspace, reads, NONE, "dup.txt", "a", "a")
    assert edit_file(workspace, reads, NONE, "dup.txt", "a", "b", replace_all=True) == "Edited dup.txt: replaced 3 occurrences."


# --------------------------------------------------------------------------- path permissions
SKILL = {"Write": {"denied_paths": ["src/secrets/**"]}, "Read": {"denied_paths": ["*.txt"]}}


@pytest.mark.parametrize(
    ("path", "patterns", "expected"),
    [
        ("src/secrets/key.txt", ("src/secrets/**",), "src/secrets/**"),
        ("src/secrets", ("src/secrets/**",), "src/secrets/**"),
        ("src/secretsauce.py", ("src/secrets/**",), None),
        ("config/prod.env", ("*.env",), "*.env"),
        ("src/app.py", ("src/*.py",), "src/*.py"),
        ("src/sub/app.py", ("src/*.py",), None),
        ("src/sub/app.py", ("src/**/*.py",), "src/**/*.py"),
    ],
)
def test_path_globs(path, patterns, expected):
    assert path_matches(path, patterns) == expected


def test_write_to_a_denied_path_is_refused(workspace, reads, root):
    rules = permissions_for("Write", SKILL)
    with pytest.raises(WorkspacePermissionError, match=r"matches the loaded skill's denied path 'src/secrets/\*\*'"):
        write_file(workspace, reads, rules, "src/secrets/new.txt", "leak")
    assert not (root / "src" / "secrets" / "new.txt").exists()


def test_edit_obeys_write_rules_too(workspace, reads):
    read_file(workspace, reads, NONE, "src/secrets/key.txt")
    with pytest.raises(WorkspacePermissionError, match="denied path"):
        edit_file(workspace, reads, permissions_for("Edit", SKILL), "src/secrets/key.txt", "hunter2", "x")


def test_denied_paths_see_through_symlinks(workspace, reads, root):
    (root / "innocent").symlink_to(root / "src" / "secrets")
    with pytest.raises(WorkspacePermissionError, match="denied path"):
        write_file(workspace, reads, permissions_for("Write", SKILL), "innocent/new.txt", "leak")


def test_allowed_paths_limit_writes(workspace, reads):
    rules = permissions_for("Write", {"Write": {"allowed_paths": ["docs/**"]}})
    assert write_file(workspace, reads, rules, "docs/a.md", "ok").startswith("Created")
    with pytest.raises(WorkspacePermissionError, match=r"not under the loaded skill's allowed paths \(docs/\*\*\)"):
        write_file(workspace, reads, rules, "src/b.py", "no")


def test_the_other_writing_tools_allowed_paths_narrow_never_widen(workspace, reads):
    both = {"Write": {"allowed_paths": ["docs/**", "notes/**"]}, "Edit": {"allowed_paths": ["notes/**", "src/**"]}}
    write = permissions_for("Write", both)
    assert write_file(workspace, reads, write, "notes/a.md", "ok").startswith("Created")  # in both lists
    for outside_one in ("src/b.py", "docs/c.md"):  # allowed for only one of the two tools
        with pytest.raises(WorkspacePermissionError, match="not under the loaded skill's allowed paths"):
            write_file(workspace, reads, write, outside_one, "no")


def test_read_rules_filter_reads_but_not_other_tools(workspace, reads):
    with pytest.raises(WorkspacePermissionError, match="denied path"):
        read_file(workspace, reads, permissions_for("Read", SKILL), "src/secrets/key.txt")
    assert "secrets/key.txt" in glob_files(workspace, permissions_for("Glob", SKILL), "**/*.txt")


def test_malformed_permissions_are_reported(workspace):
    with pytest.raises(InputValidationError, match="must be a list of strings"):
        permissions_for("Write", {"Write": {"denied_paths": 3}})
    with pytest.raises(InputValidationError, match="not a valid regular expression"):
        permissions_for("Bash", {"Bash": {"allowed_commands": ["(unclosed"]}})


def test_a_skills_command_patterns_are_checked_and_compiled_once_per_load(monkeypatch):
    import memdir.workspace.tools as ws
    from memdir.tools.session import Session

    compiled = []
    original = ws.compile_regex
    monkeypatch.setattr(ws, "compile_regex", lambda pattern, budget: compiled.append(pattern) or original(pattern, budget))
    session = Session()
    session.activate_skill("skill/git.md", ["Bash"], {"Bash": {"allowed_commands": ["^git ", "^ls"], "denied_commands": ["push"]}})
    rules = ws.session_rules(session, "Bash")
    assert ws.session_rules(session, "Bash") is rules and compiled == ["^git ", "^ls", "push"]
    budget = RegexBudget.from_settings(Settings())
    check_command("git status && ls -la", rules, budget)
    check_command("git log", rules, budget)
    assert compiled == ["^git ", "^ls", "push"]  # the calls reused what loading compiled
    with pytest.raises(WorkspacePermissionError, match="denied command pattern"):
        check_command("git push", rules, budget)
    session.activate_skill("skill/ls.md", ["Bash"], {"Bash": {"allowed_commands": ["^ls"]}})
    assert ws.session_rules(session, "Bash").allowed_commands == ("^ls",)  # another skill: its own rules


# --------------------------------------------------------------------------- Glob / Grep
def test_glob_lists_newest_first(workspace, root):
    for age, name in enumerate(["src/app.py", "src/secrets/key.txt", "README.md"]):
        os.utime(root / name, (1_000_000 - age, 1_000_000 - age))
    assert glob_files(workspace, NONE, "**/*") == "src/app.py\nsrc/secrets/key.txt\nREADME.md"
    assert glob_files(workspace, NONE, "*.md") == "README.md"
    assert glob_files(workspace, NONE, "*.nothing") == "No files found matching '*.nothing'."


def test_globs_too_long_to_compile_cheaply_are_refused(workspace):
    with pytest.raises(InputValidationError, match="The glob pattern '.*' is too costly to search with"):
        glob_files(workspace, NONE, "*a" * 200_000)
    with pytest.raises(InputValidationError, match="The glob pattern"):
        grep_files(workspace, NONE, "x", glob="*a" * 200_000)


def test_glob_patterns_cannot_leave_the_workspace(workspace):
    with pytest.raises(WorkspacePermissionError, match="leaves the workspace"):
        glob_files(workspace, NONE, "../*")


def test_grep_modes(workspace):
    assert grep_files(workspace, NONE, "return") == "Found 1 file\nsrc/app.py"
    assert grep_files(workspace, NONE, "RETURN", case_insensitive=True, output_mode="content") == "src/app.py:2:    return 1"
    assert grep_files(workspace, NONE, "e", glob="*.py", output_mode="count") == "src/app.py:2"
    with pytest.raises(InputValidationError, match="Invalid regular expression"):
        grep_files(workspace, NONE, "(")


@pytest.mark.parametrize("pattern", ["a{10000000}", "((a{1000}){1000}){1000}"])
def test_grep_refuses_a_pattern_too_costly_to_compile(workspace, pattern):
    with pytest.raises(InputValidationError, match="is too costly to search with"):
        grep_files(workspace, NONE, pattern)


def test_a_skill_command_pattern_too_costly_to_compile_is_refused_when_written():
    with pytest.raises(InputValidationError, match="too costly"):
        permissions_for("Bash", {"Bash": {"allowed_commands": ["^echo a{10000000}"]}})


def test_a_runaway_skill_command_pattern_refuses_the_command_instead_of_hanging(root):
    budget = RegexBudget.from_settings(Settings(grep_time_limit=0.2))
    rules = permissions_for("Bash", {"Bash": {"allowed_commands": ["^(a|aa)+$"]}}, budget)
    with pytest.raises(WorkspacePermissionError, match="took longer than 0.2 s"):
        check_command("a" * 60 + "!", rules, budget)


# --------------------------------------------------------------------------- Bash
BASH = permissions_for("Bash", {"Bash": {"allowed_commands": ["^echo ", "^ls$"], "denied_commands": ["secret"]}})


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("npm test 2>&1", ["npm test 2>&1"]),
        ("npm test; rm -rf /", ["npm test", "rm -rf /"]),
        ("git status && git log | head -3", ["git status", "git log", "head -3"]),
        ('echo "a;b" & ls', ['echo "a;b"', "ls"]),
        ("a\nb", ["a", "b"]),
    ],
)
def test_commands_are_split_at_shell_operators(command, parts):
    assert command_parts(command) == parts


def test_allowed_commands_run(workspace):
    assert run_bash(workspace, BASH, "echo hello && ls") == "hello\nREADME.md\nsrc"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("rm -rf src", "'rm -rf src' is not allowed by the loaded skill"),
        ("echo ok; rm -rf src", "'rm -rf src' is not allowed"),
        ("echo $(rm -rf src)", "command substitution"),
        ("echo `id`", "command substitution"),
        ("echo secret", "denied command pattern"),
    ],
)
def test_everything_else_is_refused(workspace, root, command, message):
    with pytest.raises(WorkspacePermissionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_bash(workspace, BASH, command)
    assert (root / "src").exists()


def test_a_skill_without_allowed_commands_runs_nothing(workspace):
    with pytest.raises(WorkspacePermissionError, match="allows no commands"):
        check_command("echo hi", permissions_for("Bash", {}), workspace.regex_budget)


@pytest.mark.parametrize(
    "command",
    [
        "echo hi > /tmp/memdir-outside.txt",  # a redirection target
        "echo hi 2>/tmp/memdir-outside.txt",
        "echo ../secret",  # an argument leaving through '..'
        "echo /",
        "echo ~/.ssh/id_rsa",  # paths only the shell knows
        "echo $HOME/.ssh/id_rsa",
        "echo out/of/here --out=/etc/passwd",  # an option's value
        "echo hi > elsewhere/x",  # a symlink inside the workspace that leads out
        "echo ..$NOPE/x",  # an expansion glued to a path
        "echo {..,.}/x",  # brace expansion
        "echo -o../x",  # a short option's attached value
        "echo hi; cd",  # cd without a directory goes to $HOME
        'echo "$HOME"',  # double quotes still expand
        "echo '.'./x",  # quoted pieces join into one word: ../x
        "echo \\.\\./x",  # so do escaped characters
        "echo \\/etc/hostname",
    ],
)
def test_bash_stays_inside_the_workspace(workspace, root, command, tmp_path):
    (root / "elsewhere").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(WorkspacePermissionError, match="Bash refused"):
        run_bash(workspace, BASH, command)
    assert not (tmp_path / "outside").exists() and not Path("/tmp/memdir-outside.txt").exists()


def test_bash_paths_inside_the_workspace_run(workspace, root):
    assert run_bash(workspace, BASH, "echo hello > src/out.txt") == "(no output)"
    assert (root / "src" / "out.txt").read_text() == "hello\n"
    assert run_bash(workspace, BASH, "echo '{print $1}' --flag=value ./src") == "{print $1} --flag=value ./src"
    assert run_bash(workspace, BASH, "echo '$2 > 0' 2>/dev/null") == "$2 > 0"  # single quotes, /dev/null


def test_bash_is_off_unless_the_server_allows_it(root):
    with pytest.raises(WorkspacePermissionError, match="Bash is disabled on this memdir server"):
        run_bash(Workspace.create(root), BASH, "echo hi")


def test_exit_codes_and_timeouts(workspace):
    rules = permissions_for("Bash", {"Bash": {"allowed_commands": ["^sh ", "^sleep "]}})
    assert run_bash(workspace, rules, "sh -c 'echo oops; exit 3'") == "oops\n(exit code 3)"
    with pytest.raises(WorkspaceError, match="timed out after 0.5 seconds"):
        run_bash(workspace, rules, "sleep 5", timeout=0.5)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")
def test_commands_run_in_the_workspace(workspace, root):
    rules = permissions_for("Bash", {"Bash": {"allowed_commands": ["^pwd$"]}})
    assert run_bash(workspace, rules, "pwd") == str(root)


@pytest.mark.parametrize(
    ("glob", "path"),
    [("secrets**", "secrets/api.key"), ("config/**.secret", "config/prod/db.secret"), ("a/**.env", "a/b/.env"),
     ("notes[1].txt", "notes[1].txt"), ("src/**", "src/deep/er/file.py")],
)
def test_path_globs_keep_their_meaning_a_star_pair_inside_a_name_crosses_folders(glob, path):
    assert path_matches(path, (glob,)) == glob


def test_cd_without_a_directory_leaves_the_workspace(root):
    from memdir.workspace.bash import check_paths

    for command in ("cd", "cd -", "cd; pwd", "cd >/dev/null", "cd -P", "cd --"):
        with pytest.raises(WorkspacePermissionError, match="cd without a directory"):
            check_paths(command, root)
    check_paths("cd src && ls", root)


def test_a_crossing_star_pair_then_a_star_still_finds_the_last_name():
    """config/**.secret* must match a .secret file under a folder whose own name holds '.secret'."""
    assert path_matches("config/a.secret/b.secret.bak", ("config/**.secret*",))
    assert path_matches("x/b/b.a", ("**b*",)) and not path_matches("a/b", ("a[!x]b**",))


@pytest.mark.parametrize(
    "command",
    ["cut -d/ -f1 x", "awk -F/ '{print $1}' f", 'grep -c "end$" x', 'git commit -m "price is $5"', 'ls "a b"/c',
     "sort data.txt 2>/dev/null", "find . -name x -exec rm {} ;"],
)
def test_ordinary_commands_are_not_refused_by_the_path_guard(root, command):
    from memdir.workspace.bash import check_paths

    check_paths(command, root)
