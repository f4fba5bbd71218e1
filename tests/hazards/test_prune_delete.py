"""prune-delete: what leaves every Kustomization of a cluster is deleted (or orphaned)."""

from __future__ import annotations

from typing import Any

from harness.hazards.prune_delete import RULE
from tests.hazards.snap import by_id, cm, crd, diff_ctx, flux, ks, ns, obj, snapshot

ROOT = "flux-system"


def _cluster(apps: list[dict[str, Any]], *, prune: bool = True, extra: Any = ()) -> Any:
    return snapshot(
        flux("dev", ROOT, ks("apps", prune=prune), ks("infra")),
        flux("dev", "apps", *apps),
        flux("dev", "infra", cm("coredns", "kube-system"), *extra),
    )


def _diff(base: Any, head: Any) -> dict[str, Any]:
    return by_id(RULE.check_diff(diff_ctx(base, head)))


def test_namespace_deleted_with_contents_and_system_note() -> None:
    base = _cluster([ns("kube-system"), cm("a", "kube-system")])
    found = _diff(base, _cluster([cm("a", "kube-system")]))
    f = found["prune-delete:dev:apps:Namespace/kube-system"]
    assert f.severity == "error" and f.cluster == "dev" and f.kustomizations == ("apps",)
    assert "ConfigMap/kube-system/coredns" in f.message
    assert "CoreDNS, metrics-server and the CNI" in f.message
    assert list(found) == ["prune-delete:dev:apps:Namespace/kube-system"]


def test_crd_pvc_statefulset_are_errors_and_others_info() -> None:
    pvc = obj("PersistentVolumeClaim", "data", "db")
    sts = obj("StatefulSet", "db", "db", "apps/v1")
    widget = crd("example.com", "Widget", "widgets")
    w = obj("Widget", "w1", "db", "example.com/v1")
    base = _cluster([pvc, sts, widget, cm("plain", "db")], extra=[w])
    found = _diff(base, _cluster([], extra=[w]))
    assert {i: f.severity for i, f in found.items()} == {
        "prune-delete:dev:apps:PersistentVolumeClaim/db/data": "error",
        "prune-delete:dev:apps:apps/StatefulSet/db/db": "error",
        "prune-delete:dev:apps:apiextensions.k8s.io/CustomResourceDefinition/widgets.example.com": (
            "error"
        ),
        "prune-delete:dev:apps:ConfigMap/db/plain": "info",
    }
    crd_msg = found[
        "prune-delete:dev:apps:apiextensions.k8s.io/CustomResourceDefinition/widgets.example.com"
    ].message
    assert "every Widget (example.com)" in crd_msg and "example.com/Widget/db/w1" in crd_msg


def test_prune_false_and_annotations_orphan_instead() -> None:
    base = _cluster([cm("x", "db")], prune=False)
    (f,) = _diff(base, _cluster([], prune=False)).values()
    assert f.severity == "info" and "orphaned" in f.message and "prune: false" in f.message
    marked = cm("y", "db")
    marked["metadata"]["annotations"] = {"kustomize.toolkit.fluxcd.io/prune": "disabled"}
    (g,) = _diff(_cluster([marked]), _cluster([])).values()
    assert g.severity == "info" and "prune: disabled" in g.message


def test_moved_documents_are_not_deleted() -> None:
    base = _cluster([cm("x", "db")])
    head = _cluster([], extra=[cm("x", "db")])
    assert _diff(base, head) == {}


def test_removed_kustomization_garbage_collects_unless_parent_keeps_it() -> None:
    base = _cluster([cm("x", "db")])
    head = snapshot(
        flux("dev", ROOT, ks("infra")),
        flux("dev", "infra", cm("coredns", "kube-system")),
    )
    found = _diff(base, head)
    assert "prune-delete:dev:apps:ConfigMap/db/x" in found
    assert "garbage-collects" in found["prune-delete:dev:apps:ConfigMap/db/x"].message
    assert (
        found[
            f"prune-delete:dev:{ROOT}:kustomize.toolkit.fluxcd.io/Kustomization/flux-system/apps"
        ].severity
        == "info"
    )


def test_cluster_with_a_failed_head_target_is_skipped() -> None:
    base = _cluster([cm("x", "db")])
    head = snapshot(
        flux("dev", ROOT, ks("apps"), ks("infra")),
        flux("dev", "apps", error="kustomize failed"),
        flux("dev", "infra", cm("coredns", "kube-system")),
    )
    assert _diff(base, head) == {}
