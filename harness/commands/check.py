"""`harness check`: render everything, compare with the committed goldens (the CI job)."""

from __future__ import annotations

from harness import goldens
from harness.commands.common import (
    EXIT_DIFF,
    EXIT_ERROR,
    EXIT_OK,
    Common,
    load_config,
    render_snapshot,
    renderer_for,
)
from harness.compare import Comparison, compare
from harness.report import json_out, text


def exit_code(comparison: Comparison) -> int:
    if comparison.errors:
        return EXIT_ERROR
    return EXIT_DIFF if comparison.differing else EXIT_OK


def run(common: Common, output: str = "text") -> int:
    cfg = load_config(common)
    renderer = renderer_for(common, cfg)
    golden_set = goldens.load(cfg.goldens)
    base = goldens.to_snapshot(golden_set, cfg.repo)
    head = render_snapshot(common, cfg, renderer, label="working tree")
    comparison = compare(base, head)
    if output == "json":
        json_out.print_check(comparison, cfg)
    else:
        text.print_check(comparison, cfg)
    return exit_code(comparison)
