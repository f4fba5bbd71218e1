"""`harness update`: render everything and rewrite the goldens."""

from __future__ import annotations

import typer

from harness.cli import errors, shared
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

app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def update(
    shard: shared.ShardOpt = None,
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
    """Render all targets and rewrite the goldens atomically (exit 2 if any target failed).

    With --shard K/N nothing is written: the shard's renders go to stdout as JSON, and
    `harness merge` of all N writes the goldens."""
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
    errors.run(lambda: run(shared.sharded(c, shard)), debug)


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
