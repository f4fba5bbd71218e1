"""The PR comment's picture: a collapsed Mermaid graph of the Kustomizations the change touches.

Kept apart from markdown.py: the picture is one extra piece of the head, and it is the first
thing to go. `fit_with_picture` uses it only when the whole comment, picture included, fits
the budget without degrading, collapsing or dropping anything; otherwise the comment is
exactly what it would be without it.
"""

from __future__ import annotations

from dataclasses import replace

from harness.compare.analyze import Analysis
from harness.graph import mermaid
from harness.graph import view as graph_mod
from harness.hazards.engine import HazardReport
from harness.report import markdown
from harness.report import markdown_budget as mb

MAX_NODES = 24  # beyond this a depth-1 neighbourhood shrinks to the touched nodes alone
MAX_NODES_BARE = 60  # beyond this there is no readable picture: none is drawn
DETAILS_TITLE = "**Details**"


def neighbourhood(analysis: Analysis, hazards: HazardReport | None) -> graph_mod.Graph | None:
    """The change's neighbourhood (depth 1, or 0 when that is too big), or None when the
    change touches no Flux Kustomization."""
    full = graph_mod.compare(analysis.base, analysis.head)
    if hazards is not None:
        full = graph_mod.with_hazards(full, hazards.findings)
    if not any(n.touched for n in full.nodes()):
        return None
    for depth in (1, 0):
        picked = graph_mod.merge_alike(graph_mod.focus(full, [graph_mod.CHANGED], depth))
        count = sum(1 for _ in picked.nodes())
        if count <= MAX_NODES or (depth == 0 and count <= MAX_NODES_BARE):
            return picked
    return None


def picture(graph: graph_mod.Graph | None) -> str:
    """A `<details>` block with the Mermaid flowchart; empty when there is nothing to draw."""
    if graph is None:
        return ""
    counts = graph.counts()
    summary = (
        f"Kustomization graph: {counts['touched']} touched by this change"
        + (f", neighbours within {_plural(graph.depth, 'edge')}" if graph.depth else "")
        + (f", {_plural(counts['hazard_edges'], 'hazard edge')}" if counts["hazard_edges"] else "")
        + (f" ({graph.hidden_nodes} more not drawn)" if graph.hidden_nodes else "")
    )
    legend = (
        "_Edges point from what comes first: grey dependsOn, dashed purple substituteFrom, "
        "thick orange CRD provider, dotted blue moved documents; red marks a hazard (`!`)._"
    )
    return mb.details(summary, legend + "\n\n" + mb.fence(mermaid.render(graph), "mermaid"))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def with_picture(spec: mb.Layout, block: str) -> mb.Layout:
    """The layout with the picture at the end of the full head, before the per-target details."""
    head = spec.head[0]
    at = head.rfind(DETAILS_TITLE)
    pictured = head[:at] + block + head[at:] if at >= 0 else head + block
    return replace(spec, head=(pictured,))


def _lossless(fitted: mb.Fitted) -> bool:
    return not (
        fitted.degraded_entries
        or fitted.collapsed_sections
        or fitted.omitted_sections
        or fitted.partial_sections
    )


def fit_with_picture(
    spec: mb.Layout,
    block: str,
    budget: int = mb.DEFAULT_BUDGET,
    split: bool = False,
    max_parts: int = mb.DEFAULT_MAX_PARTS,
) -> mb.Fitted:
    """The comment with the picture when it costs nothing else, else without it."""
    plain = mb.fit(spec, budget)
    if block and _lossless(plain) and plain.bodies[0].startswith(spec.head[0]):
        pictured = mb.fit(with_picture(spec, block), budget)
        if _lossless(pictured) and len(pictured.bodies) == 1:
            return pictured
    return mb.split(spec, budget, max_parts) if split else plain


def comment(
    analysis: Analysis,
    info: markdown.CommentInput,
    hazards: HazardReport | None,
    *,
    budget: int = mb.DEFAULT_BUDGET,
    marker_id: str = mb.DEFAULT_MARKER_ID,
    split: bool = False,
    max_parts: int = mb.DEFAULT_MAX_PARTS,
) -> mb.Fitted:
    """`markdown.comment` plus the neighbourhood picture."""
    spec = markdown.layout(analysis, info, marker_id)
    block = picture(neighbourhood(analysis, hazards))
    return fit_with_picture(spec, block, budget, split, max_parts)
