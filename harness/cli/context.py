"""What every verb needs first: the repo, its config, a renderer, a snapshot."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cache import replay
from harness.core.memo import Memo

# the config, render and report modules load when a verb runs, not when it is built
if TYPE_CHECKING:
    from harness.cache import store as cache_mod
    from harness.core.config import Config
    from harness.core.model import Snapshot
    from harness.core.run import Run
    from harness.hazards.engine import HazardReport
    from harness.pipeline.shard import Sharder
    from harness.pipeline.worktree import Keeper
    from harness.render import kustomize as render
    from harness.render.seam import Resident

EXIT_OK = 0
EXIT_DIFF = 1
EXIT_ERROR = 2


@dataclass(frozen=True)
class Common:
    """Options shared by every verb, as typed on the command line."""

    repo: Path | None = None
    config: Path | None = None
    kubectl: str | None = None
    kustomize: str | None = None
    jobs: int = 0
    timeout: float | None = None
    strict: bool | None = None
    quiet: bool = False
    verbose: bool = False
    helm: bool | None = None
    helm_binary: str | None = None
    offline: bool = False
    no_cache: bool = False
    cache_dir: Path | None = None
    shard: Sharder | None = None  # --shard K/N of check, update, render, diff (shard.py)


def hazard_gate(code: int, hazards: HazardReport | None, fail_on: str | None) -> int:
    """`--fail-on-hazard`: findings at or above the threshold turn an ok exit into 1."""
    if code == EXIT_OK and fail_on and hazards is not None and hazards.at_least(fail_on):
        return EXIT_DIFF
    return code


def confined(common: Common, path: Path | None, flag: str) -> None:
    """Fail before anything renders or is written when `flag PATH` would write outside the
    repository (core/confine.py: relative paths stay inside, absolute ones are the user's)."""
    if path is not None:
        from harness.core import confine
        from harness.render.discover import find_repo_root

        repo = common.repo if common.repo is not None else find_repo_root(Path.cwd())
        confine.from_cli(path, flag, repo)


def load_config(common: Common) -> Config:
    from harness.core import config as config_mod
    from harness.core import limits
    from harness.core.errors import ConfigError
    from harness.render.discover import find_repo_root

    repo = common.repo if common.repo is not None else find_repo_root(Path.cwd())
    if not repo.is_dir():
        raise ConfigError(f"--repo {repo}: not a directory")
    cfg = config_mod.overridden(
        config_mod.load(repo, common.config),
        timeout=common.timeout,
        jobs=common.jobs,
        strict=common.strict,
        helm=common.helm,
    )
    limits.apply(cfg.limits)  # the run's bounds (its refusals are its own: core/run.py)
    for note in cfg.notes:
        print(f"warning: {note}", file=sys.stderr)
    replay.note_config(cfg)
    return cfg


def renderer_for(common: Common, cfg: Config) -> render.Renderer:
    from harness.core import process
    from harness.render import kustomize as render

    renderer = render.resolve(
        kubectl=common.kubectl,
        kustomize=common.kustomize,
        flags=cfg.kubectl_flags,
        timeout=cfg.timeout,
    )
    replay.note_tool(renderer.binary)
    for program in process.runs_through():
        replay.note_tool(program)
    return renderer


def cache_settings(common: Common) -> cache_mod.Settings:
    """`--no-cache` / `--cache-dir` as typed; the store's defaults come from the environment."""
    from harness.cache import store as cache_mod

    return cache_mod.Settings(enabled=not common.no_cache, directory=common.cache_dir)


def render_snapshot(
    common: Common,
    cfg: Config,
    renderer: render.Renderer,
    selection: tuple[str, ...] = (),
    label: str = "",
    *,
    cache: cache_mod.RenderCache | None = None,
    blob_index: Mapping[str, str] | None = None,
    skips: bool = True,
    resident: Resident | None = None,
    run: Run | None = None,
    index: Keeper | None = None,
) -> Snapshot:
    """Render through the cache: `cache` when the verb shares one between renders (diff),
    else one opened (and pruned to its cap) for this render. `skips`: say which targets were
    skipped (a verb rendering two sides says it once, for both). `run`: the run the render
    belongs to (watch's own); None: the current one, which the verb runner entered.
    `index`: the working tree's dependency index (pipeline/worktree.py), for a render of
    the working tree that may reuse its last one."""
    from harness.cache import store as cache_mod
    from harness.pipeline.repo import RenderOptions, render_repo
    from harness.report.console import render_progress

    own = cache is None
    if own:
        cache = cache_mod.open_cache(cache_settings(common))
        warn_cache(cache)
    options = RenderOptions(
        jobs=cfg.jobs,
        strict=cfg.strict,
        selection=selection,
        helm=cfg.helm,
        helm_binary=common.helm_binary,
        offline=common.offline,
        cache=cache,
        blob_index=blob_index,
        shard=common.shard,
        preinstalled_apis=_preinstalled_apis(cfg) if cfg.helm else None,
        resident=resident,
        run=run,
        index=index,
    )
    try:
        with render_progress(common.quiet) as (on_plan, on_done):
            snapshot = render_repo(
                cfg, renderer, options, label=label, on_plan=on_plan, on_done=on_done
            )
    finally:
        if own and cache is not None:
            cache.close()
    warn_cache(cache)
    if cache is not None and cache.uncacheable:
        replay.taint("a target reads remote inputs")
    if skips:
        print_skipped(common, snapshot)
    print_warnings(_unseen_warnings(snapshot))
    return snapshot


def _preinstalled_apis(cfg: Config) -> Callable[[Snapshot], Mapping[str, frozenset[str]]]:
    """The preinstalled scan (hazards/preinstalled.py) of a render's path and flux targets,
    as the API versions each cluster's preinstalled CRDs serve (charts' `.Capabilities`)."""

    def scan(snapshot: Snapshot) -> Mapping[str, frozenset[str]]:
        from harness.hazards.context import LintContext

        ctx = LintContext(
            snapshot,
            repo=cfg.repo,
            goldens=cfg.goldens,
            sources=cfg.sources,
            outside_git=cfg.outside_git,
            preinstalled_entries=cfg.preinstalled,
            config_file=str(cfg.source_file.name) if cfg.source_file else "harness.yaml",
        )
        inventory = ctx.preinstalled
        return {cluster: inventory.apis(cluster) for cluster in ctx.graphs}

    return scan


# per run (core/run.py): a new command, or watch starting afresh, says a warning again
_WARNED: Memo[str, bool] = Memo("printed warnings", 1000)


def _unseen_warnings(snapshot: Snapshot) -> Snapshot:
    """The snapshot with only the warnings this run has not printed yet: `diff` renders
    two sides, and a warning about how clusters were found is said once."""
    fresh = tuple(w for w in snapshot.warnings if _WARNED.get(w) is None)
    for warning in fresh:
        _WARNED.put(warning, True)
    return replace(snapshot, warnings=fresh)


def warn_cache(cache: cache_mod.RenderCache | None) -> None:
    """The one line an unusable cache gets (cache_mod.RenderCache.warning)."""
    from harness.report.console import escape, stderr

    message = cache.warning() if cache is not None else None
    if message is not None:
        replay.taint("the render cache is unusable")
        stderr().print(f"warning: {escape(message)}")


def print_skipped(common: Common, *snapshots: Snapshot) -> None:
    """The Flux targets skipped on purpose (their source is external), once per run however
    many sides it rendered: one summary line, each of them with --verbose; none with --quiet
    (errors and the verdict only: the verdict line counts them)."""
    from harness.report.console import escape, stderr
    from harness.report.text import skipped_lines

    if common.quiet:
        return
    skipped: dict[str, str] = {}
    for snapshot in snapshots:
        skipped.update(snapshot.skipped)
    err = stderr()
    for line in skipped_lines(skipped, common.verbose):
        err.print(escape(line))


def print_warnings(snapshot: Snapshot) -> None:
    """The run's warnings (a `helm:` glob that matches nothing, clusters guessed)."""
    from harness.report.console import escape, stderr

    err = stderr()
    for warning in snapshot.warnings:
        err.print(f"[yellow]warning: {escape(warning)}[/yellow]")
