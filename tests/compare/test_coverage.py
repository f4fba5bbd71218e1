"""coverage: which changed files no rendered target reads, and what was not rendered."""

from __future__ import annotations

from pathlib import Path

from harness.compare.coverage import BlindSpots, uncovered
from harness.core.model import HelmInfo, RendererInfo, Snapshot, Target, TargetResult
from tests.conftest import configmap, kustomization, write_tree

INFO = RendererInfo("kubectl", "v1")


def _ok(name: str, kind: str, path: Path, helm: HelmInfo | None = None) -> TargetResult:
    return TargetResult(Target(name, kind, path, helm=helm), documents=())  # type: ignore[arg-type]


def _snap(*results: TargetResult) -> Snapshot:
    return Snapshot(INFO, {r.target.name: r for r in results})


def test_a_file_is_covered_when_a_rendered_target_reads_it(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path,
        {
            "apps/web/kustomization.yaml": kustomization("../base", "cm.yaml"),
            "apps/web/cm.yaml": configmap("web"),
            "apps/web/unused.yaml": configmap("unused"),  # in the directory, not listed
            "apps/base/kustomization.yaml": kustomization("cm.yaml"),
            "apps/base/cm.yaml": configmap("base"),
            "apps/broken/kustomization.yaml": kustomization("cm.yaml"),
            "apps/broken/cm.yaml": configmap("broken"),
            "flux/generated/a/cm.yaml": configmap("g"),  # no kustomization: Flux takes all
            "charts/app/values.yaml": "replicas: 1\n",
            "Taskfile.yaml": "version: '3'\n",
            "README.md": "# docs\n",
            "harness.yaml": "goldens: goldens\n",
            "goldens/index.json": "{}\n",
            ".github/workflows/ci.yaml": "on: push\n",
        },
    )
    snap = _snap(
        _ok("apps/web", "path", repo / "apps/web"),
        TargetResult(Target("apps/broken", "path", repo / "apps/broken"), error="kustomize: x"),
        _ok("dev/flux-system/gen", "flux", repo / "flux/generated"),
        _ok(
            "dev/media/app",
            "helm",
            repo,
            HelmInfo(source="GitRepository/flux-system/flux-system ./charts/app"),
        ),
    )
    changed = [
        "apps/web/cm.yaml",
        "apps/base/cm.yaml",
        "apps/web/unused.yaml",
        "apps/broken/cm.yaml",
        "flux/generated/a/cm.yaml",
        "charts/app/values.yaml",
        "Taskfile.yaml",
        "README.md",
        "harness.yaml",
        "goldens/index.json",
        ".github/workflows/ci.yaml",
        "apps/web/deleted.yaml",  # gone from the tree: nothing to cover
    ]
    assert uncovered(repo, snap, changed, goldens=repo / "goldens") == (
        "Taskfile.yaml",
        "apps/broken/cm.yaml",  # its only target failed
        "apps/web/unused.yaml",
    )


def test_a_flux_target_generated_at_the_root_covers_every_manifest(tmp_path: Path) -> None:
    repo = write_tree(tmp_path, {"a/cm.yaml": configmap("a")})
    assert uncovered(repo, _snap(_ok("c/flux-system/root", "flux", repo)), ["a/cm.yaml"]) == ()


def test_skipped_kustomizations_are_counted_once_per_reason() -> None:
    blind = BlindSpots(
        {
            "dev/flux-system/a": "source ExternalArtifact/flux-system/apps is external",
            "dev/flux-system/b": "source ExternalArtifact/flux-system/apps is external",
            "prod/flux-system/c": "source GitRepository/flux-system/other is external",
        }
    )
    assert blind.skipped_sources == {
        "source ExternalArtifact/flux-system/apps is external": 2,
        "source GitRepository/flux-system/other is external": 1,
    }
    assert blind and not BlindSpots({})
