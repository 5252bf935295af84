"""The memory graph drawn as a self-contained SVG, offline.

LangGraph's `draw_mermaid_png()` asks a web service to render; this lays the graph out
with grandalf (the Sugiyama layout behind LangGraph's `draw_ascii`) and writes the SVG
itself, so the manual, the notebooks and the app show the diagram with no network. Nothing of
the graph is written here: the nodes and edges are the compiled graph's, and the manual's copy is
drawn when the site is built (mkdocs_hooks.py), so a new node needs no picture edited by hand.

    python -m memlane.graph.diagram > memory_graph.svg
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from html import escape
from itertools import pairwise
from typing import Any

from grandalf.graphs import Edge, Vertex, graph_core
from grandalf.layouts import SugiyamaLayout
from grandalf.routing import route_with_lines
from langchain_core.runnables.graph import Graph as DrawableGraph

NODE_HEIGHT = 36
CHAR_WIDTH = 8.4  # a generous average for 14px sans-serif, so labels never overflow their box
NODE_PADDING = 28
LAYER_GAP = 34
NODE_GAP = 34
MARGIN = 24
LEGEND_HEIGHT = 28
ENDPOINT_LABELS = {"__start__": "start", "__end__": "end"}
LABEL_CHAR_WIDTH = 7.2  # 12px edge labels
# what the memory graph's router decides, written beside its edges (a test checks each edge exists)
MEMORY_GRAPH_EDGE_LABELS = {("summarize", "persist"): "nothing to remember"}

_STYLE = """
text { font-family: ui-sans-serif, system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif;
  font-size: 14px; fill: #1e1b4b; }
.node rect { fill: #eef2ff; stroke: #4f46e5; stroke-width: 1.5; }
.endpoint rect { fill: #f3f4f6; stroke: #6b7280; stroke-width: 1.2; }
.endpoint text { fill: #374151; font-style: italic; }
.edge { fill: none; stroke: #4b5563; stroke-width: 1.4; }
.conditional { stroke-dasharray: 6 4; }
.legend text, .edge-label { font-size: 12px; fill: #4b5563; }
.edge-label { paint-order: stroke; stroke: #ffffff; stroke-width: 5px; stroke-linejoin: round; }
""".strip()

# added only when a run's progress is drawn, so the plain diagram stays as committed
_PROGRESS_STYLE = """
.node.done rect { fill: #dcfce7; stroke: #16a34a; }
.node.running rect { fill: #fef3c7; stroke: #d97706; stroke-width: 3; }
""".strip()


class _Box:
    """What grandalf needs of a vertex's view: its size, and where it puts it."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.w = round(len(label) * CHAR_WIDTH + NODE_PADDING)
        self.h = NODE_HEIGHT
        self.xy = (0.0, 0.0)


class _Route:
    def __init__(self) -> None:
        self.pts: list[tuple[float, float]] = []
        self.head_angle = 0.0

    def setpath(self, pts: list[tuple[float, float]]) -> None:
        self.pts = pts


def _drawable(graph: Any) -> DrawableGraph:
    return graph if isinstance(graph, DrawableGraph) else graph.get_graph()


def _components(drawable: DrawableGraph) -> list[list[str]]:
    """Node ids grouped by connected component, each in the graph's own node order."""
    parent = {node_id: node_id for node_id in drawable.nodes}

    def root(node_id: str) -> str:
        while parent[node_id] != node_id:
            node_id = parent[node_id]
        return node_id

    for edge in drawable.edges:
        parent[root(edge.source)] = root(edge.target)
    groups: dict[str, list[str]] = {}
    for node_id in drawable.nodes:
        groups.setdefault(root(node_id), []).append(node_id)
    return list(groups.values())


def _layout(
    drawable: DrawableGraph, edge_labels: dict[tuple[str, str], str]
) -> tuple[dict[str, Vertex], list[tuple[Edge, bool, str | None]]]:
    vertices = {node_id: Vertex(node_id) for node_id in drawable.nodes}
    for node_id, vertex in vertices.items():
        vertex.view = _Box(ENDPOINT_LABELS.get(node_id, drawable.nodes[node_id].name))
    edges = []
    for edge in drawable.edges:
        layout_edge = Edge(vertices[edge.source], vertices[edge.target])
        layout_edge.view = _Route()
        label = edge_labels.get((edge.source, edge.target), None if edge.data is None else str(edge.data))
        edges.append((layout_edge, edge.conditional, label))
    left = 0.0
    for component in _components(drawable):
        members = [vertices[node_id] for node_id in component]
        # grandalf's Graph collects a component's edges in a set, which orders them by
        # memory address; building each component directly keeps the layout reproducible
        core = graph_core(members, [edge for edge, _, _ in edges if edge.v[0] in members])
        sugiyama = SugiyamaLayout(core)
        sugiyama.init_all(roots=[vertex for vertex in members if not vertex.e_in()], optimize=True)
        sugiyama.xspace = NODE_GAP
        sugiyama.yspace = LAYER_GAP
        sugiyama.route_edge = route_with_lines
        sugiyama.draw()
        # components side by side, left to right
        component_left = min(vertex.view.xy[0] - vertex.view.w / 2 for vertex in members)
        shift = left - component_left
        for vertex in members:
            vertex.view.xy = (vertex.view.xy[0] + shift, vertex.view.xy[1])
        for edge, _, _ in edges:
            if edge.v[0] in members:
                edge.view.pts = [(x + shift, y) for x, y in edge.view.pts]
        left = max(vertex.view.xy[0] + vertex.view.w / 2 for vertex in members) + NODE_GAP
    return vertices, edges


def _arrow_head(points: list[tuple[float, float]]) -> str:
    """A filled triangle at the last point, pointing along the last segment."""
    (x0, y0), (x1, y1) = points[-2], points[-1]
    length = max(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5, 1e-9)
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    size, half = 9.0, 4.5
    bx, by = x1 - ux * size, y1 - uy * size
    corners = [(x1, y1), (bx - uy * half, by + ux * half), (bx + uy * half, by - ux * half)]
    return " ".join(f"{x:.0f},{y:.0f}" for x, y in corners)


def _straighten(route: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Drop the bends grandalf leaves on straight runs (one per layer a long edge crosses)."""
    kept = [route[0]]
    for point, following in pairwise(route[1:]):
        (x0, y0), (x1, y1), (x2, y2) = kept[-1], point, following
        if abs((x1 - x0) * (y2 - y0) - (y1 - y0) * (x2 - x0)) > 1e-6:
            kept.append(point)
    kept.append(route[-1])
    return kept


def _label_anchor(route: list[tuple[float, float]]) -> tuple[float, float]:
    """The middle of an edge's longest segment: where its label has the most room."""
    segments = list(pairwise(route))
    (x0, y0), (x1, y1) = max(segments, key=lambda s: (s[1][0] - s[0][0]) ** 2 + (s[1][1] - s[0][1]) ** 2)
    return (x0 + x1) / 2 + 6, (y0 + y1) / 2


def render_svg(
    graph: Any = None,
    edge_labels: dict[tuple[str, str], str] | None = None,
    *,
    running: Iterable[str] = (),
    done: Iterable[str] = (),
) -> str:
    """The graph as an SVG document; conditional edges dashed.

    `graph`: a compiled LangGraph graph or the result of its `get_graph()`; by default
    the memory graph. `edge_labels`: text beside edges, keyed by (source, target).
    `running` / `done`: node ids drawn as in progress / finished (a run's progress).
    """
    running, done = set(running), set(done) - set(running)
    if graph is None:
        from memlane.graph.build import compile_memory_graph

        graph = compile_memory_graph()
        edge_labels = MEMORY_GRAPH_EDGE_LABELS if edge_labels is None else edge_labels
    drawable = _drawable(graph)
    vertices, edges = _layout(drawable, edge_labels or {})
    for edge, _, _ in edges:
        edge.view.pts = _straighten(edge.view.pts)

    boxes = [vertex.view for vertex in vertices.values()]
    points = [point for edge, _, _ in edges for point in edge.view.pts]
    for edge, _, label in edges:
        if label:  # the label's far end counts towards the picture's width
            x, y = _label_anchor(edge.view.pts)
            points.append((x + len(label) * LABEL_CHAR_WIDTH, y))
    left = min([box.xy[0] - box.w / 2 for box in boxes] + [x for x, _ in points])
    top = min([box.xy[1] - box.h / 2 for box in boxes] + [y for _, y in points])
    right = max([box.xy[0] + box.w / 2 for box in boxes] + [x for x, _ in points])
    bottom = max([box.xy[1] + box.h / 2 for box in boxes] + [y for _, y in points])
    width = round(right - left + 2 * MARGIN)
    height = round(bottom - top + 2 * MARGIN + LEGEND_HEIGHT)

    def shift(x: float, y: float) -> tuple[float, float]:
        return x - left + MARGIN, y - top + MARGIN

    lines = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="graph diagram">'
        ),
        f"<style>\n{_STYLE}\n{_PROGRESS_STYLE}\n</style>" if running or done else f"<style>\n{_STYLE}\n</style>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for edge, conditional, label in edges:
        route = [shift(x, y) for x, y in edge.view.pts]
        css = "edge conditional" if conditional else "edge"
        path = " ".join(f"{x:.0f},{y:.0f}" for x, y in route)
        source, target = edge.v[0].data, edge.v[1].data
        lines.append(f'<g id="edge-{escape(source)}-{escape(target)}">')
        lines.append(f'<polyline class="{css}" points="{path}"/>')
        lines.append(f'<polygon points="{_arrow_head(route)}" fill="#4b5563"/>')
        if label:
            label_x, label_y = _label_anchor(route)
            lines.append(
                f'<text class="edge-label" x="{label_x:.0f}" y="{label_y:.0f}" '
                f'dominant-baseline="central">{escape(label)}</text>'
            )
        lines.append("</g>")
    for node_id, vertex in vertices.items():
        box = vertex.view
        x, y = shift(box.xy[0] - box.w / 2, box.xy[1] - box.h / 2)
        center_x, center_y = shift(*box.xy)
        css = "endpoint" if node_id in ENDPOINT_LABELS else "node"
        css += " running" if node_id in running else " done" if node_id in done else ""
        radius = NODE_HEIGHT / 2 if node_id in ENDPOINT_LABELS else 8
        lines.append(f'<g id="node-{escape(node_id)}" class="{css}">')
        lines.append(f'<rect x="{x:.0f}" y="{y:.0f}" width="{box.w}" height="{box.h}" rx="{radius:.0f}"/>')
        lines.append(
            f'<text x="{center_x:.0f}" y="{center_y:.0f}" text-anchor="middle" '
            f'dominant-baseline="central">{escape(box.label)}</text>'
        )
        lines.append("</g>")
    legend_y = height - MARGIN + 4
    lines.append('<g class="legend">')
    lines.append(f'<line class="edge conditional" x1="{MARGIN}" y1="{legend_y}" x2="{MARGIN + 36}" y2="{legend_y}"/>')
    lines.append(
        f'<text x="{MARGIN + 44}" y="{legend_y}" dominant-baseline="central">conditional edge (the router picks)</text>'
    )
    lines.append("</g>")
    lines.append("</svg>")
    return "\n".join(lines) + "\n"


def main() -> None:
    sys.stdout.write(render_svg())


if __name__ == "__main__":
    main()
