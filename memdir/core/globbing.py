"""Glob patterns over ``/``-separated paths, matched without catastrophic backtracking.

A pattern is a list of segments. ``**`` as a whole segment spans zero or more folders;
``*`` and ``?`` match within one name; a ``**`` inside a segment (``secrets**``,
``config/**.secret``) also crosses folders; ``[...]`` (``[!...]`` negated) is a character
class, or a literal ``[`` where the caller says brackets are plain text.

Each segment becomes a regex built the way `fnmatch` builds its own: every star followed
by fixed text is an atomic group (``(?>.*?text)``), so no run of stars can backtrack
exponentially. The segments are then matched against the path's names by a small
dynamic programme over positions. Translating a whole pattern into one ordinary regex,
the obvious way, let ``*`` x 2000 freeze a server for minutes.

Used by MemoryGlob (memory paths) and by the workspace tools (Glob, Grep's file filter,
a skill's allowed/denied path globs), which differ only in how they spell a pattern
before matching it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

ANY_DEPTH = "**"

_STAR, _CROSSING_STAR = object(), object()


def _bracket_end(segment: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start`` (-1: none; then ``[`` is literal)."""
    i = start + 1
    if i < len(segment) and segment[i] == "!":
        i += 1
    if i < len(segment) and segment[i] == "]":
        i += 1  # a ']' first in the class is part of it
    end = segment.find("]", i)
    return end


def _class(body: str) -> str:
    negated = body.startswith("!")
    body = body[1:] if negated else body
    chars = body.replace("\\", "\\\\").replace("^", "\\^") if body else ""
    return f"[{'^' if negated else ''}{chars}]" if chars else "(?!)"


@lru_cache(maxsize=1024)
def _segment(pattern: str, brackets: bool) -> tuple[re.Pattern[str], bool] | None:
    """(regex, crosses folders) for one segment; None for ``**``, which spans whole names."""
    if pattern == ANY_DEPTH:
        return None
    tokens: list[object] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            end = i
            while end < len(pattern) and pattern[end] == "*":
                end += 1
            tokens.append(_CROSSING_STAR if end - i >= 2 else _STAR)
            i = end
        elif char == "?":
            tokens.append("[^/]")
            i += 1
        elif char == "[" and brackets and (end := _bracket_end(pattern, i)) != -1:
            tokens.append(_class(pattern[i + 1:end]))
            i = end + 1
        else:
            tokens.append(re.escape(char))
            i += 1
    crosses = _CROSSING_STAR in tokens
    # fnmatch's construction: fixed text, then for each star "(?>ANY*?FIXED)", a final star greedy.
    out: list[str] = []
    i = 0
    while i < len(tokens) and tokens[i] not in (_STAR, _CROSSING_STAR):
        out.append(str(tokens[i]))
        i += 1
    while i < len(tokens):
        star = "." if tokens[i] is _CROSSING_STAR else "[^/]"
        i += 1
        while i < len(tokens) and tokens[i] in (_STAR, _CROSSING_STAR):  # '*' runs: one star, crossing if any does
            star = "." if tokens[i] is _CROSSING_STAR else star
            i += 1
        fixed = []
        while i < len(tokens) and tokens[i] not in (_STAR, _CROSSING_STAR):
            fixed.append(str(tokens[i]))
            i += 1
        if i == len(tokens):
            out.append(f"{star}*{''.join(fixed)}")
        else:
            out.append(f"(?>{star}*?{''.join(fixed)})")
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL), crosses
    except re.error:  # a class such as [z-a]: it matches nothing, as in fnmatch
        return re.compile("(?!)"), crosses


def glob_matcher(pattern: str, *, brackets: bool = True) -> Callable[[str], bool]:
    """A test for paths matching ``pattern`` (see the module docstring).

    Args:
        brackets: ``[...]`` is a character class (else a literal ``[``).
    """
    steps = [_segment(segment, brackets) for segment in pattern.split("/")]

    def matches(path: str) -> bool:
        names = path.split("/")
        reachable = [0]  # how many names the segments so far can have consumed, ascending
        for step in steps:
            if step is None:
                reachable = list(range(reachable[0], len(names) + 1))
            else:
                regex, crosses = step
                ends: set[int] = set()
                for at in reachable:
                    last = len(names) if crosses else min(at + 1, len(names))
                    ends.update(end for end in range(at + 1, last + 1) if regex.match("/".join(names[at:end])))
                reachable = sorted(ends)
            if not reachable:
                return False
        return reachable[-1] == len(names)

    return matches


__all__ = ["ANY_DEPTH", "glob_matcher"]
