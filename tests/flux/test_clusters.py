"""Cluster entry discovery and naming."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from harness.core import config as config_mod
from harness.core.errors import ConfigError
from harness.flux import clusters
from harness.flux.includes import Includes
from harness.flux.targets import render_flux
from tests.conftest import Result, write_tree
from tests.flux.conftest import cm, flux_ks, ks_file, new_renderer, render_repo
from tests.gitkit import commit_all, init

Repo = Callable[[dict[str, str | bytes]], Path]


def overlay(name: str) -> dict[str, str]:
    return {
        f"clusters/{name}/kustomization.yaml": ks_file("../base", "sync.yaml"),
        f"clusters/{name}/sync.yaml": flux_ks("flux-system", f"./clusters/{name}"),
    }


def candidates(repo: Path) -> list[str]:
    found = clusters.candidates(config_mod.load(repo), Includes())
    return [p.relative_to(repo).as_posix() for p in found]


def test_base_included_by_overlays_is_not_a_cluster(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "clusters/base/kustomization.yaml": ks_file("apps.yaml"),
            "clusters/base/apps.yaml": flux_ks("apps", "./apps"),
            **overlay("dev"),
            **overlay("prod"),
            "apps/a.yaml": cm("a"),
        }
    )
    assert candidates(repo) == ["clusters/dev", "clusters/prod"]


def test_plain_directory_holding_flux_kustomizations_is_a_candidate(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "clusters/staging/apps.yaml": flux_ks("apps", "./apps"),
            "clusters/staging/flux-system/kustomization.yaml": ks_file("gotk-sync.yaml"),
            "clusters/staging/flux-system/gotk-sync.yaml": flux_ks(
                "flux-system", "./clusters/staging"
            ),
            "apps/a.yaml": cm("a"),
        }
    )
    # flux-system is pulled in by the generated kustomization of clusters/staging
    assert candidates(repo) == ["clusters/staging"]


def test_goldens_and_dot_directories_are_not_searched(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "clusters/dev/apps.yaml": flux_ks("apps", "./apps"),
            "goldens/flux/dev/apps.yaml": flux_ks("apps", "./apps"),
            ".hidden/apps.yaml": flux_ks("apps", "./apps"),
            "apps/a.yaml": cm("a"),
        }
    )
    assert candidates(repo) == ["clusters/dev"]


def test_a_directory_reaches_flux_through_a_chain_and_a_cycle(make_repo: Repo) -> None:
    # the backwards search must find `clusters/dev` through mid -> deep (a cycle back to
    # mid on the way), and must not credit `apps`, which reaches no Flux Kustomization
    repo = make_repo(
        {
            "clusters/dev/kustomization.yaml": ks_file("../../mid"),
            "mid/kustomization.yaml": ks_file("../deep"),
            "deep/kustomization.yaml": ks_file("../mid", "sync.yaml"),
            "deep/sync.yaml": flux_ks("flux-system", "./clusters/dev"),
            "apps/kustomization.yaml": ks_file("a.yaml"),
            "apps/a.yaml": cm("a"),
        }
    )
    # mid and deep reach each other, and clusters/dev reaches both: only clusters/dev stays
    assert candidates(repo) == ["clusters/dev"]


def test_a_kustomization_name_that_is_not_a_file_does_not_count(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "clusters/dev/apps.yaml": flux_ks("apps", "./apps"),
            "clusters/dev/kustomization.yaml/README": "a directory, not a kustomization\n",
            "apps/a.yaml": cm("a"),
        }
    )
    (repo / "apps" / "kustomization.yml").symlink_to(repo / "missing.yaml")  # broken link
    # clusters/dev is a plain directory holding a Flux Kustomization (no kustomization file)
    assert candidates(repo) == ["clusters/dev"]


def test_candidate_reached_through_a_flux_path_is_not_a_cluster(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "clusters/dev/tenants.yaml": flux_ks("tenants", "./tenants/dev"),
            "tenants/dev/kustomization.yaml": ks_file("../base"),
            "tenants/base/kustomization.yaml": ks_file("team.yaml"),
            "tenants/base/team.yaml": flux_ks("team", "./team", namespace="team"),
            "team/a.yaml": cm("a", "team"),
        }
    )
    assert candidates(repo) == ["clusters/dev", "tenants/dev"]
    results = render_repo(repo)
    assert sorted(results) == [
        "dev/flux-system/flux-system",
        "dev/flux-system/tenants",
        "dev/team/team",
    ]


def test_keep_breaks_mutual_reach_by_path() -> None:
    a, b, c = Path("/r/a"), Path("/r/b"), Path("/r/c")
    assert clusters.keep([a, b, c], {a: {b}, b: {a}, c: set()}) == [a, c]
    assert clusters.keep([a, b], {a: {b}}) == [a]
    assert clusters.keep([a, b], {}) == [a, b]


def test_names_use_basename_then_relative_path_on_collision(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    paths = [repo / "clusters/dev", repo / "east/prod", repo / "west/prod", repo]
    named = {c.path: c.name for c in clusters.names(paths, repo)}
    assert named == {
        repo / "clusters/dev": "dev",
        repo / "east/prod": "east/prod",
        repo / "west/prod": "west/prod",
        repo: "repo",
    }


def test_configured_clusters_replace_discovery(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "clusters/dev/apps.yaml": flux_ks("apps", "./apps"),
            "other/entry/apps.yaml": flux_ks("apps", "./apps"),
            "apps/a.yaml": cm("a"),
        }
    )
    results = render_repo(repo, clusters=("other/entry",))
    assert sorted(results) == ["entry/flux-system/apps", "entry/flux-system/flux-system"]


def test_configured_cluster_must_exist(make_repo: Repo) -> None:
    repo = make_repo({"apps/a.yaml": cm("a")})
    cfg = replace(config_mod.load(repo), clusters=("clusters/nope",))
    with pytest.raises(ConfigError, match="clusters: clusters/nope: not a directory"):
        clusters.configured(cfg)


def test_repo_without_flux_has_no_clusters(make_repo: Repo) -> None:
    repo = make_repo({"app/kustomization.yaml": ks_file("a.yaml"), "app/a.yaml": cm("a")})
    assert candidates(repo) == []
    assert render_repo(repo) == {}


def test_text_test_needs_group_and_kind() -> None:
    assert clusters.declares_flux_kustomization(flux_ks("a", "./a"))
    assert not clusters.declares_flux_kustomization(ks_file("a.yaml"))
    assert not clusters.declares_flux_kustomization(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Something\n"
    )


# -- evidence -----------------------------------------------------------------------------


def detect(repo: Path, **overrides: object) -> clusters.Detection:
    return clusters.detect(replace(config_mod.load(repo), **overrides), Includes())


def rels(repo: Path, detection: clusters.Detection) -> list[str]:
    return [e.path.relative_to(repo).as_posix() or "." for e in detection.entries]


def test_gotk_placeholders_mark_a_cluster_and_nothing_else_is_guessed(make_repo: Repo) -> None:
    placeholder = "# This file will be generated automatically by flux bootstrap.\n"
    repo = make_repo(
        {
            "clusters/dev/flux-system/gotk-sync.yaml": placeholder,
            "clusters/dev/flux-system/gotk-components.yaml": placeholder,
            "clusters/dev/apps.yaml": flux_ks("apps", "./apps"),
            # an app directory that declares its own Flux Kustomization: no cluster
            "apps/web/ks.yaml": flux_ks("web", "./apps/web/app"),
            "apps/web/app/a.yaml": cm("a"),
        }
    )
    found = detect(repo)
    assert not found.guessed
    assert rels(repo, found) == ["clusters/dev"]
    assert found.entries[0].evidence == "clusters/dev/flux-system/gotk-sync.yaml (flux bootstrap)"


def test_a_real_gotk_sync_names_its_cluster_directory(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "bootstrap/flux-system/gotk-sync.yaml": flux_ks("flux-system", "./clusters/prod"),
            "clusters/prod/a.yaml": cm("a"),
        }
    )
    assert rels(repo, detect(repo)) == ["clusters/prod"]


def test_a_failing_root_does_not_turn_app_directories_into_clusters(make_repo: Repo) -> None:
    placeholder = "# generated by flux bootstrap\n"
    repo = make_repo(
        {
            "clusters/dev/flux-system/gotk-sync.yaml": placeholder,
            "clusters/dev/kustomization.yaml": ks_file("apps.yaml", "missing.yaml"),
            "clusters/dev/apps.yaml": flux_ks("apps", "./apps"),
            "apps/kustomization.yaml": ks_file("web/ks.yaml", "db/ks.yaml"),
            "apps/web/ks.yaml": flux_ks("web", "./apps/web/app"),
            "apps/web/app/a.yaml": cm("web"),
            "apps/db/ks.yaml": flux_ks("db", "./apps/db/app"),
            "apps/db/app/a.yaml": cm("db"),
        }
    )
    results = render_repo(repo)
    assert sorted(results) == ["dev/flux-system/flux-system"]
    assert "missing.yaml" in (results["dev/flux-system/flux-system"].error or "")


def test_a_flux_instance_in_helm_values_marks_its_sync_path(make_repo: Repo) -> None:
    release = (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n"
        "  name: flux-instance\n  namespace: flux-system\nspec:\n"
        "  chartRef: {kind: OCIRepository, name: flux-instance}\n  values:\n    instance:\n"
        "      sync: {kind: GitRepository, url: 'https://x', ref: refs/heads/main,"
        " path: kubernetes/flux/cluster}\n"
    )
    repo = make_repo(
        {
            "kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml": release,
            "kubernetes/flux/cluster/ks.yaml": flux_ks("apps", "./kubernetes/apps"),
            "kubernetes/apps/debug/dnsutils/ks.yaml": flux_ks("dnsutils", "./kubernetes/apps/x"),
        }
    )
    found = detect(repo)
    assert rels(repo, found) == ["kubernetes/flux/cluster"]
    assert found.entries[0].sync is not None
    assert found.entries[0].evidence.startswith("HelmRelease values in kubernetes/apps/")


def test_a_flux_instance_whose_path_is_not_here_is_reported(make_repo: Repo) -> None:
    instance = (
        "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n"
        "  namespace: flux-system\nspec:\n  sync: {kind: GitRepository, url: x, ref: main,"
        " path: clusters/elsewhere}\n"
    )
    repo = make_repo({"fi.yaml": instance, "clusters/dev/apps.yaml": flux_ks("apps", "./apps")})
    found = detect(repo)
    assert found.problems == (
        "FluxInstance in fi.yaml syncs GitRepository path 'clusters/elsewhere', which is no "
        "directory of this repo: not a cluster here",
    )
    assert found.guessed and rels(repo, found) == ["clusters/dev"]


def test_a_self_managing_root_is_evidence(make_repo: Repo) -> None:
    """toboshii's shape: `flux-cluster` builds ./cluster/flux, the directory declaring it; a
    CRD directory with a Kustomization of another repo's source is no cluster."""
    source = (
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"
        "  name: {name}\n  namespace: flux-system\nspec:\n  url: {url}\n"
    )
    repo = make_repo(
        {
            "cluster/flux/flux-system/kustomization.yaml": ks_file("flux-cluster.yaml"),
            "cluster/flux/flux-system/flux-cluster.yaml": source.format(
                name="flux-cluster", url="https://example.invalid/home-ops"
            )
            + "---\n"
            + flux_ks("flux-cluster", "./cluster/flux", source="flux-cluster"),
            "cluster/flux/apps.yaml": flux_ks("apps", "./cluster/apps", source="flux-cluster"),
            "cluster/apps/a.yaml": cm("a"),
            "cluster/crds/dns/crds.yaml": source.format(
                name="dns", url="https://example.invalid/dns"
            )
            + "---\n"
            + flux_ks("dns-crds", "./charts/crds", source="dns"),
        }
    )
    found = detect(repo)
    assert not found.guessed
    assert rels(repo, found) == ["cluster/flux"]
    results = render_repo(repo)
    assert sorted(results) == ["flux/flux-system/apps", "flux/flux-system/flux-cluster"]


def test_guessed_clusters_skip_templates_and_say_so(make_repo: Repo) -> None:
    template = flux_ks("${APPNAME}-app", "./apps/${APPNAME}", namespace="${APPNAME}")
    repo = make_repo(
        {
            "clusters/dev/apps.yaml": flux_ks("apps", "./apps"),
            "apps/a.yaml": cm("a"),
            "templates/app/ks.yaml": template,
            "odd/${CLUSTER}/apps.yaml": flux_ks("apps", "./apps"),
        }
    )
    found = detect(repo)
    assert found.guessed
    assert rels(repo, found) == ["clusters/dev", "templates/app"]
    notices: list[str] = []
    results = render_flux(
        config_mod.load(repo), new_renderer(), jobs=2, strict=True, on_notice=notices.append
    )
    assert sorted(results) == ["dev/flux-system/apps", "dev/flux-system/flux-system"]
    assert notices == [
        "no bootstrap evidence (a flux-system/gotk-sync.yaml, a FluxInstance spec.sync, or a "
        "Flux Kustomization that builds its own directory): 1 cluster(s) guessed from "
        "directories holding Flux Kustomizations; pin the real one(s) in harness.yaml: "
        "`clusters: [clusters/dev]`"
    ]


def test_pin_line_shortens_long_lists() -> None:
    assert clusters.pin_line(["b", "a"]) == "`clusters: [a, b]`"
    many = [f"apps/{i:02}" for i in range(10)]
    assert clusters.pin_line(many) == (
        "`clusters: [apps/00, apps/01, apps/02, apps/03, apps/04, apps/05, apps/06, apps/07]`"
        " (+2 more)"
    )


KUBE_SUBDIR_GIT = """apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  url: https://example.invalid/home-ops
  ref: {branch: main}
  ignore: |
    /*
    !/kube
"""

KUBE_SUBDIR_FLUX_INSTALL = """apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: flux-manifests
  namespace: flux-system
spec:
  interval: 10m
  url: oci://ghcr.io/fluxcd/flux-manifests
  ref: {tag: v2.8.5}
---
"""


def test_kubernetes_under_a_subdirectory_is_one_cluster_named_after_it(
    tmp_path: Path, cli: Callable[..., Result]
) -> None:
    """Issue 33 (JJGadgets/Biohazard's shape): `kube/clusters/home/flux` holds the
    Kustomization building its own directory; `kube/bootstrap/flux` installs Flux from the
    upstream flux-manifests artifact (`path: ./`, an OCIRepository). That artifact's
    Kustomization made a phantom cluster `kube` (failing: `spec.path './kube' ... does
    not exist: kube/kube`), and the real one was named after the generic `flux`."""
    repo = init(tmp_path / "repo")
    write_tree(
        repo,
        {
            "README.md": "not in the artifact\n",
            "kube/bootstrap/flux/flux-install.yaml": KUBE_SUBDIR_FLUX_INSTALL
            + flux_ks(
                "zzz-flux", "./", sourceRef={"kind": "OCIRepository", "name": "flux-manifests"}
            ),
            "kube/clusters/home/flux/kustomization.yaml": ks_file(
                "flux-repo.yaml", "../../../bootstrap/flux/flux-install.yaml", "apps.yaml"
            ),
            "kube/clusters/home/flux/flux-repo.yaml": KUBE_SUBDIR_GIT
            + "---\n"
            + flux_ks("0-home-config", "./kube/clusters/home/flux"),
            "kube/clusters/home/flux/apps.yaml": flux_ks("app", "./kube/deploy/app"),
            "kube/deploy/app/cm.yaml": cm("app", "default"),
        },
    )
    commit_all(repo, "base")
    found = clusters.detect(config_mod.load(repo), Includes())
    assert [(e.path, e.evidence) for e in found.entries] == [
        (
            repo / "kube/clusters/home/flux",
            "Kustomization 0-home-config in kube/clusters/home/flux/flux-repo.yaml builds "
            "its own directory",
        )
    ]
    res = cli("init", "--repo", repo)
    assert res.code == 0, res.stdout + res.stderr
    # Flux's own artifact is another repo's: init marks it `external` (a TODO) under `home`
    assert "init: 1 path targets, 2 flux targets (1 skipped), clusters: home\n" in res.stdout
    assert "kube/kube" not in res.stdout + res.stderr
    rendered = cli("render", "--repo", repo, "-o", "json")
    assert rendered.code == 0, rendered.stderr
    names = sorted(t["name"] for t in json.loads(rendered.stdout)["targets"] if t["kind"] == "flux")
    assert names == ["home/flux-system/0-home-config", "home/flux-system/app"]


def test_generic_directory_names_give_way_to_the_meaningful_one(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    paths = [
        repo / "kube/clusters/home/flux",
        repo / "k8s/clusters/work/flux-system",
        repo / "cluster/flux",
        repo / "clusters/dev",
    ]
    named = {c.path.relative_to(repo).as_posix(): c.name for c in clusters.names(paths, repo)}
    assert named == {
        "kube/clusters/home/flux": "home",
        "k8s/clusters/work/flux-system": "work",
        "cluster/flux": "flux",  # nothing meaningful above it: the basename
        "clusters/dev": "dev",
    }


def test_a_scan_of_an_unchanged_tree_reads_no_file_again(
    make_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a scan found in a file is kept by its stat (core/filefacts.py): the next scan
    reads only the unchanged files that declare a FluxInstance sync (a file that merely
    says "sync" is not read again), and a changed one again."""
    instance = (
        "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\n"
        "metadata: {name: flux, namespace: flux-system}\n"
        "spec:\n  distribution: {version: 2.x}\n"
        "  sync: {kind: GitRepository, url: 'https://x', path: clusters/dev}\n"
    )
    repo = make_repo(
        {
            "clusters/base/kustomization.yaml": ks_file("apps.yaml"),
            "clusters/base/apps.yaml": flux_ks("apps", "./apps"),
            **overlay("dev"),
            "apps/a.yaml": cm("a"),
            "fleet/instance.yaml": instance,
        }
    )
    for path in repo.rglob("*.yaml"):  # saved long ago: past the racy window
        os.utime(path, (1_600_000_000, 1_600_000_000))
    read: list[str] = []
    real = clusters._read

    def counting(path: Path, root: Path) -> str | None:
        read.append(path.relative_to(repo).as_posix())
        return real(path, root)

    monkeypatch.setattr(clusters, "_read", counting)
    cfg = config_mod.load(repo)
    assert candidates(repo) == ["clusters/dev"] and "apps/a.yaml" in read
    assert "clusters/dev/kustomization.yaml" in read  # it says "sync", and declares none
    read.clear()
    assert candidates(repo) == ["clusters/dev"]
    assert read == ["fleet/instance.yaml"]  # the one file declaring a sync
    for _ in range(2):  # its sync is found from a kept fact as from a first read
        assert [s.path for s in clusters._scan(cfg).syncs] == ["clusters/dev"]
    read.clear()
    (repo / "apps/a.yaml").write_text(flux_ks("more", "./apps"))
    os.utime(repo / "apps/a.yaml", (1_600_000_100, 1_600_000_100))
    assert candidates(repo) == ["apps", "clusters/dev"]
    assert sorted(read) == ["apps/a.yaml", "fleet/instance.yaml"]
