"""`--output html` / `--html FILE` for diff, check and lint: the page for each verb's result.

The verbs compute as always; this module only turns their results (plus the Kustomization
graph of the same renders) into a `report.html.Report` and writes it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness import gate
from harness import graph as graph_mod
from harness.analyze import Analysis, analyze, ignore_patterns
from harness.commands.graph import write_atomic
from harness.config import Config
from harness.graph import Graph
from harness.hazards.engine import HazardReport
from harness.model import Snapshot
from harness.report import counts, html
from harness.report.findings import counts_line
from harness.report.markdown import headline

GRAPH_FOCUS_ABOVE = 40  # nodes: beyond this the page draws the change's neighbourhood only


def change_graph(base: Snapshot, head: Snapshot, hazards: HazardReport | None) -> Graph:
    graph = graph_mod.compare(base, head)
    if hazards is not None:
        graph = graph_mod.with_hazards(graph, hazards.findings)
    touched = any(n.touched for n in graph.nodes())
    if touched and sum(1 for _ in graph.nodes()) > GRAPH_FOCUS_ABOVE:
        graph = graph_mod.focus(graph, [graph_mod.CHANGED], 1)
    return graph_mod.merge_alike(graph)


def _status(code: int, verdict: gate.Verdict, hazards: HazardReport | None) -> str:
    """error (exit 2), hazard (error findings), diff (exit 1 or content changes), ok."""
    if code == 2:
        return "error"
    if hazards is not None and hazards.at_least("error"):
        return "hazard"
    return "ok" if verdict.verdict in ("no-change", "pure-move") and code == 0 else "diff"


def diff_page(
    analysis: Analysis,
    verdict: gate.Verdict,
    code: int,
    base_label: str,
    head_label: str,
    hazards: HazardReport | None,
    command: str = "harness diff",
) -> str:
    report = html.diff_report(
        analysis,
        headline(analysis, verdict),
        _status(code, verdict, hazards),
        f"{command}: {base_label} -> {head_label}, exit {code}; "
        + _targets_context(analysis, verdict),
        command=command,
        hazards=hazards,
        graph=change_graph(analysis.base, analysis.head, hazards),
        notes=verdict.notes,
    )
    return html.render(report)


def _targets_context(analysis: Analysis, verdict: gate.Verdict) -> str:
    """The counting model's numbers (report/counts.py), as every other output has them."""
    c = counts.count(analysis, verdict)
    return (
        f"{c.targets_compared} targets compared, {c.targets_changed} differ, "
        f"{c.documents_before} -> {c.documents_after} documents"
    )


def check_page(
    cfg: Config, base: Snapshot, head: Snapshot, hazards: HazardReport | None, code: int
) -> str:
    analysis = analyze(base, head, ignore=ignore_patterns(cfg))
    verdict = gate.judge(analysis)
    return diff_page(
        analysis, verdict, code, base.label or "goldens", head.label, hazards, "harness check"
    )


def lint_page(snapshot: Snapshot, report: HazardReport, fail_on: str, code: int) -> str:
    graph = graph_mod.with_hazards(graph_mod.build(snapshot), report.findings)
    status = "error" if code == 2 else "hazard" if code == 1 else "ok"
    verdict = f"lint: {counts_line(report)} (fail on {fail_on})"
    return html.render(html.lint_report(snapshot, verdict, status, report, graph))


def emit(page: str, path: Path | None, to_stdout: bool) -> None:
    if to_stdout:
        sys.stdout.write(page)
    if path is not None:
        write_atomic(path, page)
