"""`harness check`: render everything, compare with the committed goldens (the CI job)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli import errors, flags, shared
from harness.cli.context import (
    EXIT_DIFF,
    EXIT_ERROR,
    EXIT_OK,
    Common,
    confined,
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

app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def check(
    output: shared.CiOutputOpt = shared.CiOutput.text,
    fail_on_hazard: Annotated[
        shared.Severity | None, shared.option(flags.CHECK_FAIL_ON_HAZARD)
    ] = None,
    html: shared.HtmlOpt = None,
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
    """Render all targets and compare them with the goldens (exit 0 match, 1 drift, 2 error)."""
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
    errors.run(
        lambda: run(shared.sharded(c, shard), output.value, shared.value(fail_on_hazard), html),
        debug,
    )


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
    confined(common, html, "--html")
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
