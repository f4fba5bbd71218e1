"""The helm stage of a render: after the Flux targets of every cluster, their HelmReleases.

pipeline.py collects each cluster's rendered objects while the Flux fixed point runs and
hands them here; this module picks the engine and the chart cache, and renders the releases
the selection asks for (config `helm: [globs]` narrows helm targets alone), deciding before
any chart is fetched. A helm target whose name equals a flux target's (a HelmRelease and
a Kustomization of one name and namespace, the usual layout) is named
`<cluster>/<namespace>/<name>@helm`; a `helm:` glob matches a name with or without that
suffix, and one that matches no helm target at all is a warning (a typo selects nothing).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.cache.store import RenderCache
from harness.core import scratch
from harness.core.config import Config
from harness.core.model import TargetResult
from harness.flux.helm import engine as engine_mod
from harness.flux.helm.cached import ReleaseCache
from harness.flux.helm.targets import ClusterObjects, HelmContext, render_helm
from harness.flux.source.chartcache import ChartCache, default_root
from harness.flux.source.fetch import Fetcher
from harness.render import discover
from harness.render.closure import Blobs
from harness.render.kustomize import Renderer

HELM_SUFFIX = "@helm"


@dataclass(frozen=True)
class HelmOptions:
    binary: str | None = None
    offline: bool = False
    cache_dir: Path | None = None
    # the render cache (cached.py; None: `--no-cache`) and a git checkout's blob ids
    render_cache: RenderCache | None = field(default=None, compare=False)
    blob_index: Mapping[str, str] | None = field(default=None, compare=False)
    # cluster -> API versions of the CRDs harness recognises as preinstalled (capabilities.py)
    preinstalled: Mapping[str, frozenset[str]] = field(default_factory=dict, compare=False)
    partial: bool = False  # a shard: not every cluster is here, so globs are not judged


@dataclass(frozen=True)
class Stage:
    """The helm targets by name, and warnings about the run (a glob matching nothing)."""

    results: dict[str, TargetResult]
    warnings: tuple[str, ...] = ()


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
) -> Stage:
    if not clusters:
        return Stage({})
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
        kube_version=config.helm_kube_version,
        kube_versions=config.helm_kube_versions,
        api_versions=config.helm_api_versions,
        preinstalled=options.preinstalled,
    )
    matched: set[str] = set()

    def keep(name: str) -> bool:
        if config.helm_targets:
            hits = {g for g in config.helm_targets if glob_matches(name, g)}
            if not hits:
                return False
            matched.update(hits)
        if not discover.selected(name, config):
            return False
        return not selection or discover.matches(name, selection)

    with tempfile.TemporaryDirectory(prefix=scratch.prefix("artifact")) as unpack:
        ctx.unpack_dir = Path(unpack)
        out = render_helm(clusters, ctx, jobs=jobs, taken=taken, keep=keep)
    if on_plan is not None:
        on_plan(len(out))
    if on_done is not None:
        for result in out.values():
            on_done(result)
    warnings: tuple[str, ...] = ()
    if not options.partial:
        names = {c.cluster for c in clusters}
        warnings = unmatched(config.helm_targets, matched) + unknown_clusters(config, names)
    return Stage(out, warnings)


def unknown_clusters(config: Config, clusters: set[str]) -> tuple[str, ...]:
    """A `helm.kube_version` key naming no cluster would be silently unused: a typo'd
    cluster then renders with the default version, so say so."""
    return tuple(
        f"config helm.kube_version: {name!r} names no cluster "
        f"(clusters: {', '.join(sorted(clusters)) or 'none'})"
        for name in sorted(config.helm_kube_versions)
        if name not in clusters
    )


def glob_matches(name: str, glob: str) -> bool:
    """A `helm:` glob selects a target by its name with or without the `@helm` suffix."""
    bare = name.removesuffix(HELM_SUFFIX)
    return discover.matches(name, (glob,)) or discover.matches(bare, (glob,))


def unmatched(globs: Sequence[str], matched: set[str]) -> tuple[str, ...]:
    return tuple(
        f"config helm: {glob!r} matches no helm target (names are <cluster>/<namespace>/<name>, "
        f"with {HELM_SUFFIX} when a Flux Kustomization has the same name)"
        for glob in globs
        if glob not in matched
    )
