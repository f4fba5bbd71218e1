"""`--output json`: the versioned documents of docs/json-schemas.md."""

from __future__ import annotations

from harness.report.formats import CheckResult, DiffResult, LintResult


def check(result: CheckResult) -> None:
    from harness.report import json_out

    if result.extra:
        payload = json_out.check_payload(result.comparison, result.cfg, result.hazards)
        json_out.emit({**payload, **result.extra})
    else:
        json_out.print_check(result.comparison, result.cfg, result.hazards)


def diff(result: DiffResult) -> None:
    from harness.report import diff_json

    diff_json.print_diff(
        result.analysis,
        result.verdict,
        result.base,
        result.head,
        expect=result.expect,
        exit_code=result.code,
        hazards=result.hazards,
        extra=result.extra,
        blind=result.blind,
    )


def lint(result: LintResult) -> None:
    from harness.report import lint_text

    lint_text.print_lint_json(result.snapshot, result.report, result.fail_on, result.code)
