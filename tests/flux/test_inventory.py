"""`harness get`'s rows: every Kustomization and HelmRelease of a Snapshot with its status."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.core.model import HelmInfo, Snapshot, Target, TargetResult
from harness.flux.inventory import helm_releases, kustomizations, matching
from tests.hazards.snap import docs, flux, helmrelease, ks, ns, snapshot


def _snap() -> Snapshot:
    snap = snapshot(
        flux(
            "dev",
            "flux-system",
            ks("platform", "./platform", depends=["flux-system"]),
            ks("apps", "./apps", depends=["platform"], suspend=True),
            ks("tenant", "./tenant", source="tenant-repo"),
        ),
        flux("dev", "platform", ns("kube-system"), ns("cert-manager")),
        flux("dev", "apps", error="apps/kustomization.yaml: kustomize: no such file"),
    )
    return replace(
        snap, skipped={"dev/flux-system/tenant": "GitRepository/tenant-repo is external"}
    )


def test_each_kustomization_has_its_spec_documents_and_status() -> None:
    rows = {r.name: r for r in kustomizations(_snap())}
    assert sorted(rows) == ["apps", "flux-system", "platform", "tenant"]
    platform = rows["platform"]
    assert (platform.cluster, platform.namespace, platform.target) == (
        "dev",
        "flux-system",
        "dev/flux-system/platform",
    )
    assert platform.path == "./platform"
    assert platform.source == "GitRepository/flux-system/flux-system"
    assert platform.depends_on == ("flux-system/flux-system",)
    assert (platform.status, platform.documents, platform.suspend) == ("rendered", 2, False)
    apps = rows["apps"]
    assert (apps.status, apps.documents, apps.suspend) == ("failed", None, True)
    assert apps.reason == "apps/kustomization.yaml: kustomize: no such file"
    tenant = rows["tenant"]
    assert (tenant.status, tenant.reason) == ("skipped", "GitRepository/tenant-repo is external")
    assert tenant.source == "GitRepository/flux-system/tenant-repo"


def test_the_synthesised_root_has_its_directory_as_path() -> None:
    root = {r.name: r for r in kustomizations(_snap(), repo=Path("/repo"))}["flux-system"]
    assert (root.path, root.source, root.status, root.documents) == (
        "./flux-system",
        "",
        "rendered",
        3,
    )


def test_kustomizations_a_failed_parent_hides_are_not_judged() -> None:
    rows = kustomizations(
        _snap(), hidden={"dev/flux-system/apps": ("apps/web", "flux-system/platform")}
    )
    web = next(r for r in rows if r.name == "web")
    assert (web.cluster, web.namespace, web.target, web.status) == (
        "dev",
        "apps",
        "dev/apps/web",
        "not judged",
    )
    assert web.reason == "declared under dev/flux-system/apps, which failed"
    assert [r.name for r in rows].count("platform") == 1  # a rendered one stays as it is


def test_a_kustomization_without_target_is_not_judged() -> None:
    snap = snapshot(flux("dev", "flux-system", ks("left-out", "./out")))
    row = next(r for r in kustomizations(snap) if r.name == "left-out")
    assert (row.status, row.documents) == ("not judged", None)
    assert row.reason == "excluded from this run (include/exclude, selection)"


def _helm(name: str, namespace: str, *, error: str | None = None, unreachable: bool = False):
    target = Target(
        f"dev/{namespace}/{name}",
        "helm",
        Path("/repo"),
        cluster="dev",
        helm=HelmInfo(owner="dev/flux-system/platform", unreachable=unreachable),
    )
    if error is not None:
        return TargetResult(target, error=error)
    return TargetResult(target, docs(ns(f"{name}-ns")), "sha")


def _releases() -> Snapshot:
    cilium = helmrelease("cilium", "kube-system")
    cilium["spec"]["chart"]["spec"].update(
        version="1.16.5", sourceRef={"kind": "HelmRepository", "name": "cilium"}
    )
    cilium["spec"]["dependsOn"] = [{"name": "cert-manager", "namespace": "cert-manager"}]
    web = helmrelease("web", "apps")
    web["spec"] = {"chartRef": {"kind": "OCIRepository", "name": "web"}, "suspend": True}
    return snapshot(
        flux("dev", "flux-system", ks("platform", "./platform")),
        flux(
            "dev",
            "platform",
            cilium,
            helmrelease("cert-manager", "cert-manager"),
            web,
            helmrelease("broken", "apps"),
        ),
    )


def test_helm_releases_while_helm_targets_are_off_are_skipped() -> None:
    rows = {r.name: r for r in helm_releases(_releases())}
    assert [(r.namespace, r.name) for r in rows.values()] == [
        ("apps", "broken"),
        ("apps", "web"),
        ("cert-manager", "cert-manager"),
        ("kube-system", "cilium"),
    ]
    cilium = rows["cilium"]
    assert (cilium.chart, cilium.version, cilium.source) == (
        "cilium",
        "1.16.5",
        "HelmRepository/kube-system/cilium",
    )
    assert cilium.depends_on == ("cert-manager/cert-manager",)
    assert cilium.kustomizations == ("flux-system/platform",)
    assert (cilium.status, cilium.reason) == (
        "skipped",
        "helm targets are off (--helm, config helm:)",
    )
    web = rows["web"]
    assert (web.chart, web.source, web.suspend) == ("", "OCIRepository/apps/web", True)


def test_helm_releases_take_their_helm_targets_status() -> None:
    snap = _releases()
    results = {
        **snap.results,
        **{
            r.name: r
            for r in (
                _helm("cilium", "kube-system"),
                _helm("cert-manager", "cert-manager", error="fetch: 404", unreachable=True),
                _helm("broken", "apps", error="values: bad"),
            )
        },
    }
    rows = {r.name: r for r in helm_releases(replace(snap, results=results), helm=True)}
    assert (rows["cilium"].status, rows["cilium"].documents) == ("rendered", 1)
    assert rows["cilium"].target == "dev/kube-system/cilium"
    assert (rows["cert-manager"].status, rows["cert-manager"].reason) == (
        "not judged",
        "fetch: 404",
    )
    assert (rows["broken"].status, rows["broken"].reason) == ("failed", "values: bad")
    assert (rows["web"].status, rows["web"].reason) == (
        "skipped",
        "not selected (config helm:, the selection)",
    )


def test_a_helm_target_named_with_the_helm_suffix_is_found() -> None:
    snap = _releases()
    suffixed = _helm("cilium", "kube-system")
    suffixed = replace(
        suffixed, target=replace(suffixed.target, name="dev/kube-system/cilium@helm")
    )
    rows = helm_releases(replace(snap, results={**snap.results, suffixed.name: suffixed}))
    cilium = next(r for r in rows if r.name == "cilium")
    assert (cilium.status, cilium.target) == ("rendered", "dev/kube-system/cilium@helm")


def test_matching_takes_names_globs_and_clusters() -> None:
    rows = kustomizations(
        snapshot(
            flux("dev", "flux-system", ks("platform"), ks("apps")),
            flux("prod", "flux-system", ks("platform")),
        )
    )
    assert [(r.cluster, r.name) for r in matching(rows, ("platform",))] == [
        ("dev", "platform"),
        ("prod", "platform"),
    ]
    assert [r.name for r in matching(rows, ("flux-system/a*",))] == ["apps"]
    assert [r.cluster for r in matching(rows, ("prod/*/platform",))] == ["prod"]
    assert [r.name for r in matching(rows, (), ("prod",))] == ["flux-system", "platform"]
