"""`harness update`: render everything and rewrite the goldens."""

from __future__ import annotations

from harness.cli.context import (
    EXIT_ERROR,
    EXIT_OK,
    Common,
    load_config,
    render_snapshot,
    renderer_for,
)
from harness.core.config import Config
from harness.core.model import Snapshot
from harness.pipeline import goldens, shard
from harness.report import json_out, text
from harness.report.console import escape, stderr


def run(common: Common) -> int:
    cfg = load_config(common)
    renderer = renderer_for(common, cfg)
    snapshot = render_snapshot(common, cfg, renderer)
    plan = common.shard.current if common.shard is not None else None
    if plan is not None:
        # A shard's goldens would drop every other shard's targets: it writes its part as
        # JSON instead, and `harness merge` writes the goldens of the whole run.
        block = shard.block(plan, "update", {"head": snapshot}, cfg.repo, {})
        json_out.emit({**json_out.render_payload(snapshot), "shard": block})
        return EXIT_ERROR if snapshot.errors() else EXIT_OK
    return write(cfg, snapshot)


def write(cfg: Config, snapshot: Snapshot) -> int:
    """Write the goldens of a whole run and report (shared with `harness merge`)."""

    def waiting() -> None:
        stderr().print(
            f"waiting: another harness run is writing the goldens in {escape(str(cfg.goldens))}"
        )

    report = goldens.write(cfg.goldens, snapshot, waiting)
    text.print_update(snapshot, report, cfg)
    return EXIT_ERROR if snapshot.errors() else EXIT_OK
