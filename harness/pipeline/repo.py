"""Repo -> Snapshot: discover every target, render them all, never stop at the first failure."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cache.store import RenderCache, Store
from harness.cache.store import key as cache_key
from harness.core import limits, parallel, redaction, safefile
from harness.core.config import Config, default_jobs
from harness.core.errors import HarnessError
from harness.core.filefacts import FileFacts
from harness.core.model import Snapshot, Target, TargetResult
from harness.core.run import Run, current
from harness.flux.api import ObjectRef
from harness.pipeline import refsnap, worktree
from harness.render import discover
from harness.render import seam as incremental
from harness.render.kustomize import Renderer

if TYPE_CHECKING:
    from harness.flux.helm.stage import Stage
    from harness.pipeline.shard import Plan, Sharder

OnDone = Callable[[TargetResult], None]
OnPlan = Callable[[int], None]
PreinstalledApis = Callable[[Snapshot], Mapping[str, frozenset[str]]]


@dataclass(frozen=True)
class RenderOptions:
    jobs: int = 0
    strict: bool = True
    flux: bool = True
    selection: tuple[str, ...] = ()
    helm: bool = False
    helm_binary: str | None = None
    offline: bool = False
    # the render cache (None: `--no-cache`, everything renders) and, for a git checkout,
    # the blob ids of its files (absolute path -> id) so digests need not read them
    cache: RenderCache | None = field(default=None, compare=False)
    blob_index: Mapping[str, str] | None = field(default=None, compare=False)
    shard: Sharder | None = None  # --shard K/N: render only this shard's units (shard.py)
    # what the CRDs harness recognises as preinstalled serve, per cluster, read from the
    # path and flux targets' render (the CLI hands in hazards/preinstalled.py's scan, a floor
    # this one cannot import): part of every chart's `.Capabilities`
    preinstalled_apis: PreinstalledApis | None = field(default=None, compare=False)
    # what a resident process (`harness watch`) keeps between renders of the same tree
    resident: incremental.Resident | None = field(default=None, compare=False)
    # the run this render belongs to (its memos, interrupt flag and file facts: core/run.py);
    # None: the caller's current run, or outside any, a run of the render's own
    run: Run | None = field(default=None, compare=False)
    # the dependency index of the working tree (pipeline/worktree.py): a render of the
    # working tree with a cache keeps one and re-derives only what changed since
    index: worktree.Keeper | None = field(default=None, compare=False)


def path_targets(config: Config, selection: Sequence[str] = ()) -> list[Target]:
    return _selected(discover.path_targets(config), selection)


def _selected(targets: list[Target], selection: Sequence[str]) -> list[Target]:
    if selection:
        return [t for t in targets if discover.matches(t.name, tuple(selection))]
    return targets


def _paths_only(every: Sequence[Target], selection: Sequence[str]) -> bool:
    """Whether the selection names path targets alone, each exactly (`render platform/cilium`):
    then no Flux Kustomization and no HelmRelease is rendered for it. A glob, or a name no
    path target has, may name a flux or helm target, which only the whole fixed point finds."""
    if not selection:
        return False
    names = {t.name for t in every}
    return all(s in names and not any(c in s for c in "*?[") for s in selection)


def render_repo(
    config: Config,
    renderer: Renderer,
    options: RenderOptions,
    *,
    label: str = "",
    on_plan: OnPlan | None = None,
    on_done: OnDone | None = None,
) -> Snapshot:
    """Render path targets and (when present) every Flux Kustomization of every cluster.

    The two overlap: path targets are queued first and render in the background while
    the Flux fixed point, a chain of rounds that each wait for the last, runs in front;
    the renderer keeps to `jobs` kustomize processes in all (render.Slots) and runs a
    build both want once. Results are the same as rendering one after the other.
    """
    run = options.run or current() or Run()
    # the tree listed once for all its walks (discovery's, the stat's, the ignore files')
    listed = run.files.listed_once(str(config.repo))
    with run.entered(), discover.one_listing(), listed:
        limits.apply(config.limits)
        facts = _file_facts(config, options.cache, run.files)  # what the scan below asks
        # decided from the tree before any build: what a Kustomization's substitute masks
        with redaction.substituted(discover.secret_variables(config)):
            return _render_repo(config, renderer, options, run, label, on_plan, on_done, facts)


def _render_repo(
    config: Config,
    renderer: Renderer,
    options: RenderOptions,
    run: Run,
    label: str,
    on_plan: OnPlan | None,
    on_done: OnDone | None,
    facts: _Facts | None,
) -> Snapshot:
    jobs = options.jobs or default_jobs(config)
    seam = incremental.Seam.for_run(
        renderer, options.cache, options.blob_index, resident=options.resident
    )
    indexed = _indexed(config, options, seam, label)  # the tree's stat, before any read
    if isinstance(indexed, Snapshot):
        # the run's scrub learns what every build's files hold, as on every run
        assert options.index is not None and options.index.memory is not None
        worktree.teach(options.index.memory)
        if facts is not None:
            facts.save()
        return indexed
    every = discover.path_targets(config)  # one walk of the repo serves all three uses
    targets = _selected(every, options.selection)
    if _paths_only(every, options.selection):
        options = replace(options, flux=False, helm=False)
    plan = options.shard.plan(config, every) if options.shard else None
    if plan is not None:
        targets = [t for t in targets if plan.owns(t)]
    if on_plan is not None:
        on_plan(len(targets))
    _start_version_check(renderer)  # after the seam: a version the cache knows is not asked
    with renderer.limited(jobs), parallel.pool(jobs) as pool:

        def one(target: Target) -> TargetResult:
            with renderer.background():
                result = incremental.path_result(seam, target, config.repo)
            if on_done is not None:
                on_done(result)
            return result

        renderer.expect(t.path for t in targets)
        if seam.cache is not None and not renderer.version_known() and seam.cache.empty():
            # a fresh cache: the probes below would wait for `kubectl version` (every key
            # holds it) before the first build starts; the first builds start now
            for t in targets[:jobs]:
                pool.submit(incremental.prestart, seam, t, config.repo)
        inline: list[TargetResult] = []
        pending = []
        for t in targets:  # cache hits inline, in one pass; only builds go to the pool
            hit = incremental.probe_path(seam, t, config.repo) if seam.cache else None
            if hit is None:
                pending.append(pool.submit(one, t))
                continue
            inline.append(hit)
            if on_done is not None:
                on_done(hit)
        skipped: dict[str, str] = {}
        notices: list[str] = []
        clusters: list[Any] = []
        flux_results: dict[str, TargetResult] | None = None
        if options.flux and (plan is None or plan.owns_flux()):
            # imported here: a render the dependency index answers whole needs no Flux code
            from harness.flux.targets import render_flux

            def collect(
                cluster: str, bootstrap: ObjectRef, owners: Any, root: Path, charts: Any
            ) -> None:
                clusters.append((cluster, bootstrap, owners, root, charts))

            flux_results = render_flux(
                config,
                renderer,
                jobs=jobs,
                strict=options.strict,
                on_plan=on_plan,
                on_done=on_done,
                on_skip=skipped.__setitem__,
                on_cluster=collect if options.helm else None,
                seam=seam,
                keep=_cluster_filter(plan, config),
                on_notice=notices.append,
            )
        results = {r.name: r for r in [*inline, *(f.result() for f in pending)]}
    warnings: tuple[str, ...] = ()
    if flux_results is not None:
        for name, result in flux_results.items():
            selected = not options.selection or discover.matches(name, options.selection)
            if selected and (plan is None or plan.owns(result.target)):
                results[name] = result
        if options.helm:
            taken = {t.name for t in every} | set(flux_results)
            preinstalled: Mapping[str, frozenset[str]] = {}
            if options.preinstalled_apis is not None and clusters:
                # what the scan reads: every path and flux target, selected or not
                seen = {**results, **flux_results}
                partial = Snapshot(renderer=renderer.info(), results=dict(sorted(seen.items())))
                preinstalled = options.preinstalled_apis(partial)
            helm = _helm(
                config, renderer, options, clusters, jobs, taken, preinstalled, on_plan, on_done
            )
            results.update(helm.results)
            warnings = helm.warnings
    if options.selection:
        skipped = {n: r for n, r in skipped.items() if discover.matches(n, options.selection)}
    if facts is not None:
        facts.save()
    snapshot = Snapshot(
        renderer=renderer.info(),
        results=dict(sorted(results.items())),
        label=label,
        skipped=dict(sorted(skipped.items())),
        # files refused by a scan (a device, a FIFO, over the cap): said, never silent
        warnings=tuple(dict.fromkeys([*notices, *warnings, *safefile.refusals(config.repo)])),
    )
    if indexed is not None:
        indexed.remember(seam, snapshot)
    return snapshot


@dataclass
class _Indexed:
    """A render kept in the dependency index (pipeline/worktree.py)."""

    keeper: worktree.Keeper
    cache: RenderCache
    digest: str
    stamps: dict[str, worktree.Stamp | None]
    repo: Path
    remote_before: int
    previous: worktree.Index | None

    def remember(self, seam: incremental.Seam, snapshot: Snapshot) -> None:
        if seam.reads is None or self.cache.uncacheable != self.remote_before:
            self.keeper.memory = None  # a remote input: not a function of the tree
            return
        self.keeper.memory = worktree.remember(
            self.cache, self.digest, self.stamps, snapshot, seam.reads, self.repo, self.previous
        )


def _indexed(
    config: Config, options: RenderOptions, seam: incremental.Seam, label: str
) -> _Indexed | Snapshot | None:
    """With a dependency index: the remembered render when the tree is as it saw it, else
    what the render reuses (set on `seam`) and where it is kept after; None without one."""
    keeper, cache = options.index, options.cache
    if keeper is None or cache is None or cache.store is None or seam.cache is None:
        return None
    if options.selection or options.shard is not None or options.helm or not options.flux:
        return None
    if options.blob_index is not None or not refsnap.config_in_tree(config):
        return None
    keeper.used = "full"
    try:
        identity = seam.identity()
    except HarnessError:
        return None  # the render reports the renderer's failure
    digest = worktree.key(config, identity, f"strict={options.strict}")
    stamps = worktree.walk(config.repo)
    index = keeper.memory
    if index is None:
        index = worktree.load(cache, digest, config.repo, label)
    if index is not None:
        ok = all(r.ok for r in index.snapshot.results.values())
        if ok and worktree.unchanged(index, stamps):
            keeper.used = "none-changed"
            keeper.memory = index
            return replace(index.snapshot, label=label)
        seam.reuse = worktree.reuse_of(index, stamps, config.repo)
        if seam.reuse is not None:
            keeper.used = "incremental"
    seam.reads = incremental.Reads()
    return _Indexed(keeper, cache, digest, stamps, config.repo, cache.uncacheable, index)


class _Facts:
    """The run's file facts (the process's: core/filefacts.py) for one repo, kept in the
    cache directory between runs (a `meta/` entry, like the renderer's version): a run over
    an unchanged tree reads no file whose stat is what an earlier run saw."""

    def __init__(self, store: Store, root: str, files: FileFacts) -> None:
        self.store = store
        self.root = root
        self.files = files
        self.digest = cache_key("file-facts-v2", root)  # v2: columns (filefacts.export)

    def load(self) -> None:
        if self.root in self.files.loaded:  # read once per process (per FileFacts)
            return
        self.files.loaded.add(self.root)
        payload = self.store.get_meta(self.digest)
        if payload is not None:
            self.files.load(payload.get("columns"))

    def save(self) -> None:
        if self.files.changed:
            self.files.changed = False
            # built when written: after the answer, while `harness watch` holds writes
            self.store.later(self.digest, self._write)

    def _write(self) -> None:
        self.store.put_meta(self.digest, {"columns": self.files.export(self.root)})


def _file_facts(config: Config, cache: RenderCache | None, files: FileFacts) -> _Facts | None:
    return _facts_of(config.repo, cache, files)


def _facts_of(repo: Path, cache: RenderCache | None, files: FileFacts) -> _Facts | None:
    if cache is None or cache.store is None:
        return None
    facts = _Facts(cache.store, os.path.join(os.path.realpath(repo), ""), files)
    facts.load()
    return facts


def keep_file_facts(repo: Path, cache: RenderCache | None, files: FileFacts) -> None:
    """Keep what a stage after the render learnt about `repo`'s files (the hazards'
    preinstalled scan asks every file whether it names Talos manifests): the render saved
    its facts before that stage ran, and a fresh process would read every file again."""
    facts = _facts_of(repo, cache, files)
    if facts is not None:
        facts.save()


def _start_version_check(renderer: Renderer) -> None:
    """`kubectl version` is a process of its own (~60 ms): start it beside the first builds
    instead of after the last one (the snapshot names it; a cache key needs it first, and
    then waits for this same check). Not a render, so it does not count against `jobs`."""

    def check() -> None:
        with contextlib.suppress(Exception):  # the error reaches whoever asks info() next
            renderer.info()

    parallel.thread(check, name="renderer-version", daemon=True).start()


def _helm(
    config: Config,
    renderer: Renderer,
    options: RenderOptions,
    clusters: list[Any],
    jobs: int,
    taken: set[str],
    preinstalled: Mapping[str, frozenset[str]],
    on_plan: OnPlan | None,
    on_done: OnDone | None,
) -> Stage:
    """HelmReleases of every cluster as `helm` targets (harness/flux/helm/stage.py)."""
    from harness.flux.helm import stage
    from harness.flux.helm.targets import ClusterObjects

    return stage.render(
        config,
        renderer,
        [ClusterObjects(c, b, o, r, a) for c, b, o, r, a in clusters],
        stage.HelmOptions(
            binary=options.helm_binary,
            offline=options.offline,
            render_cache=options.cache,
            blob_index=options.blob_index,
            preinstalled=preinstalled,
            partial=options.shard is not None,
        ),
        jobs=jobs,
        taken=taken,
        selection=options.selection,
        on_plan=on_plan,
        on_done=on_done,
    )


def _cluster_filter(plan: Plan | None, config: Config) -> Callable[[Path], bool] | None:
    """The configured clusters a shard builds (None: all of them)."""
    if plan is None or not plan.explicit_clusters:
        return None
    return lambda directory: plan.owns_cluster_dir(directory, config.repo)
