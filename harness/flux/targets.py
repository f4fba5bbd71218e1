"""Every Flux Kustomization (and flux-operator ResourceSet) of every cluster as a target,
discovered to a fixed point.

Per cluster: render the entry directory; find (or synthesize, as `flux bootstrap --path`
would) the root Kustomization; then in rounds, build every known Kustomization whose
inputs are ready, and add the Kustomizations, sources, ConfigMaps and Secrets its output
holds. A Kustomization is known by namespace/name, so each is built once and a cycle
(A renders B renders A) ends as an error on the one that re-renders its ancestor, never a
loop. Builds of one round run in parallel across all clusters.

Which directories are clusters, and where a FluxInstance puts a cluster's root, is
clusters.py's and operator.py's business; a FluxInstance's root Kustomization (with its
`spec.kustomize.patches` applied by kustomize, as the operator applies them) is the run's
first node. A ResourceSet a build renders is a node too (`<namespace>/<name>@resourceset`),
expanded by resourceset.py once no Kustomization is left to build; what it emits joins the
fixed point like any build's output.

Target names are `<cluster>/<namespace>/<name>` (cluster naming: see clusters.py).
`spec.path` resolves against the source's root: the bootstrap source's root (the repo, or
the directory an OCI artifact is pushed from) for the root Kustomization's source, an
ArtifactGenerator's artifact tree for an ExternalArtifact (source/artifacts.py), a
`sources:` config entry for any other; an unmapped source fails only that target. A
Kustomization waiting for a `substituteFrom` object, or for the ArtifactGenerator of its
ExternalArtifact, that a still-unbuilt sibling may render is deferred until nothing else
can run. Every build sees its source's artifact, not the whole tree: the source's ignore
rules (source/ignore.py), with the `spec.ignore` of the source object when this cluster
renders it; an ExternalArtifact is a tree of its own, built under the run's workspace.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.core import documents, outside, parallel, parsed, yamlload
from harness.core.config import Config
from harness.core.model import Target, TargetResult
from harness.flux import clusters as clusters_mod
from harness.flux import operator, resourceset
from harness.flux.api import (
    SOURCE_KINDS,
    FluxKustomization,
    ObjectRef,
    api_group,
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
from harness.flux.kustomize.cached import (
    ElidedSecret,
    build_flux,
    is_remembered,
    probe_flux,
    remembered,
)
from harness.flux.source import artifacts
from harness.flux.source.artifacts import EXTERNAL_ARTIFACT, GeneratorError
from harness.flux.source.ignore import Rules
from harness.flux.spec import SpecError
from harness.render import discover
from harness.render.closure import EscapeError, Walker
from harness.render.kustomize import Renderer
from harness.render.seam import Outcome, Seam, Trace

# (cluster name, its bootstrap source, (flux target name, rendered objects) per built
# Kustomization, the bootstrap source's root directory): what helm targets need of a
# cluster (harness/flux/helm/targets.py)
# (cluster, bootstrap source, each build's objects, bootstrap root, the ExternalArtifacts
# its HelmReleases install by `chartRef`: their files, or why they cannot be built)
ClusterHook = Callable[
    [
        str,
        ObjectRef,
        tuple[tuple[str, tuple[dict[str, Any], ...]], ...],
        Path,
        Mapping[ObjectRef, "artifacts.Files | str"],
    ],
    None,
]

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
    # the repo directory the target stands for: `directory`, or for a build from an
    # ExternalArtifact tree the directory it was copied from
    shown: Path | None = None
    # a flux-operator ResourceSet (resourceset.py) instead of a Kustomization: its object
    rset: dict[str, Any] | None = None
    # the repo directory of the Kustomization that renders it (a ResourceSet's target path)
    home: Path | None = None
    reads: tuple[str, ...] = ()  # repo files read through an ExternalArtifact tree


@dataclass
class _Run:
    """The fixed point of one cluster entry directory."""

    path: Path
    kept: bool  # a cluster whatever it renders (configured, or with bootstrap evidence)
    entry: clusters_mod.Entry | None = None
    root: Key | None = None
    bootstrap: ObjectRef = BOOTSTRAP_SOURCE
    bootstrap_root: Path | None = None  # the bootstrap source's directory (None: the repo)
    has_flux: bool = False
    templated: bool = False  # its Kustomizations all have `${...}` in their names
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
    # ExternalArtifacts HelmReleases install (`chartRef`): their files, or why not built
    charts: dict[ObjectRef, artifacts.Files | str] = field(default_factory=dict)
    # ArtifactGenerators this cluster renders, and the source trees their inputs are
    generators: dict[ObjectRef, dict[str, Any]] = field(default_factory=dict)
    trees: dict[tuple[str, Rules | None], artifacts.Tree] = field(default_factory=dict)
    # flux-operator ResourceSetInputProviders this cluster renders (ResourceSets' inputs)
    providers: dict[ObjectRef, dict[str, Any]] = field(default_factory=dict)

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
    on_notice: Callable[[str], None] | None = None,
) -> dict[str, TargetResult]:
    """All flux targets of the repo; an empty dict when it has no cluster.

    Progress callbacks fire once the set of clusters is final (a candidate directory may
    turn out to be built by another cluster and is then not reported). Targets built from
    a source harness.yaml marks external are not targets: `on_skip(name, reason)` hears of
    each. `gaps` collects what is neither in git nor declared (for `harness init`).
    `keep` limits the configured clusters that are built (a shard's); names still come
    from all of them. `on_notice` hears, once, how clusters were found when that is a
    guess or a declared root could not be used.
    """
    incl = Includes()
    explicit = bool(config.clusters)
    detection = clusters_mod.detect(config, incl)
    if explicit:
        entries = [
            _configured_entry(d, detection, config.repo) for d in clusters_mod.configured(config)
        ]
    else:
        entries = list(detection.entries)
    if not entries:
        _notify(on_notice, detection.problems)
        return {}
    all_dirs = [e.path for e in entries]
    if explicit and keep is not None:
        entries = [e for e in entries if keep(e.path)]
    with generator.workspace(config.repo) as ws, parallel.pool(jobs) as pool:
        seam = seam or Seam.for_run(renderer, None)  # confinement always, cache when given
        store_dir = ws.root / "artifacts"
        store_dir.mkdir()
        store = artifacts.Store(store_dir)
        ctx = Context(renderer, ws, incl, config.repo, strict, seam=seam, artifacts=store)
        runs = [
            _Run(
                path=e.path,
                kept=explicit or not detection.guessed,
                entry=e,
                bootstrap_root=e.source_root,
                declared=outside.resolve(config.outside_git, _aliases(e.path, config.repo)),
            )
            for e in entries
        ]
        list(pool.map(lambda run: _start(run, ctx), runs))
        runs = [r for r in runs if r.kept or ((r.has_flux or r.entry_error) and not r.templated)]
        _fixed_point(runs, config, ctx, pool, _Trace.of(seam, runs, detection))
        if on_cluster is not None:
            for run in runs:
                _collect_owned(run)
                run.charts = _chart_artifacts(run, config, ctx)
    for run in runs:
        _check_references(run)
        _check_rset_references(run)
    runs = _drop_reached(runs, incl)
    named = clusters_mod.names(all_dirs if explicit else [r.path for r in runs], config.repo)
    by_path = {c.path: c.name for c in named}
    _notify(on_notice, _detection_notices(detection, runs, config.repo, explicit))
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
            on_cluster(
                by_path[run.path],
                run.bootstrap,
                _owned(run, by_path[run.path]),
                run.bootstrap_root or config.repo,
                run.charts,
            )
    # config include/exclude select flux targets by name too (the fixed point needs them all)
    results = {n: r for n, r in sorted(results.items()) if discover.selected(n, config)}
    if on_plan is not None:
        on_plan(len(results))
    if on_done is not None:
        for result in results.values():
            on_done(result)
    return results


def _configured_entry(
    path: Path, detection: clusters_mod.Detection, repo: Path
) -> clusters_mod.Entry:
    """A `clusters:` directory, with the FluxInstance sync that roots it when there is one."""
    found = detection.entry(path)
    if found is not None and not detection.guessed:
        return replace(found, droppable=False)
    return clusters_mod.Entry(path, "harness.yaml clusters:", None, repo)


def _notify(on_notice: Callable[[str], None] | None, lines: Sequence[str]) -> None:
    if on_notice is not None:
        for line in lines:
            on_notice(line)


def _detection_notices(
    detection: clusters_mod.Detection, runs: Sequence[_Run], repo: Path, explicit: bool
) -> list[str]:
    """What the user should know about how clusters were found, once per run."""
    out = list(detection.problems)
    if explicit or not detection.guessed or not runs:
        return out
    rels = [operator.relative(r.path, repo) for r in runs]
    out.append(
        f"no bootstrap evidence (a flux-system/gotk-sync.yaml, a FluxInstance spec.sync, or "
        f"a Flux Kustomization that builds its own directory): {len(rels)} cluster(s) "
        f"guessed from directories holding Flux Kustomizations; pin the real one(s) in "
        f"harness.yaml: {clusters_mod.pin_line(rels)}"
    )
    return out


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
    if run.entry is not None and run.entry.sync is not None:
        _start_from_sync(run, run.entry.sync, ctx)
        return
    synthetic = _synthetic_root(run.path, ctx.repo)
    source_root = run.bootstrap_root or ctx.repo
    rules = ctx.ignores.rules(source_root, BOOTSTRAP_SOURCE.kind)
    try:
        entry = build_flux(synthetic, run.path, ctx, lambda _ref: None, rules, source_root)
    except BuildError as exc:
        run.entry_error = str(exc)
        entry = None
    root: FluxKustomization | None = None
    root_dir: Path | None = None
    names: list[str] = []
    if entry is not None:
        for obj in entry.raw:
            if is_source(obj):
                run.entry_sources.setdefault(object_ref(obj, "default"), obj)
            if not is_flux_kustomization(obj):
                continue
            run.has_flux = True
            ref = object_ref(obj, "default")
            names.append(f"{ref.namespace}/{ref.name}")
            try:
                ks = parse_kustomization(documents.redact(obj) or obj)  # as _add_child
            except SpecError:
                continue
            found = _root_of(ks, run.path, ctx.repo)
            if found is not None and (
                root is None or (ks.name == BOOTSTRAP_NAME and root.name != BOOTSTRAP_NAME)
            ):
                root, root_dir = ks, found
    run.templated = bool(names) and all("${" in n for n in names)
    node = _Node(key=(synthetic.namespace, synthetic.name), ks=synthetic, parent=None)
    if root is not None:
        run.bootstrap = root.source
        run.bootstrap_root = root_dir
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


def _root_of(ks: FluxKustomization, directory: Path, repo: Path) -> Path | None:
    """The source root under which `ks` builds `directory` (it is then the cluster's root
    Kustomization), or None. A git source is the whole repo; an OCI artifact or a bucket
    may hold any directory of it, the one `spec.path` is relative to."""
    if ks.source.kind not in SOURCE_KINDS or "${" in ks.path:
        return None
    if ks.source.kind == "GitRepository":
        return repo if secure_join(repo, ks.path) == directory else None
    parts = [p for p in ks.path.replace("\\", "/").split("/") if p not in ("", ".")]
    root = directory
    for part in reversed(parts):
        if part == ".." or root.name != part:
            return None
        root = root.parent
    return root if root == repo or root.is_relative_to(repo) else None


def _start_from_sync(run: _Run, sync: operator.Sync, ctx: Context) -> None:
    """The root flux-operator creates for a FluxInstance's `spec.sync`, patched by its
    `spec.kustomize.patches` (kustomize applies them, as the operator does)."""
    objs = operator.objects(sync)
    note = (
        f"root Kustomization {sync.namespace}/{sync.name} from the {sync.shape} in "
        f"{ctx.show(sync.file)} (spec.sync), as flux-operator creates it"
    )
    patches = operator.relevant_patches(sync)
    if patches:
        try:
            objs = _patched(objs, patches, ctx)
            note += f", with its {len(patches)} spec.kustomize.patches that apply to it"
        except BuildError as exc:
            run.entry_error = (
                f"spec.kustomize.patches of the {sync.shape} in {ctx.show(sync.file)}: {exc}"
            )
    kustomization = next((o for o in objs if is_flux_kustomization(o)), objs[-1])
    try:
        root = parse_kustomization(kustomization, sync.namespace)
    except SpecError as exc:
        root = parse_kustomization(operator.objects(sync)[1], sync.namespace)
        run.entry_error = f"the {sync.shape} in {ctx.show(sync.file)}: {exc}"
    for obj in objs:
        if is_source(obj):
            run.entry_sources[object_ref(obj, sync.namespace)] = obj
            run.sources[object_ref(obj, sync.namespace)] = obj
    run.bootstrap = root.source
    run.has_flux = True
    node = _Node(key=root.key, ks=root, parent=None, notes=[note])
    run.root = node.key
    run.nodes[node.key] = node


def _patched(
    objs: list[dict[str, Any]], patches: list[dict[str, Any]], ctx: Context
) -> list[dict[str, Any]]:
    """The sync objects with the patches applied by a real kustomize build."""
    body = "".join("---\n" + yamlload.dump(o) for o in objs)
    kfile = operator.kustomization_file(patches)
    digest = hashlib.sha256(f"{body}\0{kfile}".encode()).hexdigest()[:20]
    directory = ctx.workspace.root / f"fluxinstance-{digest}"
    if not directory.is_dir():
        tmp = Path(tempfile.mkdtemp(dir=ctx.workspace.root))
        (tmp / "sync.yaml").write_text(body, encoding="utf-8")
        (tmp / "kustomization.yaml").write_text(kfile, encoding="utf-8")
        with contextlib.suppress(OSError):
            tmp.rename(directory)
    output = ctx.renderer.build(directory)
    if output.error is not None or output.stdout is None:
        message = (output.error or "kustomize produced no output").replace(f"{directory}/", "")
        raise BuildError(message)
    try:
        loaded = yamlload.load_all(output.stdout)
    except yamlload.YAMLError as exc:
        raise BuildError(f"kustomize output is not YAML: {exc}") from None
    return [o for o in loaded if isinstance(o, dict)]


# -- the fixed point -----------------------------------------------------------------------


class _Trace:
    """The fixed point's trace (seam.Trace): the previous render's, and this render's,
    recorded as it runs (kept in the dependency index, pipeline/worktree.py).

    While `clean`, every input the fixed point has taken is what the previous render took:
    its start (the clusters found, their entry renders and roots) digests the same, and every
    Kustomization outcome so far was the same, or a build that gave the very objects the
    fixed point reads back (cached.py `kept_part`). A Kustomization's own inputs (its object,
    variables, source root, ignore rules) all derive from those, so a Kustomization built
    from the repo whose files are unchanged is answered by the build it had then
    (`remembered`), with no prekey taken. The first outcome that differs ends it: every
    later one is derived as without a trace. Within a round, no build reads another's
    output, so outcomes of the round that ends it are still sound."""

    def __init__(self, before: Trace | None, now: Trace | None, clean: bool, seam: Seam) -> None:
        self.before = before
        self.now = now
        self.clean = clean
        self.seam = seam

    @classmethod
    def of(cls, seam: Seam, runs: Sequence[_Run], detection: clusters_mod.Detection) -> _Trace:
        start = _start_digest(runs, detection)
        now = None
        if seam.reads is not None:
            now = Trace(start)
            with seam.reads.lock:
                seam.reads.trace = now
        before = seam.reuse.trace if seam.reuse is not None else None
        # ignore rules are not among a build's read files: a changed ignore file is a full
        # render (worktree.reuse_of), so the rules are what the start digested with the rest
        return cls(before, now, before is not None and before.start == start, seam)

    def answer(self, run: _Run, node: _Node) -> _Outcome | None:
        """The node's outcome from the previous render, while the trace holds."""
        was = self._built(run, node)
        if was is None:
            return None
        built = remembered(self.seam, was[1])
        if built is None:
            return None
        return _Outcome(Path(was[2]), built, None)

    def expects(self, run: _Run, node: _Node) -> bool:
        """Whether `answer` will likely give the node's outcome: the checks it makes before
        decoding the remembered build, none of its work. A round answers these after
        starting the builds the others need."""
        was = self._built(run, node)
        return was is not None and is_remembered(self.seam, was[1])

    def _built(self, run: _Run, node: _Node) -> Outcome | None:
        """The node's outcome in the previous render when it was a build and the trace
        still holds."""
        if not self.clean or self.before is None or node.rset is not None or node.ks is None:
            return None
        was = self.before.nodes.get(_node_id(run, node))
        return was if was is not None and was[0] == "b" else None

    def note(self, run: _Run, node: _Node, outcome: _Outcome, answered: bool) -> None:
        """Record `outcome`, and end the trace when it is not the previous render's."""
        ident = _node_id(run, node)
        now = _outcome_of(node, outcome)
        if self.now is not None:
            self.now.nodes[ident] = now
        if answered or not self.clean:
            return
        was = self.before.nodes.get(ident) if self.before is not None else None
        if was == now:
            return
        if was is not None and was[0] == now[0] == "b" and was[2] == now[2]:
            reuse = self.seam.reuse
            before = reuse.builds.get(was[1]) if reuse is not None else None
            built = outcome.built
            # a rebuilt Kustomization that gave the same objects to read back
            if before is not None and built is not None and before[1] == built.kept:
                return
        self.clean = False


def _node_id(run: _Run, node: _Node) -> str:
    return f"{run.path}\0{node.key[0]}\0{node.key[1]}"


def _outcome_of(node: _Node, outcome: _Outcome) -> Outcome:
    """A node's outcome as the trace keeps it (seam.Outcome)."""
    built = outcome.built
    if (
        built is not None
        and built.key is not None
        and outcome.directory is not None
        and outcome.error is None
        and outcome.skipped is None
        and outcome.shown is None
        and not outcome.reads
        and node.rset is None
    ):
        return ("b", built.key, str(outcome.directory))
    if node.rset is not None or built is not None:
        # a ResourceSet's expansion reads other builds' documents, and a build with no key
        # is not remembered: neither is ever the same outcome
        return ("x", "", "")
    what = (outcome.error, outcome.skipped, str(outcome.directory), outcome.gap, outcome.shown)
    return ("o", hashlib.sha256(repr(what).encode("utf-8", "surrogateescape")).hexdigest(), "")


def _start_digest(runs: Sequence[_Run], detection: clusters_mod.Detection) -> str:
    """What the fixed point's start took from outside its Kustomizations' builds."""
    parts: list[Any] = [detection.entries, detection.guessed, detection.problems]
    for run in runs:
        root = run.nodes.get(run.root) if run.root is not None else None
        parts.append(
            (
                str(run.path),
                run.kept,
                run.root,
                run.bootstrap,
                str(run.bootstrap_root),
                run.has_flux,
                run.templated,
                run.entry_error,
                run.entry_sources,
                run.sources,
                root.ks if root is not None else None,
                root.notes if root is not None else None,
            )
        )
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _fixed_point(
    runs: Sequence[_Run], config: Config, ctx: Context, pool: ThreadPoolExecutor, trace: _Trace
) -> None:
    """Build in rounds until no Kustomization is left; ResourceSets once no Kustomization
    can build (a ResourceSet reading providers after those that may emit providers), and
    deferred Kustomizations last. Outcomes the trace still holds are its (`_Trace`)."""
    while True:
        batch: list[tuple[_Run, _Node]] = []
        deferred: list[tuple[_Run, _Node]] = []
        rsets: list[tuple[_Run, _Node]] = []
        for run in runs:
            for node in run.nodes.values():
                if node.done:
                    continue
                if node.rset is not None:
                    rsets.append((run, node))
                elif node.ks is not None and (
                    any(run.objects.get(r) is None for r in substitute_refs(node.ks))
                    or _awaits_generator(run, node.ks.source, config)
                ):
                    deferred.append((run, node))
                else:
                    batch.append((run, node))
        if not batch and rsets:
            batch = _ready_rsets(rsets)
        if not batch:
            if not deferred:
                return
            batch = deferred  # nothing else can render what they wait for
        outcomes, answered = _round(batch, config, ctx, pool, trace)
        for i, ((run, node), outcome) in enumerate(zip(batch, outcomes, strict=True)):
            _integrate(run, node, outcome, ctx)
            trace.note(run, node, outcome, i in answered)


def _ready_rsets(rsets: list[tuple[_Run, _Node]]) -> list[tuple[_Run, _Node]]:
    """ResourceSets to expand now: those that read no providers first (what they emit,
    providers and the Kustomizations that may render providers, is built before the rest
    run); then those that may emit providers themselves; then all."""
    readers = [
        (r, n) for r, n in rsets if n.rset is not None and resourceset.wants_providers(n.rset)
    ]
    first = [(r, n) for r, n in rsets if (r, n) not in readers]
    if first:
        return first
    emitters = [(r, n) for r, n in readers if resourceset.PROVIDER_KIND in repr(_spec_of(n))]
    return emitters or readers


def _spec_of(node: _Node) -> Any:
    return node.rset.get("spec") if node.rset is not None else None


def _round(
    batch: list[tuple[_Run, _Node]],
    config: Config,
    ctx: Context,
    pool: ThreadPoolExecutor,
    trace: _Trace,
) -> tuple[list[_Outcome], set[int]]:
    """One round's outcomes, in order, and which of them the trace answered: what the trace
    or the render cache answers is taken inline, in one pass; only the builds that must run
    go to the pool (no future per cached build), each as soon as its probe misses, so it
    runs while the rest of the round is probed (those the trace will answer come last)."""
    outcomes: list[_Outcome | None] = [None] * len(batch)
    cached = ctx.seam is not None and ctx.seam.cache is not None
    building: list[tuple[int, Future[_Outcome | None]]] = []
    answered: set[int] = set()
    order = list(range(len(batch)))
    if cached:
        # what the trace answers last: the builds the rest need start first, so the one
        # Kustomization a save changed builds while its ~250 siblings are answered
        expected = [trace.expects(run, node) for run, node in batch]
        order.sort(key=expected.__getitem__)
    for i in order:
        run, node = batch[i]
        found = trace.answer(run, node) if cached else None
        if found is not None:
            answered.add(i)
        elif cached:
            found = _build_node(run, node, config, ctx, probe=True)
        if found is None:
            building.append((i, pool.submit(_build_node, run, node, config, ctx)))
        else:
            outcomes[i] = found
    try:
        for i, future in building:
            outcomes[i] = future.result()
    finally:  # a build that failed (or Ctrl-C) leaves the rest unstarted, as pool.map does
        for _, future in building:
            future.cancel()
    return [o for o in outcomes if o is not None], answered


@dataclass(frozen=True)
class _Outcome:
    directory: Path | None
    built: Built | None
    error: str | None
    gap: outside.Gap | None = None
    skipped: str | None = None
    shown: Path | None = None  # the repo directory an ExternalArtifact directory came from
    reads: tuple[str, ...] = ()  # repo files a build from an artifact read (coverage)


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
    if node.rset is not None:
        return None if probe else _expand_rset(run, node)
    if node.ks is None:
        return _Outcome(None, None, node.error or "invalid Kustomization")
    try:
        root, directory, artifact = _resolve_path(run, node.ks, config, ctx)
    except _External as exc:
        return _Outcome(None, None, None, skipped=str(exc))
    except _Unmapped as exc:
        return _Outcome(None, None, str(exc), gap=outside.Gap("", "source", exc.ref))
    except BuildError as exc:
        return _Outcome(None, None, str(exc))
    shown = None
    if artifact is not None:
        # the published artifact is what Flux builds: no ignore rules left to apply
        rules: Rules | None = None
        shown = artifact.origin_dir(directory.relative_to(artifact.root).as_posix())
    else:
        rules = _ignore_rules(run, node.ks.source, root, ctx)
    try:
        if probe:
            found = probe_flux(node.ks, directory, ctx, run.lookup, rules, root)
            if found is None:
                return None
            return _Outcome(
                directory, found, None, shown=shown, reads=_reads(node.ks, directory, artifact, ctx)
            )
        built = build_flux(node.ks, directory, ctx, run.lookup, rules, root)
        return _Outcome(
            directory, built, None, shown=shown, reads=_reads(node.ks, directory, artifact, ctx)
        )
    except MissingObject as exc:
        gap = outside.Gap("", "object", exc.ref, exc.variables)
        return _Outcome(directory, None, str(exc), gap=gap, shown=shown)
    except UndeclaredKey as exc:
        gap = outside.Gap("", "key", exc.ref, exc.variables, str(exc))
        return _Outcome(directory, None, str(exc), gap=gap, shown=shown)
    except BuildError as exc:
        return _Outcome(directory, None, str(exc), shown=shown)


def _expand_rset(run: _Run, node: _Node) -> _Outcome:
    """A ResourceSet's objects, as flux-operator applies them (resourceset.py)."""
    assert node.rset is not None
    namespace = node.key[0]
    providers = [o for ref, o in sorted(run.providers.items()) if ref.namespace == namespace]
    try:
        expansion = resourceset.expand(node.rset, providers, lambda ref: _rendered(run, ref))
    except resourceset.NotJudged as exc:
        return _Outcome(node.home, None, None, skipped=f"not judged: {exc}")
    except resourceset.ResourceSetError as exc:
        return _Outcome(node.home, None, f"ResourceSet {namespace}/{_rset_name(node)}: {exc}")
    notes = (
        f"ResourceSet expanded as flux-operator does: {expansion.inputs} input set(s), "
        f"{len(expansion.objects)} object(s)",
        *expansion.notes,
    )
    objs = tuple(expansion.objects)
    built = Built(objects=objs, raw=objs, notes=notes)
    return _Outcome(node.home, built, None)


def _rendered(run: _Run, ref: ObjectRef) -> Mapping[str, Any] | None:
    """A ConfigMap or Secret this cluster renders (a copyFrom source), values included."""
    found = run.objects.get(ref)
    if isinstance(found, ElidedSecret):
        return found.materialize()
    return found


def _rset_name(node: _Node) -> str:
    return node.key[1].removesuffix(resourceset.TARGET_SUFFIX)


def _reads(
    ks: FluxKustomization, directory: Path, artifact: artifacts.Artifact | None, ctx: Context
) -> tuple[str, ...]:
    """The repo files a build from an artifact tree read: its closure inside the tree (with
    the kustomization Flux generates), each file mapped back to what it was copied from.
    Empty for a build from the repo itself, or when the walk cannot be made."""
    if artifact is None:
        return ()
    try:
        plan = generator.plan(ks, directory, ctx.workspace, None, mirror=False, check=False)
        generated = (plan.file_name, plan.content) if plan.generated else None
        closure = Walker().closure(directory, artifact.root, generated=generated)
    except (generator.GeneratorError, EscapeError, OSError):
        return ()
    found = (artifact.origin(rel) for rel in closure.files())
    return tuple(sorted({str(p) for p in found if p is not None}))


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
) -> tuple[Path, Path, artifacts.Artifact | None]:
    """The source root, the directory `spec.path` names under it, and the ExternalArtifact
    tree it is in (None for other sources)."""
    root, artifact = _source_root(run, ks.source, config, ctx)
    if "${" in ks.path:
        raise BuildError(
            f"spec.path {ks.path!r} holds a variable that no parent Kustomization substitutes"
        )
    directory = secure_join(root, ks.path)
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        where = ctx.show(directory)
        if artifact is not None:
            where = f"{artifact.ref}:{directory.relative_to(root).as_posix()}"
        raise BuildError(f"spec.path {ks.path or './'!r} of {ks.source} {what}: {where}")
    return root, directory, artifact


def _source_root(
    run: _Run, source: ObjectRef, config: Config, ctx: Context
) -> tuple[Path, artifacts.Artifact | None]:
    """The bootstrap source is its root directory (the repo, unless an OCI artifact is
    pushed from a directory of it); harness.yaml maps others (core/outside.py); an
    ExternalArtifact nobody maps is built from the ArtifactGenerator that declares it."""
    where = outside.source_root(run.declared, source, run.bootstrap, config.sources)
    if where.kind == "repo":
        return run.bootstrap_root or config.repo, None
    if where.kind == "external":
        raise _External(f"source {source} is external (harness.yaml outside_git)")
    if where.kind == "mapped":
        return Path(os.path.normpath(config.repo / (where.directory or "."))), None
    if source.kind == EXTERNAL_ARTIFACT:
        artifact = _artifact(run, source, config, ctx, ())
        return artifact.root, artifact
    raise _Unmapped(source)


# -- ExternalArtifacts ---------------------------------------------------------------------


def _awaits_generator(run: _Run, source: ObjectRef, config: Config) -> bool:
    """An ExternalArtifact no harness.yaml entry maps and no rendered generator names yet."""
    if source.kind != EXTERNAL_ARTIFACT or _may_produce(run, source):
        return False
    where = outside.source_root(run.declared, source, run.bootstrap, config.sources)
    return where.kind == "unmapped"


def _may_produce(run: _Run, ref: ObjectRef) -> bool:
    """Whether a rendered ArtifactGenerator may publish `ref` (read from the raw spec)."""
    for gen_ref, obj in run.generators.items():
        if gen_ref.namespace != ref.namespace:
            continue
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            continue
        if spec.get("pathPattern"):
            return True
        outputs = spec.get("artifacts")
        if isinstance(outputs, list) and any(
            isinstance(a, dict) and a.get("name") == ref.name for a in outputs
        ):
            return True
    return False


def _artifact(
    run: _Run, ref: ObjectRef, config: Config, ctx: Context, chain: tuple[ObjectRef, ...]
) -> artifacts.Artifact:
    """The tree of ExternalArtifact `ref`, built from the one generator that declares it."""
    if ref in chain:
        raise BuildError(f"{ref} is built from itself ({' -> '.join(map(str, (*chain, ref)))})")
    producers: list[tuple[artifacts.Generator, tuple[artifacts.Output, ...], int, Any]] = []
    for gen_ref in sorted(run.generators):
        if gen_ref.namespace != ref.namespace:
            continue
        obj = run.generators[gen_ref]
        try:
            gen = artifacts.parse(obj, gen_ref.namespace)
        except GeneratorError as exc:
            if _may_produce(run, ref) and _names(obj, ref.name):
                raise BuildError(f"{gen_ref}: {exc}") from None
            continue
        if gen.path_pattern:
            trees = _trees(run, gen, config, ctx, (*chain, ref))
            try:
                outputs = artifacts.expand(gen, trees)
            except GeneratorError as exc:
                raise BuildError(f"{gen.ref}: {exc}") from None
        else:
            if not any(o.name == ref.name for o in gen.outputs):
                continue
            outputs, trees = gen.outputs, None
        index = next((i for i, o in enumerate(outputs) if o.name == ref.name), None)
        if index is not None:
            producers.append((gen, outputs, index, trees))
    if not producers:
        raise _Unmapped(ref)
    if len(producers) > 1:
        names = " and ".join(str(p[0].ref) for p in producers)
        raise BuildError(f"{ref} is declared by {names}: each overwrites what the other publishes")
    gen, outputs, index, trees = producers[0]
    if trees is None:
        trees = _trees(run, gen, config, ctx, (*chain, ref))
    store = ctx.artifacts
    assert store is not None
    try:
        built = store.build(gen, outputs, index, trees)
    except GeneratorError as exc:
        raise BuildError(str(exc)) from None
    ctx.workspace.add_anchor(built.root)
    return built


def _names(obj: Mapping[str, Any], name: str) -> bool:
    spec = obj.get("spec")
    outputs = spec.get("artifacts") if isinstance(spec, dict) else None
    return isinstance(outputs, list) and any(
        isinstance(a, dict) and a.get("name") == name for a in outputs
    )


def _trees(
    run: _Run,
    gen: artifacts.Generator,
    config: Config,
    ctx: Context,
    chain: tuple[ObjectRef, ...],
) -> dict[str, artifacts.Tree]:
    """Each input of the generator as the artifact its source publishes."""
    out: dict[str, artifacts.Tree] = {}
    for item in gen.inputs:
        ref = item.ref
        where = outside.source_root(run.declared, ref, run.bootstrap, config.sources)
        if where.kind == "external":
            raise _External(f"source {ref} of {gen.ref} is external (harness.yaml outside_git)")
        if where.kind == "unmapped":
            if ref.kind == EXTERNAL_ARTIFACT:
                out[item.alias] = _tree(run, _artifact(run, ref, config, ctx, chain).root, None)
                continue
            if ref.kind == "HelmChart":
                raise BuildError(
                    f"{gen.ref}: source {ref} is a packaged chart, which harness does not "
                    "build; map it to a directory in harness.yaml (sources:) or mark it external"
                )
            raise _Unmapped(ref)
        if where.kind == "repo":
            root = run.bootstrap_root or config.repo
        else:
            root = Path(os.path.normpath(config.repo / (where.directory or ".")))
        out[item.alias] = _tree(run, root, _ignore_rules(run, ref, root, ctx))
    return out


def _tree(run: _Run, root: Path, rules: Rules | None) -> artifacts.Tree:
    key = (str(root), rules)
    found = run.trees.get(key)
    if found is None:
        found = run.trees.setdefault(key, artifacts.Tree(root, rules))
    return found


def _config_of_this_tree(config: Config) -> bool:
    """False when the config is applied to another checkout (`diff --base`): a cluster the
    config declares may not exist at that ref, which is no typo."""
    return config.source_file is None or config.source_file.resolve().is_relative_to(config.repo)


def _aliases(path: Path, repo: Path) -> tuple[str, ...]:
    """Names harness.yaml may call the cluster: its basename and path, and the name it is
    given when the basename is generic (`kube/clusters/home/flux` is `home` too)."""
    names = outside.aliases(path, repo)
    meaningful = clusters_mod.meaningful_name(path, repo)
    return names if meaningful in names else (meaningful, *names)


def _integrate(run: _Run, node: _Node, outcome: _Outcome, ctx: Context) -> None:
    """Record a build and add what it rendered to the cluster's known objects."""
    node.done = True
    node.directory = outcome.directory
    node.shown = outcome.shown
    node.reads = outcome.reads
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
        elif resourceset.is_resourceset(obj):
            _add_rset(run, node, obj, outcome.shown or outcome.directory or node.home)
        elif resourceset.is_provider(obj):
            run.providers.setdefault(object_ref(obj, "default"), obj)
        elif is_source(obj):
            run.sources.setdefault(object_ref(obj, "default"), obj)
        elif artifacts.is_generator(obj):
            run.generators.setdefault(object_ref(obj, "default"), obj)
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
    # built as a cache hit holds it (cached.py `_payload`): a value its patches or its
    # substitute put into a Secret is a marker, so the build is the same cold or warm
    obj = documents.redact(obj) or obj
    try:
        ks: FluxKustomization | None = parse_kustomization(obj)
        error = None
    except SpecError as exc:
        ks, error = None, f"invalid Kustomization: {exc}"
    run.nodes[key] = _Node(key=key, ks=ks, parent=node.key, error=error)


def _add_rset(run: _Run, node: _Node, obj: dict[str, Any], home: Path | None) -> None:
    """A ResourceSet a build renders becomes a node of its own (its target)."""
    ref = object_ref(obj, "default")
    key: Key = (ref.namespace, ref.name + resourceset.TARGET_SUFFIX)
    if key in run.nodes:
        node.notes.append(f"ResourceSet {ref} is rendered twice; the first one is used")
        return
    if key in run.ancestors(node.key):
        node.error = f"cycle: {node.key[0]}/{node.key[1]} renders its ancestor ResourceSet {ref}"
        return
    run.nodes[key] = _Node(key=key, ks=None, parent=node.key, rset=obj, home=home)


def _check_rset_references(run: _Run) -> None:
    """A ResourceSet's dependsOn on a Kustomization or ResourceSet this cluster lacks: the
    operator holds it (`DependencyNotReady`) until the object exists."""
    for node in run.nodes.values():
        if node.rset is None or node.error is not None:
            continue
        missing = []
        for kind, namespace, name in resourceset.depends_on(node.rset):
            if kind == "Kustomization":
                key: Key = (namespace, name)
            elif kind == resourceset.RSET_KIND:
                key = (namespace, name + resourceset.TARGET_SUFFIX)
            else:
                continue
            if key not in run.nodes:
                missing.append(f"{kind} {namespace}/{name}")
        if missing:
            node.notes.append(
                f"blocked: dependsOn {', '.join(missing)}, which does not exist in this "
                "cluster; flux-operator holds it and applies nothing until it does"
            )


def _check_references(run: _Run) -> None:
    """Notes on what Flux would hold back: a suspended Kustomization, an undeclared source,
    a dependsOn naming no Kustomization of this cluster (a blocked dependency; the
    depends-on rule reports it as a finding)."""
    for node in run.nodes.values():
        if node.ks is None:
            continue
        if node.ks.suspend:
            node.notes.append("spec.suspend: true: Flux does not apply it until resumed")
        produced = node.ks.source.kind == EXTERNAL_ARTIFACT and _may_produce(run, node.ks.source)
        if node.ks.source not in run.sources and node.ks.source != run.bootstrap and not produced:
            node.notes.append(
                f"source {node.ks.source} is not declared by any object this cluster renders"
            )
        if node.error is not None:
            continue
        missing = [dep for dep in node.ks.depends_on if dep not in run.nodes]
        if missing:  # Flux holds it, it does not fail: render what it applies once unblocked
            names = ", ".join(f"{ns}/{name}" for ns, name in missing)
            node.notes.append(
                f"blocked: dependsOn {names}, which does not exist in this cluster; Flux holds "
                "it not ready ('dependency not found') and applies nothing until it does"
            )


def _drop_reached(runs: Sequence[_Run], incl: Includes) -> list[_Run]:
    """A guessed (or self-rooted) cluster that another cluster builds through a
    Kustomization path is not a cluster; one with bootstrap evidence always is (when every
    cluster has it, as most repos', no include closure is walked)."""
    if not any(_droppable(r) for r in runs):
        return list(runs)
    reaches: dict[Path, set[Path]] = {}
    for run in runs:
        dirs = [
            n.shown or n.directory
            for n in run.nodes.values()
            if (n.shown or n.directory) is not None and n.key != run.root
        ]
        reaches[run.path] = incl.closure(d for d in dirs if d is not None)
    kept = set(clusters_mod.keep([r.path for r in runs], reaches))
    return [r for r in runs if r.path in kept or not _droppable(r)]


def _droppable(run: _Run) -> bool:
    return run.entry is None or run.entry.droppable


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


def _chart_artifacts(
    run: _Run, config: Config, ctx: Context
) -> dict[ObjectRef, artifacts.Files | str]:
    """The ExternalArtifacts the cluster's HelmReleases name in `spec.chartRef`, built as
    Kustomizations get them (a mapped directory, else the ArtifactGenerator declaring it),
    read while the workspace lives; a failure is kept as its one line."""
    out: dict[ObjectRef, artifacts.Files | str] = {}
    for _key, objs in run.owned:
        for obj in objs:
            ref = _chart_ref(obj)
            if ref is None or ref in out:
                continue
            try:
                root, _artifact_of = _source_root(run, ref, config, ctx)
                out[ref] = artifacts.files_of(ref, root)
            except _Unmapped as exc:
                out[ref] = (
                    f"{ref}: no ArtifactGenerator of this cluster declares it"
                    if exc.ref == ref
                    else f"{ref}: {exc} (map it in harness.yaml `sources:`)"
                )
            except (_External, BuildError) as exc:
                out[ref] = str(exc)
    return out


def _chart_ref(obj: Mapping[str, Any]) -> ObjectRef | None:
    """A HelmRelease's `spec.chartRef` when it names an ExternalArtifact."""
    if obj.get("kind") != "HelmRelease" or api_group(obj) != "helm.toolkit.fluxcd.io":
        return None
    spec = obj.get("spec")
    ref = spec.get("chartRef") if isinstance(spec, dict) else None
    if not isinstance(ref, dict) or ref.get("kind") != EXTERNAL_ARTIFACT:
        return None
    meta = obj.get("metadata") or {}
    namespace = ref.get("namespace") or meta.get("namespace") or "default"
    return ObjectRef(EXTERNAL_ARTIFACT, str(namespace), str(ref.get("name") or ""))


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
        path = node.shown or node.directory or run.path
        if node.shown is None and ctx.artifacts is not None and ctx.artifacts.owner(path):
            path = run.path  # an artifact directory no single repo directory stands for
        target = Target(name=name, kind="flux", path=path, cluster=cluster)
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
            docs = documents.from_objects(node.built.objects)
        reads = ctx.seam.reads if ctx.seam is not None else None
        if reads is not None and node.built.key is not None:
            reads.name(node.built.key, name)  # the dependency index finds its documents here
        result = TargetResult(
            target,
            documents=docs,
            duplicates=documents.duplicates(docs),
            notes=tuple(node.notes),
            reads=node.reads,
        )
        out.append(replace(result, sha256=documents.sha256_text(result.text())))
    return out
