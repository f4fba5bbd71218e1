"""`--output text` (the default): what people read in a terminal or a CI log.

Each verb imports only its own layout: a `lint` loads no comparison code.
"""

from __future__ import annotations

from harness.report.formats import CheckResult, DiffResult, LintResult


def check(result: CheckResult) -> None:
    from harness.compare.analyze import analyze, ignore_patterns
    from harness.report import text

    analysis = None
    if result.comparison.differing:
        ignore = ignore_patterns(result.cfg)
        # a goldens base: its failures are a broken store, never repairs
        analysis = analyze(result.base, result.head, ignore=ignore, repairs=False)
    text.print_check(
        result.comparison,
        result.cfg,
        analysis,
        hazards=result.hazards,
        verbose=result.verbose,
        hidden=result.hidden,
    )


def diff(result: DiffResult) -> None:
    from harness.report import diff_text

    diff_text.print_diff(
        result.analysis,
        result.verdict,
        result.base,
        result.head,
        expect=result.expect,
        hazards=result.hazards,
        blind=result.blind,
        verbose=result.verbose,
        chart_metadata=result.chart_metadata,
    )


def lint(result: LintResult) -> None:
    from harness.report import lint_text

    lint_text.print_lint(result.snapshot, result.report, result.fail_on, result.verbose)
