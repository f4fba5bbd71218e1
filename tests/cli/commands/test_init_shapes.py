"""`harness init && harness check` on the shapes real Flux repos have today.

Built from the semantics in temp repos (tests/artifactrepo.py): the official example with
its ArtifactGenerator, a FluxInstance fleet on OCI artifacts of the repo itself, an OCI
artifact pushed from a subdirectory, and a repo without bootstrap evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests import artifactrepo
from tests.conftest import Result
from tests.flux.conftest import cm, flux_ks

Repo = Callable[[dict[str, str | bytes]], Path]
Cli = Callable[..., Result]


def init_and_check(cli: Cli, repo: Path) -> tuple[Result, Result]:
    init = cli("init", "--repo", repo)
    assert init.code == 0, init.stderr + init.stdout
    check = cli("check", "--repo", repo)
    assert check.code == 0, check.stderr + check.stdout
    return init, check


def lint_is_clean(cli: Cli, repo: Path) -> None:
    """A healthy repo of the shape gates green: no finding is an artefact of the shape."""
    lint = cli("lint", "--repo", repo)
    assert lint.code == 0, lint.stdout + lint.stderr
    assert "lint: 0 errors, 0 warnings" in lint.stdout


@pytest.mark.slow
def test_the_official_example_renders_all_eight_kustomizations(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo(artifactrepo.helm_example())
    init, check = init_and_check(cli, repo)
    assert "init: 7 path targets, 8 flux targets (0 skipped), clusters: production, staging" in (
        init.stdout
    )
    assert "0 external source(s) marked TODO" in init.stdout
    assert "render-golden: 7/7 path targets, 8/8 flux targets match" in check.stdout
    assert "warning" not in init.stderr + check.stderr
    uncached = cli("check", "--repo", repo, "--no-cache")
    assert (uncached.code, uncached.stdout) == (check.code, check.stdout)
    golden = repo / "goldens/flux/staging/flux-system/apps.yaml"
    assert "env: staging" in golden.read_text()
    lint_is_clean(cli, repo)


@pytest.mark.slow
def test_an_edit_copied_into_an_artifact_is_seen_an_excluded_one_is_not(
    make_repo: Repo, cli: Cli
) -> None:
    repo = make_repo(artifactrepo.helm_example())
    init_and_check(cli, repo)
    (repo / "apps/base/README.md").write_text("excluded by the generator: no change\n")
    assert cli("check", "--repo", repo).code == 0
    release = repo / "apps/base/podinfo/release.yaml"
    release.write_text(release.read_text().replace("replicas: '1'", "replicas: '3'"))
    changed = cli("check", "--repo", repo)
    assert changed.code == 1, changed.stdout + changed.stderr
    assert "production/flux-system/apps" in changed.stdout
    assert "staging/flux-system/apps" in changed.stdout
    uncached = cli("check", "--repo", repo, "--no-cache")
    assert (uncached.code, uncached.stdout) == (changed.code, changed.stdout)


def test_an_edit_of_the_generator_changes_what_is_rendered(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo(artifactrepo.helm_example(("staging",)))
    init_and_check(cli, repo)
    gen = repo / "clusters/staging/artifacts.yaml"
    text = gen.read_text().replace("'@monorepo/infrastructure/**'", "'@monorepo/infrastructure/'")
    gen.write_text(text)
    broken = cli("check", "--repo", repo)
    # infrastructure/ is now nested one level deeper: ./controllers is gone from the artifact
    assert broken.code == 2, broken.stdout + broken.stderr
    assert (
        "staging/flux-system/infra-controllers: spec.path './controllers' of "
        "ExternalArtifact/flux-system/infrastructure does not exist: "
        "ExternalArtifact/flux-system/infrastructure:controllers"
    ) in broken.stderr


def test_a_flux_instance_fleet_gets_its_clusters(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo(artifactrepo.fleet())
    init, check = init_and_check(cli, repo)
    # the update cluster's ResourceSet is a target of its own (automation@resourceset)
    assert "6 flux targets (0 skipped), clusters: prod, staging, update" in init.stdout
    written = yaml.safe_load((repo / "harness.yaml").read_text())
    assert "outside_git" not in (written or {})
    assert "6/6 flux targets match" in check.stdout
    lint_is_clean(cli, repo)


def test_an_oci_artifact_pushed_from_a_subdirectory(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo(artifactrepo.pushed_from_subdir())
    init, check = init_and_check(cli, repo)
    assert "3 flux targets (0 skipped), clusters: c0" in init.stdout
    assert "#   - kubernetes/clusters/c0" in (repo / "harness.yaml").read_text()
    assert "3/3 flux targets match" in check.stdout
    lint_is_clean(cli, repo)


def test_without_evidence_the_guess_is_said_once_with_the_line_to_pin(
    make_repo: Repo, cli: Cli
) -> None:
    repo = make_repo(
        {
            "clusters/dev/apps.yaml": flux_ks("apps", "./apps"),
            "apps/a.yaml": cm("a"),
            "templates/web/ks.yaml": flux_ks("${APP}", "./apps/${APP}", namespace="${APP}"),
        }
    )
    init, check = init_and_check(cli, repo)
    line = "pin the real one(s) in harness.yaml: `clusters: [clusters/dev]`"
    assert init.stderr.count(line) == 1
    assert line in check.stderr
    assert "2 flux targets (0 skipped), clusters: dev" in init.stdout
