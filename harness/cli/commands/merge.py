"""`harness merge FILE...`: the JSON outputs of `--shard K/N` runs -> the run they split.

Each shard's JSON carries its part of both sides in full (shard.py); merge joins the parts
and runs the same comparison, analysis, hazards and gate as the unsharded command, so the
result, verdict, exit code and PR comment are the unsharded run's. Nothing is rendered.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.cli.commands import check as check_cmd
from harness.cli.commands import comment as comment_cmd
from harness.cli.commands import diff as diff_cmd
from harness.cli.commands import render as render_cmd
from harness.cli.commands import update as update_cmd
from harness.cli.context import Common, load_config
from harness.compare.analyze import Origin
from harness.compare.coverage import BlindSpots
from harness.core.config import Config
from harness.core.errors import HarnessError
from harness.pipeline import shard


def read_blocks(files: Sequence[Path]) -> list[tuple[str, Mapping[str, Any]]]:
    """The `shard` block of every file; a file without one is an error naming it."""
    blocks: list[tuple[str, Mapping[str, Any]]] = []
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise HarnessError(f"{path}: cannot read shard output: {exc}") from None
        block = data.get("shard") if isinstance(data, dict) else None
        if not isinstance(block, dict):
            raise HarnessError(
                f"{path}: no `shard` block (write it with `--shard K/N --output json`)"
            )
        blocks.append((str(path), block))
    return blocks


def run(
    common: Common,
    files: Sequence[Path],
    output: str = "text",
    comment: comment_cmd.CommentOptions | None = None,
) -> int:
    started = time.monotonic()
    cfg = load_config(common)
    merged = shard.merge_blocks(read_blocks(files), cfg.repo)
    if comment is not None and merged.verb != "diff":
        raise HarnessError(f"--comment needs shards of `harness diff`, not `{merged.verb}`")
    if merged.verb == "check":
        base, head = merged.sides["base"], merged.sides["head"]
        fail_on_hazard = merged.options.get("fail_on_hazard")
        return check_cmd.report(
            cfg, base, head, output, fail_on_hazard, started, verbose=common.verbose
        )
    if merged.verb == "diff":
        return _diff(cfg, merged, output, comment, started, common.verbose)
    head = merged.sides["head"]
    if merged.verb == "update":
        return update_cmd.write(cfg, head)
    if merged.verb == "render":
        return render_cmd.show(head, tuple(merged.options.get("targets") or ()), output)
    raise HarnessError(f"merge: shards of `{merged.verb}` cannot be merged")


def _diff(
    cfg: Config,
    merged: shard.Merged,
    output: str,
    comment: comment_cmd.CommentOptions | None,
    started: float,
    verbose: bool = False,
) -> int:
    recorded = dict(merged.options)
    base_origin = Origin(**recorded.pop("base_origin"))
    head_origin = Origin(**recorded.pop("head_origin"))
    blind = recorded.pop("not_judged", None)
    options = diff_cmd.DiffOptions(**recorded, output=output)
    if comment is not None:
        comment_cmd.validate(comment)
        if options.unified is None:
            options = replace(options, unified=comment_cmd.DEFAULT_UNIFIED)
    base, head = merged.sides["base"], merged.sides["head"]
    result = diff_cmd.conclude(
        cfg, options, base, head, base_origin, head_origin, started, merged.same_inputs
    )
    if blind is not None:
        result = replace(
            result,
            blind=BlindSpots(
                dict(blind["skipped"]), tuple(blind["uncovered"]), dict(blind["under_failed"])
            ),
        )
    if comment is not None:
        return comment_cmd.publish(result, options, comment, cfg)
    return diff_cmd.report(result, options, verbose)
