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

Where objects land is a cluster of its own, the *applied-to cluster*: a Kustomization with
`spec.kubeConfig` applies (and prunes) in the remote cluster its Secret or ConfigMap names,
in the Kustomization's own namespace of the cluster Flux runs in, so `cluster-kubeconfig` of
`production` and of `staging` are two remotes. It is named `<cluster> -> Secret/<namespace>/
<name>` (`ConfigMap/...` for `configMapRef`, `:<key>` for a non-default `secretRef.key`). A
Kustomization without one applies where the Kustomization object itself was applied: the
applied-to cluster of the one declaring it (the bootstrap root: the cluster itself). A
HelmRelease's chart lands where its own `spec.kubeConfig` says, else where the HelmRelease
is. The Kustomization graph (dependsOn) stays one per cluster, since every Kustomization
object lives there; what each one renders is indexed per applied-to cluster (`within`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core import memo, parsed, yamlload
from harness.core.model import DocId, Document, Snapshot, Target, TargetResult
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


@dataclass(frozen=True, order=True)
class KubeConfigRef:
    """`spec.kubeConfig` of a Kustomization or HelmRelease: the Secret (or, for workload
    identity, the ConfigMap) in the object's own namespace that names the remote cluster."""

    kind: str  # "Secret" or "ConfigMap"
    namespace: str
    name: str
    key: str = ""  # a secretRef key other than the defaults (`value`, `value.yaml`)

    def remote(self, cluster: str) -> str:
        """The applied-to cluster's name: `hub -> Secret/production/cluster-kubeconfig`."""
        key = f":{self.key}" if self.key else ""
        return f"{cluster} -> {self.kind}/{self.namespace}/{self.name}{key}"


def kube_config(spec: Any, namespace: str) -> KubeConfigRef | None:
    """The `spec.kubeConfig` reference of an object in `namespace`, or None (unset, or no
    usable name: Flux's admission refuses one without a reference)."""
    ref = spec.get("kubeConfig") if isinstance(spec, dict) else None
    if not isinstance(ref, dict):
        return None
    for field_name, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
        item = ref.get(field_name)
        if not isinstance(item, dict):
            continue
        name = item.get("name")
        if isinstance(name, str) and name:
            key = item.get("key") if kind == "Secret" else None
            key = key if isinstance(key, str) and key not in ("", "value", "value.yaml") else ""
            return KubeConfigRef(kind, namespace, name, key)
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
    kube_config: KubeConfigRef | None = None

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
    applied_to: str = ""  # the applied-to cluster its chart's objects land in

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
    # each Kustomization's applied-to cluster (absent: the cluster itself)
    applied: Mapping[Key, str] = field(default_factory=dict)
    # `index` split by applied-to cluster
    indexes: Mapping[str, Mapping[DocId, tuple[tuple[Key, Document], ...]]] = field(
        default_factory=dict
    )

    def applied_to(self, key: Key) -> str:
        """The cluster Kustomization `key` applies to: this one, or a remote."""
        return self.applied.get(key, self.cluster)

    def within(self, applied_to: str) -> Mapping[DocId, tuple[tuple[Key, Document], ...]]:
        """Where each object applied to `applied_to` lives: the index of one cluster."""
        if not self.indexes:  # a graph made by hand, every Kustomization local
            return self.index if applied_to == self.cluster else {}
        return self.indexes.get(applied_to, {})

    def applied_clusters(self) -> list[str]:
        """Every applied-to cluster of this graph's Kustomizations, this one first."""
        return [self.cluster, *sorted(set(self.applied.values()) - {self.cluster})]

    def chart_applied_to(self, key: Key, doc: Document) -> str:
        """Where the chart of HelmRelease `doc`, rendered by Kustomization `key`, lands."""
        remote = kube_config(parse(doc).get("spec"), doc.id.namespace or "default")
        return remote.remote(self.cluster) if remote is not None else self.applied_to(key)

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

    def find(self, doc_id: DocId, within: str | None = None) -> tuple[tuple[Key, Document], ...]:
        """The Kustomizations whose (successful) render holds this identity: in applied-to
        cluster `within`, or (None) in any."""
        if within is None:
            return self.index.get(doc_id, ())
        return self.within(within).get(doc_id, ())

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
        kube_config=kube_config(spec, key[0]),
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
        kube_config=base.kube_config,
    )


# a Kustomization or ResourceSet document's node and a HelmRelease document's spec facts,
# by content: both sides of a diff (and each answer of `harness watch`) share them
_NODES: memo.Memo[tuple[str, str, DocId, str], KsNode] = memo.Memo("ks nodes", 16384)
_RELEASES: memo.Memo[tuple[str, str], tuple[KubeConfigRef | None, tuple[Key, ...]]] = memo.Memo(
    "release specs", 16384
)


def _node(cluster: str, doc: Document, declared_by: str, rset: bool) -> KsNode:
    key = (cluster, declared_by, doc.id, doc.text)
    found = _NODES.get(key)
    if found is None:
        found = (_rset_node if rset else _node_from)(cluster, doc, declared_by)
        _NODES.put(key, found)
    return found


# the last graph of each cluster made in this run: the next one (the head after the base,
# `harness watch`'s next answer) is derived from it when only documents' bytes changed
_LAST: memo.Memo[str, ClusterGraph] = memo.Memo("last cluster graphs", 64)


def cluster_graph(cluster: str, results: Iterable[TargetResult]) -> ClusterGraph:
    """The graph of one cluster from its flux target results."""
    by_key: dict[Key, TargetResult] = {}
    for result in results:
        parts = split_target_name(result.name)
        if parts is None:
            continue
        by_key[(parts[1], parts[2])] = result
    last = _LAST.get(cluster)
    graph = _derived(last, by_key) if last is not None else None
    if graph is None:
        graph = _built(cluster, by_key)
    _LAST.put(cluster, graph)
    return graph


def _same_ids(before: TargetResult, after: TargetResult) -> bool | None:
    """True: the very same documents (identities and sha256, in order); False: the same
    identities in order, other bytes; None: anything else (an identity or a failure
    differs)."""
    if before.name != after.name or before.ok != after.ok:
        return None
    if not before.ok:
        return True
    old, new = before.documents, after.documents
    if len(old) != len(new) or [a.id for a in old] != [b.id for b in new]:
        return None
    return [a.sha256 for a in old] == [b.sha256 for b in new]


def _shapes(result: TargetResult) -> bool:
    """Whether the result holds a document the graph's nodes come from."""
    return result.ok and any(
        (d.id.group, d.id.kind) in ((KUSTOMIZE_GROUP, "Kustomization"), (RSET_GROUP, "ResourceSet"))
        for d in result.documents
    )


def _derived(last: ClusterGraph, by_key: dict[Key, TargetResult]) -> ClusterGraph | None:
    """`_built(cluster, by_key)` from the cluster's last graph, when every target keeps its
    identities in order and no Kustomization or ResourceSet document changed: the nodes,
    where each applies and the index's order stay; only the changed targets' documents are
    put in the index (the others keep the last graph's equal documents). None otherwise."""
    if last.applied or by_key.keys() != last.results.keys():
        return None  # a remote splits the index: built afresh
    changed: dict[Key, TargetResult] = {}
    for key, result in by_key.items():
        same = _same_ids(last.results[key], result)
        if same is None:
            return None
        if not same:
            if _shapes(result) or _shapes(last.results[key]):
                return None
            changed[key] = result
    index = dict(last.index)
    fresh: dict[tuple[Key, DocId], list[Document]] = {}
    for key, result in changed.items():
        for doc in result.documents:
            fresh.setdefault((key, doc.id), []).append(doc)
    for doc_id in {doc_id for _key, doc_id in fresh}:  # each in the index: same identities
        taken: dict[Key, int] = {}
        entries = []
        for key, doc in index[doc_id]:
            if key in changed:
                at = taken.get(key, 0)
                taken[key] = at + 1
                doc = fresh[(key, doc_id)][at]
            entries.append((key, doc))
        index[doc_id] = tuple(entries)
    cluster = last.cluster
    # a release node reads its first owner's document: anew where that owner changed
    releases = dict(last.releases)
    for key, doc_id in fresh:
        if is_helm_release(doc_id):
            owners = index[doc_id]
            if owners[0][0] == key:
                releases.update(_releases(cluster, {doc_id: owners}, last.applied))
    return ClusterGraph(
        cluster=cluster,
        nodes=last.nodes,
        results=by_key,
        index=index,
        releases=releases,
        applied=last.applied,
        indexes={cluster: index} if last.indexes else {},
    )


def _built(cluster: str, by_key: dict[Key, TargetResult]) -> ClusterGraph:
    """A cluster's graph from scratch."""
    ordered = sorted(by_key.items())
    nodes: dict[Key, KsNode] = {}
    for _key, result in ordered:
        if not result.ok:
            continue
        for doc in result.documents:
            doc_id = doc.id
            group = doc_id.group  # the two kinds inline: this loop sees every document
            if group == KUSTOMIZE_GROUP and doc_id.kind == "Kustomization":
                node = _node(cluster, doc, result.name, False)
            elif group == RSET_GROUP and doc_id.kind == "ResourceSet":
                node = _node(cluster, doc, result.name, True)
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
    applied = applied_to(cluster, nodes)
    remote = any(where != cluster for where in applied.values())
    index: dict[DocId, list[tuple[Key, Document]]] = {}
    indexes: dict[str, dict[DocId, list[tuple[Key, Document]]]] = {}
    for key, result in ordered:
        if result.ok:
            within = indexes.setdefault(applied.get(key, cluster), {}) if remote else None
            for doc in result.documents:
                entry = (key, doc)
                index.setdefault(doc.id, []).append(entry)
                if within is not None:
                    within.setdefault(doc.id, []).append(entry)
    whole = {k: tuple(v) for k, v in index.items()}
    if remote:
        split = {c: {k: tuple(v) for k, v in i.items()} for c, i in sorted(indexes.items())}
    else:  # every Kustomization applies here: the one index is the cluster's (shared)
        split = {cluster: whole} if any(r.ok for _k, r in ordered) else {}
    return ClusterGraph(
        cluster=cluster,
        nodes=dict(sorted(nodes.items())),
        results=by_key,
        index=whole,
        releases=_releases(cluster, whole, applied),
        applied={k: v for k, v in sorted(applied.items()) if v != cluster},
        indexes=split,
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


def applied_to(cluster: str, nodes: Mapping[Key, KsNode]) -> dict[Key, str]:
    """Each Kustomization's applied-to cluster: its own `kubeConfig`'s remote, else the
    applied-to cluster of the Kustomization declaring it (whose apply put the object where
    it is), else `cluster` (the bootstrap root; a declaring loop)."""
    by_target = {n.target: k for k, n in nodes.items()}
    out: dict[Key, str] = {}
    for start in nodes:
        chain: list[Key] = []
        key: Key | None = start
        found = cluster
        while key is not None and key not in out and key not in chain:
            node = nodes[key]
            chain.append(key)
            if node.kube_config is not None:
                found = node.kube_config.remote(cluster)
                key = None
                break
            key = by_target.get(node.declared_by or "")
        if key is not None and key in out:
            found = out[key]
        for k in chain:
            out[k] = found
    return out


def is_helm_release(doc_id: DocId) -> bool:
    return doc_id.group == HELM_GROUP and doc_id.kind == "HelmRelease"


def _release_spec(doc: Document, namespace: str) -> tuple[KubeConfigRef | None, tuple[Key, ...]]:
    """A HelmRelease document's `spec.kubeConfig` and `spec.dependsOn` (remembered by text)."""
    memo_key = (doc.text, namespace)
    found = _RELEASES.get(memo_key)
    if found is not None:
        return found
    spec = parse(doc).get("spec")
    deps: list[Key] = []
    items = spec.get("dependsOn") if isinstance(spec, dict) else None
    for item in items if isinstance(items, list) else []:
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name:
            dep_ns = item.get("namespace")
            deps.append((dep_ns if isinstance(dep_ns, str) and dep_ns else namespace, name))
    found = (kube_config(spec, namespace), tuple(deps))
    _RELEASES.put(memo_key, found)
    return found


def _releases(
    cluster: str,
    index: Mapping[DocId, Sequence[tuple[Key, Document]]],
    applied: Mapping[Key, str] | None = None,
) -> dict[Key, ReleaseNode]:
    """Every HelmRelease the cluster's Kustomizations render, with its dependsOn and the
    applied-to cluster of its chart (its own `kubeConfig`, else its first owner's)."""
    out: dict[Key, ReleaseNode] = {}
    found = [(doc_id, owners) for doc_id, owners in index.items() if is_helm_release(doc_id)]
    for doc_id, owners in sorted(found):
        namespace = doc_id.namespace or "default"
        remote, deps = _release_spec(owners[0][1], namespace)
        lands = (applied or {}).get(owners[0][0], cluster)
        key = (namespace, doc_id.name)
        out[key] = ReleaseNode(
            cluster,
            namespace,
            doc_id.name,
            tuple(sorted({k for k, _d in owners})),
            deps,
            remote.remote(cluster) if remote is not None else lands,
        )
    return out


# a side's graphs are asked for by the diff's analysis and by the hazard rules alike
_GRAPHS: memo.IdentityMemo[dict[str, ClusterGraph]] = memo.IdentityMemo("cluster graphs", 8)


def graphs(snapshot: Snapshot) -> dict[str, ClusterGraph]:
    """Cluster name -> graph, for every cluster that has flux targets in the snapshot."""
    known = _GRAPHS.get(snapshot)
    if known is not None:
        return dict(known)
    grouped: dict[str, list[TargetResult]] = {}
    for result in snapshot.results.values():
        if result.target.kind == "flux" and result.target.cluster is not None:
            grouped.setdefault(result.target.cluster, []).append(result)
    made = {c: cluster_graph(c, rs) for c, rs in sorted(grouped.items())}
    return dict(_GRAPHS.put(snapshot, made))


class Placement:
    """Which applied-to cluster each flux and helm target of one side applies to: a flux
    target its Kustomization's, a helm target its HelmRelease's chart's."""

    def __init__(self, cluster_graphs: Mapping[str, ClusterGraph]) -> None:
        self.flux: dict[str, str] = {}
        self.helm: dict[tuple[str, Key], str] = {}
        for cluster, graph in cluster_graphs.items():
            for key, where in graph.applied.items():
                node = graph.nodes.get(key)
                if node is not None:
                    self.flux[node.target] = where
            for key, release in graph.releases.items():
                if release.applied_to and release.applied_to != cluster:
                    self.helm[(cluster, key)] = release.applied_to

    def of(self, target: Target) -> str | None:
        """The target's applied-to cluster (None for a path target)."""
        cluster = target.cluster
        if cluster is None or target.kind == "path":
            return None
        if target.kind == "flux":
            return self.flux.get(target.name, cluster)
        parts = split_target_name(target.name.removesuffix("@helm"))
        if parts is None:
            return cluster
        return self.helm.get((cluster, (parts[1], parts[2])), cluster)

    @property
    def remote(self) -> bool:
        """Whether any target applies to a remote cluster."""
        return bool(self.flux or self.helm)


def placement(snapshot: Snapshot) -> Placement:
    return Placement(graphs(snapshot))
