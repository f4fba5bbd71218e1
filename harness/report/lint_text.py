"""`harness lint` output: findings (text or the `harness.lint/v1` JSON document), then gates."""

from __future__ import annotations

from typing import Any

from harness.core.model import Snapshot
from harness.hazards.engine import RULES, HazardReport
from harness.report.console import escape, stdout
from harness.report.findings import (
    LINT_SCHEMA,
    counts_line,
    entries_dict,
    print_findings,
    print_preinstalled,
    print_rule_summary,
    provision_dict,
    report_dict,
    rule_tallies,
    tally_text,
)
from harness.report.text import print_errors

# The rules that can report anything on one render (diff-only rules have no lint part).
LINT_RULES = tuple(
    (r.id, r.summary) for r in RULES if "lint" in getattr(r, "modes", ("lint", "diff"))
)


def summary_line(report: HazardReport, fail_on: str) -> str:
    return f"lint: {counts_line(report)} (fail on {fail_on})"


def print_lint(
    snapshot: Snapshot, report: HazardReport, fail_on: str, verbose: bool = False
) -> None:
    print_errors(snapshot.results.values())
    out = stdout()
    print_rule_summary(out, report, LINT_RULES)
    print_preinstalled(out, report.preinstalled)
    if report.findings or report.suppressed:
        out.print("")
    print_findings(out, report, verbose=verbose)
    unchecked = list(report.unchecked)
    if verbose or len(unchecked) <= 3:
        for target in unchecked:
            out.print(
                f"[dim]note: {escape(target)}: source unknown, substitution not checked[/dim]"
            )
    else:
        shown = ", ".join(unchecked[:3])
        out.print(
            f"[dim]note: {len(unchecked)} Flux targets' sources are unknown, substitution not "
            f"checked: {escape(shown)} and {len(unchecked) - 3} more (-v lists each)[/dim]"
        )
    for line in report.not_judged:
        out.print(f"[dim]note: {escape(line)}[/dim]")
    out.print(escape(summary_line(report, fail_on)))
    for gate in report.gates:
        out.print(escape(gate.line))


def lint_payload(
    snapshot: Snapshot, report: HazardReport, fail_on: str, exit_code: int
) -> dict[str, Any]:
    from harness.report.json_out import renderer

    counts = report.counts()
    return {
        "schema": LINT_SCHEMA,
        "renderer": renderer(snapshot.renderer),
        "summary": {
            "errors": counts["error"],
            "warnings": counts["warning"],
            "info": counts["info"],
            "suppressed": len(report.suppressed),
            "fail_on": fail_on,
            "exit_code": exit_code,
            "line": summary_line(report, fail_on),
        },
        "rules": [
            {
                "rule": rule,
                "summary": summary,
                "errors": counts["error"],
                "warnings": counts["warning"],
                "info": counts["info"],
                "suppressed": silenced,
                "line": f"{rule}: {tally_text(counts, silenced)}",
            }
            for rule, summary, counts, silenced in rule_tallies(report, LINT_RULES)
        ],
        **report_dict(report),
        "groups": entries_dict(report.findings),
        "preinstalled": [provision_dict(p) for p in report.preinstalled],
        "unchecked": list(report.unchecked),
        "not_judged_schemas": list(report.not_judged),
        "errors": [{"target": r.name, "message": r.error} for r in snapshot.errors()],
        "skipped": [
            {"target": name, "reason": reason} for name, reason in sorted(snapshot.skipped.items())
        ],
    }


def print_lint_json(snapshot: Snapshot, report: HazardReport, fail_on: str, code: int) -> None:
    from harness.report.json_out import emit

    emit(lint_payload(snapshot, report, fail_on, code))
