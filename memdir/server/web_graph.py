"""The layout of an entry's link neighbourhood picture (the web view draws it as inline SVG).

Radial and deterministic: the entry in the middle, the entries one link away on a ring
around it, two links away on an outer ring, each ring in path order so the same links
always give the same picture. The canvas is as large as the rings drawn need. The template (``templates/graph.svg``) draws the result
with every label escaped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memdir.server.web_browse import Neighbourhood

WIDTH, HEIGHT = 760, 520
"""The canvas of a picture two links deep; one link deep draws on a smaller one (`RING_X`, `RING_Y` per ring)."""
MARGIN_X, MARGIN_Y = 110, 40
RING_X, RING_Y = (WIDTH / 2 - MARGIN_X) / 2, (HEIGHT / 2 - MARGIN_Y) / 2
LABEL_CHARS = 28
NODE_RADIUS = 9
KIND_COLOURS = {"references": "#9aa7b4", "extends": "#2f8f4e", "implements": "#7a4fb0", "contradicts": "#c0392b",
                "supersedes": "#d48a1c"}
"""Edge colour per link kind (`memdir.core.links.LINK_KINDS`); another kind is drawn grey."""


@dataclass(frozen=True)
class Node:
    path: str
    label: str
    x: float
    y: float
    distance: int
    missing: bool


@dataclass(frozen=True)
class Edge:
    x1: float
    y1: float
    x2: float
    y2: float
    kind: str
    source: str
    target: str

    @property
    def colour(self) -> str:
        return KIND_COLOURS.get(self.kind, "#9aa7b4")


@dataclass(frozen=True)
class Picture:
    width: int
    height: int
    nodes: list[Node]
    edges: list[Edge]
    truncated: bool

    @property
    def kinds(self) -> list[tuple[str, str]]:
        """(kind, colour) of the kinds drawn, for the legend."""
        return sorted({(edge.kind, edge.colour) for edge in self.edges})


def _label(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def layout(graph: Neighbourhood) -> Picture:
    """Where each entry and link of ``graph`` goes."""
    rings: dict[int, list[str]] = {}
    for path, distance in graph.distance.items():
        rings.setdefault(distance, []).append(path)
    rings_out = max(rings, default=0) or 1
    width = round(min(WIDTH, 2 * (MARGIN_X + RING_X * rings_out)))  # no empty space around the rings drawn
    height = round(min(HEIGHT, 2 * (MARGIN_Y + RING_Y * rings_out)))
    cx, cy = width / 2, height / 2
    step_x, step_y = (cx - MARGIN_X) / rings_out, (cy - MARGIN_Y) / rings_out  # the outer ring fits, labels too
    places: dict[str, tuple[float, float]] = {}
    for distance, paths in sorted(rings.items()):
        paths.sort()
        for index, path in enumerate(paths):
            if distance == 0:
                places[path] = (cx, cy)
                continue
            angle = 2 * math.pi * index / len(paths) - math.pi / 2 + (0.3 if distance % 2 == 0 else 0.0)
            places[path] = (cx + step_x * distance * math.cos(angle), cy + step_y * distance * math.sin(angle))
    nodes = [
        Node(path, _label(graph.titles.get(path) or path.rsplit("/", 1)[-1].removesuffix(".md")), x, y,
             graph.distance[path], path in graph.missing)
        for path, (x, y) in places.items()
    ]
    edges = []
    for source, target, kind in graph.edges:
        if source in places and target in places:
            (x1, y1), (x2, y2) = places[source], places[target]
            length = math.hypot(x2 - x1, y2 - y1) or 1.0
            shorten = (NODE_RADIUS + 3) / length  # the arrow ends at the node's rim, not its centre
            edges.append(Edge(x1, y1, x2 - (x2 - x1) * shorten, y2 - (y2 - y1) * shorten, kind, source, target))
    return Picture(width, height, nodes, edges, graph.truncated)


__all__ = ["Edge", "Node", "Picture", "layout"]
