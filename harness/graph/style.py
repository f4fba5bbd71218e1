"""What every graph picture shares: node captions, colours per change and edge kind, legends.

Mermaid, DOT and the built-in SVG layout draw the same thing; only the syntax differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.graph.view import Edge, Mark, Node
from harness.hazards.finding import rank

HAZARD = "#cf222e"
WARNING = "#bf8700"
FONT = "Helvetica, Arial, sans-serif"
# Node labels: every glyph of a monospace font (bold too) is 0.6 em wide, so a box fits its
# label by arithmetic (svg.py)
MONO = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace"


@dataclass(frozen=True)
class Paint:
    fill: str
    stroke: str
    dashed: bool = False


NODE_PAINT = {
    "unchanged": Paint("#f6f8fa", "#8c959f"),
    "added": Paint("#dafbe1", "#1a7f37"),
    "removed": Paint("#ffebe9", "#cf222e", dashed=True),
    "changed": Paint("#fff8c5", "#9a6700"),
    "moved": Paint("#ddf4ff", "#0969da"),
    "missing": Paint("#ffffff", "#cf222e", dashed=True),
}
EDGE_COLOUR = {
    "dependsOn": "#57606a",
    "substituteFrom": "#8250df",
    "crd": "#bc4c00",
    "move": "#0969da",
}
EDGE_CAPTION = {
    "dependsOn": "",
    "substituteFrom": "vars",
    "crd": "CRDs",
    "move": "moved",
}
EDGE_NAME = {
    "dependsOn": "dependsOn",
    "substituteFrom": "substituteFrom",
    "crd": "CRD-provider",
    "move": "move",
}
LEGEND_SHORT = (
    ("dependsOn", "dependsOn: dependency -> dependent"),
    ("substituteFrom", "substituteFrom: writer -> consumer"),
    ("crd", "CRD provider -> user"),
    ("move", "documents moved"),
)
LEGEND = (
    ("dependsOn", "solid grey: dependsOn (dependency -> dependent)"),
    ("substituteFrom", "dashed purple: substituteFrom (writer -> consumer)"),
    ("crd", "thick orange: CRD provider -> custom-resource user"),
    ("move", "dotted blue: documents moved (from -> to)"),
)


def node_class(node: Node) -> str:
    """The paint key: missing, then the change, moves only when nothing else changed."""
    if node.missing:
        return "missing"
    if node.change in ("added", "removed"):
        return node.change
    if node.moved_in or node.moved_out:
        return "moved"
    return node.change


def hazard_colour(severity: str | None) -> str | None:
    """Red for errors, amber for warnings; informational notes are not drawn as hazards."""
    return HAZARD if severity == "error" else WARNING if severity == "warning" else None


def loud(marks: Sequence[Mark]) -> list[Mark]:
    return [m for m in marks if m.severity in ("error", "warning")]


def node_lines(node: Node) -> list[str]:
    """The caption: name, then documents and marks, then the worst hazard."""
    lines = [node.display]
    facts = []
    if node.missing:
        facts.append("missing")
    elif node.error:
        facts.append("render error")
    elif node.documents is not None:
        facts.append(f"{node.documents} doc{'s' if node.documents != 1 else ''}")
    if not node.prune and not node.missing:
        facts.append("prune: false")
    marks = list(node.marks)
    if node.moved_in:
        marks[marks.index("moved-into")] = f"moved-into +{node.moved_in}"
    if node.moved_out:
        marks[marks.index("moved-out-of")] = f"moved-out-of -{node.moved_out}"
    facts.extend(marks)
    if facts:
        lines.append(", ".join(facts))
    if loud(node.hazards):
        lines.append(f"! {node.severity}: {rules_short(loud(node.hazards))}")
    return lines


def rules_short(marks: Sequence[Mark]) -> str:
    """The worst finding's rule, and how many other rules fire: `prune-delete +1`."""
    ordered = sorted(marks, key=lambda m: (rank(m.severity), m.rule))
    rules = list(dict.fromkeys(m.rule for m in ordered))
    return rules[0] + (f" +{len(rules) - 1}" if len(rules) > 1 else "")


def edge_caption(edge: Edge, brief: bool = False) -> str:
    """Short label: hazards, new/removed, moves, and (unless `brief`, where the line style
    already tells the kind) what a substituteFrom or CRD edge carries."""
    parts = []
    if edge.kind == "move":
        parts.append(f"moved {len(edge.documents)}")
    elif edge.kind == "substituteFrom" and not brief:
        parts.append(f"vars {edge.label}")
    elif edge.kind == "crd" and not brief:
        parts.append(f"CRDs {edge.label}")
    elif edge.kind == "dependsOn" and edge.label:  # HelmReleases' dependsOn
        parts.append("HelmRelease" if brief else edge.label)
    if edge.change == "removed":
        parts.insert(0, "removed")
    elif edge.change == "added" and edge.kind != "move":
        parts.insert(0, "new")
    if loud(edge.hazards):
        parts.insert(0, "! " + rules_short(loud(edge.hazards)))
    return " ".join(parts)


def edge_tooltip(edge: Edge) -> str:
    base = f"{edge.kind}: {edge.source[1]} -> {edge.target[1]}"
    if edge.label:
        base += f" ({edge.label})"
    return "\n".join([base, *(f"{m.severity}: {m.message}" for m in edge.hazards)])


def node_tooltip(node: Node) -> str:
    if node.members:
        shown = ", ".join(node.members[:40])
        more = f" and {len(node.members) - 40} more" if len(node.members) > 40 else ""
        lines = [f"namespace {node.name} ({node.cluster}): {shown}{more}", *node_lines(node)[1:]]
        lines.extend(f"{m.severity}: {m.message}" for m in node.hazards)
        return "\n".join(lines)
    lines = [node.target, *node_lines(node)[1:]]
    if node.path:
        lines.append(f"path: {node.path}")
    if node.error:
        error = node.error if len(node.error) <= 300 else node.error[:300] + "…"
        lines.append(f"error: {error}")
    lines.extend(f"{m.severity}: {m.message}" for m in node.hazards)
    return "\n".join(lines)
