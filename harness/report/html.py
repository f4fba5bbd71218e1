"""One self-contained HTML file for a diff, a check or a lint: verdict first, then the graph,
the changed-targets table and a collapsible section per target.

Nothing is fetched at view time: the CSS and JavaScript (html_assets/, package data) are
inlined, the graph is inline SVG drawn by graph_svg (no Graphviz needed), and the documents
travel as one JSON blob that the page renders lazily (a section's documents when it opens,
a document's diff when it opens), so a 5,000-document change opens at once. Values are
masked the way every other output masks them: field changes and diffs come from docdiff,
full texts go through `masking.secret_lines`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from importlib import resources
from typing import Any

from harness.compare import masking
from harness.compare.analyze import Analysis, Location, TargetChange
from harness.compare.docdiff import DocChange, FieldChange, show_change, show_pair, unified_diff
from harness.compare.groups import ChangeGroup, by_change, places_text
from harness.compare.images import changes as image_changes
from harness.core import redaction
from harness.core.model import Document, Snapshot
from harness.graph import style as gs
from harness.graph import svg as graph_svg
from harness.graph.view import CRD_EDGES_ABOVE, Graph
from harness.hazards.engine import HazardReport
from harness.report import image_summary
from harness.report.diff_text import field_lines
from harness.report.findings import counts_line, entries

SCHEMA = "harness.html/v1"  # the embedded data's shape, for anyone scraping the page
CONTEXT = 3
MAX_TEXT = 20000  # characters of an added/removed document's text kept in the page
FIELDS_SHOWN = 8  # field changes per object on the first screen (all of them when opened)


@dataclass(frozen=True)
class Report:
    """What a page shows; `status` (the verdict's colour) is ok, diff, hazard or error."""

    command: str
    verdict: str
    status: str
    context: str = ""
    notes: tuple[str, ...] = ()
    graph: Graph | None = None
    hazards: HazardReport | None = None
    targets: tuple[dict[str, Any], ...] = field(default=())
    changes: tuple[dict[str, Any], ...] = field(default=())  # the first screen: each change once
    whole: Graph | None = None  # the whole graph, behind "show the whole graph"
    # the "Images" section: its title and one line per image change (image_summary.py)
    images: tuple[str, ...] = ()


def _asset(name: str) -> str:
    return resources.files("harness.report").joinpath("html_assets", name).read_text("utf-8")


def _masked_text(doc: Document) -> str:
    masks = masking.secret_lines(doc.text, doc.id.kind)
    lines = doc.text.splitlines()
    for i, m in masks.items():
        lines[i] = m.prefix + masking.MASK
    text = "\n".join(lines)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "\n... (cut)"


def _doc(op: str, doc_id: Any, title: str, **extra: Any) -> dict[str, Any]:
    return {
        "op": op,
        "id": str(doc_id),
        "kind": doc_id.kind,
        "name": doc_id.name,
        "namespace": doc_id.namespace,
        "title": title,
        **extra,
    }


def _changed(c: DocChange, labels: tuple[str, str]) -> dict[str, Any]:
    if c.reformat_only:
        title = "reformatted only"
    elif c.ignored_only:
        title = "only ignored fields differ"
    elif c.pure_ownership:
        title = "owner labels only"
    else:
        title = f"{len(c.fields)} field{'s' if len(c.fields) != 1 else ''}"
    diff = c.unified
    if diff is None and c.before is not None and c.after is not None:
        diff = unified_diff(c.before, c.after, CONTEXT, labels)
    return _doc("~", c.id, title, fields=field_lines(c.fields, ""), diff=diff or "")


def _moved(
    op: str, doc: Document, where: Sequence[Location], verb: str, labels: tuple[str, str]
) -> dict[str, Any]:
    """An added/removed document: its text, or, when another target renders the same identity
    on the other side, how it differs from that copy (a move shows only its owner labels)."""
    if not where:
        return _doc(op, doc.id, "added" if op == "+" else "removed", text=_masked_text(doc))
    best = sorted(where, key=lambda loc: (not loc.same_content, loc.target))[0]
    names = ", ".join(loc.target for loc in where[:3])
    entry = _changed(best.change, labels)
    how = "identical" if best.identical else entry["title"]
    entry.update(op=op, title=f"{verb} {names} ({how})")
    return entry


def target_data(t: TargetChange, labels: tuple[str, str]) -> dict[str, Any]:
    docs = [_changed(c, labels) for c in t.changed]
    for r in t.removed:
        docs.append(_moved("-", r.doc, r.still_rendered_by, "still rendered by", labels))
    for a in t.added:
        docs.append(_moved("+", a.doc, a.previously_rendered_by, "previously rendered by", labels))
    return {
        "name": t.name,
        "kind": t.kind,
        "cluster": t.cluster or "",
        "status": t.status,
        "before": t.documents_before,
        "after": t.documents_after,
        "counts": [len(t.added), len(t.removed), len(t.changed)],
        "docs": docs,
    }


def _field(f: FieldChange) -> dict[str, Any]:
    """A field change for the first screen: path, the two values as shown everywhere, or a
    multi-line string's changed lines."""
    if f.op == "reordered":
        return {"path": f.path, "text": show_change(f).split(": ", 1)[-1]}
    if (
        f.op == "changed"
        and isinstance(f.before, str)
        and isinstance(f.after, str)
        and ("\n" in f.before or "\n" in f.after)
    ):
        return {"path": f.path, "lines": field_lines([f], "")[1:]}
    before, after = show_pair(f)
    return {"path": f.path, "before": before, "after": after}


def change_data(
    groups: Sequence[ChangeGroup], where: dict[tuple[str, str, str], tuple[int, int]]
) -> list[dict[str, Any]]:
    """The groups as the page lists them: each object's change once, where it lands, and
    (`ref`) the target section and document holding its diff."""
    out = []
    for g, *others in by_change(groups):
        first = g.places[0].target
        out.append(
            {
                "op": g.sign,
                "id": str(g.id),
                "real": g.real,
                "moved": g.moved,
                "what": g.what,
                "places": places_text(g.places),
                "targets": list(g.targets),
                "fields": [_field(f) for f in g.fields[:FIELDS_SHOWN]],
                "more": max(0, len(g.fields) - FIELDS_SHOWN),
                "ref": list(where.get((first, g.sign, str(g.id)), (-1, -1))),
                "also": [
                    {"places": places_text(o.places), "what": o.note or "changed"} for o in others
                ],
            }
        )
    return out


def diff_report(
    analysis: Analysis,
    verdict: str,
    status: str,
    context: str,
    *,
    command: str = "harness diff",
    hazards: HazardReport | None = None,
    graph: Graph | None = None,
    notes: Sequence[str] = (),
    groups: Sequence[ChangeGroup] = (),
    whole: Graph | None = None,
) -> Report:
    labels = (analysis.base.label or "base", analysis.head.label or "head")
    shown = [t for t in analysis.targets if t.differs or t.status == "error"]
    targets = []
    where: dict[tuple[str, str, str], tuple[int, int]] = {}
    for ti, t in enumerate(shown):
        data = target_data(t, labels)
        if t.status == "error":
            errors = [e.message for e in analysis.errors if e.target == t.name]
            data["error"] = "; ".join(errors)
        for di, doc in enumerate(data["docs"]):
            where.setdefault((t.name, doc["op"], doc["id"]), (ti, di))
        targets.append(data)
    listed = [g for g in groups if g.real] + [
        g for g in groups if g.moved and not g.real and g.op == "removed"
    ]
    found = image_changes(analysis.base, analysis.head)
    images = (image_summary.summary_title(found), *map(image_summary.change_line, found))
    return Report(
        command,
        verdict,
        status,
        context,
        tuple(notes),
        graph,
        hazards,
        tuple(targets),
        tuple(change_data(listed, where)),
        whole,
        images if found else (),
    )


def lint_report(
    snapshot: Snapshot, verdict: str, status: str, hazards: HazardReport, graph: Graph | None
) -> Report:
    targets = [
        {
            "name": r.name,
            "kind": r.target.kind,
            "cluster": r.target.cluster or "",
            "status": "ok" if r.ok else "error",
            "before": None,
            "after": len(r.documents) if r.ok else None,
            "counts": [0, 0, 0],
            "docs": [],
            **({"error": r.error} if not r.ok else {}),
        }
        for r in sorted(snapshot.results.values(), key=lambda r: r.name)
    ]
    context = f"{len(targets)} targets rendered from {snapshot.label or 'the working tree'}"
    return Report("harness lint", verdict, status, context, (), graph, hazards, tuple(targets))


def _findings(hazards: HazardReport | None) -> list[dict[str, Any]]:
    """Findings as the page lists them: one per finding, or one per cause (findings.entries)
    with its Kustomizations behind a toggle."""
    if hazards is None:
        return []
    out: list[dict[str, Any]] = []
    for e in entries(hazards.findings):
        f = e.first
        item: dict[str, Any] = {
            "severity": f.severity,
            "rule": f.rule,
            "cluster": f.cluster or "",
            "id": e.ids[0],
            "message": e.message if not e.subjects else e.headline,
        }
        if e.subjects:
            item["members"] = [{"id": ids[0], "message": message} for _f, message, ids in e.members]
        out.append(item)
    return out


def _json_for_script(data: Any) -> str:
    """JSON that cannot end its `<script>` element early."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _toggles(graph: Graph, hidden: set[str]) -> str:
    """One checkbox per edge kind in the picture (the page hides a kind by a class)."""
    counts: dict[str, int] = {}
    for e in graph.edges():
        counts[e.kind] = counts.get(e.kind, 0) + 1
    boxes = []
    for kind, text in gs.LEGEND:
        if kind not in counts:
            continue
        checked = "" if kind in hidden else " checked"
        colour = gs.EDGE_COLOUR[kind]
        boxes.append(
            f'<label class="edge-kind"><input type="checkbox" data-kind="{kind}"{checked}>'
            f'<span class="swatch {kind}" style="border-color:{colour}"></span>'
            f"{escape(text)} ({counts[kind]})</label>"
        )
    return "".join(boxes)


def graph_section(graph: Graph | None, whole: Graph | None) -> str:
    """The picture at its actual size (a box that scrolls; never shrunk into illegibility),
    edge kinds as toggles (CRD edges off past a size), and, when the picture is the change's
    neighbourhood, the whole graph one click away."""
    if graph is None or not any(True for _ in graph.nodes()):
        return ""
    largest = max((v.kustomizations for v in (whole or graph).clusters), default=0)
    hidden = {"crd"} if largest > CRD_EDGES_ABOVE else set()
    svg = graph_svg.render(graph, legend=False)
    note = (
        "Edges point from what comes first; red and amber mark hazards. Hover a box or an "
        "edge for details"
        + (
            f"; {graph.grouped} Kustomizations are boxed by namespace (hover a box for its members)"
            if graph.grouped
            else ""
        )
        + "."
    )
    classes = "graph-box" + "".join(f" hide-{k}" for k in sorted(hidden))
    more = ""
    if whole is not None:
        more = (
            '<p><button type="button" class="more" id="whole-graph">show the whole graph '
            f"({sum(1 for _ in whole.nodes())} boxes)</button></p>"
            f'<template id="whole-graph-svg">{graph_svg.render(whole, legend=False)}</template>'
        )
    title = "Kustomization graph" if not graph.focus else "Kustomization graph: the change"
    return (
        f'<section id="graph"><h2>{escape(title)}</h2><p class="muted">{escape(note)}</p>'
        f'<div class="edge-toggles">{_toggles(whole or graph, hidden)}</div>'
        f'<div class="{classes}">{svg}</div>{more}</section>'
    )


def render(report: Report) -> str:
    data = {
        "schema": SCHEMA,
        "command": report.command,
        "verdict": report.verdict,
        "status": report.status,
        "findings": _findings(report.hazards),
        "changes": list(report.changes),
        "targets": list(report.targets),
    }
    # every string scrubbed of the run's Secret values, as visible() does for text
    data = redaction.known().scrub_all(data)
    graph_html = redaction.known().scrub(graph_section(report.graph, report.whole))
    notes = "".join(f'<p class="note">{_shown(n)}</p>' for n in report.notes)
    if report.hazards is not None and report.hazards.findings:
        line = f"Hazards: {counts_line(report.hazards)}"
        worst = "error" if report.hazards.at_least("error") else "warning"
        if not report.hazards.at_least("warning"):
            worst = "info"
        notes = (
            f'<p class="hazard-line {worst}"><a href="#findings-box">{_shown(line)}</a></p>' + notes
        )
    values = {
        "TITLE": _shown(f"{report.command}: {report.verdict}"),
        "CSS": _asset("report.css"),
        "STATUS": _shown(report.status),
        "VERDICT": _shown(report.verdict),
        "CONTEXT": _shown(report.context),
        "NOTES": notes,
        "IMAGES": images_section(report.images),
        "GRAPH": graph_html,
        "DATA": _json_for_script(data),
        "JS": _asset("report.js"),
    }
    return fill(_asset("report.html"), values)


def images_section(lines: Sequence[str]) -> str:
    """What image versions change, first: a reviewer's first question of a bump (static
    HTML, every line whole; `lines` is the title then one line per change)."""
    if not lines:
        return ""
    title, *changes = lines
    items = "".join(f"<li>{_shown(line)}</li>" for line in changes)
    head = f'<section id="images-box"><h2>{_shown(title)}</h2>'
    return f'{head}<ul id="images">{items}</ul></section>'


def _shown(text: str) -> str:
    return escape(redaction.known().scrub(text))


_PLACEHOLDER = re.compile(r"\{\{([A-Z]+)\}\}")


def fill(template: str, values: Mapping[str, str]) -> str:
    """Every `{{NAME}}` of the template replaced in one pass: a value is never scanned for
    placeholders, so a target named `apps/{{JS}}` stays that text (already escaped), and
    the template must name each value exactly once."""
    names = _PLACEHOLDER.findall(template)
    if sorted(names) != sorted(values):
        raise ValueError(f"template placeholders {sorted(names)} != values {sorted(values)}")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
