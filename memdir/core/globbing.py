"""Glob patterns over ``/``-separated paths, matched without catastrophic backtracking.

A pattern is a list of segments. ``**`` as a whole segment spans zero or more folders;
inside a segment, ``*``, ``?`` and ``[...]`` (``[!...]`` negated) match within that one
name. Each segment is translated by `fnmatch` (whose regexes use atomic groups, so no
run of stars can backtrack exponentially), and the segments are matched against the
path's names by a small dynamic programme over positions: at most (segments x names)
steps, whatever the pattern. A translation of a whole pattern into one regex, the
obvious way, let ``*`` x 2000 freeze a server for minutes.

Used by MemoryGlob (memory paths) and by the workspace tools (Glob, Grep's file filter,
a skill's allowed/denied path globs), which differ only in how they spell a pattern
before matching it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from functools import lru_cache

ANY_DEPTH = "**"


@lru_cache(maxsize=1024)
def _segment(pattern: str) -> re.Pattern[str] | None:
    """The compiled matcher of one segment (None for ``**``)."""
    if pattern == ANY_DEPTH:
        return None
    return re.compile(fnmatch.translate(pattern))


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test for paths matching ``pattern`` (segments as in the module docstring)."""
    steps = [_segment(segment) for segment in pattern.split("/")]

    def matches(path: str) -> bool:
        names = path.split("/")
        reachable = [0]  # how many names the segments so far can have consumed, ascending
        for step in steps:
            if step is None:
                reachable = list(range(reachable[0], len(names) + 1))
            else:
                reachable = [at + 1 for at in reachable if at < len(names) and step.match(names[at])]
            if not reachable:
                return False
        return reachable[-1] == len(names)

    return matches


__all__ = ["ANY_DEPTH", "glob_matcher"]
