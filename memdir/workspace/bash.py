"""Bash, the one workspace tool that runs commands: off unless the server allows it.

A command runs only when the server was started with ``allow_bash`` and each part of it
(split at ``;``, ``&&``, ``||``, ``|``, ``&`` and newlines) matches one of the loaded
skill's ``allowed_commands`` regexes and none of its ``denied_commands``. Command and
process substitution are refused outright: the commands inside could not be checked.
Like the other workspace tools, Bash stays inside the workspace: every argument and
redirection target (``> /tmp/x``, ``--out=../x``) is resolved, symlinks included, and a
command naming anything outside the workspace is refused, as is one whose paths cannot
be known before it runs (``~``, ``$VAR``). This is a guard against mistakes and
over-broad regexes, not a sandbox: a program the skill allows may still open other
files by itself. The command runs in the workspace, in its own process group, and is
killed with the group when it outlives the timeout. No MCP imports.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from pathlib import Path

from memdir.core.errors import InputValidationError
from memdir.core.user_regex import RegexBudget, shown
from memdir.workspace.tools import ToolPermissions, Workspace, WorkspaceError, WorkspacePermissionError

OUTPUT_MAX_CHARS = 30_000

_SUBSTITUTION = re.compile(r"`|\$\(|<\(|>\(")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_VARIABLE = re.compile(r"\$(?:\{[^}]*\}?|[A-Za-z_][A-Za-z0-9_]*)")
_BRACE_EXPANSION = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_DEVICES = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"})


def command_parts(command: str) -> list[str]:
    """Split a shell command at ``;``, ``&&``, ``||``, ``|``, ``&`` and newlines, quotes respected.

    Redirections such as ``2>&1`` and ``&>`` are not separators. Each part is returned as
    written (stripped), so ``allowed_commands`` regexes see exactly what will run.

    Raises:
        WorkspacePermissionError: the command uses command or process substitution, whose
            inner commands could not be checked.
        InputValidationError: unbalanced quotes.
    """
    if _SUBSTITUTION.search(command):
        raise WorkspacePermissionError(
            "Bash refused: command substitution (`...`, $(...)) and process substitution are not allowed, "
            "because the commands inside them cannot be checked against the skill's allowed_commands.",
            "Run the inner command on its own first.",
        )
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(command):
        ch = command[i]
        if quote:
            current.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < len(command):
                current.append(command[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch == "\\" and i + 1 < len(command):
            current.append(ch + command[i + 1])
            i += 1
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch == "&" and (command[i - 1:i] in (">", "<") or command[i + 1:i + 2] == ">"):
            current.append(ch)  # 2>&1, >&2, &> file: redirections, not separators
        elif ch in ";&|\n":
            parts.append("".join(current))
            current = []
            while i + 1 < len(command) and command[i + 1] in ";&|" and command[i + 1] != "\n":
                i += 1
        else:
            current.append(ch)
        i += 1
    if quote:
        raise InputValidationError(f"Bash could not parse the command: unbalanced {quote} quote.", "Check the quotes.")
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def check_command(command: str, rules: ToolPermissions, budget: RegexBudget) -> None:
    """Refuse ``command`` unless each of its parts matches an allowed regex and none a denied one.

    The skill's patterns are bounded like any user pattern (`memdir.core.user_regex`); one
    whose matching runs past the time limit refuses the command.
    """
    parts = command_parts(command)
    if not parts:
        raise InputValidationError("command is empty.", "Pass the shell command to run.")
    if not rules.allowed_commands:
        raise WorkspacePermissionError(
            "Bash refused: the loaded skill allows no commands.",
            "A skill that uses Bash must list regexes under permissions.Bash.allowed_commands (e.g. \"^npm test\").",
        )

    def matches(pattern: str, part: str) -> bool:
        try:
            return rules.command_regex(pattern, budget).search(part, timeout=budget.time_limit) is not None
        except TimeoutError:
            raise WorkspacePermissionError(
                f"Bash refused: the loaded skill's command pattern {shown(pattern)} took longer than "
                f"{budget.time_limit:g} s to match {part!r}.",
                "Simplify the pattern in the skill's permissions (nested repetition such as (a|aa)+ backtracks).",
            ) from None

    for part in parts:
        for pattern in rules.denied_commands:
            if matches(pattern, part):
                raise WorkspacePermissionError(
                    f"Bash refused: {part!r} matches the loaded skill's denied command pattern {pattern!r}.",
                )
        if not any(matches(pattern, part) for pattern in rules.allowed_commands):
            raise WorkspacePermissionError(
                f"Bash refused: {part!r} is not allowed by the loaded skill. "
                f"Allowed command patterns: {', '.join(repr(p) for p in rules.allowed_commands)}.",
                "Only commands matching those patterns can run.",
            )


def _shell_expansion(part: str) -> str | None:
    """The first expansion the shell would make in ``part`` that could name a path, or None.

    Outside single quotes: ``$NAME``/``${...}``; outside any quotes: ``~`` at the start of a
    word (or after ``=``/``:``) and brace expansion (``{a,b}``, ``{1..3}``). Backslash-escaped
    characters are literal. (``$(...)`` and backquotes are refused before this.)
    """
    quote: str | None = None
    word_start = True
    i = 0
    while i < len(part):
        char = part[i]
        if quote == "'":
            quote = None if char == "'" else quote
        elif char == "\\":
            i += 2
            word_start = False
            continue
        elif char == "'" and quote is None:
            quote = "'"
        elif char == '"':
            quote = None if quote == '"' else '"'
        elif char == "$" and (variable := _VARIABLE.match(part, i)):
            return variable.group()
        elif quote is None and char == "~" and word_start:
            return "~"
        elif quote is None and char == "{" and (brace := _BRACE_EXPANSION.match(part, i)):
            return brace.group()
        word_start = quote is None and char in " \t=:"
        i += 1
    return None


def check_paths(command: str, root: Path) -> None:
    """Refuse ``command`` if an argument or redirection target of any part lies outside ``root``.

    Words are taken as the shell takes them (quotes joined, backslashes removed). The program
    (the first word of each part after any ``NAME=value`` assignments) is left to
    ``allowed_commands``. Checked as paths: every other word, redirection targets (the
    ``/dev/null`` family allowed), the value of ``--option=value`` and ``NAME=value`` words,
    and a short option's attached value that holds a ``/`` (``-o../out``). Refused as
    unknowable before the shell runs: the expansions of `_shell_expansion`, and a ``cd``
    without a directory (it goes to ``$HOME`` or back).
    """
    for part in command_parts(command):
        expansion = _shell_expansion(part)
        if expansion:
            raise WorkspacePermissionError(
                f"Bash refused: {expansion!r} in {part!r} is only known when the shell runs.",
                "Spell paths out, relative to the workspace; quote literal text in single quotes.",
            )
        lexer = shlex.shlex(part, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError as exc:
            raise InputValidationError(f"Bash could not parse {part!r}: {exc}.", "Check the quotes.") from exc
        words: list[tuple[str, bool]] = []  # (word, is a redirection target)
        redirect = False
        for token in tokens:
            if token and all(char in "();<>|&" for char in token):
                redirect = "<" in token or ">" in token
                continue
            words.append((token, redirect))
            redirect = False
        program = next((i for i, (word, target) in enumerate(words) if target or not _ASSIGNMENT.match(word)), len(words))
        if words[program:program + 1] == [("cd", False)]:
            directories = [word for word, target in words[program + 1:] if not target and not word.startswith("-")]
            if not directories:
                raise WorkspacePermissionError(
                    f"Bash refused: {part!r} leaves the workspace (cd without a directory goes to $HOME or back).",
                    "cd into a folder of the workspace, named relative to it.",
                )
        for word, target in words[:program] + words[program + 1:]:
            if target:
                value = word
            elif word.startswith("--") or _ASSIGNMENT.match(word):
                value = word.split("=", 1)[1] if "=" in word else ""
            elif word.startswith("-"):
                attached = word[2:]  # -o../out; but -d/ (cut) or -F/ (awk) is a separator, not a path
                value = attached if "/" in attached and attached != "/" else ""
            else:
                value = word
            if not value or value in _DEVICES:
                continue
            resolved = (root / value).resolve()
            if resolved != root and not resolved.is_relative_to(root):
                raise WorkspacePermissionError(
                    f"Bash refused: {word!r} in {part!r} is outside the workspace {root}.",
                    "Workspace tools only reach files inside the workspace; use paths relative to it.",
                )


def run_bash(workspace: Workspace, rules: ToolPermissions, command: str, timeout: float | None = None) -> str:
    """Run an allowed shell command in the workspace; returns its combined output and exit code."""
    if not workspace.allow_bash:
        raise WorkspacePermissionError(
            "Bash is disabled on this memdir server.",
            "Start the server with --allow-bash (or MEMDIR_ALLOW_BASH=true) to let skills run commands.",
        )
    check_command(command, rules, workspace.regex_budget)
    check_paths(command, workspace.root)
    limit = workspace.bash_timeout if not timeout or timeout <= 0 else min(float(timeout), workspace.bash_timeout)
    shell = "/bin/bash" if Path("/bin/bash").exists() else None
    process = subprocess.Popen(
        command,
        shell=True,
        executable=shell,
        cwd=workspace.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        output, _ = process.communicate()
        text = _clip(output.decode("utf-8", errors="replace"))
        raise WorkspaceError(
            f"Command timed out after {limit:g} seconds and was stopped.\n{text}".rstrip(),
            "Run something shorter, or raise MEMDIR_BASH_TIMEOUT.",
        ) from None
    text = _clip(output.decode("utf-8", errors="replace")).rstrip("\n")
    if process.returncode != 0:
        return f"{text}\n(exit code {process.returncode})".lstrip("\n")
    return text or "(no output)"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def _clip(text: str) -> str:
    if len(text) <= OUTPUT_MAX_CHARS:
        return text
    return text[:OUTPUT_MAX_CHARS] + f"\n... (output truncated: {len(text) - OUTPUT_MAX_CHARS} more characters)"


__all__ = ["OUTPUT_MAX_CHARS", "check_command", "check_paths", "command_parts", "run_bash"]
