"""`harness lint`: render everything once and report what applying it would do (hazards)."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from harness.cache import store as cache_mod
from harness.cli import errors, flags, shared
from harness.cli.context import (
    EXIT_DIFF,
    EXIT_ERROR,
    EXIT_OK,
    Common,
    cache_settings,
    confined,
    load_config,
    render_snapshot,
    renderer_for,
)
from harness.core.config import Config
from harness.core.model import Snapshot
from harness.hazards import engine
from harness.hazards.engine import HazardReport
from harness.report import formats

FAIL_ON = ("error", "warning", "info")


class LintOutput(enum.StrEnum):
    text = "text"
    json = "json"
    html = "html"


app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def lint(
    output: Annotated[LintOutput, shared.option(flags.LINT_OUTPUT)] = LintOutput.text,
    fail_on: Annotated[shared.Severity, shared.option(flags.FAIL_ON)] = shared.Severity.error,
    html: shared.HtmlOpt = None,
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
    """Render everything and report hazards: prune, ordering, substitution, parity; CRDs
    installed before Flux (bootstrap helmfiles, Talos/k3s, `preinstalled:`) are known (exit 0
    ok, 1 findings at --fail-on or worse, 2 render error)."""
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
    errors.run(lambda: run(c, output.value, fail_on.value, html), debug)


def exit_code(snapshot: Snapshot, report: HazardReport, fail_on: str) -> int:
    """2 when a target failed to render, 1 when a finding is at/above `fail_on`, else 0."""
    if snapshot.errors():
        return EXIT_ERROR
    return EXIT_DIFF if report.at_least(fail_on) else EXIT_OK


def run(
    common: Common, output: str = "text", fail_on: str = "error", html: Path | None = None
) -> int:
    confined(common, html, "--html")
    cfg = load_config(common)
    renderer = renderer_for(common, cfg)
    snapshot = render_snapshot(common, cfg, renderer, label="working tree")
    cache = cache_mod.open_cache(cache_settings(common))
    try:
        report = _lint(cfg, snapshot, cache)
    finally:
        if cache is not None:
            cache.close()
    code = exit_code(snapshot, report, fail_on)
    result = formats.LintResult(snapshot, report, fail_on, code, common.verbose)
    formats.report("lint", output, result, html)
    return code


def _lint(cfg: Config, snapshot: Snapshot, cache: cache_mod.RenderCache | None) -> HazardReport:
    return engine.lint_for(cfg, snapshot, cfg.repo, cache)
