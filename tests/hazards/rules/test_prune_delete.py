"""prune-delete: what leaves every Kustomization of a cluster is deleted (or orphaned)."""

from __future__ import annotations

from typing import Any

from harness.hazards.rules.prune_delete import RULE
from tests.hazards.snap import by_id, cm, crd, diff_ctx, flux, hub_spoke, ks, ns, obj, snapshot

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


def test_a_failed_owner_is_unjudged_and_says_so() -> None:
    base = _cluster([cm("x", "db")])
    head = snapshot(
        flux("dev", ROOT, ks("apps"), ks("infra")),
        flux("dev", "apps", error="kustomize failed"),
        flux("dev", "infra", cm("coredns", "kube-system")),
    )
    found = _diff(base, head)
    assert list(found) == ["prune-delete:unjudged:dev:apps"]
    f = found["prune-delete:unjudged:dev:apps"]
    assert f.severity == "warning" and f.documents == ("ConfigMap/db/x",)
    assert "apps failed to render in head" in f.message


def test_a_failed_target_elsewhere_does_not_silence_the_cluster() -> None:
    """Two PVC-backed apps removed while an unrelated Kustomization fails to render."""
    pvc_a, pvc_b = (
        obj("PersistentVolumeClaim", "data", "a"),
        obj("PersistentVolumeClaim", "data", "b"),
    )
    base = snapshot(
        flux("dev", ROOT, ks("a"), ks("b"), ks("broken")),
        flux("dev", "a", pvc_a),
        flux("dev", "b", pvc_b),
        flux("dev", "broken", error="kustomize: missing.yaml: no such file"),
    )
    head = snapshot(
        flux("dev", ROOT, ks("broken")),
        flux("dev", "broken", error="kustomize: missing.yaml: no such file"),
    )
    found = _diff(base, head)
    assert found["prune-delete:dev:a:PersistentVolumeClaim/a/data"].severity == "error"
    assert found["prune-delete:dev:b:PersistentVolumeClaim/b/data"].severity == "error"
    assert not any(":unjudged:" in i for i in found)


def test_a_failed_declarer_leaves_its_children_unjudged() -> None:
    base = snapshot(
        flux("dev", ROOT, ks("apps")),
        flux("dev", "apps", ks("child")),
        flux("dev", "child", cm("x", "db")),
    )
    head = snapshot(flux("dev", ROOT, ks("apps")), flux("dev", "apps", error="boom"))
    found = _diff(base, head)
    assert "prune-delete:unjudged:dev:child" in found
    assert (
        "apps, which declares child, failed to render"
        in found["prune-delete:unjudged:dev:child"].message
    )
    assert not any(i.startswith("prune-delete:dev:child:") for i in found)


def test_leaving_one_spoke_is_a_deletion_there_though_another_spoke_renders_it() -> None:
    base = hub_spoke((ns("podinfo"), cm("a", "podinfo")))
    head = hub_spoke((cm("a", "podinfo"),), staging=(ns("podinfo"), cm("a", "podinfo")))
    found = _diff(base, head)
    where = "hub -> Secret/production/cluster-kubeconfig"
    (f,) = found.values()
    assert f.id == "prune-delete:hub:production/tenants:Namespace/podinfo"
    assert f.severity == "error" and f"nothing in {where} renders it any more" in f.message
    assert "ConfigMap/podinfo/a" in f.message
