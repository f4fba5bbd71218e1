"""sole-namespace-declarer: one component declares a Namespace others put objects in."""

from __future__ import annotations

from harness.hazards.sole_namespace_declarer import RULE
from tests.hazards.snap import by_id, cm, diff_ctx, flux, ks, lint_ctx, ns, path, snapshot

CILIUM = [ns("kube-system"), cm("cilium", "kube-system")]


def _paths(*extra):  # type: ignore[no-untyped-def]
    return [
        path("platform/cilium", *CILIUM),
        path("platform/coredns", cm("coredns", "kube-system")),
        path("platform", *CILIUM, cm("coredns", "kube-system")),
        *extra,
    ]


def test_lint_names_the_declarer_and_the_other_components() -> None:
    snap = snapshot(
        *_paths(), flux("dev", "flux-system", ks("platform")), flux("dev", "platform", *CILIUM)
    )
    (f,) = RULE.check_snapshot(lint_ctx(snap))
    assert f.id == "sole-namespace-declarer:platform/cilium:Namespace/kube-system"
    assert f.severity == "warning" and f.cluster is None
    assert f.kustomizations == ("platform",)
    assert "platform/coredns" in f.message and "platform/cilium" in f.message
    assert "ConfigMap/kube-system/coredns" in f.documents


def test_ordinary_namespace_is_info_and_two_declarers_are_fine() -> None:
    app = [ns("media"), cm("a", "media")]
    snap = snapshot(path("apps/a", *app), path("apps/b", cm("b", "media")))
    (f,) = RULE.check_snapshot(lint_ctx(snap))
    assert f.severity == "info"
    both = snapshot(path("apps/a", *app), path("apps/b", ns("media"), cm("b", "media")))
    assert RULE.check_snapshot(lint_ctx(both)) == []


def test_subdirectories_of_the_declarer_are_not_other_components() -> None:
    snap = snapshot(
        path("apps/wave-1", ns("media"), cm("radarr", "media")),
        path("apps/wave-1/radarr", cm("radarr", "media")),
    )
    assert RULE.check_snapshot(lint_ctx(snap)) == []


def test_diff_warns_when_the_namespace_changes_owner_and_users_do_not_depend() -> None:
    base = snapshot(
        flux("dev", "flux-system", ks("platform")),
        flux("dev", "platform", *CILIUM, cm("coredns", "kube-system")),
    )
    head = snapshot(
        flux("dev", "flux-system", ks("platform"), ks("cilium")),
        flux("dev", "platform", cm("coredns", "kube-system")),
        flux("dev", "cilium", *CILIUM),
    )
    found = by_id(RULE.check_diff(diff_ctx(base, head)))
    f = found["sole-namespace-declarer:dev:cilium:Namespace/kube-system"]
    assert f.severity == "warning" and "platform do not dependsOn cilium" in f.message
    ordered = snapshot(
        flux("dev", "flux-system", ks("platform", depends=["cilium"]), ks("cilium")),
        *list(head.results.values())[1:],
    )
    (g,) = RULE.check_diff(diff_ctx(base, ordered))
    assert g.severity == "info"
