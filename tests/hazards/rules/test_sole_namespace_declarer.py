"""sole-namespace-declarer: one component declares a Namespace others put objects in."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from harness.hazards.rules.sole_namespace_declarer import RULE
from tests import fluxrepo as fr
from tests.conftest import Result, write_tree
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
    assert f.severity == "info" and f.cluster is None
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


def _moved(name: str, platform_depends: bool = False):  # type: ignore[no-untyped-def]
    objs = [ns(name), cm("cilium", name)]
    base = snapshot(
        flux("dev", "flux-system", ks("platform")),
        flux("dev", "platform", *objs, cm("coredns", name)),
    )
    deps = ["cilium"] if platform_depends else []
    head = snapshot(
        flux("dev", "flux-system", ks("platform", depends=deps), ks("cilium")),
        flux("dev", "platform", cm("coredns", name)),
        flux("dev", "cilium", *objs),
    )
    return base, head


def test_diff_notes_the_namespace_changing_owner_and_users_not_depending() -> None:
    found = by_id(RULE.check_diff(diff_ctx(*_moved("media"))))
    f = found["sole-namespace-declarer:dev:cilium:Namespace/media"]
    assert f.severity == "info" and "platform do not dependsOn cilium" in f.message
    (g,) = RULE.check_diff(diff_ctx(*_moved("media", platform_depends=True)))
    assert g.severity == "info" and "do not dependsOn" not in g.message


def test_diff_namespace_that_exists_before_flux_needs_no_order() -> None:
    (f,) = RULE.check_diff(diff_ctx(*_moved("kube-system")))
    assert "pruning or removing cilium deletes their objects" in f.message
    assert "do not dependsOn" not in f.message  # kube-system exists before any Kustomization


def test_another_cluster_s_directories_neither_declare_nor_use(
    tmp_path: Path, cli: Callable[..., Result]
) -> None:
    """Two clusters with trees of their own: staging's media directory (a subset of main's
    by identities) is never named as the declarer of main's Namespace (szinn's homelab)."""
    files: dict[str, str] = {}
    for c in ("main", "staging"):
        files.update(fr.cluster({"media": fr.flux_ks("media", f"./apps/{c}/media")}))
        files = {k.replace("clusters/dev", f"clusters/{c}"): v for k, v in files.items()}
        files[f"clusters/{c}/sync.yaml"] = fr.ROOT_KS.replace("clusters/dev", f"clusters/{c}")
        files[f"apps/{c}/media/kustomization.yaml"] = fr.kustomization(
            "namespace.yaml", "plex.yaml"
        )
        files[f"apps/{c}/media/namespace.yaml"] = fr.namespace("media")
        files[f"apps/{c}/media/plex.yaml"] = fr.flux_ks("plex", f"./apps/{c}/media/plex")
        files[f"apps/{c}/media/plex/kustomization.yaml"] = fr.kustomization(
            "deployment.yaml", namespace="media"
        )
        files[f"apps/{c}/media/plex/deployment.yaml"] = fr.deployment("plex")
    files["apps/main/media/kustomization.yaml"] = fr.kustomization(
        "namespace.yaml", "plex.yaml", "extra.yaml"
    )
    files["apps/main/media/extra.yaml"] = fr.configmap("extra")  # main's is the larger one
    repo = write_tree(tmp_path / "repo", files)
    res = cli("lint", "--repo", repo, "-o", "json", "--fail-on", "info")
    findings = [f for f in json.loads(res.stdout)["findings"] if f["rule"] == RULE.id]
    assert sorted(f["id"] for f in findings) == [
        "sole-namespace-declarer:apps/main/media:Namespace/media",
        "sole-namespace-declarer:apps/staging/media:Namespace/media",
    ]
    for f in findings:
        cluster = f["id"].split("/")[1]
        assert f"apps/{cluster}/media/plex" in f["message"]
        assert ("staging" in f["message"]) == (cluster == "staging")
