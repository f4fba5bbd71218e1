"""Kustomizations built from ExternalArtifacts and FluxInstance roots, with the real kubectl."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.cache import store as cache_mod
from harness.core import config as config_mod
from harness.core import outside
from harness.flux.targets import render_flux
from harness.render.seam import Seam
from tests import artifactrepo
from tests.artifactrepo import dump, flux_ks, generator, kustomization
from tests.flux.conftest import new_renderer, objects, render_repo

Repo = Callable[[dict[str, str | bytes]], Path]


def names(results: dict[str, object]) -> list[str]:
    return sorted(results)


def test_the_official_example_shape_renders_every_kustomization(make_repo: Repo) -> None:
    repo = make_repo(artifactrepo.helm_example())
    results = render_repo(repo)
    assert names(results) == [
        f"{c}/flux-system/{n}"
        for c in ("production", "staging")
        for n in ("apps", "flux-system", "infra-configs", "infra-controllers")
    ]
    assert all(r.ok for r in results.values()), {n: r.error for n, r in results.items()}
    apps = results["staging/flux-system/apps"]
    values = {o["metadata"]["name"]: o for o in objects(apps)}["podinfo-values"]
    # ../base/podinfo resolved inside the artifact, the cluster's patch applied over it
    assert values["data"] == {"env": "staging", "replicas": "1"}
    assert apps.target.path == repo / "apps/staging"  # the repo directory it was copied from
    configs = results["production/flux-system/infra-configs"]
    assert configs.target.path == repo / "infrastructure/configs"
    assert not any("not declared by any object" in n for n in apps.notes)


def test_a_reference_to_a_file_not_copied_fails_as_in_flux(make_repo: Repo) -> None:
    files = artifactrepo.helm_example(("staging",))
    files["apps/staging/kustomization.yaml"] = kustomization(
        "../base/podinfo", "../../shared/extra.yaml"
    )
    files["shared/extra.yaml"] = dump(artifactrepo.configmap("extra", "podinfo"))
    repo = make_repo(files)
    result = render_repo(repo)["staging/flux-system/apps"]
    assert result.error is not None
    assert "outside the source root" in result.error
    assert "/tmp" not in result.error and "/dev/shm" not in result.error
    assert "apps/staging/kustomization.yaml" in result.error


def test_a_missing_directory_is_named_inside_the_artifact(make_repo: Repo) -> None:
    files = artifactrepo.helm_example(("staging",))
    files["clusters/staging/apps.yaml"] = dump(
        flux_ks("apps", "./missing", "ExternalArtifact", "apps")
    )
    result = render_repo(make_repo(files))["staging/flux-system/apps"]
    assert result.error == (
        "spec.path './missing' of ExternalArtifact/flux-system/apps does not exist: "
        "ExternalArtifact/flux-system/apps:missing"
    )


def test_a_copy_that_matches_nothing_fails_its_consumers_with_the_generator_line(
    make_repo: Repo,
) -> None:
    files = artifactrepo.helm_example(("staging",))
    files["clusters/staging/artifacts.yaml"] = files["clusters/staging/artifacts.yaml"].replace(  # type: ignore[union-attr]
        "@monorepo/infrastructure/**", "@monorepo/infra/**"
    )
    results = render_repo(make_repo(files))
    error = results["staging/flux-system/infra-controllers"].error
    assert error == (
        "ExternalArtifact/flux-system/infrastructure of ArtifactGenerator/flux-system/flux-system: "
        "failed to apply copy operation from '@monorepo/infra/**' to '@artifact/': "
        "no files match pattern 'infra/**' in source 'monorepo'"
    )
    # `apps` comes after `infrastructure` in the generator: it is not published either
    assert "stops at artifact 'infrastructure' before building 'apps'" in (
        results["staging/flux-system/apps"].error or ""
    )


def test_a_generator_rendered_later_is_waited_for(make_repo: Repo) -> None:
    """The consumer is rendered by the root, its generator by a child: it is deferred."""
    files = artifactrepo.helm_example(("staging",))
    gen = files.pop("clusters/staging/artifacts.yaml")
    files["sources/artifacts.yaml"] = gen
    files["clusters/staging/sources.yaml"] = dump(
        flux_ks("sources", "./sources", "GitRepository", "flux-system")
    )
    results = render_repo(make_repo(files))
    assert results["staging/flux-system/apps"].ok, results["staging/flux-system/apps"].error


def test_an_artifact_nobody_generates_is_an_unmapped_source(make_repo: Repo) -> None:
    files = artifactrepo.helm_example(("staging",))
    del files["clusters/staging/artifacts.yaml"]
    gaps: list[outside.Gap] = []
    repo = make_repo(files)
    results = render_flux(config_mod.load(repo), new_renderer(), jobs=2, strict=True, gaps=gaps)
    assert results["staging/flux-system/apps"].error is not None
    assert "ExternalArtifact/flux-system/apps is not this repo" in (
        results["staging/flux-system/apps"].error or ""
    )
    assert {g.ref.name for g in gaps if g.what == "source"} == {"apps", "infrastructure"}


def test_an_external_generator_source_skips_its_consumers(make_repo: Repo) -> None:
    files = artifactrepo.helm_example(("staging",))
    files["harness.yaml"] = (
        "outside_git:\n  '*':\n    sources:\n      GitRepository/flux-system/other: external\n"
    )
    files["clusters/staging/artifacts.yaml"] = dump(
        generator(
            "other",
            [{"alias": "o", "kind": "GitRepository", "name": "other"}],
            [
                {"name": "infrastructure", "copy": [{"from": "@o/**", "to": "@artifact/"}]},
                {"name": "apps", "copy": [{"from": "@o/**", "to": "@artifact/"}]},
            ],
        )
    )
    skipped: dict[str, str] = {}
    repo = make_repo(files)
    results = render_flux(
        config_mod.load(repo), new_renderer(), jobs=2, strict=True, on_skip=skipped.__setitem__
    )
    assert sorted(results) == ["staging/flux-system/flux-system"]
    assert skipped["staging/flux-system/apps"] == (
        "source GitRepository/flux-system/other of ArtifactGenerator/flux-system/other is external "
        "(harness.yaml outside_git)"
    )


def test_two_generators_declaring_one_artifact_is_an_error(make_repo: Repo) -> None:
    files = artifactrepo.helm_example(("staging",))
    files["clusters/staging/more.yaml"] = dump(
        generator(
            "second",
            [{"alias": "m", "kind": "GitRepository", "name": "flux-system"}],
            [{"name": "apps", "copy": [{"from": "@m/apps/**", "to": "@artifact/"}]}],
        )
    )
    result = render_repo(make_repo(files))["staging/flux-system/apps"]
    assert result.error == (
        "ExternalArtifact/flux-system/apps is declared by ArtifactGenerator/flux-system/"
        "flux-system and ArtifactGenerator/flux-system/second: each overwrites what the other "
        "publishes"
    )


def test_flux_instance_roots_a_cluster_on_an_oci_artifact_of_this_repo(make_repo: Repo) -> None:
    repo = make_repo(artifactrepo.fleet())
    results = render_repo(repo)
    assert names(results) == [
        "prod/flux-system/flux-system",
        "prod/flux-system/tenants",
        "staging/flux-system/flux-system",
        "staging/flux-system/tenants",
        "update/flux-system/automation@resourceset",  # expanded: no resources, 0 objects
        "update/flux-system/flux-system",
    ]
    assert all(r.ok for r in results.values()), {n: r.error for n, r in results.items()}
    root = results["staging/flux-system/flux-system"]
    assert any(
        "from the FluxInstance in clusters/staging/flux-system/flux-instance.yaml" in n
        for n in root.notes
    )
    tenants = {o["metadata"]["name"]: o for o in objects(results["prod/flux-system/tenants"])}
    assert tenants["tenant-apps"]["data"] == {"cluster": "prod"}


def test_flux_instance_patches_reach_the_root(make_repo: Repo) -> None:
    """The patch gives the root a postBuild: what the root renders is substituted."""
    files = artifactrepo.fleet(("staging",))
    files["clusters/staging/flux-system/info.yaml"] = dump(
        artifactrepo.configmap("flux-runtime-info", "flux-system", NAME="${CLUSTER_NAME}")
    )
    results = render_repo(make_repo(files))
    info = {o["metadata"]["name"]: o for o in objects(results["staging/flux-system/flux-system"])}
    assert info["flux-runtime-info"]["data"] == {"NAME": "from-the-patch"}


def test_an_oci_artifact_pushed_from_a_subdirectory(make_repo: Repo) -> None:
    repo = make_repo(artifactrepo.pushed_from_subdir())
    results = render_repo(repo)
    assert names(results) == [
        "c0/flux-system/cluster",
        "c0/flux-system/flux-system",
        "c0/home/web",
    ]
    assert all(r.ok for r in results.values()), {n: r.error for n, r in results.items()}
    web = results["c0/home/web"]
    # the directory copy nests `app/` once more; Flux generates a kustomization over it
    assert [o["metadata"]["name"] for o in objects(web)] == ["web"]
    assert web.target.path == repo / "kubernetes/apps/base/home/web/app"
    assert results["c0/flux-system/flux-system"].target.path == repo / "kubernetes/clusters/c0"


def test_generator_objects_survive_the_render_cache(make_repo: Repo, tmp_path: Path) -> None:
    """A cache hit of the root must still hand the generator to the fixed point."""
    repo = make_repo(artifactrepo.helm_example(("staging",)))
    cfg = config_mod.load(repo)
    renders = []
    for enabled in (True, True, False):
        renderer = new_renderer()
        cache = cache_mod.open_cache(
            cache_mod.Settings(enabled=enabled, directory=tmp_path / "cache")
        )
        try:
            seam = Seam.for_run(renderer, cache)
            results = render_flux(cfg, renderer, jobs=2, strict=True, seam=seam)
        finally:
            if cache is not None:
                cache.close()
        renders.append({n: (r.error, r.sha256, r.target.path) for n, r in results.items()})
    assert renders[0] == renders[1] == renders[2]
    assert all(error is None for error, _, _ in renders[1].values())


def test_a_path_pattern_generator_feeds_one_kustomization_per_directory(make_repo: Repo) -> None:
    files = artifactrepo.helm_example(("staging",))
    del files["clusters/staging/artifacts.yaml"]
    gen = generator(
        "per-app",
        [{"alias": "repo", "kind": "GitRepository", "name": "flux-system"}],
        [
            {
                "name": "infra-{part}",
                "copy": [{"from": "@repo/infrastructure/{part}/**", "to": "@artifact/"}],
            }
        ],
    )
    gen["spec"]["pathPattern"] = "@repo/infrastructure/{part}"
    files["clusters/staging/infrastructure.yaml"] = dump(
        gen,
        flux_ks("controllers", "./", "ExternalArtifact", "infra-controllers"),
        flux_ks("configs", "./", "ExternalArtifact", "infra-configs"),
    )
    files["clusters/staging/apps.yaml"] = dump(
        flux_ks("apps", "./apps/staging", "GitRepository", "flux-system")
    )
    results = render_repo(make_repo(files))
    assert sorted(results) == [
        "staging/flux-system/apps",
        "staging/flux-system/configs",
        "staging/flux-system/controllers",
        "staging/flux-system/flux-system",
    ]
    assert [o["metadata"]["name"] for o in objects(results["staging/flux-system/configs"])] == [
        "issuer"
    ]
