"""The Kustomization graph in Graphviz DOT, and SVG through Graphviz's `dot` when installed."""

from __future__ import annotations

import shutil
import subprocess

from harness.core import process
from harness.core.errors import HarnessError
from harness.graph import style as gs
from harness.graph.view import Edge, Graph, Node

DOT_TIMEOUT = 120.0
MISSING_DOT = (
    "--format svg needs Graphviz's `dot` on PATH, which is not installed "
    "(apt-get install graphviz, brew install graphviz); --format dot, mermaid and json work "
    "without it, and the HTML report draws the graph itself"
)


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(**attrs: str | float) -> str:
    return "[" + ", ".join(f"{k}={quote(str(v))}" for k, v in attrs.items()) + "]"


def render(graph: Graph) -> str:
    lines = [
        "digraph harness {",
        "  rankdir=LR;",
        "  compound=true;",
        f"  graph [fontname={quote(gs.FONT)}, fontsize=12];",
        f'  node [shape=box, style="rounded,filled", fontname={quote(gs.FONT)}, fontsize=11];',
        f"  edge [fontname={quote(gs.FONT)}, fontsize=9];",
    ]
    for c, view in enumerate(graph.clusters):
        lines.append(f"  subgraph cluster_{c} {{")
        lines.append(f'    label={quote(view.cluster)}; style=rounded; color="#d0d7de";')
        for node in view.nodes:
            lines.append(f"    {quote(node.target)} {_node_attrs(node)};")
        lines.append("  }")
    for edge in graph.edges():
        src = quote(f"{edge.cluster}/{edge.source[0]}/{edge.source[1]}")
        dst = quote(f"{edge.cluster}/{edge.target[0]}/{edge.target[1]}")
        lines.append(f"  {src} -> {dst} {_edge_attrs(edge)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node_attrs(node: Node) -> str:
    paint = gs.NODE_PAINT[gs.node_class(node)]
    styles = ["rounded", "filled"] + (["dashed"] if paint.dashed else [])
    hazard = gs.hazard_colour(node.severity)
    return _attrs(
        label="\n".join(gs.node_lines(node)),
        fillcolor=paint.fill,
        color=hazard or paint.stroke,
        penwidth=3 if hazard else 1,
        style=",".join(styles),
        tooltip=gs.node_tooltip(node),
    )


def _edge_attrs(edge: Edge) -> str:
    hazard = gs.hazard_colour(edge.severity)
    style = {"dependsOn": "solid", "substituteFrom": "dashed", "crd": "bold", "move": "dotted"}[
        edge.kind
    ]
    if edge.change == "removed":
        style = "dashed"
    attrs: dict[str, str | float] = {
        "color": hazard or gs.EDGE_COLOUR[edge.kind],
        "style": style,
        "penwidth": 3 if hazard else 2 if edge.kind in ("crd", "move") else 1,
        "tooltip": gs.edge_tooltip(edge),
    }
    caption = gs.edge_caption(edge, brief=True)
    if caption:
        attrs["label"] = caption
        if hazard:
            attrs["fontcolor"] = hazard
    return _attrs(**attrs)


def dot_available() -> bool:
    return shutil.which("dot") is not None


def to_svg(dot_source: str) -> str:
    """`dot -Tsvg`; a clear error when Graphviz is missing or fails."""
    exe = shutil.which("dot")
    if exe is None:
        raise HarnessError(MISSING_DOT)
    try:
        proc = process.run([exe, "-Tsvg"], input=dot_source.encode(), timeout=DOT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"graphviz: dot took longer than {DOT_TIMEOUT:.0f}s") from None
    if proc.returncode != 0:
        detail = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["failed"])[-1]
        raise HarnessError(f"graphviz: dot exited {proc.returncode}: {detail}")
    return proc.stdout.decode("utf-8", "replace")
