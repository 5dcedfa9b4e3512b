"""The built-in workspace tools a loaded skill can ask for: Read, Write, Edit, Glob, Grep, Bash.

They act on one configured directory (``Settings.workspace``) and are hidden until a
loaded skill lists them. Everything a skill's ``permissions`` say is enforced here, by
the tools themselves, so no caller can skip it:

* every path is resolved (symlinks included) and must stay inside the workspace;
* ``denied_paths`` / ``allowed_paths`` (globs, relative to the workspace) restrict a tool;
  the two file-changing tools, Write and Edit, obey each other's rules too, so a skill
  that denies ``Write`` on ``src/secrets/**`` cannot reach them through Edit;
* Bash runs only when the server allows it (``Settings.allow_bash``) and only commands
  whose every part matches one of the skill's ``allowed_commands`` regexes (and none of
  its ``denied_commands``); everything else is refused;
* Write and Edit of an existing file need a Read of it in the same session first, and are
  refused when the file changed since (as MemoryEdit does for entries).

Plain functions over a `Workspace`, a `ToolPermissions` and the session's `FileReads`
(Bash lives in `memdir.workspace.bash`);
they return text and raise `MemdirError` subclasses. No MCP imports.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from memdir.core.entry import UNREADABLE_PERMISSIONS
from memdir.core.errors import InputValidationError, MemdirError
from memdir.core.files import read_regular, replace_file
from memdir.core.globbing import glob_matcher
from memdir.core.locations import CONFIG_NAME, config_file
from memdir.core.settings import Settings
from memdir.core.user_regex import RegexBudget, check_length, compile_regex, shown
from memdir.search.text_search import GrepPattern, grep_content
from memdir.tools.memory_grep import OUTPUT_MODES  # Grep over the workspace has MemoryGrep's modes
from memdir.tools.session import Session

WORKSPACE_TOOLS: tuple[str, ...] = ("Read", "Write", "Edit", "Glob", "Grep", "Bash")
"""Names of the workspace tools, in the order they are listed."""

WRITING_TOOLS = ("Write", "Edit")
READ_LINE_LIMIT = 2000
READ_LINE_WIDTH = 2000
GLOB_MAX_RESULTS = 100
GREP_MAX_RESULTS = 500
GREP_MAX_FILE_BYTES = 2_000_000
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})
T = TypeVar("T")


class WorkspacePermissionError(MemdirError):
    """A workspace tool call the loaded skill's permissions (or the server's settings) do not allow."""


class WorkspaceError(MemdirError):
    """A workspace tool call that cannot be done as asked (missing file, not read first, ...)."""


# --------------------------------------------------------------------------- permissions
@dataclass(frozen=True)
class ToolPermissions:
    """One tool's rules from a skill's ``permissions`` (all optional).

    ``allowed_paths`` holds one glob list per tool whose rules apply (Write and Edit
    share theirs): a path must match a glob of *every* list, so merging another tool's
    rules can only narrow what is allowed, never widen it. Denied globs simply add up.
    """

    allowed_paths: tuple[tuple[str, ...], ...] = ()
    denied_paths: tuple[str, ...] = ()
    allowed_commands: tuple[str, ...] = ()
    denied_commands: tuple[str, ...] = ()
    compiled: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Each command pattern compiled once its cost was checked (`permissions_for` does both, once)."""

    def merged(self, other: ToolPermissions) -> ToolPermissions:
        return ToolPermissions(
            allowed_paths=_unique(self.allowed_paths + other.allowed_paths),
            denied_paths=_unique(self.denied_paths + other.denied_paths),
            allowed_commands=_unique(self.allowed_commands + other.allowed_commands),
            denied_commands=_unique(self.denied_commands + other.denied_commands),
            compiled={**self.compiled, **other.compiled},
        )

    def command_regex(self, pattern: str, budget: RegexBudget) -> Any:
        """The compiled command ``pattern`` (compiled now, cost checked, for rules made by hand)."""
        found = self.compiled.get(pattern)
        return found if found is not None else compile_regex(pattern, budget)

    def outside_allowed(self, *spellings: str) -> tuple[str, ...] | None:
        """The first allowed-glob list that some spelling of a path matches none of (None: allowed)."""
        for globs in self.allowed_paths:
            if not all(path_matches(spelling, globs) for spelling in spellings):
                return globs
        return None

    def lists(self, relative: str) -> bool:
        """Whether a workspace-relative path may show up in this tool's listings (Glob, Grep)."""
        return not path_matches(relative, self.denied_paths) and self.outside_allowed(relative) is None


def _unique(items: tuple[T, ...]) -> tuple[T, ...]:
    return tuple(dict.fromkeys(items))


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise InputValidationError(
            f"The skill's permissions.{where} must be a list of strings, got {value!r:.80}.",
            f'Write it as e.g. {where}: ["^npm ", "^git status"] in the skill\'s metadata.',
        )
    return tuple(item for item in value if item.strip())


PATH_RULES = ("allowed_paths", "denied_paths")
COMMAND_RULES = ("allowed_commands", "denied_commands")
RULES_OF = {"Bash": COMMAND_RULES, **{name: PATH_RULES for name in WORKSPACE_TOOLS if name != "Bash"}}
"""The rules each workspace tool applies (a skill's ``permissions.<Tool>.<rule>``)."""


def check_skill_permissions(permissions: Any, budget: RegexBudget | None = None) -> None:
    """Refuse a skill's ``permissions`` unless memdir would apply every part of them as written.

    A misspelt rule (``deny_paths``) or a rule on a tool that has no such rule would
    otherwise be ignored, and the skill would run with less restriction than its author
    wrote. Checked when a skill is written and again when it is loaded.

    Raises:
        InputValidationError: what is wrong and how the skill should say it.
    """
    if not isinstance(permissions, Mapping):
        raise InputValidationError(
            f"The skill's permissions must be a mapping of tool names to rules, got {permissions!r:.80}.",
            "Write e.g. permissions: {Write: {denied_paths: [\"secrets/**\"]}, Bash: {allowed_commands: [\"^npm \"]}}.",
        )
    if UNREADABLE_PERMISSIONS in permissions:
        raise InputValidationError(
            f"The skill's permissions in its .yml file are not a mapping ({permissions[UNREADABLE_PERMISSIONS]!r:.80}); "
            "memdir will not run the skill without the restrictions its author meant.",
            "Fix the permissions in the skill's .yml file, or write the skill again with MemoryWrite.",
        )
    for tool, rules in permissions.items():
        if tool not in RULES_OF:
            raise InputValidationError(
                f"The skill's permissions name {tool!r}, which is not a workspace tool.",
                f"Permissions apply to {', '.join(WORKSPACE_TOOLS)}.",
            )
        if isinstance(rules, Mapping):
            unknown = sorted(str(rule) for rule in rules if rule not in RULES_OF[tool])
            if unknown:
                raise InputValidationError(
                    f"The skill's permissions.{tool} has {', '.join(map(repr, unknown))}, which {tool} does not apply, "
                    "so it would restrict nothing.",
                    f"{tool} takes {' and '.join(RULES_OF[tool])}.",
                )
        permissions_for(tool, permissions, budget)  # rule shapes and command regexes


def permissions_for(
    tool: str, skill_permissions: Mapping[str, Any] | None, budget: RegexBudget | None = None
) -> ToolPermissions:
    """The rules that apply to ``tool`` under a skill's ``permissions`` mapping.

    Write and Edit get both tools' rules (they both change files): the denied paths of
    either, and only the paths that both tools' allowed lists allow.

    Args:
        budget: what a command regex may cost (None: the one the settings give).

    Raises:
        InputValidationError: a rule is not a list of strings, or a command regex is invalid or too costly.
    """
    permissions = skill_permissions or {}
    budget = budget or _settings_budget()

    def own(name: str) -> ToolPermissions:
        raw = permissions.get(name) or {}
        if not isinstance(raw, Mapping):
            raise InputValidationError(
                f"The skill's permissions.{name} must be a mapping, got {raw!r:.80}.",
                f"Write it as {name}: {{denied_paths: [...]}} in the skill's metadata.",
            )
        allowed = _string_list(raw.get("allowed_paths"), f"{name}.allowed_paths")
        allowed_commands = _string_list(raw.get("allowed_commands"), f"{name}.allowed_commands")
        denied_commands = _string_list(raw.get("denied_commands"), f"{name}.denied_commands")
        return ToolPermissions(
            allowed_paths=(allowed,) if allowed else (),
            denied_paths=_string_list(raw.get("denied_paths"), f"{name}.denied_paths"),
            allowed_commands=allowed_commands,
            denied_commands=denied_commands,
            compiled={pattern: _command_regex(pattern, budget) for pattern in allowed_commands + denied_commands},
        )

    rules = own(tool)
    if tool in WRITING_TOOLS:
        for other in WRITING_TOOLS:
            if other != tool:
                rules = rules.merged(own(other))
    return rules


def _command_regex(pattern: str, budget: RegexBudget) -> Any:
    """A skill's command pattern compiled, or why it is refused."""
    try:
        return compile_regex(pattern, budget)
    except InputValidationError as exc:
        raise InputValidationError(
            f"The skill's Bash command pattern {shown(pattern)} is refused (not a valid regular expression, "
            f"or too costly): {exc.message}",
            "Fix the pattern in the skill's permissions.",
        ) from exc


def session_rules(session: Session, tool: str, budget: RegexBudget | None = None) -> ToolPermissions:
    """`permissions_for` ``tool`` under the session's loaded skill, worked out once per skill load
    (its command patterns cost-checked and compiled then), not on every call."""
    rules = session.tool_rules.get(tool)
    if rules is None:
        rules = session.tool_rules[tool] = permissions_for(tool, session.skill_permissions, budget)
    return rules


@lru_cache(maxsize=1024)
def _glob(pattern: str, *, anywhere: bool = True) -> Callable[[str], bool]:
    """A test for workspace-relative paths: ``**`` crosses folders, ``*`` and ``?`` stay inside one.

    ``dir/**`` also matches ``dir`` itself. With ``anywhere``, a pattern without ``/``
    matches at any depth (``*.env`` matches ``config/prod.env``), as in .gitignore.
    """
    text = pattern.strip().removeprefix("./").lstrip("/")
    if anywhere and "/" not in text.rstrip("/"):
        text = "**/" + text
    text = re.sub(r"/{2,}", "/", text.rstrip("/")) or "**"
    return glob_matcher(text, brackets=False)


def path_matches(relative: str, patterns: tuple[str, ...]) -> str | None:
    """The first glob in ``patterns`` that matches the workspace-relative path, or None."""
    for pattern in patterns:
        if _glob(pattern)(relative):
            return pattern
    return None


# --------------------------------------------------------------------------- session state
@dataclass
class FileReads:
    """What this session has read in the workspace: relative path -> sha256 of the bytes read."""

    hashes: dict[str, str] = field(default_factory=dict)

    def record(self, relative: str, data: bytes) -> None:
        self.hashes[relative] = _digest(data)

    def check(self, relative: str, current: bytes, tool: str) -> None:
        """Refuse changing a file this session has not read, or that changed since it did."""
        seen = self.hashes.get(relative)
        if seen is None:
            raise WorkspaceError(
                f"{relative} has not been read in this session, so {tool} will not change it.",
                f"Read it first with Read(file_path: \"{relative}\").",
            )
        if seen != _digest(current):
            raise WorkspaceError(
                f"{relative} has changed since you last read it.",
                f"Read it again with Read(file_path: \"{relative}\") before using {tool}.",
            )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- the workspace
def _settings_budget() -> RegexBudget:
    return RegexBudget.from_settings(Settings())


@dataclass(frozen=True)
class Workspace:
    """The directory the workspace tools act on, and the server's own limits for them."""

    root: Path
    allow_bash: bool = False
    bash_timeout: float = 60.0
    regex_budget: RegexBudget = field(default_factory=_settings_budget)
    memdirs_own: tuple[Path, ...] = ()
    """memdir's own files and folders (resolved), which no workspace tool reaches (`owns`)."""

    @classmethod
    def create(
        cls, root: Path, *, allow_bash: bool = False, bash_timeout: float = 60.0, regex_budget: RegexBudget | None = None,
        memdirs_own: tuple[Path, ...] = (),
    ) -> Workspace:
        """The workspace at ``root``; ``regex_budget`` defaults to the one the settings give."""
        own = tuple(Path(path).expanduser().resolve() for path in memdirs_own)
        return cls(Path(root).expanduser().resolve(), allow_bash, bash_timeout, regex_budget or _settings_budget(), own)

    @classmethod
    def from_settings(cls, settings: Settings) -> Workspace:
        """The server's workspace: ``settings.workspace`` with its limits, memdir's own files off limits
        (the memory root, the config file, the token file and its lock, the cache)."""
        tokens = settings.server.http_tokens_file.expanduser()
        return cls.create(
            settings.server.workspace, allow_bash=settings.server.allow_bash, bash_timeout=settings.server.bash_timeout,
            regex_budget=RegexBudget.from_settings(settings),
            memdirs_own=(settings.storage.root, config_file(), tokens, tokens.with_name(tokens.name + ".lock"), settings.storage.cache_dir),
        )

    def owns(self, resolved: Path) -> bool:
        """True for one of memdir's own files: its settings (any ``memdir.toml``), tokens, cache or
        memory. An agent that could write them could change what it may do, or whose it is."""
        return resolved.name == CONFIG_NAME or any(resolved == own or resolved.is_relative_to(own)
                                                   for own in self.memdirs_own)

    def resolve(self, path: str | None, *, tool: str) -> tuple[Path, str]:
        """(absolute resolved path, workspace-relative path) for ``path``; refuses anything outside.

        Relative paths are taken from the workspace root; symlinks are followed before the
        check, so a link pointing out of the workspace is refused like ``../x``.
        """
        if self.root == Path(self.root.anchor):
            raise WorkspacePermissionError(
                f"{tool} refused: the workspace is the filesystem root ({self.root}).",
                "Start memdir with --workspace DIR (or set MEMDIR_WORKSPACE) to the project the skills work on.",
            )
        text = (path or ".").strip() or "."
        if "\0" in text:
            raise InputValidationError(f"{tool}: the path contains a NUL character.", "Pass a plain file path.")
        candidate = Path(text).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        resolved = candidate.resolve()
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise WorkspacePermissionError(
                f"{tool} refused: {text} is outside the workspace {self.root}.",
                "Workspace tools only reach files inside the workspace; use a path relative to it.",
            )
        if self.owns(resolved):
            raise WorkspacePermissionError(
                f"{tool} refused: {text} is one of memdir's own files (its settings, tokens or memory).",
                "Workspace tools never touch them: use the memory tools for entries; settings and tokens "
                "are for the person who runs memdir to change.",
            )
        relative = resolved.relative_to(self.root).as_posix()
        return resolved, relative or "."

    def lexical_relative(self, path: str | None) -> str:
        """The requested path made relative without following symlinks (for permission globs)."""
        candidate = Path((path or ".").strip() or ".").expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        normal = Path(os.path.normpath(candidate))
        try:
            return normal.relative_to(self.root).as_posix()
        except ValueError:
            return normal.as_posix()

    def check_path_rules(self, path: str | None, resolved_relative: str, rules: ToolPermissions, tool: str) -> None:
        """Apply a skill's denied/allowed path globs to both spellings of the path."""
        spellings = dict.fromkeys([resolved_relative, self.lexical_relative(path)])
        for spelling in spellings:
            denied = path_matches(spelling, rules.denied_paths)
            if denied:
                raise WorkspacePermissionError(
                    f"{tool} refused: {resolved_relative} matches the loaded skill's denied path {denied!r}.",
                    "The skill does not allow this tool on that path; choose another file.",
                )
        outside = rules.outside_allowed(*spellings)
        if outside is not None:
            raise WorkspacePermissionError(
                f"{tool} refused: {resolved_relative} is not under the loaded skill's allowed paths "
                f"({', '.join(outside)}).",
                "Use a path the skill allows.",
            )


# --------------------------------------------------------------------------- Read / Write / Edit
def read_file(
    workspace: Workspace,
    reads: FileReads,
    rules: ToolPermissions,
    file_path: str,
    offset: int | None = None,
    limit: int | None = None,
) -> str:
    """Read a text file with ``cat -n`` style line numbers and record the read.

    Args:
        offset: first line to show (1-based); default 1.
        limit: how many lines; default 2000.
    """
    resolved, relative = workspace.resolve(file_path, tool="Read")
    workspace.check_path_rules(file_path, relative, rules, "Read")
    if not resolved.exists():
        raise WorkspaceError(f"File does not exist: {relative}.", "Use Glob to find files in the workspace.")
    if resolved.is_dir():
        raise WorkspaceError(f"{relative} is a directory, not a file.", "Use Glob to list what it contains.")
    data = read_regular(workspace.root, resolved)  # a named pipe or device is refused, never waited on
    if b"\0" in data[:8192]:
        raise WorkspaceError(f"{relative} is a binary file; Read shows text files only.")
    reads.record(relative, data)
    text = data.decode("utf-8", errors="replace")
    if not text:
        return f"<system-reminder>{relative} exists but is empty.</system-reminder>"
    lines = text.splitlines()
    start = max(1, int(offset or 1))
    count = max(1, int(limit or READ_LINE_LIMIT))
    shown = lines[start - 1:start - 1 + count]
    if not shown:
        return f"<system-reminder>{relative} has {len(lines)} lines; offset {start} is past the end.</system-reminder>"
    body = "\n".join(
        f"{str(number).rjust(6)}\t{line[:READ_LINE_WIDTH]}" for number, line in enumerate(shown, start=start)
    )
    last = start + len(shown) - 1
    if last < len(lines):
        body += f"\n\n<system-reminder>Showing lines {start}-{last} of {len(lines)}; pass offset to read more.</system-reminder>"
    return body




def write_file(workspace: Workspace, reads: FileReads, rules: ToolPermissions, file_path: str, content: str) -> str:
    """Create or overwrite a file (an existing one must have been read in this session)."""
    resolved, relative = workspace.resolve(file_path, tool="Write")
    workspace.check_path_rules(file_path, relative, rules, "Write")
    if resolved.is_dir():
        raise WorkspaceError(f"{relative} is a directory; Write needs a file path.")
    existed = resolved.exists()
    if existed:
        reads.check(relative, read_regular(workspace.root, resolved), "Write")
    data = content.encode("utf-8")
    replace_file(resolved, data, keep_mode=True)
    reads.record(relative, data)
    verb = "Updated" if existed else "Created"
    return f"{verb} {relative} ({len(data)} bytes)."


def edit_file(
    workspace: Workspace,
    reads: FileReads,
    rules: ToolPermissions,
    file_path: str,
    old_string: str,
    new_string: str,
    replace_all: bool = False,
) -> str:
    """Replace an exact string in a file the session has read (unique unless ``replace_all``)."""
    resolved, relative = workspace.resolve(file_path, tool="Edit")
    workspace.check_path_rules(file_path, relative, rules, "Edit")
    if not resolved.exists():
        raise WorkspaceError(f"File does not exist: {relative}.", "Use Write to create a new file.")
    data = read_regular(workspace.root, resolved)
    reads.check(relative, data, "Edit")
    if old_string == new_string:
        raise InputValidationError("old_string and new_string are the same; there is nothing to change.")
    if not old_string:
        raise InputValidationError("old_string is empty.", "Pass the exact text to replace (copy it from Read's output).")
    text = data.decode("utf-8", errors="replace")
    count = text.count(old_string)
    if count == 0:
        raise WorkspaceError(
            f"old_string was not found in {relative}.",
            "Copy the exact text from Read's output (without the line-number prefix), whitespace included.",
        )
    if count > 1 and not replace_all:
        raise WorkspaceError(
            f"Found {count} occurrences of old_string in {relative}.",
            "Add surrounding context to make it unique, or pass replace_all: true to replace every one.",
        )
    updated = text.replace(old_string, new_string) if replace_all else text.replace(old_string, new_string, 1)
    new_data = updated.encode("utf-8")
    replace_file(resolved, new_data, keep_mode=True)
    reads.record(relative, new_data)
    replaced = count if replace_all else 1
    return f"Edited {relative}: replaced {replaced} occurrence{'s' if replaced != 1 else ''}."


# --------------------------------------------------------------------------- Glob / Grep
def _walk_files(workspace: Workspace, base: Path) -> Iterator[tuple[Path, str]]:
    """(path, workspace-relative path) of every file under ``base`` that stays inside the workspace."""
    for directory, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
        for name in sorted(filenames):
            path = Path(directory) / name
            try:
                resolved = path.resolve()
            except OSError:
                continue
            if not resolved.is_relative_to(workspace.root) or not resolved.is_file() or workspace.owns(resolved):
                continue
            yield path, path.relative_to(workspace.root).as_posix()


def glob_files(workspace: Workspace, rules: ToolPermissions, pattern: str, path: str | None = None) -> str:
    """Files matching a glob (``**/*.py``, ``src/*.ts``), newest first, at most 100."""
    if not pattern or not pattern.strip():
        raise InputValidationError("pattern is empty.", 'Pass a glob such as "**/*.py".')
    if pattern.startswith("/") or ".." in Path(pattern).parts:
        raise WorkspacePermissionError(
            f"Glob refused: the pattern {pattern!r} leaves the workspace.",
            "Use a pattern relative to the workspace, without '..'.",
        )
    base, base_relative = workspace.resolve(path, tool="Glob")
    if not base.is_dir():
        raise WorkspaceError(f"{base_relative} is not a directory.", "Pass a folder inside the workspace as path.")
    check_length(pattern, workspace.regex_budget, "glob pattern")
    matches = _glob(pattern, anywhere=False)
    found: list[tuple[float, str]] = []
    for file, relative in _walk_files(workspace, base):
        inner = file.relative_to(base).as_posix()
        if not matches(inner) or not rules.lists(relative):
            continue
        try:
            found.append((file.stat().st_mtime, relative))
        except OSError:
            continue
    if not found:
        return f"No files found matching {pattern!r}."
    found.sort(key=lambda item: (-item[0], item[1]))
    lines = [relative for _, relative in found[:GLOB_MAX_RESULTS]]
    if len(found) > GLOB_MAX_RESULTS:
        lines.append(
            f"(Results are truncated: showing {GLOB_MAX_RESULTS} of {len(found)}. Use a more specific pattern or path.)"
        )
    return "\n".join(lines)


def grep_files(
    workspace: Workspace,
    rules: ToolPermissions,
    pattern: str,
    path: str | None = None,
    glob: str | None = None,
    case_insensitive: bool = False,
    output_mode: str = "files_with_matches",
) -> str:
    """Regex search of text files under ``path`` (default: the whole workspace)."""
    if output_mode not in OUTPUT_MODES:
        raise InputValidationError(
            f"output_mode must be one of {', '.join(OUTPUT_MODES)}, got {output_mode!r}.",
            'Use "files_with_matches" (default), "content" or "count".',
        )
    compiled = GrepPattern(pattern, case_insensitive, workspace.regex_budget)
    base, base_relative = workspace.resolve(path, tool="Grep")
    if base.is_file():
        candidates: Iterator[tuple[Path, str]] = iter([(base, base_relative)])
    elif base.is_dir():
        candidates = _walk_files(workspace, base)
    else:
        raise WorkspaceError(f"Path does not exist: {base_relative}.")
    if glob:
        check_length(glob, workspace.regex_budget, "glob pattern")
    name_filter = _glob(glob) if glob else None
    files: list[str] = []
    counts: list[tuple[str, int]] = []
    content: list[str] = []
    for file, relative in candidates:
        if (name_filter and not name_filter(relative)) or not rules.lists(relative):
            continue
        try:
            if file.stat().st_size > GREP_MAX_FILE_BYTES:
                continue
            data = file.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue
        hit = grep_content(compiled, relative, data.decode("utf-8", errors="replace"))
        if hit is None:
            continue
        files.append(relative)
        counts.append((relative, len(hit.lines)))  # matching lines, as grep -c counts
        if output_mode == "content":
            content += [f"{relative}:{number}:{line[:READ_LINE_WIDTH]}" for number, line in hit.lines]
    if not files:
        return f"No matches found for {pattern!r}."
    if output_mode == "content":
        lines = content
    elif output_mode == "count":
        lines = [f"{relative}:{count}" for relative, count in counts]
    else:
        lines = [f"Found {len(files)} file{'s' if len(files) != 1 else ''}", *files]
    if len(lines) > GREP_MAX_RESULTS:
        total = len(lines)
        lines = lines[:GREP_MAX_RESULTS] + [f"(Results are truncated: showing {GREP_MAX_RESULTS} of {total} lines.)"]
    return "\n".join(lines)


__all__ = [
    "WORKSPACE_TOOLS",
    "FileReads",
    "ToolPermissions",
    "Workspace",
    "WorkspaceError",
    "WorkspacePermissionError",
    "check_skill_permissions",
    "edit_file",
    "glob_files",
    "grep_files",
    "path_matches",
    "permissions_for",
    "session_rules",
    "read_file",
    "write_file",
]
