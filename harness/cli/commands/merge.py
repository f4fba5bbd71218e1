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
from typing import Annotated, Any

import typer

from harness.cli import errors, shared
from harness.cli.commands import check as check_cmd
from harness.cli.commands import comment as comment_cmd
from harness.cli.commands import diff as diff_cmd
from harness.cli.commands import render as render_cmd
from harness.cli.commands import update as update_cmd
from harness.cli.context import Common, confined, load_config
from harness.compare.analyze import Origin
from harness.compare.coverage import BlindSpots
from harness.core.config import Config
from harness.core.errors import HarnessError
from harness.pipeline import shard

app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def merge(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE",
            help="The --output json files of every shard of one run.",
            dir_okay=False,
        ),
    ],
    output: shared.CiOutputOpt = shared.CiOutput.text,
    as_comment: Annotated[
        bool,
        typer.Option(
            "--comment", metavar=shared.FLAG, help="Write the PR comment of merged `diff` shards."
        ),
    ] = False,
    budget: Annotated[
        int | None,
        typer.Option("--budget", metavar="N", help="With --comment: as for `harness comment`."),
    ] = None,
    split: Annotated[
        bool,
        typer.Option(
            "--split", metavar=shared.FLAG, help="With --comment: as for `harness comment`."
        ),
    ] = False,
    max_parts: Annotated[
        int,
        typer.Option(
            "--max-parts", min=1, metavar="N", help="With --comment: as for `harness comment`."
        ),
    ] = 10,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir", file_okay=False, metavar="DIR", help="With --comment --split."
        ),
    ] = None,
    marker: Annotated[
        str | None,
        typer.Option("--marker", metavar="ID", help="With --comment: hidden marker id."),
    ] = None,
    repo: shared.RepoOpt = None,
    config: shared.ConfigOpt = None,
    kubectl: shared.KubectlOpt = None,
    kustomize: shared.KustomizeOpt = None,
    jobs: shared.JobsOpt = 0,
    timeout: shared.TimeoutOpt = None,
    strict: shared.StrictOpt = None,
    quiet: shared.QuietOpt = False,
    verbose: shared.VerboseOpt = False,
    helm: shared.HelmOpt = None,
    helm_binary: shared.HelmBinaryOpt = None,
    offline: shared.OfflineOpt = False,
    no_cache: shared.NoCacheOpt = False,
    cache_dir: shared.CacheDirOpt = None,
    debug: shared.DebugOpt = False,
) -> None:
    """Combine the JSON outputs of `--shard K/N` runs of check, diff, render or update into
    the unsharded run's result, verdict and exit code (or PR comment, or goldens)."""
    c = shared.common(
        repo=repo,
        config=config,
        kubectl=kubectl,
        kustomize=kustomize,
        jobs=jobs,
        timeout=timeout,
        strict=strict,
        quiet=quiet,
        verbose=verbose,
        helm=helm,
        helm_binary=helm_binary,
        offline=offline,
        no_cache=no_cache,
        cache_dir=cache_dir,
    )
    comment = None
    if as_comment:
        comment = comment_cmd.CommentOptions(
            diff=diff_cmd.DiffOptions(),
            budget=budget,
            split=split,
            max_parts=max_parts,
            output_dir=output_dir,
            marker_id=marker,
        )
    errors.run(lambda: run(c, files, output.value, comment), debug)


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
    if comment is not None:
        confined(common, comment.html, "--html")
        confined(common, comment.output_dir, "--output-dir")
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
