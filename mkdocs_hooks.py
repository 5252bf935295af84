"""mkdocs hooks (mkdocs.yml `hooks:`): the manual's diagram of the memory graph is drawn from the
graph each time the site is built, so no copy of it is committed and a node added in
graph/build.py is in the next build's picture."""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files

from memlane.graph.diagram import render_svg

MEMORY_GRAPH_DIAGRAM = "assets/memory_graph.svg"  # where docs/concepts/memory-graph.md links it


def on_files(files: Files, *, config: Any) -> Files:
    """Add the memory graph's diagram to the site's files, drawn now (offline: grandalf, no network)."""
    files.append(File.generated(config, MEMORY_GRAPH_DIAGRAM, content=render_svg()))
    return files
