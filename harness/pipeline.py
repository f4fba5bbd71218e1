"""Repo -> Snapshot: discover every target, render them all, never stop at the first failure."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness import discover
from harness.config import Config, default_jobs
from harness.flux.targets import render_flux
from harness.model import Snapshot, Target, TargetResult
from harness.render import Renderer, render_paths

if TYPE_CHECKING:
    from harness.shard import Plan, Sharder

OnDone = Callable[[TargetResult], None]
OnPlan = Callable[[int], None]


@dataclass(frozen=True)
class RenderOptions:
    jobs: int = 0
    strict: bool = True
    flux: bool = True
    selection: tuple[str, ...] = ()
    shard: Sharder | None = None  # --shard K/N: render only this shard's units (shard.py)


def path_targets(config: Config, selection: Sequence[str] = ()) -> list[Target]:
    targets = discover.path_targets(config)
    if selection:
        targets = [t for t in targets if discover.matches(t.name, tuple(selection))]
    return targets


def render_repo(
    config: Config,
    renderer: Renderer,
    options: RenderOptions,
    *,
    label: str = "",
    on_plan: OnPlan | None = None,
    on_done: OnDone | None = None,
) -> Snapshot:
    """Render path targets, then (when present) every Flux Kustomization of every cluster."""
    jobs = options.jobs or default_jobs(config)
    targets = path_targets(config, options.selection)
    plan = options.shard.plan(config, path_targets(config)) if options.shard else None
    if plan is not None:
        targets = [t for t in targets if plan.owns(t)]
    if on_plan is not None:
        on_plan(len(targets))
    results = render_paths(renderer, targets, config.repo, jobs, on_done)
    if options.flux and (plan is None or plan.owns_flux()):
        flux_results = render_flux(
            config,
            renderer,
            jobs=jobs,
            strict=options.strict,
            on_plan=on_plan,
            on_done=on_done,
            keep=_cluster_filter(plan, config),
        )
        for name, result in flux_results.items():
            selected = not options.selection or discover.matches(name, options.selection)
            if selected and (plan is None or plan.owns(result.target)):
                results[name] = result
    return Snapshot(renderer=renderer.info(), results=dict(sorted(results.items())), label=label)


def _cluster_filter(plan: Plan | None, config: Config) -> Callable[[Path], bool] | None:
    """The configured clusters a shard builds (None: all of them)."""
    if plan is None or not plan.explicit_clusters:
        return None
    return lambda directory: plan.owns_cluster_dir(directory, config.repo)
