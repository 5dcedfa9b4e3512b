"""Glob and grep over memory paths and contents (SwarmMemory's MemoryGlob / MemoryGrep semantics)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from memdir.core.errors import InputValidationError
from memdir.core.paths import ENTRY_SUFFIX, MEMORY_SCHEME

_GLOB_TOKEN = re.compile(r"\*\*/|\*\*|\*|\?|\[[^\]/]*\]|[^*?\[]+|\[")


def _glob_error(pattern: str, why: str) -> InputValidationError:
    return InputValidationError(
        f"Invalid glob pattern {pattern!r}: {why}.",
        "Use patterns relative to the memory root, e.g. 'concept/ruby/*', 'skill/**' or '**/*'.",
    )


def normalize_glob(pattern: str) -> str:
    """SwarmMemory's pattern rules: ``x/*`` direct children, ``x/**`` recursive, ``x`` the entry ``x.md``.

    The pattern is confined to the root: absolute patterns, ``..`` and backslashes are refused.
    """
    text = pattern.strip()
    if text.startswith(MEMORY_SCHEME):
        text = text[len(MEMORY_SCHEME):]
    if not text:
        raise _glob_error(pattern, "the pattern is empty")
    if text.startswith("/"):
        raise _glob_error(pattern, "absolute patterns are not allowed")
    if "\\" in text:
        raise _glob_error(pattern, "backslashes are not allowed")
    if any(part == ".." for part in text.split("/")):
        raise _glob_error(pattern, "'..' would leave the memory root")
    text = re.sub(r"/{2,}", "/", text)
    if text.endswith("/"):
        text += "*"
    if text.endswith("**"):
        return text + "/*" + ENTRY_SUFFIX
    if text.endswith(ENTRY_SUFFIX):
        return text
    return text + ENTRY_SUFFIX


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a normalised glob: ``*`` and ``?`` stay within one folder, ``**/`` spans any depth."""
    parts: list[str] = []
    for token in _GLOB_TOKEN.findall(pattern):
        if token == "**/":
            parts.append(r"(?:[^/]+/)*")
        elif token == "**":
            parts.append(r".*")
        elif token == "*":
            parts.append(r"[^/]*")
        elif token == "?":
            parts.append(r"[^/]")
        elif token.startswith("[") and len(token) > 1:
            body = token[1:-1]
            if body.startswith("!"):
                body = "^" + body[1:]
            parts.append(f"[{body}]")
        else:
            parts.append(re.escape(token))
    return re.compile("".join(parts) + r"\Z")


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test for paths matching a user glob pattern (see `normalize_glob`)."""
    regex = glob_regex(normalize_glob(pattern))
    return lambda path: regex.match(path) is not None


def path_filter(path: str | None) -> Callable[[str], bool]:
    """MemoryGrep's ``path``: a directory prefix (``fact/api`` → ``fact/api/…`` only) or one exact ``.md``."""
    if not path or not path.strip() or path.strip() in ("/", "**", "**/*"):
        return lambda candidate: True
    text = path.strip()
    if text.startswith(MEMORY_SCHEME):
        text = text[len(MEMORY_SCHEME):]
    if text.startswith("/") or "\\" in text or any(part == ".." for part in text.split("/")):
        raise InputValidationError(
            f"Invalid path filter {path!r}: it must be a folder or entry inside the memory root.",
            "Use e.g. 'concept/' or 'skill/debug.md'.",
        )
    if text.endswith(ENTRY_SUFFIX):
        return lambda candidate: candidate == text
    prefix = text.rstrip("/") + "/"
    return lambda candidate: candidate.startswith(prefix)


@dataclass(slots=True)
class GrepHit:
    """The matches of one entry: line numbers (1-based) with their text, and the match count."""

    path: str
    lines: list[tuple[int, str]] = field(default_factory=list)
    count: int = 0


def compile_grep(pattern: str, case_insensitive: bool) -> re.Pattern[str]:
    """Compile a grep regex, turning a syntax error into a message the model can act on."""
    try:
        return re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
    except re.error as exc:
        raise InputValidationError(
            f"Invalid regular expression {pattern!r}: {exc}.",
            "Escape special characters such as ( [ { . * + ? with a backslash, or search for a simpler pattern.",
        ) from exc


def grep_content(regex: re.Pattern[str], path: str, content: str) -> GrepHit | None:
    """Every line of ``content`` that matches, with the total number of matches."""
    hit = GrepHit(path)
    for number, line in enumerate(content.splitlines(), start=1):
        found = len(regex.findall(line))
        if found:
            hit.lines.append((number, line))
            hit.count += found
    return hit if hit.count else None
