"""Cluster entry discovery and naming."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from harness.core import config as config_mod
from harness.core.errors import ConfigError
from harness.flux import clusters
from harness.flux.includes import Includes
from tests.flux.conftest import cm, flux_ks, ks_file, render_repo

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
