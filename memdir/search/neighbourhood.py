"""An entry's neighbourhood in the link graph: breadth-first over links in both directions.

Links are directed (``a extends b``), but a reader at ``b`` wants to know that ``a`` builds on
it, so the walk follows a link from either end; the text and the Mermaid diagram keep each
link's direction. The walk reads the derived index's link table only (no ``.yml``), one query
per hop, and stops at ``graph_max_nodes`` entries so a hub cannot flood the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memdir.core.errors import EntryNotFoundError, InputValidationError
from memdir.core.links import check_link_kind
from memdir.core.paths import memory_uri, normalize_path
from memdir.storage.records import Edge

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.storage.records import Edge

MAX_HOPS = 3


@dataclass(frozen=True)
class Neighbourhood:
    """What `neighbourhood` found.

    Attributes:
        centre: the entry asked about.
        hops: every entry reached -> its distance from the centre (the centre is 0).
        edges: the links among them, in the order found.
        titles: titles of the entries that exist (a dangling target has none).
        truncated: the walk stopped at the node limit.
    """

    centre: str
    hops: dict[str, int]
    edges: list[Edge]
    titles: dict[str, str] = field(default_factory=dict)
    truncated: bool = False

    def offered_from(self) -> dict[str, set[str]]:
        """Each entry beyond the centre -> the entries one hop nearer it is linked with: reading it
        after seeing this is following one of those links."""
        found: dict[str, set[str]] = {}
        for edge in self.edges:
            for near, far in ((edge.source, edge.target), (edge.target, edge.source)):
                if near in self.hops and far in self.hops and self.hops[far] == self.hops[near] + 1:
                    found.setdefault(far, set()).add(near)
        return found


def check_hops(hops: object) -> int:
    if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
        raise InputValidationError(
            f"hops must be a whole number from 1 to {MAX_HOPS}, got {hops!r}.",
            "Pass hops: 1 for the direct links, 2 or 3 to go further.",
        )
    return hops


def neighbourhood(
    memory: Memory, path: str, hops: int = 1, kinds: Sequence[str] | None = None, *, max_nodes: int | None = None
) -> Neighbourhood:
    """The entries within ``hops`` links of ``path`` (only links of ``kinds``, when given).

    Raises:
        EntryNotFoundError: no entry at ``path``.
        InputValidationError: hops outside 1-3, an unknown kind.
    """
    centre = normalize_path(path)
    hops = check_hops(hops)
    wanted = sorted({check_link_kind(kind) for kind in kinds}) if kinds else None
    if not memory.exists(centre):
        raise EntryNotFoundError(centre)
    limit = max_nodes or memory.settings.search.graph_max_nodes
    distance = {centre: 0}
    edges: dict[tuple[str, str, str], Edge] = {}
    frontier = [centre]
    truncated = False
    for hop in range(1, hops + 1):
        found = memory.edges(frontier, wanted)
        reached: list[str] = []
        for edge in found:
            for end in (edge.source, edge.target):
                if end in distance:
                    continue
                if len(distance) >= limit:
                    truncated = True
                    continue
                distance[end] = hop
                reached.append(end)
            if edge.source in distance and edge.target in distance:
                edges.setdefault((edge.source, edge.target, edge.kind), edge)
        frontier = [end for end in reached if memory.exists(end)]  # a dangling target leads nowhere
        if not frontier:
            break
    return Neighbourhood(centre, distance, list(edges.values()), memory.titles(distance), truncated)


def render_text(graph: Neighbourhood) -> str:
    """A compact listing: the centre, then each link as ``source —kind 0.80 (origin)→ target``
    grouped by the hop that reached it, then the entries with their titles."""
    centre_title = graph.titles.get(graph.centre)
    head = memory_uri(graph.centre) + (f' "{centre_title}"' if centre_title else "")
    if not graph.edges:
        return f"{head} has no links."
    far = max(graph.hops.values())
    lines = [f"{head}: {len(graph.hops) - 1} linked entr{'y' if len(graph.hops) == 2 else 'ies'} "
             f"within {far} hop{'s' if far != 1 else ''}, {len(graph.edges)} link{'s' if len(graph.edges) != 1 else ''}."]
    for hop in range(1, far + 1):
        lines.append(f"Hop {hop}:")
        at_hop = [edge for edge in graph.edges if max(graph.hops[edge.source], graph.hops[edge.target]) == hop]
        for edge in at_hop:
            lines.append(f"- {_end(graph, edge.source)} —{edge.kind} {edge.strength:.2f} ({edge.origin})→ {_end(graph, edge.target)}")
    if graph.truncated:
        lines.append(f"(stopped at {len(graph.hops)} entries: ask for fewer hops or some kinds only)")
    lines.append("Read any of them with MemoryRead.")
    return "\n".join(lines)


def _end(graph: Neighbourhood, path: str) -> str:
    title = graph.titles.get(path)
    if path not in graph.titles:
        return f"{memory_uri(path)} (missing)"
    return f'{memory_uri(path)} "{title}"' if title else memory_uri(path)


def render_mermaid(graph: Neighbourhood) -> str:
    """A Mermaid ``graph LR`` of the neighbourhood: one node per entry (its title, else its path),
    one arrow per link labelled with its kind and strength, the centre drawn as a stadium."""
    ids = {path: f"n{number}" for number, path in enumerate(sorted(graph.hops, key=lambda p: (graph.hops[p], p)))}
    lines = ["```mermaid", "graph LR"]
    for path, node in ids.items():
        label = _mermaid_text(graph.titles.get(path) or path)
        lines.append(f'  {node}(["{label}"])' if path == graph.centre else f'  {node}["{label}"]')
    for edge in graph.edges:
        arrow = "-.->" if edge.origin == "system" else "-->"
        lines.append(f'  {ids[edge.source]} {arrow}|"{edge.kind} {edge.strength:.2f}"| {ids[edge.target]}')
    lines.append("```")
    return "\n".join(lines)


def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label (quotes and brackets as entity codes)."""
    for raw, code in (('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("\n", " ")):
        text = text.replace(raw, code)
    return text


__all__ = ["MAX_HOPS", "Neighbourhood", "check_hops", "neighbourhood", "render_mermaid", "render_text"]
