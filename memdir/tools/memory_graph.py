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
    """Show the entries linked to an entry: what builds on, contradicts or replaces it, before you rely on it.

    Args:
        path: the entry at the centre.
        hops: how many links away (1-3).
        kinds: only links of these kinds.
        mermaid: add a Mermaid diagram.

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
