"""crd-order: a custom resource must not share an apply with the HelmRelease installing its CRD."""

from __future__ import annotations

from harness.hazards.crd_order import RULE
from tests.hazards.snap import by_id, cm, crd, flux, helmrelease, ks, lint_ctx, obj, snapshot

ISSUER = obj("ClusterIssuer", "ca", api="cert-manager.io/v1")
ROOT = "flux-system"


def test_cr_next_to_its_helm_installer_is_the_deadlock() -> None:
    snap = snapshot(
        flux("dev", ROOT, ks("platform")),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager"), ISSUER),
    )
    (f,) = RULE.check_snapshot(lint_ctx(snap))
    assert f.id == "crd-order:dev:platform:cert-manager.io/ClusterIssuer/ca"
    assert f.severity == "error" and "no matches for kind ClusterIssuer" in f.message


def test_config_kustomization_depending_on_the_installer_is_fine() -> None:
    snap = snapshot(
        flux("dev", ROOT, ks("platform"), ks("config", depends=["platform"])),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager")),
        flux("dev", "config", ISSUER),
    )
    assert RULE.check_snapshot(lint_ctx(snap)) == []


def test_installer_elsewhere_without_dependency_warns() -> None:
    snap = snapshot(
        flux("dev", ROOT, ks("platform"), ks("config")),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager")),
        flux("dev", "config", ISSUER),
    )
    (f,) = RULE.check_snapshot(lint_ctx(snap))
    assert f.severity == "warning" and f.kustomizations == ("config", "platform")


def test_plain_crds_builtins_and_unknown_groups() -> None:
    plan = obj("Plan", "k3s", "system-upgrade", "upgrade.cattle.io/v1")
    widget = obj("Widget", "w", "x", "example.com/v1")
    route = obj("HTTPRoute", "r", "x", "gateway.networking.k8s.io/v1")
    snap = snapshot(
        flux("dev", ROOT, ks("platform"), ks("config"), ks("apps")),
        flux("dev", "platform", crd("upgrade.cattle.io", "Plan", "plans"), plan, cm("c", "x")),
        flux("dev", "config", crd("example.com", "Widget", "widgets")),
        flux("dev", "apps", widget, route, helmrelease("podinfo", "x")),
    )
    found = by_id(RULE.check_snapshot(lint_ctx(snap)))
    # same-Kustomization CRD fine; CRD elsewhere without dependsOn warns; gateway CRDs from
    # bootstrap (no CRD object, no likely installer) are left alone
    assert list(found) == ["crd-order:dev:apps:example.com/Widget/x/w"]
    assert found["crd-order:dev:apps:example.com/Widget/x/w"].severity == "warning"
