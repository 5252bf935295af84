"""The offline diagram: the committed SVG is a fresh render, and it names every node."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict
from xml.etree import ElementTree

import pytest
from langgraph.graph import END, START, StateGraph

from memlane.graph import compile_memory_graph
from memlane.graph.diagram import render_svg

ROOT = Path(__file__).parents[2]
COMMITTED_SVGS = [
    ROOT / "notebooks" / "memory_graph.svg",
    ROOT / "docs" / "assets" / "memory_graph.svg",
]  # the notebooks', the manual's
SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize("committed", COMMITTED_SVGS, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_committed_diagram_is_up_to_date(committed: Path):
    where = committed.relative_to(ROOT)
    assert committed.read_text(encoding="utf-8") == render_svg(), (
        f"{where} is stale; run `python -m memlane.graph.diagram > {where}`"
    )


def test_every_node_is_drawn_and_the_router_edges_are_dashed():
    root = ElementTree.fromstring(render_svg())
    groups = {group.get("id"): group for group in root.iter(f"{SVG}g") if group.get("id")}
    labels = {text.text for text in root.iter(f"{SVG}text")}
    for node_id in compile_memory_graph().get_graph().nodes:
        assert f"node-{node_id}" in groups
    assert {"truncate", "summarize", "extract", "merge", "organize", "resummarize", "tag", "persist"} <= labels
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
