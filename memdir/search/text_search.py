"""Glob and grep over memory paths and contents (SwarmMemory's MemoryGlob / MemoryGrep semantics)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from memdir.core.errors import InputValidationError, InvalidPathError
from memdir.core.globbing import glob_matcher as path_glob
from memdir.core.paths import ENTRY_SUFFIX, MEMORY_SCHEME, normalize_path
from memdir.core.user_regex import RegexBudget, compile_search, shown

T = TypeVar("T")

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


_EVERY_ENTRY = re.compile(r"(?:\*{2,}/)+\*" + re.escape(ENTRY_SUFFIX))  # '**/*' as normalised: every entry path


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test for paths matching a user glob pattern (see `normalize_glob`; no catastrophic backtracking)."""
    text = normalize_glob(pattern)
    if _EVERY_ENTRY.fullmatch(text):  # every entry's path ends in the entry suffix: nothing to test
        return path_glob("**")
    return path_glob(text)


def glob_folder(pattern: str) -> str | None:
    """The folder holding every entry the glob ``pattern`` can match (its literal leading folders:
    ``concept/ruby`` for ``concept/ruby/*``); None when that is the whole root (``**/*``)."""
    text = normalize_glob(pattern)
    wild = min((at for at in map(text.find, "*?[") if at >= 0), default=len(text))
    folder = text[:wild].rpartition("/")[0]
    try:
        normalize_path(folder)
    except InvalidPathError:  # no entry can be inside it (or it is the root): every folder is looked at
        return None
    return folder or None


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


def filter_folder(path: str | None) -> str | None:
    """The folder holding every entry `path_filter` (``path``) accepts; None for the whole root.

    A listing scans only this folder instead of the whole root (an episode listing at 10K
    entries stat'ed all of them).
    """
    path_filter(path)  # the same validation and error
    text = (path or "").strip().removeprefix(MEMORY_SCHEME)
    if text in ("", "/", "**", "**/*"):
        return None
    folder = text.rpartition("/")[0] if text.endswith(ENTRY_SUFFIX) else text.rstrip("/")
    try:
        normalize_path(folder)
    except InvalidPathError:  # no entry can be inside it: the whole root is scanned and the filter keeps none
        return None
    return folder or None


@dataclass(slots=True)
class GrepHit:
    """The matches of one entry: line numbers (1-based) with their text, the match count in
    the content, and where the pattern matched (``title``, ``tags``, ``content``)."""

    path: str
    lines: list[tuple[int, str]] = field(default_factory=list)
    count: int = 0
    where: list[str] = field(default_factory=list)


class GrepPattern:
    """A user's regular expression, bounded in what it may cost: to compile (checked before
    compiling, see `memdir.core.user_regex`) and to match (a time budget per search).

    A pattern such as ``(a|aa)+$`` backtracks exponentially on a long run of ``a``: with
    Python's ``re`` one MemoryGrep call froze the whole server (the match holds the GIL).
    The `regex` engine (``re``'s syntax) avoids most such blow-ups by itself, lets the
    other threads run while it matches, and stops a match at a deadline; a search whose
    matching runs out of time is refused with a message saying why, instead of hanging.
    Only time spent matching counts (not reading files). Each text is first searched
    whole, once (`may_match`), and only texts with a match are searched line by line:
    the engine's per-call cost would otherwise make a grep of many lines several times
    slower than ``re``. One compiled pattern (MULTILINE) serves both: within one line,
    which holds no line break, ``^`` and ``$`` mean the same with or without it.

    Memory: the pattern is compiled for finding, not capturing (`compile_search`); one that
    repeats a group is refused a line longer than its ``max_line``, since its match may take
    memory per character (``((x)y)*`` ~110 bytes on ``xyxy…``); matches are counted, never
    collected (``findall('.')`` of 3,000,000 CJK characters took 252 MB).
    """

    # Patterns the whole-text search could miss a line's match for (or scan at quadratic cost):
    # lookarounds, atomic groups and inline flags ('(?' other than '(?:' and named groups),
    # possessive quantifiers, text anchors, and anything that can match a line break.
    _NOT_LINE_LOCAL = re.compile(r"\(\?(?![:P])|[*+?}]\+|\\[AZzGsSWDnrvfxuUNpP0-9]|\[\^")

    def __init__(self, pattern: str, case_insensitive: bool, budget: RegexBudget) -> None:
        import regex

        flags = regex.MULTILINE | (regex.IGNORECASE if case_insensitive else 0)
        search = compile_search(pattern, budget, flags)
        self._regex = search.compiled
        self._max_line = search.max_line
        self._line_local = not self._NOT_LINE_LOCAL.search(pattern)
        self.pattern = pattern
        self.time_limit = budget.time_limit
        self._spent = 0.0

    def _run(self, method: Callable[..., T], text: str) -> T:
        remaining = self.time_limit - self._spent
        started = time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            return method(text, timeout=remaining, concurrent=True)
        except TimeoutError:
            raise InputValidationError(
                f"The regular expression {shown(self.pattern)} took longer than {self.time_limit:g} s to match, so the "
                "search was stopped: nested repetition such as (a|aa)+ or (x+)* can make a pattern backtrack "
                "without end.",
                "Simplify the pattern (e.g. 'a+' instead of '(a|aa)+'), or narrow the search with a path.",
            ) from None
        except MemoryError:
            raise InputValidationError(
                f"The regular expression {shown(self.pattern)} ran out of memory while matching, so the search was stopped.",
                "Simplify the pattern (fewer nested repeats and groups), or narrow the search with a path.",
            ) from None
        finally:
            self._spent += time.monotonic() - started

    def check_lines(self, lines: list[str], where: str) -> None:
        """Refuse (`InputValidationError`) to search ``lines`` (from ``where``) when one is longer than ``max_line``."""
        if self._max_line is None:  # no group is repeated: any line may be searched, none need measuring
            return
        longest = max(map(len, lines), default=0)
        if longest > self._max_line:
            raise InputValidationError(
                f"The regular expression {shown(self.pattern)} repeats a group, and matching it takes memory in "
                f"proportion to the line it searches: {where} has a line of {longest:,} characters, and such a "
                f"pattern may search lines of at most {self._max_line:,} (the setting grep_max_line_chars, shared "
                "among the groups it repeats and those it captures for backreferences).",
                "Repeat characters or classes instead of groups (e.g. [ab]* instead of (a|b)*), drop "
                "backreferences, or narrow the search with a path.",
            )

    def may_match(self, lines: list[str]) -> bool:
        """False only when none of ``lines`` can match (one search of them joined by newlines).

        Used only for patterns that match within a line (see ``_NOT_LINE_LOCAL``), where a
        line's match is also one in the joined text; for the others it always says True.
        """
        return not self._line_local or self._run(self._regex.search, "\n".join(lines)) is not None

    def matches(self, text: str, where: str) -> bool:
        """Whether the pattern matches anywhere in ``text`` (from ``where``)."""
        self.check_lines([text], where)
        return self._run(self._regex.search, text) is not None

    def count(self, line: str) -> int:
        """How often the pattern matches in ``line``."""
        return self._run(self._count, line)

    def _count(self, line: str, **options: object) -> int:
        # What subn leaves is at most the line; findall's list holds an object per match, finditer is ~25% slower.
        return self._regex.subn("", line, **options)[1]


def grep_content(pattern: GrepPattern, path: str, content: str) -> GrepHit | None:
    """Every line of ``content`` that matches, with the total number of matches."""
    lines = content.splitlines()
    pattern.check_lines(lines, path)
    if not pattern.may_match(lines):
        return None
    hit = GrepHit(path, where=["content"])
    for number, line in enumerate(lines, start=1):
        found = pattern.count(line)
        if found:
            hit.lines.append((number, line))
            hit.count += found
    return hit if hit.count else None


def matching_fields(pattern: GrepPattern, fields: Mapping[str, Sequence[str]]) -> list[str]:
    """The names of the fields (e.g. ``title``, ``tags``) one of whose values ``pattern`` matches."""
    return [name for name, values in fields.items() if any(pattern.matches(value, f"an entry's {name}") for value in values)]
