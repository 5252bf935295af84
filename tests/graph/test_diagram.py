"""The offline diagram: drawn from the compiled graph (every node, the router's edges dashed), and
the manual's copy drawn when the site is built, so no picture is kept by hand."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict
from xml.etree import ElementTree

from langgraph.graph import END, START, StateGraph

from memlane.graph import build_memory_graph, compile_memory_graph
from memlane.graph.diagram import MEMORY_GRAPH_EDGE_LABELS, render_svg

ROOT = Path(__file__).parents[2]
SVG = "{http://www.w3.org/2000/svg}"


def test_the_manual_draws_the_diagram_when_the_site_is_built():
    from mkdocs.config import load_config
    from mkdocs.structure.files import Files

    config = load_config(str(ROOT / "mkdocs.yml"))
    hook = config.plugins["mkdocs_hooks.py"]  # mkdocs.yml names the hook that draws it
    files = config.plugins.on_files(Files([]), config=config)  # as `mkdocs build` calls it
    diagram = files.get_file_from_path(hook.MEMORY_GRAPH_DIAGRAM)
    assert diagram is not None and diagram.src_uri == "assets/memory_graph.svg"
    assert diagram.content_string == render_svg()
    page = (ROOT / "docs" / "concepts" / "memory-graph.md").read_text(encoding="utf-8")
    assert f"](../{hook.MEMORY_GRAPH_DIAGRAM})" in page
    stale = [path for path in (ROOT / "docs", ROOT / "notebooks") if list(path.rglob("memory_graph.svg"))]
    assert not stale, f"a committed copy of the diagram goes stale with the next node: remove it from {stale}"


def test_every_node_is_drawn_and_the_router_edges_are_dashed():
    root = ElementTree.fromstring(render_svg())
    groups = {group.get("id"): group for group in root.iter(f"{SVG}g") if group.get("id")}
    labels = {text.text for text in root.iter(f"{SVG}text")}
    for node_id in compile_memory_graph().get_graph().nodes:
        assert f"node-{node_id}" in groups
    assert set(build_memory_graph().nodes) <= labels
    edges = {(edge.source, edge.target) for edge in compile_memory_graph().get_graph().edges}
    assert set(MEMORY_GRAPH_EDGE_LABELS) <= edges, "a label names an edge the graph no longer has"
    assert set(MEMORY_GRAPH_EDGE_LABELS.values()) <= labels
    for target in ("extract", "tag", "persist"):
        line = groups[f"edge-summarize-{target}"].find(f"{SVG}polyline")
        assert "conditional" in line.get("class")
    assert "conditional" not in groups["edge-extract-merge"].find(f"{SVG}polyline").get("class")


class _State(TypedDict):
    text: str


def test_draws_any_graph_offline():
    builder = StateGraph(_State)
    builder.add_node("only_step", lambda state: state)
    builder.add_edge(START, "only_step")
    builder.add_edge("only_step", END)
    svg = render_svg(builder.compile())
    assert (
        svg.startswith("<svg")
        and "only_step" in svg
        and "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    )


def test_unconnected_parts_are_drawn_side_by_side():
    from langchain_core.runnables.graph import Graph

    graph = Graph()
    first, second = graph.add_node(None, "first"), graph.add_node(None, "second")
    graph.add_edge(first, second)
    graph.add_node(None, "lonely")
    root = ElementTree.fromstring(render_svg(graph))
    boxes = {
        group.get("id"): group.find(f"{SVG}rect")
        for group in root.iter(f"{SVG}g")
        if group.get("id", "").startswith("node-")
    }
    assert set(boxes) == {"node-first", "node-second", "node-lonely"}
    lonely_left = float(boxes["node-lonely"].get("x"))
    assert all(
        float(box.get("x")) + float(box.get("width")) < lonely_left
        for name, box in boxes.items()
        if name != "node-lonely"
    )
