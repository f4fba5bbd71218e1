"""`harness check`: render everything, compare with the committed goldens (the CI job)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from harness import goldens
from harness.analyze import explain_changes, ignore_patterns
from harness.commands.common import (
    EXIT_DIFF,
    EXIT_ERROR,
    EXIT_OK,
    Common,
    hazard_gate,
    load_config,
    render_snapshot,
    renderer_for,
)
from harness.compare import Comparison, compare
from harness.config import Config
from harness.hazards import engine as hazard_engine
from harness.model import Snapshot
from harness.report import text


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
        from harness import shard

        base = plan.restrict(base)
        options = {"fail_on_hazard": fail_on_hazard}
        sides = {"base": base, "head": head}
        extra = {"shard": shard.block(plan, "check", sides, cfg.repo, options)}
    return report(cfg, base, head, output, fail_on_hazard, started, extra, html)


def report(
    cfg: Config,
    base: Snapshot,
    head: Snapshot,
    output: str,
    fail_on_hazard: str | None,
    started: float,
    extra: dict[str, Any] | None = None,
    html: Path | None = None,
) -> int:
    """Compare, analyse and print; `extra` keys join the JSON output (a shard's block).

    Output modules other than text are imported when chosen: a plain `check` starts faster.
    """
    comparison = compare(base, head)
    hazards = hazard_engine.diff_for(cfg, base, head, cfg.repo)
    code = hazard_gate(exit_code(comparison), hazards, fail_on_hazard)
    if output == "html" or html is not None:
        from harness.commands import html_out

        page = html_out.check_page(cfg, base, head, hazards, code)
        html_out.emit(page, html, output == "html")
    if output == "html":
        pass
    elif output == "json":
        from harness.report import json_out

        if extra:
            json_out.emit({**json_out.check_payload(comparison, cfg, hazards), **extra})
        else:
            json_out.print_check(comparison, cfg, hazards)
    elif output == "junit":
        from harness.report import junit

        changes = explain_changes(comparison, ignore_patterns(cfg))
        junit.print_check(comparison, time.monotonic() - started, changes, hazards)
    elif output == "github":
        from harness.report import github

        github.print_check(comparison, hazards)
    else:
        changes = explain_changes(comparison, ignore_patterns(cfg))
        text.print_check(comparison, cfg, changes, hazards=hazards)
    if os.environ.get("GITHUB_STEP_SUMMARY"):  # where github.append_step_summary writes
        from harness.report import github

        github.append_step_summary(github.check_summary(comparison))
    return code
