"""duplicate-owner: one identity rendered by two Kustomizations of one cluster."""

from __future__ import annotations

from harness.hazards.rules.duplicate_owner import RULE
from tests.hazards.snap import cm, flux, ks, lint_ctx, snapshot


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
