"""The helm stage of a render: after the Flux targets of every cluster, their HelmReleases.

pipeline.py collects each cluster's rendered objects while the Flux fixed point runs and
hands them here; this module picks the engine and the chart cache, and renders the releases
the selection asks for (config `helm: [globs]` narrows helm targets alone), deciding before
any chart is fetched. A helm target whose name equals a flux target's (a HelmRelease and
a Kustomization of one name and namespace) is named
`<cluster>/<namespace>/<name>@helm`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness import discover
from harness.cache.closure import Blobs
from harness.cache.store import RenderCache
from harness.core.config import Config
from harness.core.model import TargetResult
from harness.flux.helm import engine as engine_mod
from harness.flux.helm.cached import ReleaseCache
from harness.flux.helm.targets import ClusterObjects, HelmContext, render_helm
from harness.flux.source.chartcache import ChartCache, default_root
from harness.flux.source.fetch import Fetcher
from harness.render import Renderer


@dataclass(frozen=True)
class HelmOptions:
    binary: str | None = None
    offline: bool = False
    cache_dir: Path | None = None
    # the render cache (cached.py; None: `--no-cache`) and a git checkout's blob ids
    render_cache: RenderCache | None = field(default=None, compare=False)
    blob_index: Mapping[str, str] | None = field(default=None, compare=False)


def render(
    config: Config,
    renderer: Renderer,
    clusters: Sequence[ClusterObjects],
    options: HelmOptions,
    *,
    jobs: int,
    taken: set[str],
    selection: tuple[str, ...] = (),
    on_plan: Callable[[int], None] | None = None,
    on_done: Callable[[TargetResult], None] | None = None,
) -> dict[str, TargetResult]:
    if not clusters:
        return {}
    engine = engine_mod.resolve(options.binary, config.timeout)  # loads no library
    cache = options.render_cache
    blobs = Blobs(options.blob_index)
    ctx = HelmContext(
        engine=engine,
        fetcher=Fetcher(ChartCache(options.cache_dir or default_root()), offline=options.offline),
        renderer=renderer,
        repo=config.repo,
        source_map=config.sources,
        cache=None if cache is None else ReleaseCache(cache, engine, renderer, blobs),
    )

    def keep(name: str) -> bool:
        if config.helm_targets and not discover.matches(name, config.helm_targets):
            return False
        if not discover.selected(name, config):
            return False
        return not selection or discover.matches(name, selection)

    out = render_helm(clusters, ctx, jobs=jobs, taken=taken, keep=keep)
    if on_plan is not None:
        on_plan(len(out))
    if on_done is not None:
        for result in out.values():
            on_done(result)
    return out
