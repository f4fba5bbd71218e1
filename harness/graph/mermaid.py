"""The Kustomization graph as a Mermaid flowchart (GitHub renders it natively in Markdown).

Node ids are generated (`n0`, `n1`, ...) so no Kubernetes name can break the syntax; captions
go through `_text`, which leaves Mermaid nothing to interpret.
"""

from __future__ import annotations

from harness.graph import style as gs
from harness.graph.view import Edge, Graph

ARROWS = {"dependsOn": "-->", "substituteFrom": "-.->", "crd": "==>", "move": "-.->"}


def _text(text: str) -> str:
    """A caption inside `"..."`: entity codes for what Mermaid or HTML would read."""
    out = text
    for ch, code in (
        ("&", "#amp;"),
        ('"', "#quot;"),
        ("<", "#lt;"),
        (">", "#gt;"),
        ("|", "#124;"),
        ("`", "#96;"),
    ):
        out = out.replace(ch, code)
    return out


def render(graph: Graph, direction: str = "LR") -> str:
    lines = [f"flowchart {direction}"]
    ids: dict[tuple[str, tuple[str, str]], str] = {}
    classes: dict[str, list[str]] = {}
    hazards: list[str] = []
    for c, view in enumerate(graph.clusters):
        lines.append(f'  subgraph c{c}["{_text(view.cluster)}"]')
        lines.append(f"    direction {direction}")
        for node in view.nodes:
            nid = f"n{len(ids)}"
            ids[(view.cluster, node.key)] = nid
            caption = "<br/>".join(_text(line) for line in gs.node_lines(node))
            shape = ('(["', '"])') if node.missing else ('["', '"]')
            lines.append(f"    {nid}{shape[0]}{caption}{shape[1]}")
            classes.setdefault(gs.node_class(node), []).append(nid)
            if gs.loud(node.hazards):
                hazards.append(nid)
        lines.append("  end")
    link_styles: list[str] = []
    for i, edge in enumerate(graph.edges()):
        a, b = ids[(edge.cluster, edge.source)], ids[(edge.cluster, edge.target)]
        caption = gs.edge_caption(edge, brief=True)
        label = f'|"{_text(caption)}"|' if caption else ""
        lines.append(f"  {a} {ARROWS[edge.kind]}{label} {b}")
        link_styles.append(f"  linkStyle {i} {_link_style(edge)}")
    for name, paint in gs.NODE_PAINT.items():
        dash = ",stroke-dasharray:5 3" if paint.dashed else ""
        fill = f"fill:{paint.fill},stroke:{paint.stroke},color:#1f2328"
        lines.append(f"  classDef {name} {fill}{dash}")
    lines.append(f"  classDef hazard stroke:{gs.HAZARD},stroke-width:3px")
    for name, nids in classes.items():
        lines.append(f"  class {','.join(nids)} {name}")
    if hazards:
        lines.append(f"  class {','.join(hazards)} hazard")
    lines.extend(link_styles)
    return "\n".join(lines) + "\n"


def _link_style(edge: Edge) -> str:
    colour = gs.hazard_colour(edge.severity) or gs.EDGE_COLOUR[edge.kind]
    width = 3 if gs.loud(edge.hazards) or edge.kind == "crd" else 1.5
    style = f"stroke:{colour},stroke-width:{width}px"
    if edge.change == "removed" or edge.kind == "move":
        style += ",stroke-dasharray:3 3"
    return style
