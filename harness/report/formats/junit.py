"""`--output junit`: JUnit XML, one testcase per target (CI test views)."""

from __future__ import annotations

from harness.compare.analyze import explain_changes, ignore_patterns
from harness.report import junit
from harness.report.formats import CheckResult, DiffResult


def check(result: CheckResult) -> None:
    changes = explain_changes(result.comparison, ignore_patterns(result.cfg))
    junit.print_check(result.comparison, result.elapsed, changes, result.hazards)


def diff(result: DiffResult) -> None:
    junit.print_diff(
        result.analysis,
        result.verdict,
        result.expect,
        result.fail_on_diff,
        elapsed=result.elapsed,
        hazards=result.hazards,
        fail_on_preexisting=result.fail_on_preexisting_error,
    )
