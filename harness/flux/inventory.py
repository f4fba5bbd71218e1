"""What each cluster declares, as `harness get ks|hr` lists it: every Flux Kustomization and
HelmRelease with the summary of its spec and how this run judged it.

Derived from a Snapshot alone (as ksgraph.py is): the Kustomization and HelmRelease objects
are documents inside the flux targets of their cluster, so a working tree, a git ref and the
goldens list alike. A row's status says what the run did with it:

- `rendered`: its own target rendered (`documents` counts what it rendered);
- `failed`: its own target failed (`reason` is the error line);
- `skipped`: not rendered on purpose (a Kustomization whose source is external; a HelmRelease
  while helm targets are off, or one the `helm:` globs or the selection leave out);
- `not judged`: harness could not see what it renders: a Kustomization declared under a
  failed target (the caller passes those, from compare/coverage.py's walk), one excluded
  from the run, a HelmRelease whose chart could not be fetched.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, TypeVar

from harness.core.model import DocId, Document, Snapshot, TargetResult
from harness.flux import ksgraph
from harness.flux.api import parse_kustomization
from harness.flux.helm.release import parse_helm_release
from harness.flux.spec import SpecError

Status = Literal["rendered", "failed", "skipped", "not judged"]
STATUSES: tuple[Status, ...] = ("rendered", "failed", "skipped", "not judged")
HELM_SUFFIX = "@helm"  # flux/helm/stage.py's, for a HelmRelease named as a Kustomization


@dataclass(frozen=True)
class KsRow:
    """One Flux Kustomization of one cluster. `path` as its spec says (`./apps`), `source`
    `Kind/namespace/name`, `depends_on` `namespace/name`; empty where the spec is unknown (the
    bootstrap root harness synthesises, one hidden under a failed target)."""

    cluster: str
    namespace: str
    name: str
    target: str
    status: Status
    path: str = ""
    source: str = ""
    depends_on: tuple[str, ...] = ()
    suspend: bool = False
    documents: int | None = None
    reason: str = ""


@dataclass(frozen=True)
class HrRow:
    """One HelmRelease of one cluster: its chart (`chart`, the version asked for, `source`
    `Kind/namespace/name`; a `chartRef` has only the source), the Kustomizations rendering
    it, its dependsOn (`namespace/name`), and its helm target when it has one."""

    cluster: str
    namespace: str
    name: str
    status: Status
    target: str = ""
    chart: str = ""
    version: str = ""
    source: str = ""
    kustomizations: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    suspend: bool = False
    documents: int | None = None
    reason: str = ""


def _key(key: ksgraph.Key) -> str:
    return f"{key[0]}/{key[1]}"


def _status(result: TargetResult | None) -> tuple[Status, int | None, str]:
    if result is None:
        return "not judged", None, "excluded from this run (include/exclude, selection)"
    if result.ok:
        return "rendered", len(result.documents), ""
    return "failed", None, result.error or ""


def kustomizations(
    snapshot: Snapshot,
    *,
    repo: Path | None = None,
    hidden: Mapping[str, Iterable[str]] | None = None,
) -> list[KsRow]:
    """Every Flux Kustomization of every cluster, sorted by cluster, namespace and name.
    `hidden`: failed flux target -> the `namespace/name` of the Kustomizations it would
    declare that no target rendered (compare/coverage.py); `repo` makes a synthesised
    root's path repo-relative."""
    rows: dict[tuple[str, str, str], KsRow] = {}
    for cluster, graph in ksgraph.graphs(snapshot).items():
        for key, node in graph.nodes.items():
            result = snapshot.results.get(node.target)
            status, documents, reason = _status(result)
            if result is None and node.target in snapshot.skipped:
                status, reason = "skipped", snapshot.skipped[node.target]
            row = KsRow(cluster, key[0], key[1], node.target, status, documents=documents)
            if node.spec_known:
                row = _with_spec(row, graph, key)
            elif result is not None:
                row = replace(row, path=_relative(result.target.path, repo))
            if reason:
                row = replace(row, reason=reason)
            rows[(cluster, *key)] = row
    for name, reason in snapshot.skipped.items():
        parts = ksgraph.split_target_name(name)
        if parts is not None and parts not in rows:
            rows[parts] = KsRow(*parts, name, "skipped", reason=reason)
    for failed, keys in (hidden or {}).items():
        parent = snapshot.results.get(failed)
        owner = parent.target.cluster if parent is not None else None
        for declared in keys:
            namespace, _sep, name = declared.partition("/")
            if owner is None or (owner, namespace, name) in rows:
                continue
            rows[(owner, namespace, name)] = KsRow(
                owner,
                namespace,
                name,
                ksgraph.target_name(owner, (namespace, name)),
                "not judged",
                reason=f"declared under {failed}, which failed",
            )
    return [rows[k] for k in sorted(rows)]


def _with_spec(row: KsRow, graph: ksgraph.ClusterGraph, key: ksgraph.Key) -> KsRow:
    """The row with its spec's fields, read from the Kustomization document itself."""
    doc = _document(graph, DocId(ksgraph.KUSTOMIZE_GROUP, "Kustomization", *key))
    node = graph.nodes[key]
    suspend = False
    if doc is not None:
        try:
            suspend = parse_kustomization(ksgraph.parse(doc), ksgraph.DEFAULT_NAMESPACE).suspend
        except SpecError:
            suspend = False  # node.spec_error says why
    source = "/".join(node.source) if node.source is not None else ""
    reason = row.reason or (f"invalid spec: {node.spec_error}" if node.spec_error else "")
    return replace(
        row,
        path=node.path,
        source=source,
        depends_on=tuple(_key(k) for k in node.depends_on),
        suspend=suspend,
        reason=reason,
    )


def _document(graph: ksgraph.ClusterGraph, doc_id: DocId) -> Document | None:
    found = graph.find(doc_id)
    if not found and doc_id.namespace == ksgraph.DEFAULT_NAMESPACE:
        found = graph.find(DocId(doc_id.group, doc_id.kind, "", doc_id.name))
    return found[0][1] if found else None


def helm_releases(snapshot: Snapshot, *, helm: bool = False) -> list[HrRow]:
    """Every HelmRelease the clusters' Kustomizations render, sorted by cluster, namespace and
    name; `helm`: whether this run renders helm targets at all (the reason of a skip)."""
    helm_targets: dict[tuple[str, str, str], TargetResult] = {}
    for result in snapshot.results.values():
        if result.target.kind == "helm" and result.target.cluster is not None:
            parts = ksgraph.split_target_name(result.name.removesuffix(HELM_SUFFIX))
            if parts is not None:
                helm_targets[parts] = result
    rows: list[HrRow] = []
    for cluster, graph in ksgraph.graphs(snapshot).items():
        for doc_id, owners in sorted(graph.index.items()):
            if not ksgraph.is_helm_release(doc_id):
                continue
            namespace = doc_id.namespace or "default"
            row = _release_row(cluster, namespace, doc_id.name, owners[0][1])
            row = replace(row, kustomizations=tuple(sorted({_key(k) for k, _d in owners})))
            rows.append(_judged(row, helm_targets.get((cluster, namespace, doc_id.name)), helm))
    return sorted(rows, key=lambda r: (r.cluster, r.namespace, r.name))


def _release_row(cluster: str, namespace: str, name: str, doc: Document) -> HrRow:
    row = HrRow(cluster, namespace, name, "not judged")
    try:
        release = parse_helm_release(ksgraph.parse(doc), namespace)
    except SpecError as exc:
        return replace(row, reason=f"invalid HelmRelease: {exc}")
    spec = ksgraph.parse(doc).get("spec")
    deps: list[str] = []
    items = spec.get("dependsOn") if isinstance(spec, dict) else None
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            deps.append(f"{item.get('namespace') or namespace}/{item['name']}")
    chart = release.chart
    if chart is not None:
        row = replace(row, chart=chart.chart, version=chart.version, source=str(chart.source))
    elif release.chart_ref is not None:
        row = replace(row, source=str(release.chart_ref))
    return replace(row, depends_on=tuple(deps), suspend=release.suspend)


def _judged(row: HrRow, result: TargetResult | None, helm: bool) -> HrRow:
    if result is None:
        why = (
            "not selected (config helm:, the selection)"
            if helm
            else "helm targets are off (--helm, config helm:)"
        )
        return replace(row, status="skipped", reason=row.reason or why)
    out = replace(row, target=result.name)
    if result.ok:
        return replace(out, status="rendered", documents=len(result.documents))
    if result.target.helm is not None and result.target.helm.unreachable:
        return replace(out, status="not judged", reason=result.error or "")
    return replace(out, status="failed", reason=result.error or "")


def _relative(path: Path, repo: Path | None) -> str:
    if repo is None:
        return str(path)
    try:
        rel = path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return str(path)
    return "./" if rel == "." else f"./{rel}"


Row = TypeVar("Row", bound=KsRow | HrRow)


def matching(
    rows: Iterable[Row], names: tuple[str, ...] = (), clusters: tuple[str, ...] = ()
) -> list[Row]:
    """The rows of `clusters` (all when none) whose name, `namespace/name` or
    `cluster/namespace/name` matches one of the `names` globs (all when none)."""
    out = []
    for row in rows:
        if clusters and row.cluster not in clusters:
            continue
        local = f"{row.namespace}/{row.name}"
        spelled = (row.name, local, f"{row.cluster}/{local}")
        if names and not any(fnmatch.fnmatchcase(s, p) for s in spelled for p in names):
            continue
        out.append(row)
    return out
