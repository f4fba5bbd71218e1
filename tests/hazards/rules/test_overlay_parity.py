"""overlay-parity: clusters differ only in substituted values, and never render each other's."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from harness.hazards.rules.overlay_parity import RULE, distinctive
from tests.hazards.snap import by_id, cm, flux, helmrelease, ks, lint_ctx, path, snapshot

ROOT = "flux-system"
PLATFORM = ks("platform", subst_from=["cluster-vars"])
SOURCE = helmrelease("cilium", "kube-system", k8sServiceHost="${K3S_API_HOST}", replicas=1)


def _snap(
    dev: dict[str, Any],
    prod: dict[str, Any],
    *,
    source: Any = SOURCE,
    prod_host: str = "192.168.2.10",
    extra: tuple[Any, ...] = (),
) -> Any:
    def vars_(host: str, env: str) -> dict[str, Any]:
        return cm("cluster-vars", ROOT, K3S_API_HOST=host, CLUSTER_ENV=env)

    return snapshot(
        path("platform", source),
        flux("dev", ROOT, PLATFORM, ks(ROOT, "./clusters/dev"), vars_("192.168.1.10", "dev")),
        flux("dev", "platform", dev, *extra),
        flux("prod", ROOT, PLATFORM, ks(ROOT, "./clusters/prod"), vars_(prod_host, "prod")),
        flux("prod", "platform", prod, *extra),
    )


def _hr(host: str, replicas: int = 1) -> dict[str, Any]:
    return helmrelease("cilium", "kube-system", k8sServiceHost=host, replicas=replicas)


def _lint(snap: Any) -> dict[str, Any]:
    return by_id(RULE.check_snapshot(lint_ctx(snap)))


def test_substituted_differences_are_fine_and_roots_with_own_paths_are_skipped() -> None:
    assert _lint(_snap(_hr("192.168.1.10"), _hr("192.168.2.10"))) == {}


def test_a_non_substituted_difference_is_reported_with_its_field() -> None:
    found = _lint(_snap(_hr("192.168.1.10"), _hr("192.168.2.10", replicas=3)))
    (f,) = found.values()
    assert (
        f.id
        == "overlay-parity:dev,prod:platform:helm.toolkit.fluxcd.io/HelmRelease/kube-system/cilium"
    )
    assert f.severity == "info" and "spec.values.replicas: dev: 1, prod: 3" in f.message


def test_a_document_in_one_cluster_only_is_reported() -> None:
    found = _lint(_snap(_hr("192.168.1.10"), _hr("192.168.2.10"), extra=()))
    assert found == {}
    snap = _snap(_hr("192.168.1.10"), _hr("192.168.2.10"))
    extra = flux("dev", "platform", _hr("192.168.1.10"), cm("dev-only", "x"))
    snap = replace(snap, results={**snap.results, extra.name: extra})
    (f,) = _lint(snap).values()
    assert "only in dev, not in prod" in f.message


def test_dev_literal_rendered_into_prod_is_a_warning() -> None:
    literal = helmrelease("cilium", "kube-system", k8sServiceHost="192.168.1.10", replicas=1)
    found = _lint(_snap(_hr("192.168.1.10"), _hr("192.168.1.10"), source=literal))
    (f,) = found.values()
    assert f.id == (
        "overlay-parity:prod:platform:helm.toolkit.fluxcd.io/HelmRelease/kube-system/cilium:"
        "spec.values.k8sServiceHost"
    )
    assert f.severity == "warning" and "dev's K3S_API_HOST" in f.message
    assert "${K3S_API_HOST}" in f.message and "192.168.2.10" in f.message


def test_two_clusters_sharing_an_address_variable_is_a_warning() -> None:
    snap = _snap(_hr("192.168.1.10"), _hr("192.168.1.10"), prod_host="192.168.1.10")
    found = _lint(snap)
    f = found["overlay-parity:dev,prod:K3S_API_HOST:shared"]
    assert f.severity == "warning" and "both set K3S_API_HOST to 192.168.1.10" in f.message


def test_distinctive_values() -> None:
    assert distinctive("192.168.1.10") and distinctive("home.example.dev")
    assert not distinctive("debug") and not distinctive("longhorn-single-replica")
    assert not distinctive("3")


def test_a_foreign_value_is_found_at_either_end_of_any_string() -> None:
    """The joined-strings pre-check never hides a value a single string holds (the value
    first, last, alone, or between two other strings of the document)."""

    def prod_warnings(host: str) -> list[str]:
        rendered = helmrelease("cilium", "kube-system", k8sServiceHost=host, a="b", replicas=1)
        literal = helmrelease("cilium", "kube-system", k8sServiceHost=host, a="b", replicas=1)
        snap = _snap(_hr("192.168.1.10"), rendered, source=literal)
        return [f.id for f in _lint(snap).values() if f.severity == "warning" and ":prod:" in f.id]

    for host in ("192.168.1.10", "http://192.168.1.10", "192.168.1.10:6443 x", "x 192.168.1.10"):
        assert prod_warnings(host), host
    for host in ("192.168.1.100", "a192.168.1.10", "192.168.1.10-x", "192.168.2.10"):
        assert not prod_warnings(host), host


def test_a_value_equal_to_a_variable_this_cluster_lacks_is_a_coincidence() -> None:
    """joryirving's homelab: dev hard-codes a path (an openebs basePath in a shared base)
    that prod sets as STORAGE_PATH for an unrelated app; dev has no STORAGE_PATH, so nothing
    of prod's reached dev. Were dev to set STORAGE_PATH otherwise, it would be a leak."""
    hostpath = "/var/mnt/local-hostpath"
    openebs = helmrelease("openebs", "storage", basePath=hostpath, replicas=1)

    def snap(dev_storage: str | None) -> Any:
        dev_vars = {"STORAGE_PATH": dev_storage} if dev_storage else {"OTHER": "x"}
        return snapshot(
            flux(
                "dev",
                ROOT,
                ks("storage", subst_from=["storage-vars"]),
                cm("storage-vars", ROOT, **dev_vars),
            ),
            flux("dev", "storage", openebs),
            flux(
                "prod",
                ROOT,
                ks("storage", subst_from=["storage-vars"]),
                cm("storage-vars", ROOT, STORAGE_PATH=hostpath),
            ),
            flux("prod", "storage", openebs),
        )

    assert not [f for f in _lint(snap(None)).values() if hostpath in f.message]
    leaked = [f for f in _lint(snap("/srv/dev-storage")).values() if hostpath in f.message]
    assert [f.cluster for f in leaked] == ["dev"]
    assert "prod's STORAGE_PATH" in leaked[0].message
