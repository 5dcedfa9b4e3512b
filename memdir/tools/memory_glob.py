"""MemoryGlob: list entries whose paths match a glob pattern, newest first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.core.identity import view_filter
from memdir.tools.formatting import human_size, plural, system_reminder, with_title
from memdir.tools.session import Session

if TYPE_CHECKING:
    from memdir.memory import Memory


def memory_glob(memory: Memory, session: Session, pattern: str, view_all: bool = False) -> str:
    """List the entries whose paths match a glob (``*`` within a folder, ``**`` across), newest first.

    Args:
        pattern: e.g. ``skill/**``, ``concept/ruby/*``, ``**/*deploy*``.
        view_all: also entries outside your role's view.

    Returns:
        ``Memory entries matching 'PATTERN' (N entries):`` then one
        ``- memory://path "Title" (SIZE)`` line per entry; at most 500 are listed.
    """
    page = memory.glob_page(pattern, max(1, memory.settings.limits.glob_max_results), view=view_filter(memory.actor, view_all))
    shown = page.entries
    if not shown:
        return f"No entries found matching pattern '{pattern}'."
    lines = [f"Memory entries matching '{pattern}' ({plural(len(shown), 'entry')}):"]
    lines += [f"- {with_title(info.path, info.title)} ({human_size(info.size)})" for info in shown]
    text = "\n".join(lines)
    if page.total is None or page.total > len(shown):
        counted = "matching entries; more match" if page.total is None else f"of {page.total} matching entries"
        text += "\n\n" + system_reminder(
            f"Results truncated: showing the {len(shown)} newest {counted}.",
            "Use a more specific pattern (e.g. a folder such as 'concept/ruby/*') to narrow the results.",
        )
    return text


__all__ = ["memory_glob"]
