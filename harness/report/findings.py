"""Hazard findings laid out for every output: text, JSON, Markdown alert blocks, JUnit cases.

`lint` prints them on their own; `diff`, `check` and `comment` append them to their report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness.hazards.engine import Gate, HazardReport, Suppressed
from harness.hazards.finding import SEVERITIES, Finding

LINT_SCHEMA = "harness.lint/v1"
STYLE = {"error": "red", "warning": "yellow", "info": "cyan"}
ALERT = {"error": "CAUTION", "warning": "WARNING", "info": "NOTE"}
WORD = {"error": "error", "warning": "warning", "info": "note"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 or word == 'info' else 's'}"


def counts_line(report: HazardReport) -> str:
    """`3 errors, 1 warning, 8 info` (zeros included, so the line is stable)."""
    counts = report.counts()
    return ", ".join(_plural(counts[s], s) for s in SEVERITIES)


# -- JSON --------------------------------------------------------------------------------------


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "id": f.id,
        "rule": f.rule,
        "severity": f.severity,
        "cluster": f.cluster,
        "kustomizations": list(f.kustomizations),
        "documents": list(f.documents),
        "message": f.message,
    }


def suppressed_dict(s: Suppressed) -> dict[str, Any]:
    return {**finding_dict(s.finding), "reason": s.reason}


def gates_dict(gates: Sequence[Gate]) -> dict[str, Any]:
    return {
        g.name: {"assertions": g.assertions, "hazards": g.hazards, "line": g.line} for g in gates
    }


def report_dict(report: HazardReport) -> dict[str, Any]:
    """The `findings`/`suppressed`/`gates` part shared by the lint and diff documents."""
    return {
        "findings": [finding_dict(f) for f in report.findings],
        "suppressed": [suppressed_dict(s) for s in report.suppressed],
        "gates": gates_dict(report.gates),
    }


# -- text --------------------------------------------------------------------------------------


def print_findings(out: Console, report: HazardReport, *, heading: str = "") -> None:
    """Findings grouped by rule, each one line (severity and id) plus its message."""
    if heading and (report.findings or report.suppressed):
        out.print(heading)
    by_rule: dict[str, list[Finding]] = {}
    for f in report.findings:
        by_rule.setdefault(f.rule, []).append(f)
    for rule, findings in by_rule.items():
        tally = ", ".join(
            _plural(n, s) for s in SEVERITIES if (n := sum(1 for f in findings if f.severity == s))
        )
        out.print(f"[bold]{escape(rule)}[/bold] ({tally})")
        for f in findings:
            style = STYLE.get(f.severity, "")
            out.print(f"  [{style}]{f.severity:<7}[/{style}] {escape(f.id)}")
            out.print(f"          {escape(f.message)}")
    for s in report.suppressed:
        out.print(
            f"[dim]  suppressed {escape(s.finding.id)} ({s.finding.severity}): "
            f"{escape(s.reason)}[/dim]"
        )


# -- Markdown ----------------------------------------------------------------------------------


def _md(text: str) -> str:
    """Inline Markdown-safe text: no HTML, no accidental emphasis or tables."""
    return (
        text.replace("\\", "\\\\")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("*", "\\*")
        .replace("_", "\\_")
        .replace("|", "\\|")
        .replace("`", "'")
        .replace("$", "\\$")  # GitHub renders $...$ as math
        .replace("\n", " ")
    )


def alert_blocks(
    report: HazardReport,
    limit: int | None = None,
    severities: Sequence[str] = SEVERITIES,
    suppressed_note: bool = True,
) -> str:
    """One GitHub alert block per severity (`> [!CAUTION]` errors, `> [!WARNING]`, `> [!NOTE]`),
    each finding one bullet: rule, message, id. `limit` caps bullets per block."""
    blocks = []
    for severity in severities:
        findings = [f for f in report.findings if f.severity == severity]
        if not findings:
            continue
        title = f"**{_plural(len(findings), 'hazard ' + WORD[severity])}**"
        lines = [f"> [!{ALERT[severity]}]", f"> {title}"]
        shown = findings if limit is None else findings[:limit]
        for f in shown:
            lines.append(f"> - **{f.rule}**: {_md(f.message)} `{f.id.replace('`', '')}`")
        if len(shown) < len(findings):
            lines.append(f"> - ... and {len(findings) - len(shown)} more (see `harness lint`)")
        blocks.append("\n".join(lines))
    if report.suppressed and suppressed_note:
        blocks.append(f"{len(report.suppressed)} hazard finding(s) suppressed by the config file.")
    return "\n\n".join(blocks)


# -- JUnit -------------------------------------------------------------------------------------


def junit_failures(report: HazardReport, threshold: str = "error") -> list[tuple[str, str, str]]:
    """(name, failure message, detail) for each finding at or above `threshold`."""
    return [(f.id, f"{f.severity}: {f.rule}", f.message) for f in report.at_least(threshold)]
