"""crd-order: graded by what happens on a cluster without the CRD; one finding per pair."""

from __future__ import annotations

from typing import Any

from harness.core.config import Preinstalled
from harness.hazards.context import LintContext
from harness.hazards.rules.crd_order import RULE
from tests.hazards.snap import (
    KUBECONFIG,
    by_id,
    cm,
    crd,
    flux,
    helmrelease,
    hub_spoke,
    ks,
    lint_ctx,
    ns,
    obj,
    snapshot,
    spoke,
)

ISSUER = obj("ClusterIssuer", "ca", api="cert-manager.io/v1")
ACME = obj("ClusterIssuer", "acme", api="cert-manager.io/v1")
CERT = obj("Certificate", "wild", "gateway", "cert-manager.io/v1")
ROOT = "flux-system"


def _same(*extra: Any) -> Any:
    return snapshot(
        flux("dev", ROOT, ks("platform")),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager"), *extra),
    )


def test_cr_next_to_its_helm_installer_is_the_deadlock_one_finding_per_pair() -> None:
    (f,) = RULE.check_snapshot(lint_ctx(_same(ISSUER, ACME, CERT)))
    assert f.id == "crd-order:dev:platform"
    assert f.severity == "error" and "no matches for kind Certificate" in f.message
    assert f.documents == (
        "cert-manager.io/Certificate/gateway/wild",
        "cert-manager.io/ClusterIssuer/acme",
        "cert-manager.io/ClusterIssuer/ca",
    )
    assert "HelmRelease/cert-manager/cert-manager" in f.message
    assert "preinstalled:" in f.message  # the fix names the config key


def test_config_kustomization_depending_on_the_installer_is_fine() -> None:
    snap = snapshot(
        flux("dev", ROOT, ks("platform"), ks("config", depends=["platform"])),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager")),
        flux("dev", "config", ISSUER),
    )
    assert RULE.check_snapshot(lint_ctx(snap)) == []


def test_installer_elsewhere_without_dependency_is_a_slow_bootstrap_info() -> None:
    snap = snapshot(
        flux("dev", ROOT, ks("platform"), ks("config")),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager")),
        flux("dev", "config", ISSUER, CERT),
    )
    (f,) = RULE.check_snapshot(lint_ctx(snap))
    assert f.id == "crd-order:dev:config:platform"
    assert f.severity == "info" and f.kustomizations == ("config", "platform")
    assert len(f.documents) == 2 and "Flux retries" in f.message


def test_installer_that_waits_for_the_consumer_is_a_deadlock_warning() -> None:
    snap = snapshot(
        flux("dev", ROOT, ks("platform", depends=["config"]), ks("config")),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager")),
        flux("dev", "config", ISSUER),
    )
    (f,) = RULE.check_snapshot(lint_ctx(snap))
    assert f.severity == "warning" and "platform dependsOn config" in f.message


def test_consumer_declaring_the_installer_is_a_deadlock_warning() -> None:
    snap = snapshot(
        flux("dev", ROOT, ks("platform"), ISSUER),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager")),
    )
    (f,) = RULE.check_snapshot(lint_ctx(snap))
    assert f.id == "crd-order:dev:flux-system:platform"
    assert f.severity == "warning" and "flux-system declares platform" in f.message


def test_helmrelease_told_not_to_install_crds_is_not_the_installer() -> None:
    skip = helmrelease("cert-manager", "cert-manager")
    skip["spec"]["install"] = {"crds": "Skip"}
    assert RULE.check_snapshot(lint_ctx(_same_with(skip, ISSUER))) == []
    off = helmrelease("cert-manager", "cert-manager", crds={"enabled": False})
    assert RULE.check_snapshot(lint_ctx(_same_with(off, ISSUER))) == []


def _same_with(release: dict[str, Any], *extra: Any) -> Any:
    return snapshot(flux("dev", ROOT, ks("platform")), flux("dev", "platform", release, *extra))


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
    # same-Kustomization CRD fine; CRD elsewhere without dependsOn is info; gateway CRDs from
    # bootstrap (no CRD object, no likely installer) are left alone
    assert list(found) == ["crd-order:dev:apps:config"]
    assert found["crd-order:dev:apps:config"].severity == "info"
    assert found["crd-order:dev:apps:config"].documents == ("example.com/Widget/x/w",)


def test_plain_crd_in_the_declaring_kustomization_is_applied_first() -> None:
    snap = snapshot(
        flux("dev", ROOT, ks("apps"), crd("example.com", "Widget", "widgets")),
        flux("dev", "apps", obj("Widget", "w", "x", "example.com/v1")),
    )
    assert RULE.check_snapshot(lint_ctx(snap)) == []


def _declared(snap: Any, *entries: Preinstalled) -> LintContext:
    return LintContext(snap, preinstalled_entries=entries, config_file="harness.yaml")


def test_declared_preinstalled_group_turns_the_deadlock_into_a_latent_note() -> None:
    entry = Preinstalled(reason="talos installs cert-manager", crds=("cert-manager.io",))
    (f,) = RULE.check_snapshot(_declared(_same(ISSUER), entry))
    assert f.severity == "info" and f.id == "crd-order:dev:platform"
    assert "declared preinstalled in harness.yaml: talos installs cert-manager" in f.message


def test_declared_preinstalled_release_matches_the_helmrelease() -> None:
    entry = Preinstalled(reason="bootstrap.sh", helmreleases=("cert-manager/cert-manager",))
    (f,) = RULE.check_snapshot(_declared(_same(ISSUER), entry))
    assert f.severity == "info" and "bootstrap.sh" in f.message
    other = Preinstalled(reason="x", helmreleases=("other/cert-manager",), clusters=("prod",))
    (g,) = RULE.check_snapshot(_declared(_same(ISSUER), other))
    assert g.severity == "error"  # another cluster's bootstrap does not count


def test_preinstalled_crds_silence_cross_kustomization_order() -> None:
    snap = snapshot(
        flux("dev", ROOT, ks("platform"), ks("config")),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager")),
        flux("dev", "config", ISSUER),
    )
    entry = Preinstalled(reason="r", crds=("cert-manager.io/ClusterIssuer",))
    assert RULE.check_snapshot(_declared(snap, entry)) == []


def test_a_dependency_harness_did_not_render_is_trusted_as_the_provider() -> None:
    """The author's dependsOn on an external (skipped) Kustomization beats a name guess."""
    skipped_dep = snapshot(
        flux("dev", ROOT, ks("crds"), ks("platform", depends=["crds"])),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager"), CERT),
    )  # `crds` has no render: its source is external
    (f,) = RULE.check_snapshot(lint_ctx(skipped_dep))
    assert f.severity == "info" and f.id == "crd-order:dev:platform:unseen:crds"
    assert "dependsOn crds, which harness did not render" in f.message
    failed_dep = snapshot(
        flux("dev", ROOT, ks("crds"), ks("platform", depends=["crds"])),
        flux("dev", "crds", error="kustomize: boom"),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager"), CERT),
    )
    assert [g.severity for g in RULE.check_snapshot(lint_ctx(failed_dep))] == ["info"]
    rendered_dep = snapshot(
        flux("dev", ROOT, ks("crds"), ks("platform", depends=["crds"])),
        flux("dev", "crds", cm("nothing-here")),
        flux("dev", "platform", helmrelease("cert-manager", "cert-manager"), CERT),
    )  # rendered and holds no CRDs: the guess stands
    assert [g.severity for g in RULE.check_snapshot(lint_ctx(rendered_dep))] == ["error"]


def test_cost_is_linear_one_installer_check_per_group_and_release(
    monkeypatch: Any,
) -> None:
    """CRDs and likely installers are indexed once per cluster: a release is matched against
    each group once, however many documents of that group the Kustomizations apply (it was
    documents x releases: 168k checks on a 250-Kustomization repo), and the releases are
    matched by an index of their names (installers.Installers), not one by one."""
    from harness.hazards.rules import crd_order

    calls = []
    real = crd_order.Installers.matching
    monkeypatch.setattr(
        crd_order.Installers, "matching", lambda self, g: calls.append(g) or real(self, g)
    )
    releases = [helmrelease(f"app{i}", f"app{i}") for i in range(10)]
    groups = [f"g{i}.example.io" for i in range(5)]
    apps = [
        flux(
            "dev",
            f"app{k}",
            *(obj("Thing", f"t{k}-{j}", "ns", f"{g}/v1") for j in range(4) for g in groups),
        )
        for k in range(20)
    ]
    snap = snapshot(
        flux("dev", ROOT, ks("platform"), *(ks(f"app{k}") for k in range(20))),
        flux("dev", "platform", *releases),
        *apps,
    )
    RULE.check_snapshot(lint_ctx(snap))
    assert sorted(calls) == sorted(groups)  # one lookup per group, whatever the documents


def test_crds_serve_only_the_applied_to_cluster_they_land_in() -> None:
    """A HelmRelease the hub installs on the hub provides no CRD to a spoke's custom
    resources; one whose kubeConfig sends its chart to that spoke does."""
    local = helmrelease("cert-manager", "production")
    remote = {**local, "spec": {**local["spec"], "kubeConfig": KUBECONFIG}}

    def fleet(release: Any) -> Any:
        return hub_spoke(
            (ns("podinfo"),),
            root=(
                ks("infra", namespace="production"),
                ks("configs", namespace="production", kubeConfig=KUBECONFIG),
            ),
            extra=(spoke("infra", release), spoke("configs", ISSUER)),
        )

    assert RULE.check_snapshot(lint_ctx(fleet(local))) == []
    (f,) = RULE.check_snapshot(lint_ctx(fleet(remote)))
    assert f.id == "crd-order:hub:production/configs:production/infra"
    assert f.severity == "info" and "add dependsOn production/infra" in f.message


def test_a_provider_failing_in_head_is_unknown_not_a_new_pairing() -> None:
    """`crds` holds the CRD (config dependsOn it) and fails in head: config is not judged
    against the installer harness would guess (a HelmRelease in `extra`), a finding the
    change would seem to introduce."""
    from harness.hazards import engine

    def side(crds: Any) -> Any:
        return snapshot(
            flux("dev", ROOT, ks("crds"), ks("config", depends=["crds"]), ks("extra")),
            crds,
            flux("dev", "config", ISSUER),
            flux("dev", "extra", helmrelease("cert-manager", "cert-manager")),
        )

    base = side(flux("dev", "crds", crd("cert-manager.io", "ClusterIssuer", "clusterissuers")))
    head = side(flux("dev", "crds", error="kustomize: boom"))
    assert RULE.check_snapshot(lint_ctx(base)) == []
    assert "crd-order:dev:config:unseen:crds" in by_id(RULE.check_snapshot(lint_ctx(head)))
    report = engine.diff(base, head, rules=[RULE])
    assert [f.id for f in report.findings] == []
