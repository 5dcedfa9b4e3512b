"""MemoryDefrag: analyse the memory's health and optimise it (duplicates, links, stubs, compaction)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memdir.optimization.options import ACTIONS, OPTION_SPECS

if TYPE_CHECKING:
    from memdir.memory import Memory

#: Every option the tool accepts, with its JSON type, for the server's parameter schema.
PARAMETERS: dict[str, str] = {
    name: {"fraction": "number", "number": "number", "integer": "integer", "choice": "string", "flag": "boolean"}[spec.kind]
    for name, spec in OPTION_SPECS.items()
}


def memory_defrag(memory: Memory, action: str, **options: Any) -> str:
    """Check memory's health and tidy it: duplicates, thin or unread entries, related ones; merge, link, clean up.

    Start with ``analyze`` (a health report). ``find_duplicates``, ``find_low_quality``,
    ``find_archival_candidates`` and ``find_related`` only report. ``link_related``,
    ``merge_duplicates`` (same-type pairs, never episodes; by default ``combine`` keeps every fact: the
    richer entry stays, what only the other holds is appended, the other becomes a redirect), ``cleanup_stubs`` (old redirects),
    ``compact`` (deletes low-quality, old, unread entries) and ``full`` (merge, clean up, compact)
    change memory only with ``dry_run: false``: preview first, then repeat. Each option applies to
    the actions it names; a person can undo the last live run (``memdir defrag --undo``).

    Args:
        action: one of the actions above.
        options: the action's options as listed (``limit`` caps how many items the report lists, default 50).

    Returns:
        A markdown report of what was found, or what was (or would be) changed.
    """
    # Loads with the first run, not the server's start.
    from memdir.optimization.defragmenter import Defragmenter

    return Defragmenter(memory).run(str(action).strip(), **options).markdown


__all__ = ["ACTIONS", "PARAMETERS", "memory_defrag"]
