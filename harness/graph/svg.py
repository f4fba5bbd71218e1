"""A self-contained SVG of the Kustomization graph with a small layered layout of our own.

The HTML report must never depend on Graphviz, so this draws the graph itself: per cluster,
nodes in columns by longest dependency path (back edges of cycles ignored), rows ordered by
the barycentre of their neighbours, edges as curves; clusters stacked top to bottom, a
legend on top naming the edge kinds drawn (and those left out). Good enough for the tens of
boxes a cluster has once a big one is grouped by namespace (view.for_picture); `harness graph
--format svg` uses Graphviz for a tighter layout.

Labels are set in a monospace font, so a box's width is exact arithmetic on characters (bold
glyphs are as wide as regular ones): a label is clipped, with `…`, only when it is longer
than the widest box, and `textLength` holds it to the computed width whatever monospace
font the viewer has.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from html import escape

from harness.flux.ksgraph import Key
from harness.graph import style as gs
from harness.graph.view import ClusterView, Edge, Graph, Node

FONT_PX = 11.0
CHAR_W = 6.7  # advance of an 11px monospace glyph (0.6 em; DejaVu Sans Mono 0.602), rounded up
LINE_H = 15.0
PAD = 8.0
COL_GAP = 130.0
ROW_GAP = 18.0
CLUSTER_GAP = 28.0
TITLE_H = 26.0
MIN_CHARS = 14
MAX_CHARS = 44
MARGIN = 12.0
PARALLEL_GAP = 12.0  # between edges joining the same two boxes
LEGEND_H = 22.0
MAX_ROWS = 14  # boxes stacked in one column before a layer wraps into another
STACK_GAP = 28.0


@dataclass
class _Box:
    node: Node
    lines: list[str]
    w: float
    h: float
    layer: int = 0
    x: float = 0.0
    y: float = 0.0


def _clip(line: str, chars: int) -> str:
    """The line within `chars` characters: whole when it fits, else cut with `…`."""
    return line if len(line) <= chars else line[: max(1, chars - 1)] + "…"


def box_chars(lines: list[str]) -> int:
    """A box's width in characters: its longest line, within MIN_CHARS..MAX_CHARS."""
    return min(MAX_CHARS, max(MIN_CHARS, max((len(s) for s in lines), default=0)))


def text_width(text: str) -> float:
    return len(text) * CHAR_W


def _layers(view: ClusterView) -> dict[Key, int]:
    """Longest-path layering over the edges that are not back edges of a DFS."""
    succ: dict[Key, list[Key]] = defaultdict(list)
    for e in view.edges:
        succ[e.source].append(e.target)
    order: list[Key] = []
    state: dict[Key, int] = {}
    back: set[tuple[Key, Key]] = set()
    for root in (n.key for n in view.nodes):
        if root in state:
            continue
        stack: list[tuple[Key, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            key, i = stack[-1]
            nxt = succ.get(key, [])
            if i < len(nxt):
                stack[-1] = (key, i + 1)
                child = nxt[i]
                if state.get(child) == 1:
                    back.add((key, child))
                elif child not in state:
                    state[child] = 1
                    stack.append((child, 0))
                continue
            stack.pop()
            state[key] = 2
            order.append(key)
    layer: dict[Key, int] = {n.key: 0 for n in view.nodes}
    for key in reversed(order):  # topological order
        for child in succ.get(key, []):
            if (key, child) not in back:
                layer[child] = max(layer[child], layer[key] + 1)
    return layer


def _layout(view: ClusterView, top: float) -> tuple[dict[Key, _Box], float, float]:
    boxes: dict[Key, _Box] = {}
    for node in view.nodes:
        lines = gs.node_lines(node)
        chars = box_chars(lines)
        w = chars * CHAR_W + 2 * PAD
        boxes[node.key] = _Box(node, [_clip(s, chars) for s in lines], w, len(lines) * LINE_H + PAD)
    layers = _layers(view)
    linked = {k for e in view.edges for k in (e.source, e.target)}
    columns: dict[int, list[_Box]] = defaultdict(list)
    alone: list[_Box] = []  # no edge at all: stacked after the layers, crossing nothing
    for key, box in boxes.items():
        box.layer = layers.get(key, 0)
        if key in linked or len(boxes) <= MAX_ROWS:
            columns[box.layer].append(box)
        else:
            alone.append(box)
    if alone:
        columns[max(columns, default=-1) + 1] = sorted(alone, key=lambda b: b.node.key)
    neighbours: dict[Key, list[Key]] = defaultdict(list)
    for e in view.edges:
        neighbours[e.target].append(e.source)
        neighbours[e.source].append(e.target)
    position: dict[Key, float] = {}
    side = _sides(view, {k: b.layer for k, b in boxes.items()})
    for sweep in range(3):
        for col in sorted(columns):
            boxes_in = columns[col]
            if sweep:
                boxes_in.sort(key=lambda b: _barycentre(b, neighbours, position))
            else:
                boxes_in.sort(key=lambda b: b.node.key)
            if len(boxes_in) > MAX_ROWS:  # wrapped: edges leave from the stack nearest them
                boxes_in.sort(key=lambda b: side.get(b.node.key, 0))
            for i, b in enumerate(boxes_in):
                position[b.node.key] = float(i)
    x = MARGIN + PAD
    height = 0.0
    for col in sorted(columns):
        # a layer taller than MAX_ROWS wraps into side-by-side stacks: a page, not a pole
        stacks = [columns[col][i : i + MAX_ROWS] for i in range(0, len(columns[col]), MAX_ROWS)]
        for k, stack in enumerate(stacks):
            width = max(b.w for b in stack)
            y = top + TITLE_H
            for b in stack:
                b.x, b.y = x, y
                y += b.h + ROW_GAP
            height = max(height, y - top)
            x += width + (COL_GAP if k == len(stacks) - 1 else STACK_GAP)
    return boxes, x - COL_GAP + PAD, height


def _sides(view: ClusterView, layer: dict[Key, int]) -> dict[Key, int]:
    """-1 for a box with edges from earlier layers only, 1 with edges to later ones only."""
    back: set[Key] = set()
    ahead: set[Key] = set()
    for e in view.edges:
        if layer.get(e.target, 0) > layer.get(e.source, 0):
            ahead.add(e.source)
            back.add(e.target)
    return {k: (k in ahead) - (k in back) for k in back | ahead}


def _barycentre(box: _Box, neighbours: dict[Key, list[Key]], position: dict[Key, float]) -> float:
    near = [position[k] for k in neighbours.get(box.node.key, []) if k in position]
    return sum(near) / len(near) if near else position.get(box.node.key, 0.0)


def render(graph: Graph, title: str = "Flux Kustomization graph", *, legend: bool = True) -> str:
    """The whole graph as one `<svg>` element (no XML prolog, fit for inlining in HTML);
    `legend`: draw the edge legend on top (the HTML report has its own, with toggles)."""
    parts: list[str] = []
    colours: set[str] = set()
    kinds: set[str] = {e.kind for e in graph.edges()}
    top = MARGIN
    width = 200.0
    if legend:
        drawn, legend_w = _legend(graph, kinds)
        parts.append(drawn)
        top += LEGEND_H
        width = max(width, legend_w + 2 * MARGIN)
    for view in graph.clusters:
        boxes, w, h = _layout(view, top)
        width = max(width, w + MARGIN)
        parts.append(
            f'<g class="cluster" data-cluster="{escape(view.cluster)}">'
            f'<rect x="{MARGIN:.0f}" y="{top:.0f}" width="{w - MARGIN:.0f}" height="{h:.0f}" '
            'rx="8" fill="none" stroke="#d0d7de"/>'
            f'<text x="{MARGIN + PAD:.0f}" y="{top + 17:.0f}" class="cl">'
            f"{escape(view.cluster)}</text>"
        )
        siblings: dict[frozenset[Key], list[Edge]] = defaultdict(list)
        for edge in view.edges:
            siblings[frozenset((edge.source, edge.target))].append(edge)
        over: list[str] = []  # edges passing other boxes, again on top, faint: no false ends
        for edge in view.edges:
            a, b = boxes.get(edge.source), boxes.get(edge.target)
            if a is None or b is None:
                continue
            colour = gs.hazard_colour(edge.severity) or gs.EDGE_COLOUR[edge.kind]
            colours.add(colour)
            group = siblings[frozenset((edge.source, edge.target))]
            offset = (group.index(edge) - (len(group) - 1) / 2) * PARALLEL_GAP
            drawn = _edge(edge, a, b, colour, offset)
            parts.append(drawn)
            if b.layer - a.layer != 1:
                over.append(drawn.replace('<g class="edge"', '<g class="edge-over"', 1))
        for box in boxes.values():
            parts.append(_node(box))
        if over:
            parts.append('<g opacity="0.3" pointer-events="none">' + "".join(over) + "</g>")
        parts.append("</g>")
        top += h + CLUSTER_GAP
    height = top - CLUSTER_GAP + MARGIN if graph.clusters else 60.0
    if not graph.clusters:
        parts.append(f'<text x="{MARGIN}" y="30" class="cl">no Flux Kustomizations to draw</text>')
    markers = "".join(
        f'<marker id="a{_mid(c)}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="{c}"/>'
        "</marker>"
        for c in sorted(colours)
    )
    style = (
        f"text{{font-family:{gs.MONO};font-size:{FONT_PX:g}px;fill:#1f2328}}"
        f".cl{{font-family:{gs.FONT};font-weight:bold;font-size:12px}}"
        f".lg{{font-family:{gs.FONT};font-size:11px;fill:#57606a}}"
        ".el{font-size:9.5px;paint-order:stroke;stroke:#fff;stroke-width:3px}.nm{font-weight:bold}"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="harness-graph" role="img" '
        f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}">'
        f"<title>{escape(title)}</title><style>{style}</style><defs>{markers}</defs>"
        + "".join(parts)
        + "</svg>"
    )


def _mid(colour: str) -> str:
    return colour.lstrip("#")


def _legend(graph: Graph, kinds: set[str]) -> tuple[str, float]:
    """One line on top: a sample of each edge kind drawn, then what was left out."""
    x = MARGIN
    y = MARGIN + 10
    out = ['<g class="legend">']
    for kind, text in gs.LEGEND_SHORT:
        if kind not in kinds:
            continue
        colour = gs.EDGE_COLOUR[kind]
        dash = {"substituteFrom": ' stroke-dasharray="6 4"', "move": ' stroke-dasharray="2 3"'}
        width = 2 if kind in ("crd", "move") else 1.3
        out.append(
            f'<g data-legend="{kind}"><line x1="{x:.0f}" y1="{y - 4:.0f}" x2="{x + 26:.0f}" '
            f'y2="{y - 4:.0f}" stroke="{colour}" stroke-width="{width}"{dash.get(kind, "")}/>'
            f'<text x="{x + 32:.0f}" y="{y:.0f}" class="lg">{escape(text)}</text></g>'
        )
        x += 32 + len(text) * 6.2 + 18
    notes = []
    if graph.hidden_edges:
        hidden = ", ".join(f"{n} {gs.EDGE_NAME[k]}" for k, n in graph.hidden_edges)
        notes.append(f"not drawn: {hidden} edges (--edges to choose)")
    if graph.grouped:
        notes.append(f"{graph.grouped} Kustomizations boxed by namespace")
    if not kinds and not notes:
        notes.append("no edges")
    for note in notes:
        out.append(f'<text x="{x:.0f}" y="{y:.0f}" class="lg">{escape(note)}</text>')
        x += len(note) * 6.2 + 18
    out.append("</g>")
    return "".join(out), x


def _node(box: _Box) -> str:
    node = box.node
    paint = gs.NODE_PAINT[gs.node_class(node)]
    hazard = gs.hazard_colour(node.severity)
    dash = ' stroke-dasharray="5 3"' if paint.dashed else ""
    text = "".join(
        f'<text x="{box.x + PAD:.1f}" y="{box.y + PAD / 2 + (i + 0.8) * LINE_H:.1f}"'
        f' textLength="{text_width(line):.1f}" lengthAdjust="spacingAndGlyphs"'
        + (' class="nm"' if i == 0 else "")
        + (f' fill="{hazard}"' if hazard and line.startswith("!") else "")
        + f">{escape(line)}</text>"
        for i, line in enumerate(box.lines)
    )
    if node.members:
        stack = (
            f'<rect x="{box.x + 3:.1f}" y="{box.y + 3:.1f}" width="{box.w:.1f}" '
            f'height="{box.h:.1f}" rx="6" fill="{paint.fill}" stroke="{paint.stroke}" '
            'stroke-width="1"/>'
        )
    else:
        stack = ""
    return (
        f'<g class="node" data-node="{escape(node.target)}" data-change="{node.change}"'
        + (f' data-members="{len(node.members)}"' if node.members else "")
        + ">"
        f"<title>{escape(gs.node_tooltip(node))}</title>{stack}"
        f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="6" '
        f'fill="{paint.fill}" stroke="{hazard or paint.stroke}" '
        f'stroke-width="{3 if hazard else 1.2}"{dash}/>{text}</g>'
    )


def _edge(edge: Edge, a: _Box, b: _Box, colour: str, offset: float = 0.0) -> str:
    """A curve from `a` to `b`; `offset` shifts parallel edges apart (ends and label)."""
    if b.layer > a.layer:
        x1, y1 = a.x + a.w, a.y + a.h / 2 + min(offset, a.h / 2 - 2)
        x2, y2 = b.x, b.y + b.h / 2 + min(offset, b.h / 2 - 2)
        dx = max(30.0, (x2 - x1) / 2)
        path = (
            f"M{x1:.1f},{y1:.1f} C{x1 + dx:.1f},{y1:.1f} {x2 - dx:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
        )
        lx, ly = (x1 + x2) / 2, (y1 + y2) / 2 - 3
    else:  # same column or backwards: an arc below the boxes
        x1, y1 = a.x + a.w / 2 + offset, a.y + a.h
        x2, y2 = b.x + b.w / 2 + offset, b.y + b.h
        drop = 30.0 + abs(x2 - x1) / 6 + abs(offset)
        low = max(y1, y2) + drop
        path = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{low:.1f} {x2:.1f},{low:.1f} {x2:.1f},{y2:.1f}"
        lx, ly = (x1 + x2) / 2, low - 4
    width = 3 if gs.loud(edge.hazards) else 2 if edge.kind in ("crd", "move") else 1.3
    dash = ""
    if edge.kind == "substituteFrom" or edge.change == "removed":
        dash = ' stroke-dasharray="6 4"'
    elif edge.kind == "move":
        dash = ' stroke-dasharray="2 3"'
    caption = gs.edge_caption(edge, brief=True)
    label = (
        f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="middle" class="el" fill="{colour}">'
        f"{escape(caption)}</text>"
        if caption
        else ""
    )
    return (
        f'<g class="edge" data-kind="{edge.kind}" data-change="{edge.change}"'
        + (' data-hazard="1"' if gs.loud(edge.hazards) else "")
        + f"><title>{escape(gs.edge_tooltip(edge))}</title>"
        f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="{width}"{dash} '
        f'marker-end="url(#a{_mid(colour)})"/>{label}</g>'
    )
