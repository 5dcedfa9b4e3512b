"""MemoryGraph: an entry's neighbourhood in the link graph, as compact text or a Mermaid diagram."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.search.neighbourhood import neighbourhood, render_mermaid, render_text
from memdir.tools.params import coerce_str_list
from memdir.tools.session import Session

if TYPE_CHECKING:
    from memdir.memory import Memory


def memory_graph(
    memory: Memory,
    session: Session,
    path: str,
    hops: int = 1,
    kinds: list[str] | None = None,
    mermaid: bool = False,
) -> str:
    """Show the entries linked to one entry, and how: its neighbourhood in the memory's link graph.

    Links are typed: ``extends``, ``contradicts``, ``implements``, ``references`` (also
    SwarmMemory's ``related``) and ``supersedes``, each with a strength from 0 to 1 and made by a
    user or by memdir (``system``). Use it to find what builds on, contradicts or replaces an
    entry before relying on it, then MemoryRead the neighbours that matter (reading one counts
    as following its link).

    Args:
        path: the entry at the centre, e.g. ``concept/ruby/classes.md``.
        hops: how far to go: 1 (direct links, the default), 2 or 3.
        kinds: only links of these kinds, e.g. ``["contradicts", "supersedes"]``.
        mermaid: also return a Mermaid diagram of the neighbourhood.

    Returns:
        The centre, then per hop each link as ``memory://a "A" —kind 0.80 (origin)→ memory://b "B"``;
        with ``mermaid`` a fenced ``mermaid`` block after it.
    """
    graph = neighbourhood(memory, path, hops, coerce_str_list(kinds, "kinds") or None)
    for far, nearer in graph.offered_from().items():
        for near in nearer:
            session.tracker.offer(far, near)
    text = render_text(graph)
    return f"{text}\n\n{render_mermaid(graph)}" if mermaid else text


__all__ = ["memory_graph"]
