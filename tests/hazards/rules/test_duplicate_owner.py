"""duplicate-owner: one identity rendered by two Kustomizations of one cluster."""

from __future__ import annotations

from harness.hazards.rules.duplicate_owner import RULE
from tests.hazards.snap import KUBECONFIG, cm, flux, hub_spoke, ks, lint_ctx, ns, snapshot, spoke


def test_two_owners_in_one_cluster_only() -> None:
    snap = snapshot(
        flux("dev", "flux-system", ks("a"), ks("b")),
        flux("dev", "a", cm("shared", "x")),
        flux("dev", "b", cm("shared", "x", k="2")),
        flux("prod", "a", cm("shared", "x")),
    )
    (f,) = RULE.check_snapshot(lint_ctx(snap))
    assert f.id == "duplicate-owner:dev:ConfigMap/x/shared"
    assert f.severity == "warning" and f.kustomizations == ("a", "b")
    assert "different content" in f.message


def test_one_namespace_in_two_spokes_is_no_duplicate_one_spoke_twice_is() -> None:
    """hub/tenants for production and for staging apply to two clusters (kubeConfig); the
    hub's own Namespace `production` and the spoke's are two objects too."""
    tenants = (ns("cert-manager"), ns("production"))
    assert RULE.check_snapshot(lint_ctx(hub_spoke(tenants))) == []
    twice = hub_spoke(
        tenants,
        root=(ks("extra", namespace="production", kubeConfig=KUBECONFIG),),
        extra=(spoke("extra", ns("cert-manager")),),
    )
    (f,) = RULE.check_snapshot(lint_ctx(twice))
    where = "hub -> Secret/production/cluster-kubeconfig"
    assert f.id == f"duplicate-owner:{where}:Namespace/cert-manager"
    assert f.cluster == "hub" and f.kustomizations == ("production/extra", "production/tenants")
    assert f"by production/extra and production/tenants in {where} (" in f.message
