"""Each cluster's Flux Kustomization graph, derived from a Snapshot alone.

The Kustomization objects are themselves rendered documents inside the flux targets of their
cluster, so parsing them works the same for a working-tree render, a git ref or the goldens.
A flux target is named `<cluster>/<namespace>/<name>` and renders the documents of the
Kustomization `namespace/name`; a target with no Kustomization document behind it (the
bootstrap root that harness synthesises) becomes a node whose spec is unknown. A
flux-operator ResourceSet's target is `<cluster>/<namespace>/<name>@resourceset`; its node
comes from the ResourceSet document, with its dependsOn on Kustomizations and ResourceSets.

The HelmReleases those Kustomizations render are part of the graph too (`releases`): each
with the Kustomizations rendering it and its `spec.dependsOn` (other HelmReleases of the
cluster, `namespace` defaulting to the HelmRelease's own), which helm-controller waits for
before it installs or upgrades the release.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core import parsed, yamlload
from harness.core.model import DocId, Document, Snapshot, TargetResult
from harness.flux.api import PostBuild, parse_kustomization
from harness.flux.spec import SpecError

KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
HELM_GROUP = "helm.toolkit.fluxcd.io"
OWNER_NAME = f"{KUSTOMIZE_GROUP}/name"
OWNER_NAMESPACE = f"{KUSTOMIZE_GROUP}/namespace"
PRUNE_KEY = f"{KUSTOMIZE_GROUP}/prune"
RECONCILE_KEY = f"{KUSTOMIZE_GROUP}/reconcile"
SSA_KEY = f"{KUSTOMIZE_GROUP}/ssa"
DEFAULT_NAMESPACE = "flux-system"
RSET_GROUP = "fluxcd.controlplane.io"
RSET_SUFFIX = "@resourceset"  # a ResourceSet's flux target: `<cluster>/<ns>/<name>@resourceset`

Key = tuple[str, str]  # (namespace, name) of a Flux Kustomization


def parse(doc: Document) -> dict[str, Any]:
    """The document's object (shared and cached: callers must not mutate it)."""
    try:
        obj = parsed.load(doc.text)  # known when the text was rendered or read from the cache
    except yamlload.YAMLError:
        return {}
    return obj if isinstance(obj, dict) else {}


def meta_value(obj: Mapping[str, Any], key: str) -> str | None:
    """A label or annotation value (annotation wins), as Flux reads its control keys."""
    meta = obj.get("metadata") or {}
    for part in ("annotations", "labels"):
        values = meta.get(part) or {}
        if isinstance(values, dict) and key in values:
            return str(values[key])
    return None


def prune_protected(obj: Mapping[str, Any]) -> str | None:
    """Why Flux's pruner would skip this object, or None when it would delete it."""
    if (meta_value(obj, PRUNE_KEY) or "").lower() == "disabled":
        return f"{PRUNE_KEY}: disabled"
    if (meta_value(obj, RECONCILE_KEY) or "").lower() == "disabled":
        return f"{RECONCILE_KEY}: disabled"
    if (meta_value(obj, SSA_KEY) or "").lower() == "ignore":
        return f"{SSA_KEY}: Ignore"
    return None


def display(key: Key) -> str:
    """How findings name a Kustomization: `name`, or `namespace/name` outside flux-system."""
    namespace, name = key
    return name if namespace == DEFAULT_NAMESPACE else f"{namespace}/{name}"


@dataclass(frozen=True)
class KsNode:
    """One Flux Kustomization of one cluster, as far as hazards care."""

    cluster: str
    namespace: str
    name: str
    target: str
    spec_known: bool = True
    prune: bool = True
    wait: bool = False
    depends_on: tuple[Key, ...] = ()
    path: str = ""
    source: tuple[str, str, str] | None = None
    target_namespace: str | None = None
    post_build: PostBuild | None = None
    components: tuple[str, ...] = ()
    patches: tuple[str, ...] = ()
    declared_by: str | None = None
    spec_error: str | None = None

    @property
    def key(self) -> Key:
        return (self.namespace, self.name)

    @property
    def display(self) -> str:
        return display(self.key)


@dataclass(frozen=True)
class ReleaseNode:
    """One HelmRelease of one cluster: who renders it and which HelmReleases it dependsOn."""

    cluster: str
    namespace: str
    name: str
    owners: tuple[Key, ...]  # the Kustomizations rendering it
    depends_on: tuple[Key, ...] = ()

    @property
    def key(self) -> Key:
        return (self.namespace, self.name)

    @property
    def display(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class ClusterGraph:
    """Kustomizations of one cluster, their flux target results, and where each object lives."""

    cluster: str
    nodes: Mapping[Key, KsNode]
    results: Mapping[Key, TargetResult]
    index: Mapping[DocId, tuple[tuple[Key, Document], ...]] = field(default_factory=dict)
    releases: Mapping[Key, ReleaseNode] = field(default_factory=dict)

    def result(self, key: Key) -> TargetResult | None:
        return self.results.get(key)

    def ok_results(self) -> Iterator[tuple[Key, TargetResult]]:
        for key, result in sorted(self.results.items()):
            if result.ok:
                yield key, result

    def documents(self, key: Key) -> tuple[Document, ...]:
        result = self.results.get(key)
        return result.documents if result is not None and result.ok else ()

    def failed(self) -> list[Key]:
        return sorted(k for k, r in self.results.items() if not r.ok)

    def find(self, doc_id: DocId) -> tuple[tuple[Key, Document], ...]:
        """The Kustomizations whose (successful) render holds this identity."""
        return self.index.get(doc_id, ())

    def deps(self, key: Key) -> set[Key]:
        """Kustomizations `key` transitively dependsOn (existing ones; cycles tolerated)."""
        seen: set[Key] = set()
        stack = list(self.nodes[key].depends_on) if key in self.nodes else []
        while stack:
            dep = stack.pop()
            if dep in seen or dep not in self.nodes:
                continue
            seen.add(dep)
            stack.extend(self.nodes[dep].depends_on)
        return seen

    def depends(self, key: Key, on: Key) -> bool:
        return on in self.deps(key)


def split_target_name(name: str) -> tuple[str, str, str] | None:
    """`<cluster>/<namespace>/<name>` -> parts; the cluster part may itself contain `/`."""
    parts = name.rsplit("/", 2)
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]


def target_name(cluster: str, key: Key) -> str:
    return f"{cluster}/{key[0]}/{key[1]}"


def is_flux_kustomization(doc_id: DocId) -> bool:
    return doc_id.group == KUSTOMIZE_GROUP and doc_id.kind == "Kustomization"


def _node_from(cluster: str, doc: Document, declared_by: str) -> KsNode:
    obj = parse(doc)
    key = (doc.id.namespace or DEFAULT_NAMESPACE, doc.id.name)
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    base = KsNode(
        cluster=cluster,
        namespace=key[0],
        name=key[1],
        target=target_name(cluster, key),
        declared_by=declared_by,
        prune=bool(spec.get("prune", False)),
        wait=bool(spec.get("wait", False)),
        path=str(spec.get("path") or ""),
    )
    try:
        ks = parse_kustomization(obj, DEFAULT_NAMESPACE)
    except SpecError as exc:
        return KsNode(**{**base.__dict__, "spec_error": str(exc)})
    return KsNode(
        cluster=cluster,
        namespace=ks.namespace,
        name=ks.name,
        target=base.target,
        prune=ks.prune,
        wait=base.wait,
        depends_on=tuple(ks.depends_on),
        path=ks.path,
        source=(ks.source.kind, ks.source.namespace, ks.source.name),
        target_namespace=ks.target_namespace,
        post_build=ks.post_build,
        components=ks.components,
        patches=tuple(p.patch for p in ks.patches),
        declared_by=declared_by,
    )


def cluster_graph(cluster: str, results: Iterable[TargetResult]) -> ClusterGraph:
    """The graph of one cluster from its flux target results."""
    by_key: dict[Key, TargetResult] = {}
    for result in results:
        parts = split_target_name(result.name)
        if parts is None:
            continue
        by_key[(parts[1], parts[2])] = result
    nodes: dict[Key, KsNode] = {}
    for _key, result in sorted(by_key.items()):
        if not result.ok:
            continue
        for doc in result.documents:
            if is_flux_kustomization(doc.id):
                node = _node_from(cluster, doc, result.name)
            elif is_resourceset(doc.id):
                node = _rset_node(cluster, doc, result.name)
            else:
                continue
            nodes.setdefault(node.key, node)
    for key in by_key:
        if key not in nodes:
            # The synthesised bootstrap root (or a Kustomization whose declarer failed):
            # `flux bootstrap` creates it with prune: true.
            nodes[key] = KsNode(
                cluster=cluster,
                namespace=key[0],
                name=key[1],
                target=target_name(cluster, key),
                spec_known=False,
            )
    index: dict[DocId, list[tuple[Key, Document]]] = {}
    for key, result in sorted(by_key.items()):
        if result.ok:
            for doc in result.documents:
                index.setdefault(doc.id, []).append((key, doc))
    return ClusterGraph(
        cluster=cluster,
        nodes=dict(sorted(nodes.items())),
        results=by_key,
        index={k: tuple(v) for k, v in index.items()},
        releases=_releases(cluster, index),
    )


def is_resourceset(doc_id: DocId) -> bool:
    return doc_id.group == RSET_GROUP and doc_id.kind == "ResourceSet"


def _rset_node(cluster: str, doc: Document, declared_by: str) -> KsNode:
    """A flux-operator ResourceSet as a node: it applies and prunes its objects, and waits
    for the Kustomizations and ResourceSets of its `spec.dependsOn`."""
    obj = parse(doc)
    namespace = doc.id.namespace or "default"
    key = (namespace, doc.id.name + RSET_SUFFIX)
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    deps: list[Key] = []
    for dep in spec.get("dependsOn") or []:
        if not isinstance(dep, dict) or not dep.get("name"):
            continue
        dep_key = (str(dep.get("namespace") or namespace), str(dep["name"]))
        if dep.get("kind") == "Kustomization":
            deps.append(dep_key)
        elif dep.get("kind") == "ResourceSet":
            deps.append((dep_key[0], dep_key[1] + RSET_SUFFIX))
    return KsNode(
        cluster=cluster,
        namespace=key[0],
        name=key[1],
        target=target_name(cluster, key),
        declared_by=declared_by,
        prune=True,
        wait=bool(spec.get("wait", False)),
        depends_on=tuple(deps),
    )


def is_helm_release(doc_id: DocId) -> bool:
    return doc_id.group == HELM_GROUP and doc_id.kind == "HelmRelease"


def _releases(
    cluster: str, index: Mapping[DocId, list[tuple[Key, Document]]]
) -> dict[Key, ReleaseNode]:
    """Every HelmRelease the cluster's Kustomizations render, with its dependsOn."""
    out: dict[Key, ReleaseNode] = {}
    for doc_id, owners in sorted(index.items()):
        if not is_helm_release(doc_id):
            continue
        namespace = doc_id.namespace or "default"
        spec = parse(owners[0][1]).get("spec")
        deps: list[Key] = []
        items = spec.get("dependsOn") if isinstance(spec, dict) else None
        for item in items if isinstance(items, list) else []:
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str) and name:
                dep_ns = item.get("namespace")
                deps.append((dep_ns if isinstance(dep_ns, str) and dep_ns else namespace, name))
        key = (namespace, doc_id.name)
        out[key] = ReleaseNode(
            cluster, namespace, doc_id.name, tuple(sorted({k for k, _d in owners})), tuple(deps)
        )
    return out


def graphs(snapshot: Snapshot) -> dict[str, ClusterGraph]:
    """Cluster name -> graph, for every cluster that has flux targets in the snapshot."""
    grouped: dict[str, list[TargetResult]] = {}
    for result in snapshot.results.values():
        if result.target.kind == "flux" and result.target.cluster is not None:
            grouped.setdefault(result.target.cluster, []).append(result)
    return {c: cluster_graph(c, rs) for c, rs in sorted(grouped.items())}
