"""Kubernetes facts the rules need: built-in API groups, system namespaces, data-bearing kinds."""

from __future__ import annotations

from collections.abc import Iterable

from harness.core.model import DocId, Document
from harness.flux.ksgraph import ClusterGraph, parse

# API groups served by the API server itself (no CRD needed). Not `*.k8s.io` wholesale:
# gateway.networking.k8s.io and snapshot.storage.k8s.io are CRDs.
BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
        "metrics.k8s.io",
    }
)
# Installed with Flux itself, before any Kustomization runs.
FLUX_GROUP_SUFFIX = ".toolkit.fluxcd.io"

SYSTEM_NAMESPACES = {
    "kube-system": "CoreDNS, metrics-server and the CNI",
    "kube-public": "the cluster-info ConfigMap bootstrap tokens rely on",
    "kube-node-lease": "the node heartbeats",
    "default": "the `kubernetes` Service every in-cluster client uses",
    "flux-system": "Flux's own controllers, which then cannot restore anything",
}
DATA_KINDS = {
    ("", "PersistentVolumeClaim"): "its volume (and the data on it, under a Delete reclaim policy)",
    ("", "PersistentVolume"): "the volume (and its data, under a Delete reclaim policy)",
    ("apps", "StatefulSet"): "its pods, and its volumes' data once their claims are cleaned up",
}
CRD_ID = ("apiextensions.k8s.io", "CustomResourceDefinition")


def is_builtin(group: str) -> bool:
    return group in BUILTIN_GROUPS or group.endswith(FLUX_GROUP_SUFFIX)


def is_crd(doc_id: DocId) -> bool:
    return (doc_id.group, doc_id.kind) == CRD_ID


def crd_target(doc: Document) -> tuple[str, str] | None:
    """(group, kind) a CustomResourceDefinition document defines."""
    spec = parse(doc).get("spec") or {}
    names = spec.get("names") or {} if isinstance(spec, dict) else {}
    if not isinstance(spec, dict) or not isinstance(names, dict):
        return None
    group, kind = spec.get("group"), names.get("kind")
    if not group or not kind:
        return None
    return str(group), str(kind)


def _objects(graph: ClusterGraph, where: str | None) -> Iterable[DocId]:
    return graph.index if where is None else graph.within(where)


def namespace_contents(
    graphs: Iterable[ClusterGraph], namespace: str, where: str | None = None
) -> list[str]:
    """Ids of every rendered object inside `namespace` (the Namespace itself excluded), of
    applied-to cluster `where` (None: of any)."""
    ids: set[DocId] = set()
    for graph in graphs:
        ids.update(i for i in _objects(graph, where) if i.namespace == namespace)
    return [str(i) for i in sorted(ids)]


def custom_resources(
    graphs: Iterable[ClusterGraph], group: str, kind: str, where: str | None = None
) -> list[str]:
    ids: set[DocId] = set()
    for graph in graphs:
        ids.update(i for i in _objects(graph, where) if i.group == group and i.kind == kind)
    return [str(i) for i in sorted(ids)]


def doc_order(doc_id: DocId) -> tuple[str, str, str, str]:
    """`DocId`'s sort order (its fields, as the dataclass compares them) as a sort key: a
    tuple of strings compares in C, the generated `__lt__` in Python."""
    return (doc_id.group, doc_id.kind, doc_id.namespace, doc_id.name)
