"""`harness lint`: render everything once and report what applying it would do (hazards)."""

from __future__ import annotations

from pathlib import Path

from harness.cli.context import (
    EXIT_DIFF,
    EXIT_ERROR,
    EXIT_OK,
    Common,
    load_config,
    render_snapshot,
    renderer_for,
)
from harness.core.model import Snapshot
from harness.hazards import engine
from harness.hazards.engine import HazardReport
from harness.report import formats

FAIL_ON = ("error", "warning", "info")


def exit_code(snapshot: Snapshot, report: HazardReport, fail_on: str) -> int:
    """2 when a target failed to render, 1 when a finding is at/above `fail_on`, else 0."""
    if snapshot.errors():
        return EXIT_ERROR
    return EXIT_DIFF if report.at_least(fail_on) else EXIT_OK


def run(
    common: Common, output: str = "text", fail_on: str = "error", html: Path | None = None
) -> int:
    cfg = load_config(common)
    renderer = renderer_for(common, cfg)
    snapshot = render_snapshot(common, cfg, renderer, label="working tree")
    report = engine.lint(
        snapshot,
        repo=cfg.repo,
        goldens=cfg.goldens,
        sources=cfg.sources,
        suppressions=cfg.suppress,
        preinstalled=cfg.preinstalled,
        config_file=cfg.source_file.name if cfg.source_file else "harness.yaml",
        strict=cfg.strict,
        outside_git=cfg.outside_git,
    )
    code = exit_code(snapshot, report, fail_on)
    result = formats.LintResult(snapshot, report, fail_on, code, common.verbose)
    formats.report("lint", output, result, html)
    return code
