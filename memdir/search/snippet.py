"""The one line of an entry that shows why it matched a query.

A search result's first line is usually its heading or an introduction, which says
little about why *this* query found it. The snippet is instead the line holding the
most of the query's weight: each distinct query term (a Porter stem, as the keyword
index has it) found on the line adds its weight (the store's idf, so a rare name counts
more than a common word). Ties go to the earlier line; an entry sharing no word with
the query (found by meaning alone) shows its first line of prose.
"""

from __future__ import annotations

from collections.abc import Mapping

from memdir.core.keywords import porter_stem, word_matches, words

SNIPPET_CHARS = 160
"""Longest snippet: one line of a compact result list."""


def _line_terms(line: str) -> set[str]:
    return {porter_stem(word) for word in words(line)}


def best_line(content: str, weights: Mapping[str, float], max_chars: int = SNIPPET_CHARS) -> str:
    """The line of ``content`` that best matches the weighted query terms, cut to ``max_chars``.

    Args:
        content: the entry's markdown.
        weights: query term (Porter stem) -> weight (positive).
        max_chars: the snippet's length cap; a long line is cut around its first match.
    """
    lines = [line.strip() for line in content.splitlines() if line.strip()]
    if not lines:
        return ""
    best, best_score = None, 0.0
    for line in lines:
        score = sum(weights[term] for term in _line_terms(line) if term in weights)
        if score > best_score:
            best, best_score = line, score
    if best is None:
        prose = [line for line in lines if not line.startswith(("#", "---", "```"))]
        best = (prose or lines)[0]
    return _cut(best, weights, max_chars)


def _first_match(line: str, weights: Mapping[str, float]) -> int:
    """Where the first space-separated word of ``line`` holding a weighted term starts (0 if none)."""
    lowered = line.lower()
    if len(lowered) == len(line):  # (nearly always: then each word is where the line's words are)
        for match in word_matches(lowered):
            if porter_stem(match.group()) in weights:
                at = match.start()
                while at > 0 and not line[at - 1].isspace():  # (back to where its space-separated word starts)
                    at -= 1
                return at
        return 0
    position = 0
    for word in line.split():
        at = line.find(word, position)
        position = at + len(word)
        if any(porter_stem(w) in weights for w in words(word)):
            return at
    return 0


def _cut(line: str, weights: Mapping[str, float], max_chars: int) -> str:
    """``line`` shortened to ``max_chars`` around its first matching word, with ellipses."""
    if len(line) <= max_chars:
        return line
    start = max(0, _first_match(line, weights) - max_chars // 4)
    start = min(start, len(line) - (max_chars - 1))
    head = "…" if start > 0 else ""
    room = max_chars - len(head) - 1
    piece = line[start:start + room].rstrip()
    return f"{head}{piece}…"


__all__ = ["SNIPPET_CHARS", "best_line"]
