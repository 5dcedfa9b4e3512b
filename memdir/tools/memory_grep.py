"""MemoryGrep: regular-expression search of entries, in SwarmMemory's three output modes.

``files_with_matches`` searches each entry's title, tags and domain as well as its content (as
SwarmMemory searched the ``.yml`` before the ``.md``) and says where each entry matched;
``content`` and ``count`` show lines, so they search content only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.core.errors import InputValidationError
from memdir.search.text_search import GrepHit
from memdir.tools.formatting import memory_uri, plural, system_reminder, with_title
from memdir.tools.session import Session

if TYPE_CHECKING:
    from memdir.memory import Memory

OUTPUT_MODES = ("files_with_matches", "content", "count")
CHOICES = {"output_mode": OUTPUT_MODES}
"""Parameters with a fixed set of values: the server lists them in the tool's input schema."""


def memory_grep(
    memory: Memory,
    session: Session,
    pattern: str,
    path: str | None = None,
    case_insensitive: bool = False,
    output_mode: str = "files_with_matches",
) -> str:
    """Search entry contents with a regular expression: for an exact word, name or identifier.

    Args:
        pattern: a Python regular expression, e.g. ``TODO|FIXME``.
        path: only this folder (``fact/api``) or entry.
        case_insensitive: ignore case.
        output_mode: ``files_with_matches`` (default; titles, tags and domain too), ``content`` (lines) or ``count``.

    Returns:
        The matches in the requested mode; at most 500 entries (or lines) are listed.
    """
    mode = (output_mode or "files_with_matches").strip()
    if mode not in OUTPUT_MODES:
        raise InputValidationError(
            f"Invalid output_mode {output_mode!r}.",
            f"Use one of: {', '.join(OUTPUT_MODES)}.",
        )
    hits = memory.grep(pattern, path=path, case_insensitive=case_insensitive, labels=mode == "files_with_matches")
    if not hits:
        where = f" under '{path}'" if path and path.strip() else ""
        return f"No matches found for pattern '{pattern}'{where}."
    cap = max(1, memory.settings.limits.grep_max_results)
    if mode == "content":
        return _content(hits, cap)
    if mode == "count":
        return _count(hits, cap)
    return _files(memory, hits, pattern, cap)


def _files(memory: Memory, hits: list[GrepHit], pattern: str, cap: int) -> str:
    shown = hits[:cap]
    titles = memory.titles(hit.path for hit in shown)
    lines = [f"Memory entries matching '{pattern}' ({plural(len(shown), 'entry')}):"]
    lines += [f"- {with_title(hit.path, titles.get(hit.path))} ({', '.join(hit.where)})" for hit in shown]
    return "\n".join(lines) + _truncated(len(shown), len(hits), "matching entries")


def _content(hits: list[GrepHit], cap: int) -> str:
    blocks: list[str] = []
    budget = cap
    shown_lines = 0
    for hit in hits:
        if budget <= 0:
            break
        lines = hit.lines[:budget]
        budget -= len(lines)
        shown_lines += len(lines)
        blocks.append("\n".join([f"{memory_uri(hit.path)}:", *(f"{number}: {line}" for number, line in lines)]))
    total_matches = sum(hit.count for hit in hits)
    total_lines = sum(len(hit.lines) for hit in hits)
    summary = f"({plural(total_matches, 'match')} in {plural(len(hits), 'entry')})"
    return "\n\n".join(blocks) + "\n" + summary + _truncated(shown_lines, total_lines, "matching lines")


def _count(hits: list[GrepHit], cap: int) -> str:
    shown = hits[:cap]
    total = sum(hit.count for hit in hits)
    lines = [f"{total} total {'match' if total == 1 else 'matches'} in {plural(len(hits), 'entry')}:"]
    lines += [f"- {memory_uri(hit.path)}: {plural(hit.count, 'match')}" for hit in shown]
    return "\n".join(lines) + _truncated(len(shown), len(hits), "matching entries")


def _truncated(shown: int, total: int, what: str) -> str:
    if shown >= total:
        return ""
    return "\n\n" + system_reminder(
        f"Results truncated: showing {shown} of {total} {what}.",
        "Use a more specific pattern or the path parameter (e.g. 'concept/ruby/') to narrow the search.",
    )


__all__ = ["CHOICES", "OUTPUT_MODES", "memory_grep"]
