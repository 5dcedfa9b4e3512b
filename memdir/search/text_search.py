"""Glob and grep over memory paths and contents (SwarmMemory's MemoryGlob / MemoryGrep semantics)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from memdir.core.errors import InputValidationError
from memdir.core.globbing import glob_matcher as path_glob
from memdir.core.paths import ENTRY_SUFFIX, MEMORY_SCHEME

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


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test for paths matching a user glob pattern (see `normalize_glob`; no catastrophic backtracking)."""
    return path_glob(normalize_glob(pattern))


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


class GrepPattern:
    """A user's regular expression, with a time budget for the one search it serves.

    A pattern such as ``(a|aa)+$`` backtracks exponentially on a long run of ``a``: with
    Python's ``re`` one MemoryGrep call froze the whole server (the match holds the GIL).
    The `regex` engine (``re``'s syntax) avoids most such blow-ups by itself, lets the
    other threads run while it matches, and stops a match at a deadline; a search that
    runs out of time is refused with a message saying why, instead of hanging.
    """

    def __init__(self, pattern: str, case_insensitive: bool, time_limit: float) -> None:
        import regex  # on the first grep, not on the server's start-up path (~10-25 ms)

        try:
            self._regex = regex.compile(pattern, regex.IGNORECASE if case_insensitive else 0)
        except (regex.error, RecursionError, OverflowError, ValueError) as exc:
            why = "it nests too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise InputValidationError(
                f"Invalid regular expression {pattern!r}: {why}.",
                "Escape special characters such as ( [ { . * + ? with a backslash, or search for a simpler pattern.",
            ) from exc
        self.pattern = pattern
        self.time_limit = time_limit
        self._deadline = time.monotonic() + time_limit

    def count(self, line: str) -> int:
        """How often the pattern matches in ``line`` (raises `InputValidationError` once the budget is spent)."""
        remaining = self._deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            return len(self._regex.findall(line, timeout=remaining, concurrent=True))
        except TimeoutError:
            raise InputValidationError(
                f"The regular expression {self.pattern!r} took longer than {self.time_limit:g} s, so the search "
                "was stopped: nested repetition such as (a|aa)+ or (x+)* can make a pattern backtrack without end.",
                "Simplify the pattern (e.g. 'a+' instead of '(a|aa)+'), or narrow the search with a path.",
            ) from None


def grep_content(pattern: GrepPattern, path: str, content: str) -> GrepHit | None:
    """Every line of ``content`` that matches, with the total number of matches."""
    hit = GrepHit(path)
    for number, line in enumerate(content.splitlines(), start=1):
        found = pattern.count(line)
        if found:
            hit.lines.append((number, line))
            hit.count += found
    return hit if hit.count else None
