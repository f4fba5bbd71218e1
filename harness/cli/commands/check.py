"""`harness check`: render everything, compare with the committed goldens (the CI job)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.cli.context import (
    EXIT_DIFF,
    EXIT_ERROR,
    EXIT_OK,
    Common,
    hazard_gate,
    load_config,
    render_snapshot,
    renderer_for,
)
from harness.compare.coverage import under_failed
from harness.compare.snapshots import Comparison, compare
from harness.core.config import Config
from harness.core.model import Snapshot
from harness.hazards import engine as hazard_engine
from harness.pipeline import goldens
from harness.report import formats


def exit_code(comparison: Comparison) -> int:
    if comparison.errors:
        return EXIT_ERROR
    return EXIT_DIFF if comparison.differing else EXIT_OK


def run(
    common: Common,
    output: str = "text",
    fail_on_hazard: str | None = None,
    html: Path | None = None,
) -> int:
    started = time.monotonic()
    cfg = load_config(common)
    renderer = renderer_for(common, cfg)
    golden_set = goldens.load(cfg.goldens)
    base = goldens.to_snapshot(golden_set, cfg.repo)
    head = render_snapshot(common, cfg, renderer, label="working tree")
    extra: dict[str, Any] | None = None
    plan = common.shard.current if common.shard is not None else None
    if plan is not None:  # this shard's part; `harness merge` rebuilds the whole run
        from harness.pipeline import shard

        base = plan.restrict(base)
        options = {"fail_on_hazard": fail_on_hazard}
        sides = {"base": base, "head": head}
        extra = {"shard": shard.block(plan, "check", sides, cfg.repo, options)}
    return report(cfg, base, head, output, fail_on_hazard, started, extra, html, common.verbose)


def report(
    cfg: Config,
    base: Snapshot,
    head: Snapshot,
    output: str,
    fail_on_hazard: str | None,
    started: float,
    extra: dict[str, Any] | None = None,
    html: Path | None = None,
    verbose: bool = False,
) -> int:
    """Compare, analyse and print; `extra` keys join the JSON output (a shard's block)."""
    comparison = compare(base, head)
    hazards = hazard_engine.diff_for(cfg, base, head, cfg.repo)
    code = hazard_gate(exit_code(comparison), hazards, fail_on_hazard)
    elapsed = time.monotonic() - started
    hidden = sum(under_failed(cfg.repo, head).values())
    result = formats.CheckResult(
        cfg, base, head, comparison, hazards, code, elapsed, extra or {}, hidden, verbose
    )
    formats.report("check", output, result, html)
    return code
