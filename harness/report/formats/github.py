"""`--output github`: workflow annotations; and the step summary every check/diff appends
when `$GITHUB_STEP_SUMMARY` is set, whatever the output."""

from __future__ import annotations

from harness.report import github
from harness.report.formats import CheckResult, DiffResult, Result


def check(result: CheckResult) -> None:
    github.print_check(result.comparison, result.hazards)


def diff(result: DiffResult) -> None:
    github.print_diff(
        result.analysis, result.verdict, result.expect, result.fail_on_diff, hazards=result.hazards
    )


def step_summary(verb: str, result: Result) -> None:
    if isinstance(result, CheckResult):
        github.append_step_summary(github.check_summary(result.comparison))
    elif isinstance(result, DiffResult):
        github.append_step_summary(github.diff_summary(result.analysis, result.verdict))
