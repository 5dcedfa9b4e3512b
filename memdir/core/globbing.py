"""Glob patterns over ``/``-separated paths, matched without catastrophic backtracking.

A pattern is a list of segments. ``**`` as a whole segment spans zero or more folders;
``*``, ``?`` and ``[...]`` (``[!...]`` negated; a literal ``[`` where the caller says
brackets are plain text) match within one name; a ``**`` inside a segment (``secrets**``,
``config/**.secret``) crosses folders: ``A**B`` matches one name ``A*B``, or a first
name ``A*``, any names, and a last name ``*B`` (only the first ``**`` of a segment
crosses; later ones count as ``*``).

Every name is tested by a regex that `fnmatch` translates (it builds each star followed
by fixed text as an atomic group, so no run of stars backtracks exponentially), and the
segments are matched against the path's names by a small dynamic programme over
positions. Translating a whole pattern into one ordinary regex, the obvious way, let
``*`` x 2000 freeze a server for minutes.

Used by MemoryGlob (memory paths) and by the workspace tools (Glob, Grep's file filter,
a skill's allowed/denied path globs), which differ only in how they spell a pattern
before matching it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

ANY_DEPTH = "**"
_STARS = re.compile(r"\*{2,}")


@lru_cache(maxsize=4096)
def _name(pattern: str, brackets: bool) -> re.Pattern[str]:
    """One name's matcher (``**`` runs count as ``*`` here)."""
    text = _STARS.sub("*", pattern)
    if not brackets:
        text = text.replace("[", "[[]")  # fnmatch's spelling of a literal '['
    return re.compile(fnmatch.translate(text))


@dataclass(frozen=True)
class _Span:
    """A segment ``A**B``: one name ``A*B``, or a first name ``A*`` ... a last name ``*B``."""

    one: re.Pattern[str]
    first: re.Pattern[str]
    last: re.Pattern[str]


@lru_cache(maxsize=1024)
def _segment(pattern: str, brackets: bool) -> re.Pattern[str] | _Span | None:
    """The matcher of one segment: None for ``**`` (whole names), a `_Span`, or one name's regex."""
    if _STARS.fullmatch(pattern):  # '**' (or '***'...) as a whole segment: any depth
        return None
    crossing = _STARS.search(pattern)
    if crossing is None:
        return _name(pattern, brackets)
    head, tail = pattern[: crossing.start()], pattern[crossing.end():]
    return _Span(_name(f"{head}*{tail}", brackets), _name(f"{head}*", brackets), _name(f"*{tail}", brackets))


def _every_path(path: str) -> bool:
    return True


def glob_matcher(pattern: str, *, brackets: bool = True) -> Callable[[str], bool]:
    """A test for paths matching ``pattern`` (see the module docstring).

    Args:
        brackets: ``[...]`` is a character class (else a literal ``[``).
    """
    segments = pattern.split("/")
    steps = [_segment(segment, brackets) for segment in segments]
    last = steps[-1]
    if all(step is None for step in steps[:-1]) and (last is None or (len(steps) > 1 and not segments[-1].strip("*"))):
        return _every_path  # '**', '**/*' (MemoryGlob's everything): nothing to test
    if isinstance(last, re.Pattern) and len(steps) > 1 and all(step is None for step in steps[:-1]):
        # '**/*.md' and the like (every entry, MemoryGlob's '**/*'): only the last name is tested,
        # a fifth of the general programme's cost over 100K paths.
        return lambda path: last.match(path.rpartition("/")[2]) is not None

    def matches(path: str) -> bool:
        names = path.split("/")
        count = len(names)
        reachable = [0]  # how many names the segments so far can have consumed, ascending
        for step in steps:
            if step is None:
                reachable = list(range(reachable[0], count + 1))
            elif isinstance(step, _Span):
                ends: set[int] = set()
                for at in reachable:
                    if at < count and step.one.match(names[at]):
                        ends.add(at + 1)
                    if at < count and step.first.match(names[at]):
                        ends.update(end for end in range(at + 2, count + 1) if step.last.match(names[end - 1]))
                reachable = sorted(ends)
            else:
                reachable = [at + 1 for at in reachable if at < count and step.match(names[at])]
            if not reachable:
                return False
        return reachable[-1] == count

    return matches


__all__ = ["ANY_DEPTH", "glob_matcher"]
