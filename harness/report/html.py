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
from harness.compare.docdiff import DocChange, unified_diff
from harness.core.model import Document, Snapshot
from harness.graph import svg as graph_svg
from harness.graph.view import Graph
from harness.hazards.engine import HazardReport
from harness.report.diff_text import field_lines
from harness.report.findings import counts_line

SCHEMA = "harness.html/v1"  # the embedded data's shape, for anyone scraping the page
CONTEXT = 3
MAX_TEXT = 20000  # characters of an added/removed document's text kept in the page


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
) -> Report:
    labels = (analysis.base.label or "base", analysis.head.label or "head")
    shown = [t for t in analysis.targets if t.differs or t.status == "error"]
    targets = []
    for t in shown:
        data = target_data(t, labels)
        if t.status == "error":
            errors = [e.message for e in analysis.errors if e.target == t.name]
            data["error"] = "; ".join(errors)
        targets.append(data)
    return Report(command, verdict, status, context, tuple(notes), graph, hazards, tuple(targets))


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


def _findings(hazards: HazardReport | None) -> list[dict[str, str]]:
    if hazards is None:
        return []
    return [
        {
            "severity": f.severity,
            "rule": f.rule,
            "cluster": f.cluster or "",
            "id": f.id,
            "message": f.message,
        }
        for f in hazards.findings
    ]


def _json_for_script(data: Any) -> str:
    """JSON that cannot end its `<script>` element early."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(report: Report) -> str:
    data = {
        "schema": SCHEMA,
        "command": report.command,
        "verdict": report.verdict,
        "status": report.status,
        "findings": _findings(report.hazards),
        "targets": list(report.targets),
    }
    graph = report.graph
    if graph is not None and any(True for _ in graph.nodes()):
        svg = graph_svg.render(graph)
        legend = (
            "Edges point from what comes first: grey dependsOn, dashed purple substituteFrom, "
            "thick orange CRD provider, dotted blue moved documents; red and amber mark "
            "hazards. Hover a box or an edge for details; click the picture for its actual size."
        )
        graph_html = (
            '<section id="graph"><h2>Kustomization graph</h2>'
            f'<p class="muted">{escape(legend)}</p><div class="graph-box">{svg}</div></section>'
        )
    else:
        graph_html = ""
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in report.notes)
    if report.hazards is not None and report.hazards.findings:
        line = f"Hazards: {counts_line(report.hazards)}"
        worst = "error" if report.hazards.at_least("error") else "warning"
        if not report.hazards.at_least("warning"):
            worst = "info"
        notes = (
            f'<p class="hazard-line {worst}"><a href="#findings-box">{escape(line)}</a></p>' + notes
        )
    values = {
        "TITLE": escape(f"{report.command}: {report.verdict}"),
        "CSS": _asset("report.css"),
        "STATUS": escape(report.status),
        "VERDICT": escape(report.verdict),
        "CONTEXT": escape(report.context),
        "NOTES": notes,
        "GRAPH": graph_html,
        "DATA": _json_for_script(data),
        "JS": _asset("report.js"),
    }
    return fill(_asset("report.html"), values)


_PLACEHOLDER = re.compile(r"\{\{([A-Z]+)\}\}")


def fill(template: str, values: Mapping[str, str]) -> str:
    """Every `{{NAME}}` of the template replaced in one pass: a value is never scanned for
    placeholders, so a target named `apps/{{JS}}` stays that text (already escaped), and
    the template must name each value exactly once."""
    names = _PLACEHOLDER.findall(template)
    if sorted(names) != sorted(values):
        raise ValueError(f"template placeholders {sorted(names)} != values {sorted(values)}")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
