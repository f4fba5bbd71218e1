"""Every Flux Kustomization of every cluster as a target, discovered to a fixed point.

Per cluster: render the entry directory; find (or synthesize, as `flux bootstrap --path`
would) the root Kustomization; then in rounds, build every known Kustomization whose
inputs are ready, and add the Kustomizations, sources, ConfigMaps and Secrets its output
holds. A Kustomization is known by namespace/name, so each is built once and a cycle
(A renders B renders A) ends as an error on the one that re-renders its ancestor, never a
loop. Builds of one round run in parallel across all clusters.

Target names are `<cluster>/<namespace>/<name>` (cluster naming: see clusters.py).
`spec.path` resolves against the source's root: the repo root for the root Kustomization's
source (the bootstrap GitRepository), a `sources:` config entry for any other; an unmapped
source fails only that target. A Kustomization waiting for a `substituteFrom` object that a
still-unbuilt sibling may render is deferred until nothing else can run. Every build sees
its source's artifact, not the whole tree: the source's ignore rules (source/ignore.py),
with the `spec.ignore` of the source object when this cluster renders it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness import discover
from harness.cache import parsed
from harness.cache.seam import Seam
from harness.core import documents, parallel
from harness.core.config import Config
from harness.core.model import Target, TargetResult
from harness.flux import clusters as clusters_mod
from harness.flux.api import (
    FluxKustomization,
    ObjectRef,
    is_flux_kustomization,
    is_source,
    object_ref,
    parse_kustomization,
    secure_join,
)
from harness.flux.includes import Includes
from harness.flux.kustomize import generator
from harness.flux.kustomize.build import (
    BuildError,
    Built,
    Context,
    MissingObject,
    UndeclaredKey,
    substitute_refs,
)
from harness.flux.kustomize.cached import ElidedSecret, build_flux, probe_flux
from harness.flux.source import outside
from harness.flux.source.ignore import Rules
from harness.flux.spec import SpecError
from harness.render import Renderer

# (cluster name, its bootstrap source, (flux target name, rendered objects) per built
# Kustomization): what helm targets need of a cluster (harness/helm/targets.py)
ClusterHook = Callable[[str, ObjectRef, tuple[tuple[str, tuple[dict[str, Any], ...]], ...]], None]

BOOTSTRAP_NAME = "flux-system"
BOOTSTRAP_SOURCE = ObjectRef("GitRepository", BOOTSTRAP_NAME, BOOTSTRAP_NAME)
Key = tuple[str, str]


@dataclass
class _Node:
    """One Flux Kustomization of a cluster while the fixed point runs (internal state)."""

    key: Key
    ks: FluxKustomization | None
    parent: Key | None
    error: str | None = None
    directory: Path | None = None
    built: Built | None = None
    notes: list[str] = field(default_factory=list)
    done: bool = False
    gap: outside.Gap | None = None  # cluster "" until the cluster's name is known
    skipped: str | None = None  # built from an external source: not a target


@dataclass
class _Run:
    """The fixed point of one cluster entry directory."""

    path: Path
    explicit: bool
    root: Key | None = None
    bootstrap: ObjectRef = BOOTSTRAP_SOURCE
    has_flux: bool = False
    entry_error: str | None = None
    nodes: dict[Key, _Node] = field(default_factory=dict)
    objects: dict[ObjectRef, dict[str, Any]] = field(default_factory=dict)
    sources: dict[ObjectRef, dict[str, Any]] = field(default_factory=dict)
    # sources the entry render holds: known before any build, so the root build has them
    entry_sources: dict[ObjectRef, dict[str, Any]] = field(default_factory=dict)
    # harness.yaml `outside_git` declarations for this cluster
    declared: outside.Resolved = field(default_factory=outside.Resolved)
    # each build's objects for the helm stage (_collect_owned), when it runs
    owned: list[tuple[Key, tuple[dict[str, Any], ...]]] = field(default_factory=list)

    def lookup(self, ref: ObjectRef) -> Mapping[str, Any] | outside.DeclaredObject | None:
        """A rendered object wins over a declaration of the same object."""
        found = self.objects.get(ref)
        if isinstance(found, ElidedSecret):  # a cache hit stored it without its values
            return found.materialize()
        return found or self.declared.objects.get(ref)

    def ancestors(self, key: Key) -> list[Key]:
        chain: list[Key] = []
        node = self.nodes.get(key)
        while node is not None and node.parent is not None and node.parent not in chain:
            chain.append(node.parent)
            node = self.nodes.get(node.parent)
        return chain


def render_flux(
    config: Config,
    renderer: Renderer,
    *,
    jobs: int,
    strict: bool,
    on_plan: Callable[[int], None] | None = None,
    on_done: Callable[[TargetResult], None] | None = None,
    on_skip: Callable[[str, str], None] | None = None,
    gaps: list[outside.Gap] | None = None,
    on_cluster: ClusterHook | None = None,
    seam: Seam | None = None,
    keep: Callable[[Path], bool] | None = None,
) -> dict[str, TargetResult]:
    """All flux targets of the repo; an empty dict when it has no cluster.

    Progress callbacks fire once the set of clusters is final (a candidate directory may
    turn out to be built by another cluster and is then not reported). Targets built from
    a source harness.yaml marks external are not targets: `on_skip(name, reason)` hears of
    each. `gaps` collects what is neither in git nor declared (for `harness init`).
    `keep` limits the configured clusters that are built (a shard's); names still come
    from all of them.
    """
    incl = Includes()
    explicit = bool(config.clusters)
    dirs = clusters_mod.configured(config) if explicit else clusters_mod.candidates(config, incl)
    if not dirs:
        return {}
    all_dirs = dirs
    if explicit and keep is not None:
        dirs = [d for d in dirs if keep(d)]
    with generator.workspace(config.repo) as ws, parallel.pool(jobs) as pool:
        seam = seam or Seam.for_run(renderer, None)  # confinement always, cache when given
        ctx = Context(renderer, ws, incl, config.repo, strict, seam=seam)
        runs = [
            _Run(
                path=d,
                explicit=explicit,
                declared=outside.resolve(config.outside_git, _aliases(d, config.repo)),
            )
            for d in dirs
        ]
        list(pool.map(lambda run: _start(run, ctx), runs))
        runs = [r for r in runs if r.explicit or r.has_flux or r.entry_error]
        _fixed_point(runs, config, ctx, pool)
        if on_cluster is not None:
            for run in runs:
                _collect_owned(run)
    for run in runs:
        _check_references(run)
    if not explicit:
        runs = _drop_reached(runs, incl)
    named = clusters_mod.names(all_dirs if explicit else [r.path for r in runs], config.repo)
    by_path = {c.path: c.name for c in named}
    if config.outside_git and _config_of_this_tree(config):
        known = [c.name for c in named] + [a for r in runs for a in _aliases(r.path, config.repo)]
        outside.check_clusters(config.outside_git, known, str(config.source_file or "config"))
    results: dict[str, TargetResult] = {}

    def skip(name: str, reason: str) -> None:
        if on_skip is not None and discover.selected(name, config):
            on_skip(name, reason)

    for run in runs:
        for result in _results(run, by_path[run.path], ctx, skip, gaps, config.outside_git):
            results[result.name] = result
        if on_cluster is not None:
            on_cluster(by_path[run.path], run.bootstrap, _owned(run, by_path[run.path]))
    # config include/exclude select flux targets by name too (the fixed point needs them all)
    results = {n: r for n, r in sorted(results.items()) if discover.selected(n, config)}
    if on_plan is not None:
        on_plan(len(results))
    if on_done is not None:
        for result in results.values():
            on_done(result)
    return results


# -- entry and root ------------------------------------------------------------------------


def _synthetic_root(path: Path, repo: Path) -> FluxKustomization:
    rel = path.relative_to(repo).as_posix() if path != repo else ""
    return FluxKustomization(
        name=BOOTSTRAP_NAME,
        namespace=BOOTSTRAP_NAME,
        path=f"./{rel}" if rel else "./",
        source=BOOTSTRAP_SOURCE,
        prune=True,
    )


def _start(run: _Run, ctx: Context) -> None:
    """Render the entry directory and pick the root Kustomization (or synthesize it)."""
    synthetic = _synthetic_root(run.path, ctx.repo)
    rules = ctx.ignores.rules(ctx.repo, BOOTSTRAP_SOURCE.kind)
    try:
        entry = build_flux(synthetic, run.path, ctx, lambda _ref: None, rules, ctx.repo)
    except BuildError as exc:
        run.entry_error = str(exc)
        entry = None
    root: FluxKustomization | None = None
    if entry is not None:
        for obj in entry.raw:
            if is_source(obj):
                run.entry_sources.setdefault(object_ref(obj, "default"), obj)
            if not is_flux_kustomization(obj):
                continue
            run.has_flux = True
            try:
                ks = parse_kustomization(obj)
            except SpecError:
                continue
            if ks.source.kind != "GitRepository":
                continue
            if secure_join(ctx.repo, ks.path) == run.path and (
                root is None or (ks.name == BOOTSTRAP_NAME and root.name != BOOTSTRAP_NAME)
            ):
                root = ks
    node = _Node(key=(synthetic.namespace, synthetic.name), ks=synthetic, parent=None)
    if root is not None:
        run.bootstrap = root.source
        node = _Node(key=root.key, ks=root, parent=None)
    else:
        rel = ctx.show(run.path)
        node.notes.append(
            f"root Kustomization {synthetic.ref} synthesized (none in {rel} points at it), "
            f"as `flux bootstrap --path={rel}` creates it"
        )
        run.sources[BOOTSTRAP_SOURCE] = {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": BOOTSTRAP_NAME, "namespace": BOOTSTRAP_NAME},
        }
    run.root = node.key
    run.nodes[node.key] = node


# -- the fixed point -----------------------------------------------------------------------


def _fixed_point(
    runs: Sequence[_Run], config: Config, ctx: Context, pool: ThreadPoolExecutor
) -> None:
    """Build in rounds until no Kustomization is left; deferred ones go last."""
    while True:
        batch: list[tuple[_Run, _Node]] = []
        deferred: list[tuple[_Run, _Node]] = []
        for run in runs:
            for node in run.nodes.values():
                if node.done:
                    continue
                if node.ks is not None and any(
                    run.objects.get(r) is None for r in substitute_refs(node.ks)
                ):
                    deferred.append((run, node))
                else:
                    batch.append((run, node))
        if not batch:
            if not deferred:
                return
            batch = deferred  # nothing else can render what they wait for
        for (run, node), outcome in zip(batch, _round(batch, config, ctx, pool), strict=True):
            _integrate(run, node, outcome, ctx)


def _round(
    batch: list[tuple[_Run, _Node]], config: Config, ctx: Context, pool: ThreadPoolExecutor
) -> list[_Outcome]:
    """One round's outcomes, in order: what the render cache answers is taken inline, in
    one pass; only the builds that must run go to the pool (no future per cached build)."""
    outcomes: list[_Outcome | None] = [None] * len(batch)
    if ctx.seam is not None and ctx.seam.cache is not None:
        outcomes = [_build_node(run, node, config, ctx, probe=True) for run, node in batch]
    todo = [i for i, found in enumerate(outcomes) if found is None]
    built = pool.map(lambda i: _build_node(batch[i][0], batch[i][1], config, ctx), todo)
    for i, outcome in zip(todo, built, strict=True):
        outcomes[i] = outcome
    return [o for o in outcomes if o is not None]


@dataclass(frozen=True)
class _Outcome:
    directory: Path | None
    built: Built | None
    error: str | None
    gap: outside.Gap | None = None
    skipped: str | None = None


class _External(Exception):
    """The Kustomization's source is marked external in harness.yaml: skip, not fail."""


class _Unmapped(BuildError):
    def __init__(self, ref: ObjectRef) -> None:
        super().__init__(f"unmapped source {ref}")
        self.ref = ref


def _build_node(
    run: _Run, node: _Node, config: Config, ctx: Context, probe: bool = False
) -> _Outcome | None:
    """Build one Kustomization; with `probe`, only from the cache (None: it must run)."""
    if node.ks is None:
        return _Outcome(None, None, node.error or "invalid Kustomization")
    try:
        root, directory = _resolve_path(run, node.ks, config, ctx)
    except _External as exc:
        return _Outcome(None, None, None, skipped=str(exc))
    except _Unmapped as exc:
        return _Outcome(None, None, str(exc), gap=outside.Gap("", "source", exc.ref))
    except BuildError as exc:
        return _Outcome(None, None, str(exc))
    rules = _ignore_rules(run, node.ks.source, root, ctx)
    try:
        if probe:
            found = probe_flux(node.ks, directory, ctx, run.lookup, rules, root)
            return None if found is None else _Outcome(directory, found, None)
        built = build_flux(node.ks, directory, ctx, run.lookup, rules, root)
        return _Outcome(directory, built, None)
    except MissingObject as exc:
        gap = outside.Gap("", "object", exc.ref, exc.variables)
        return _Outcome(directory, None, str(exc), gap=gap)
    except UndeclaredKey as exc:
        gap = outside.Gap("", "key", exc.ref, exc.variables, str(exc))
        return _Outcome(directory, None, str(exc), gap=gap)
    except BuildError as exc:
        return _Outcome(directory, None, str(exc))


def _ignore_rules(run: _Run, source: ObjectRef, root: Path, ctx: Context) -> Rules:
    """The source's ignore rules, with its `spec.ignore` when this cluster renders the object.

    The entry render's objects come first: they are known before the root is built. A
    source object rendered only by a Kustomization built later is not seen in time.
    """
    obj = run.entry_sources.get(source) or run.sources.get(source)
    spec = obj.get("spec") if obj is not None else None
    ignore = spec.get("ignore") if isinstance(spec, dict) else None
    return ctx.ignores.rules(
        root,
        source.kind,
        ignore if isinstance(ignore, str) else None,
        f"spec.ignore of {source}",
    )


def _resolve_path(
    run: _Run, ks: FluxKustomization, config: Config, ctx: Context
) -> tuple[Path, Path]:
    """The source root and the directory `spec.path` names under it."""
    root = _source_root(run, ks.source, config)
    if "${" in ks.path:
        raise BuildError(
            f"spec.path {ks.path!r} holds a variable that no parent Kustomization substitutes"
        )
    directory = secure_join(root, ks.path)
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise BuildError(
            f"spec.path {ks.path or './'!r} of {ks.source} {what}: {ctx.show(directory)}"
        )
    return root, directory


def _source_root(run: _Run, source: ObjectRef, config: Config) -> Path:
    """The bootstrap source is the repo; others come from harness.yaml (source/outside.py)."""
    where = outside.source_root(run.declared, source, run.bootstrap, config.sources)
    if where.kind == "unmapped":
        raise _Unmapped(source)
    if where.kind == "external":
        raise _External(f"source {source} is external (harness.yaml outside_git)")
    return Path(os.path.normpath(config.repo / (where.directory or ".")))


def _config_of_this_tree(config: Config) -> bool:
    """False when the config is applied to another checkout (`diff --base`): a cluster the
    config declares may not exist at that ref, which is no typo."""
    return config.source_file is None or config.source_file.resolve().is_relative_to(config.repo)


def _aliases(path: Path, repo: Path) -> tuple[str, ...]:
    return outside.aliases(path, repo)


def _integrate(run: _Run, node: _Node, outcome: _Outcome, ctx: Context) -> None:
    """Record a build and add what it rendered to the cluster's known objects."""
    node.done = True
    node.directory = outcome.directory
    node.gap = outcome.gap
    node.skipped = outcome.skipped
    if outcome.error is not None:
        node.error = outcome.error
        return
    if outcome.skipped is not None:
        return
    built = outcome.built
    assert built is not None
    node.built = built
    node.notes.extend(built.notes)
    for obj in built.raw:
        if is_flux_kustomization(obj):
            _add_child(run, node, obj)
        elif is_source(obj):
            run.sources.setdefault(object_ref(obj, "default"), obj)
        elif obj.get("apiVersion") == "v1" and obj.get("kind") in ("ConfigMap", "Secret"):
            run.objects.setdefault(object_ref(obj, "default"), obj)


def _add_child(run: _Run, node: _Node, obj: dict[str, Any]) -> None:
    ref = object_ref(obj, "default")
    key: Key = (ref.namespace, ref.name)
    if key == node.key:
        return  # a Kustomization that renders itself (the bootstrap root does)
    chain = run.ancestors(node.key)
    if key in chain:
        path = " -> ".join(f"{ns}/{name}" for ns, name in [*reversed(chain), node.key, key])
        node.error = f"cycle: {node.key[0]}/{node.key[1]} renders its ancestor {ref} ({path})"
        return
    known = run.nodes.get(key)
    if known is not None:
        first = f"{known.parent[0]}/{known.parent[1]}" if known.parent else "the cluster entry"
        node.notes.append(f"Kustomization {ref} is also rendered by {first}; that one is used")
        return
    try:
        ks: FluxKustomization | None = parse_kustomization(obj)
        error = None
    except SpecError as exc:
        ks, error = None, f"invalid Kustomization: {exc}"
    run.nodes[key] = _Node(key=key, ks=ks, parent=node.key, error=error)


def _check_references(run: _Run) -> None:
    """dependsOn must name a Kustomization of this cluster; sources should be declared."""
    for node in run.nodes.values():
        if node.ks is None:
            continue
        if node.ks.suspend:
            node.notes.append("spec.suspend: true: Flux does not apply it until resumed")
        if node.ks.source not in run.sources and node.ks.source != run.bootstrap:
            node.notes.append(
                f"source {node.ks.source} is not declared by any object this cluster renders"
            )
        if node.error is not None:
            continue
        missing = [dep for dep in node.ks.depends_on if dep not in run.nodes]
        if missing:
            names = ", ".join(f"{ns}/{name}" for ns, name in missing)
            node.error = f"dependsOn {names}: no such Kustomization in this cluster"


def _drop_reached(runs: Sequence[_Run], incl: Includes) -> list[_Run]:
    """Candidates another cluster builds through a Kustomization path are not clusters."""
    reaches: dict[Path, set[Path]] = {}
    for run in runs:
        dirs = [
            n.directory for n in run.nodes.values() if n.directory is not None and n.key != run.root
        ]
        reaches[run.path] = incl.closure(dirs)
    kept = set(clusters_mod.keep([r.path for r in runs], reaches))
    return [r for r in runs if r.path in kept]


# -- results -------------------------------------------------------------------------------


def _owned(run: _Run, cluster: str) -> tuple[tuple[str, tuple[dict[str, Any], ...]], ...]:
    return tuple((f"{cluster}/{key[0]}/{key[1]}", objs) for key, objs in run.owned)


def _collect_owned(run: _Run) -> None:
    """Each build's objects for the helm stage, taken while the workspace lives: a Secret a
    HelmRelease's `valuesFrom` reads that a cache hit holds redacted is rebuilt (once,
    uncached) for its values; other Secrets stay as they are."""
    owned = [(n.key, _objects(n.built)) for n in run.nodes.values() if n.built is not None]
    wanted = _values_secrets(o for _, objs in owned for o in objs)
    run.owned = [(key, tuple(_real(o, wanted) for o in objs)) for key, objs in owned]


def _objects(built: Built) -> tuple[dict[str, Any], ...]:
    """A build's objects; a render-cache hit keeps only its (Secret-redacted) documents, so
    they are read back from those, a plaintext Secret as the `ElidedSecret` it was stored as."""
    if built.objects or built.documents is None:
        return built.objects
    elided = {s.ref: s for s in built.raw if isinstance(s, ElidedSecret)}
    loaded = [o for o in (parsed.fresh(d.text) for d in built.documents) if isinstance(o, dict)]
    if not elided:
        return tuple(loaded)
    return tuple(
        elided.get(object_ref(o, "default"), o) if o.get("kind") == "Secret" else o for o in loaded
    )


def _values_secrets(objs: Iterable[Mapping[str, Any]]) -> set[ObjectRef]:
    """Secrets a HelmRelease's `valuesFrom` reads: the helm stage needs their values."""
    wanted: set[ObjectRef] = set()
    for obj in objs:
        if obj.get("kind") != "HelmRelease" or not isinstance(obj.get("spec"), dict):
            continue
        namespace = object_ref(obj, "default").namespace
        for ref in obj["spec"].get("valuesFrom") or []:
            if isinstance(ref, dict) and ref.get("kind") == "Secret":
                wanted.add(ObjectRef("Secret", namespace, str(ref.get("name"))))
    return wanted


def _real(obj: dict[str, Any], wanted: set[ObjectRef]) -> dict[str, Any]:
    if not isinstance(obj, ElidedSecret) or obj.ref not in wanted:
        return obj
    try:
        return obj.materialize() or obj
    except BuildError:  # it built a moment ago; if not now, the release fails on its values
        return obj


def _results(
    run: _Run,
    cluster: str,
    ctx: Context,
    on_skip: Callable[[str, str], None] | None = None,
    gaps: list[outside.Gap] | None = None,
    declared: Mapping[str, outside.ClusterDecl] | None = None,
) -> list[TargetResult]:
    out = []
    for node in run.nodes.values():
        name = f"{cluster}/{node.key[0]}/{node.key[1]}"
        if node.skipped is not None:
            if on_skip is not None:
                on_skip(name, node.skipped)
            continue
        target = Target(name=name, kind="flux", path=node.directory or run.path, cluster=cluster)
        error = node.error
        if node.gap is not None and error is not None:
            gap = replace(node.gap, cluster=cluster)
            error = gap.message(declared)
            if gaps is not None:
                gaps.append(gap)
        if error is None and node.key == run.root and run.entry_error and node.built is None:
            error = run.entry_error
        if error is not None or node.built is None:
            out.append(TargetResult(target, error=error or "not built", notes=tuple(node.notes)))
            continue
        docs = node.built.documents
        if docs is None:
            docs = tuple(documents.document_from_object(o) for o in node.built.objects)
        result = TargetResult(
            target,
            documents=docs,
            duplicates=documents.duplicates(docs),
            notes=tuple(node.notes),
        )
        out.append(replace(result, sha256=documents.sha256_text(result.text())))
    return out
