"""Every HelmRelease of every cluster's rendered Flux output as a `helm` target.

Target names are `<cluster>/<namespace>/<name>` of the HelmRelease (ConfigMaps, Secrets and
sources it refers to come from the same cluster's rendered objects, whichever Kustomization
renders them, so moving the HelmRelease between Kustomizations leaves its target unchanged).
Each release is rendered as helm-controller installs it: release name and namespace rules
(release.py), values (values.py), the chart from its source (../source: charts.py,
fetch.py, chartcache.py), an engine (engine.py), Flux's post-renderers (postrender.py);
objects without a namespace get the release namespace, as Helm's apply does.
A failure fails that target only.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.core import documents, parallel, safefile, scratch, yamlload
from harness.core.model import HelmInfo, Target, TargetResult
from harness.flux.api import ObjectRef, object_ref, secure_join
from harness.flux.helm import capabilities, dependencies, postrender, sdk, values
from harness.flux.helm.cached import ReleaseCache
from harness.flux.helm.capabilities import Capabilities
from harness.flux.helm.engine import Engine, EngineError, RenderRequest
from harness.flux.helm.release import HelmRelease, is_helm_release, parse_helm_release
from harness.flux.source import artifacts, charts
from harness.flux.source.artifacts import EXTERNAL_ARTIFACT
from harness.flux.source.fetch import Fetcher, FetchError
from harness.flux.spec import SpecError
from harness.render.kustomize import Renderer

CLUSTER_SCOPED = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "ComponentStatus"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("networking.k8s.io", "IngressClass"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("cert-manager.io", "ClusterIssuer"),
    }
)


@dataclass(frozen=True)
class ClusterObjects:
    """What one cluster's Flux targets rendered: (flux target name, its objects) in order."""

    cluster: str
    bootstrap: ObjectRef
    owners: tuple[tuple[str, tuple[dict[str, Any], ...]], ...] = ()
    # the directory the bootstrap source holds (None: the repo; an OCI artifact pushed
    # from a subdirectory holds that subdirectory)
    bootstrap_root: Path | None = None
    # the ExternalArtifacts its HelmReleases install (`chartRef`): files, or why not built
    artifacts: Mapping[ObjectRef, artifacts.Files | str] = field(default_factory=dict)


@dataclass
class HelmContext:
    """What every release render of one run shares."""

    engine: Engine
    fetcher: Fetcher
    renderer: Renderer
    repo: Path
    source_map: Mapping[str, str] = field(default_factory=dict)
    cache: ReleaseCache | None = None  # the render cache; None: `--no-cache`
    kube_version: str = capabilities.DEFAULT_KUBE_VERSION  # config helm.kube_version
    kube_versions: Mapping[str, str] = field(default_factory=dict)  # per cluster, over it
    api_versions: tuple[str, ...] = ()  # config helm.api_versions
    # cluster -> API versions of the CRDs harness recognises as preinstalled
    preinstalled: Mapping[str, frozenset[str]] = field(default_factory=dict)
    unpack_dir: Path | None = None  # where ExternalArtifact charts are written, for the stage
    _written: dict[tuple[str, ObjectRef], Path] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def artifact_root(self, cluster: str, built: artifacts.Files) -> Path:
        """The artifact's tree on disk, written once per cluster for the stage."""
        with self._lock:
            found = self._written.get((cluster, built.ref))
            if found is None:
                if self.unpack_dir is None:
                    raise charts.SourceError(f"{built.ref}: no directory to unpack it in")
                into = Path(tempfile.mkdtemp(prefix=f"{built.ref.name[:40]}-", dir=self.unpack_dir))
                found = self._written[(cluster, built.ref)] = built.write(into)
            return found


@dataclass(frozen=True)
class _Job:
    name: str
    cluster: ClusterObjects
    owner: str
    obj: dict[str, Any]
    objects: Mapping[ObjectRef, Mapping[str, Any]]
    scoped: frozenset[tuple[str, str]]  # the cluster's cluster-scoped kinds (cluster_scoped)
    capabilities: Capabilities


def target_name(cluster: str, obj: Mapping[str, Any], taken: Container[str]) -> str:
    """`<cluster>/<namespace>/<name>`, or with `@helm` when a flux target has that name."""
    meta = obj.get("metadata") or {}
    name = f"{cluster}/{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
    return f"{name}@helm" if name in taken else name


def render_helm(
    clusters: Sequence[ClusterObjects],
    ctx: HelmContext,
    *,
    jobs: int,
    taken: Container[str] = (),
    keep: Callable[[str], bool] = lambda _name: True,
) -> dict[str, TargetResult]:
    """Helm targets of every cluster, by name; only those `keep` selects are rendered."""
    work: list[_Job] = []
    for cluster in clusters:
        objects: dict[ObjectRef, Mapping[str, Any]] = {}
        releases: list[tuple[str, dict[str, Any]]] = []
        for owner, objs in cluster.owners:
            for obj in objs:
                if is_helm_release(obj):
                    releases.append((owner, obj))
                else:
                    objects.setdefault(object_ref(obj, "default"), obj)
        seen: set[ObjectRef] = set()
        scoped: frozenset[tuple[str, str]] | None = None
        caps: Capabilities | None = None
        for owner, obj in releases:
            ref = object_ref(obj, "default")
            name = target_name(cluster.cluster, obj, taken)
            if ref not in seen and keep(name):
                seen.add(ref)
                if scoped is None or caps is None:
                    scoped = cluster_scoped(objects.values())
                    caps = capabilities.for_cluster(
                        (o for _owner, objs in cluster.owners for o in objs),
                        ctx.kube_versions.get(cluster.cluster, ctx.kube_version),
                        ctx.api_versions,
                        ctx.preinstalled.get(cluster.cluster, ()),
                    )
                work.append(_Job(name, cluster, owner, obj, objects, scoped, caps))
    with parallel.pool(jobs) as pool:
        results = list(pool.map(lambda job: _render(job, ctx), work))
    return {r.name: r for r in results}


def _render(job: _Job, ctx: HelmContext) -> TargetResult:
    target = Target(
        name=job.name,
        kind="helm",
        path=ctx.repo,
        cluster=job.cluster.cluster,
        helm=HelmInfo(owner=job.owner),
    )
    try:
        release = parse_helm_release(job.obj)
    except SpecError as exc:
        return TargetResult(target, error=f"invalid HelmRelease: {exc}")
    notes: list[str] = []
    if release.suspend:
        notes.append("spec.suspend: true: helm-controller does not reconcile it until resumed")
    digest: str | None = None
    downloaded = False
    info = target.helm
    try:
        request = charts.locate(release, job.objects, lambda ref: _source_root(ref, job, ctx))
        location = request.location
        info = HelmInfo(
            owner=job.owner,
            release=release.release_name,
            namespace=release.release_namespace,
            upgrade_crds=release.upgrade_crds,
            chart=_chart_name(location),
            version="" if isinstance(location, charts.LocalChart) else location.version,
            source=location.source,
            url="" if isinstance(location, charts.LocalChart) else location.url,
            digest=location.digest if isinstance(location, charts.OciChart) else "",
        )
        if isinstance(location, charts.LocalChart):
            chart, version = location.path, ""
        else:
            try:
                chart, pinned = ctx.fetcher.archive(location)
            except FetchError:
                info = replace(info, unreachable=True)
                raise
            version = pinned.version
            info = replace(info, version=version, digest=pinned.digest)
        render_request = _request(release, {}, job.capabilities)
        digest = _cache_key(job, ctx, release, request, chart, render_request)
        if digest is not None and ctx.cache is not None:
            hit = ctx.cache.get(digest, replace(target, helm=info))
            if hit is not None:
                return hit
        with tempfile.TemporaryDirectory(prefix=scratch.prefix("helm")) as tmp:
            chart_path = chart
            if isinstance(location, charts.LocalChart):
                chart_path, downloaded = dependencies.ensure(
                    chart_path, location.root, Path(tmp), offline=ctx.fetcher.offline
                )
            if request.values_files:
                chart_path = _with_values_files(chart_path, request, Path(tmp))
            vals, value_notes = values.compose(release, _lookup(job.objects), sdk.parse_set)
            notes.extend(value_notes)
            logs: list[str] = []
            parts = ctx.engine.render(chart_path, replace(render_request, values=vals), logs)
            notes.extend(f"helm: {line}" for line in logs)  # the library's, attributed here
            objs = postrender.apply(parts, release, ctx.renderer)
            crds = tuple(str(documents.identity(p.obj)) for p in parts if p.kind == "crd")
            if not version:
                version = _local_version(chart_path)
    except (
        charts.SourceError,
        FetchError,
        values.ValuesError,
        EngineError,
        postrender.PostRenderError,
        dependencies.DependencyError,
        sdk.SdkError,
    ) as exc:
        failed = replace(target, helm=info) if info is not None else target
        return TargetResult(failed, error=str(exc), notes=tuple(notes))
    target = replace(target, helm=replace(info, version=version, crds=crds))
    _namespace(objs, release, job.scoped)
    docs = documents.from_objects(objs)
    result = TargetResult(
        target, documents=docs, duplicates=documents.duplicates(docs), notes=tuple(notes)
    )
    result = replace(result, sha256=documents.sha256_text(result.text()))
    if ctx.cache is not None:
        if digest is None or downloaded:
            ctx.cache.skip()
        else:
            ctx.cache.put(digest, result)
    return result


def _request(release: HelmRelease, vals: dict[str, Any], caps: Capabilities) -> RenderRequest:
    return RenderRequest(
        release=release.release_name,
        namespace=release.release_namespace,
        values=vals,
        include_crds=release.include_crds,
        hooks=not release.disable_hooks,
        tests=release.test_enable,
        capabilities=caps,
    )


def _cache_key(
    job: _Job,
    ctx: HelmContext,
    release: HelmRelease,
    request: charts.ChartRequest,
    chart: Path,
    render: RenderRequest,
) -> str | None:
    """The render cache key, or None without a cache or when the values cannot be read
    (the render then fails with the error, in its usual order). The fully merged values go
    in; with a `targetPath` reference (Helm's `--set` parser, in the SDK) what each reference
    reads does instead, so a hit never loads the SDK; so does a Secret reference (a cache
    hit of its Flux build holds it redacted: values.inputs reads it either way alike)."""
    if ctx.cache is None:
        return None
    lookup = _lookup(job.objects)
    try:
        if any(ref.target_path or ref.kind == "Secret" for ref in release.values_from):
            vals: Any = values.inputs(release, lookup)
        else:
            vals, _notes = values.compose(release, lookup, sdk.parse_set)
    except values.ValuesError:
        return None
    return ctx.cache.key(release, request, chart, render, repr(vals), job.scoped)


def _chart_name(location: charts.ChartLocation) -> str:
    if isinstance(location, charts.LocalChart):
        return location.path.name
    return location.chart


def _local_version(chart_path: Path) -> str:
    if not chart_path.is_dir():
        return sdk.archive_version(chart_path)
    path = chart_path / "Chart.yaml"
    try:
        meta = yamlload.load(safefile.read_text(path))
    except (OSError, yamlload.YAMLError):
        return ""
    return str(meta.get("version") or "") if isinstance(meta, dict) else ""


def _source_root(ref: ObjectRef, job: _Job, ctx: HelmContext) -> Path | None:
    built = job.cluster.artifacts.get(ref) if ref.kind == EXTERNAL_ARTIFACT else None
    if isinstance(built, str):
        raise charts.SourceError(built)
    if built is not None:  # built by the Flux render (mapped or generated), written here
        return ctx.artifact_root(job.cluster.cluster, built)
    for key in (str(ref), f"{ref.namespace}/{ref.name}", ref.name):
        mapped = ctx.source_map.get(key)
        if mapped is not None:
            return (ctx.repo / mapped).resolve()
    if ref == job.cluster.bootstrap:
        return job.cluster.bootstrap_root or ctx.repo
    return None


def _lookup(objects: Mapping[ObjectRef, Mapping[str, Any]]) -> values.Lookup:
    return lambda ref: objects.get(ref)


def _with_values_files(chart: Path, request: charts.ChartRequest, tmp: Path) -> Path:
    """A copy of the chart whose values.yaml is the merged valuesFiles (source-controller
    packages it that way: the files replace the chart's defaults, later files win)."""
    if chart.is_dir():
        copy = tmp / "chart" / chart.name
        shutil.copytree(chart, copy, ignore=safefile.special_names)
        files_root = (
            request.location.root if isinstance(request.location, charts.LocalChart) else chart
        )
    else:
        copy = sdk.expand(chart, tmp / "chart")
        files_root = copy
    merged: dict[str, Any] = {}
    found = 0
    for name in request.values_files:
        path = secure_join(files_root, name)
        if not path.is_file():
            if request.ignore_missing_values_files:
                continue
            raise charts.SourceError(f"valuesFiles: {name} does not exist in the chart source")
        try:
            loaded = yamlload.load(safefile.read_text(path)) or {}
        except (OSError, yamlload.YAMLError) as exc:
            raise charts.SourceError(f"valuesFiles: {name}: {exc}") from None
        if not isinstance(loaded, dict):
            raise charts.SourceError(f"valuesFiles: {name} is not a YAML mapping")
        merged = values.merge_maps(merged, loaded)
        found += 1
    if not found:  # every file missing and ignored: the chart's own defaults stay
        return chart
    (copy / "values.yaml").write_text(yamlload.dump(merged), encoding="utf-8")
    return copy


def cluster_scoped(objects: Iterable[Mapping[str, Any]]) -> frozenset[tuple[str, str]]:
    """Kinds that are cluster-scoped: built in, or by a `scope: Cluster` CRD among `objects`."""
    scoped = set(CLUSTER_SCOPED)
    for obj in objects:
        if obj.get("kind") == "CustomResourceDefinition":
            spec = obj.get("spec") or {}
            if isinstance(spec, dict) and spec.get("scope") == "Cluster":
                names = spec.get("names") or {}
                kind = names.get("kind") if isinstance(names, dict) else None
                if kind:
                    scoped.add((str(spec.get("group") or ""), str(kind)))
    return frozenset(scoped)


def _namespace(
    objs: list[dict[str, Any]], release: HelmRelease, cluster: frozenset[tuple[str, str]]
) -> None:
    """Namespaced objects without one land in the release namespace (Helm's apply); kinds
    are cluster-scoped when built in, or by a CRD of the chart or of the cluster's objects
    (`cluster`: the cluster's, from `cluster_scoped`)."""
    scoped = cluster | cluster_scoped(objs)
    for obj in objs:
        group = str(obj.get("apiVersion") or "").rpartition("/")[0]
        meta = obj.get("metadata")
        if (group, obj.get("kind")) in scoped or not isinstance(meta, dict):
            continue
        if not meta.get("namespace"):
            meta["namespace"] = release.release_namespace
