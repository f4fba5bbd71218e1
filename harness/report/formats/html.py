"""`--output html` / `--html FILE` for diff, check and lint: the page for each verb's result.

The verbs compute as always; this module only turns their results (plus the Kustomization
graph of the same renders) into a `report.html.Report` and writes it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.compare import counts, gate
from harness.compare.analyze import Analysis, analyze, ignore_patterns
from harness.compare.groups import group, verdict_reasons
from harness.core import atomic
from harness.core.config import Config
from harness.core.model import Snapshot
from harness.graph import view as graph_mod
from harness.graph.view import Graph
from harness.hazards.engine import HazardReport
from harness.report import html
from harness.report.findings import counts_line
from harness.report.formats import CheckResult, DiffResult, LintResult, Result
from harness.report.markdown import headline

GRAPH_FOCUS_ABOVE = 40  # nodes: beyond this the page draws the change's neighbourhood only


def change_graph(
    base: Snapshot, head: Snapshot, hazards: HazardReport | None
) -> tuple[Graph, Graph | None]:
    """The picture (the change's neighbourhood when the graph is big) and, when that leaves
    Kustomizations out, the whole graph for the page's "show the whole graph"; namespaces
    boxed past a size (view.collapse), every edge kind kept (the page toggles them)."""
    graph = graph_mod.compare(base, head)
    if hazards is not None:
        graph = graph_mod.with_hazards(graph, hazards.findings)
    whole = graph_mod.collapse(graph_mod.merge_alike(graph))
    touched = any(n.touched for n in graph.nodes())
    if touched and sum(1 for _ in graph.nodes()) > GRAPH_FOCUS_ABOVE:
        near = graph_mod.focus(graph, [graph_mod.CHANGED], 1)
        return graph_mod.collapse(graph_mod.merge_alike(near)), whole
    return whole, None


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
    graph, whole = change_graph(analysis.base, analysis.head, hazards)
    report = html.diff_report(
        analysis,
        headline(analysis, verdict),
        _status(code, verdict, hazards),
        f"{command}: {base_label} -> {head_label}, exit {code}; "
        + _targets_context(analysis, verdict),
        command=command,
        hazards=hazards,
        graph=graph,
        notes=verdict.notes,
        groups=group(analysis, verdict_reasons(verdict)),
        whole=whole,
    )
    return html.render(report)


def _targets_context(analysis: Analysis, verdict: gate.Verdict) -> str:
    """The counting model's numbers (compare/counts.py), as every other output has them."""
    c = counts.count(analysis, verdict)
    return (
        f"{c.targets_compared} targets compared, {c.targets_changed} differ, "
        f"{c.documents_before} -> {c.documents_after} documents"
    )


def check_page(
    cfg: Config, base: Snapshot, head: Snapshot, hazards: HazardReport | None, code: int
) -> str:
    analysis = analyze(base, head, ignore=ignore_patterns(cfg), repairs=False)  # goldens base
    verdict = gate.judge(analysis)
    return diff_page(
        analysis, verdict, code, base.label or "goldens", head.label, hazards, "harness check"
    )


def lint_page(snapshot: Snapshot, report: HazardReport, fail_on: str, code: int) -> str:
    graph = graph_mod.with_hazards(graph_mod.build(snapshot), report.findings)
    graph = graph_mod.collapse(graph_mod.merge_alike(graph))
    status = "error" if code == 2 else "hazard" if code == 1 else "ok"
    verdict = f"lint: {counts_line(report)} (fail on {fail_on})"
    return html.render(html.lint_report(snapshot, verdict, status, report, graph))


def emit(page: str, path: Path | None, to_stdout: bool) -> None:
    if to_stdout:
        sys.stdout.write(page)
    if path is not None:
        atomic.write_text(path, page)


def page(verb: str, result: Result, path: Path | None, to_stdout: bool) -> None:
    """The verb's page, printed and/or written to `path` (built once for both)."""
    if isinstance(result, CheckResult):
        text = check_page(result.cfg, result.base, result.head, result.hazards, result.code)
    elif isinstance(result, DiffResult):
        text = diff_page(
            result.analysis,
            result.verdict,
            result.code,
            result.base.label,
            result.head.label,
            result.hazards,
        )
    else:
        text = lint_page(result.snapshot, result.report, result.fail_on, result.code)
    emit(text, path, to_stdout)


def check(result: CheckResult) -> None:
    page("check", result, None, True)


def diff(result: DiffResult) -> None:
    page("diff", result, None, True)


def lint(result: LintResult) -> None:
    page("lint", result, None, True)
