"""`harness update`: render everything and rewrite the goldens."""

from __future__ import annotations

from harness import goldens
from harness.commands.common import (
    EXIT_ERROR,
    EXIT_OK,
    Common,
    load_config,
    render_snapshot,
    renderer_for,
)
from harness.report import text


def run(common: Common) -> int:
    cfg = load_config(common)
    renderer = renderer_for(common, cfg)
    snapshot = render_snapshot(common, cfg, renderer)
    report = goldens.write(cfg.goldens, snapshot)
    text.print_update(snapshot, report, cfg)
    return EXIT_ERROR if snapshot.errors() else EXIT_OK
