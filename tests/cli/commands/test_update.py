"""`harness update` writes goldens where the config says and reports what it did."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, configmap, kustomization

Repo = Callable[[dict[str, str | bytes]], Path]
Cli = Callable[..., Result]


def test_update_writes_configured_goldens_dir(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo(
        {
            "harness.yaml": "goldens: ../elsewhere\n",
            "a/kustomization.yaml": kustomization("cm.yaml"),
            "a/cm.yaml": configmap("a"),
        }
    )
    (repo.parent / ".git").mkdir()  # a checkout holding the repo and its goldens
    res = cli("update", "--repo", repo)
    assert res.code == 0
    assert "goldens: 1 written, 0 unchanged, 0 deleted, 0 kept" in res.stdout
    assert (repo.parent / "elsewhere" / "index.json").is_file()
    assert (repo.parent / "elsewhere" / "path" / "a.yaml").is_file()
    again = cli("update", "--repo", repo)
    assert "0 written, 1 unchanged" in again.stdout


def test_update_with_a_failing_target_exits_2_but_writes_the_rest(
    make_repo: Repo, cli: Cli
) -> None:
    repo = make_repo(
        {
            "a/kustomization.yaml": kustomization("cm.yaml"),
            "a/cm.yaml": configmap("a"),
            "bad/kustomization.yaml": kustomization("missing.yaml"),
        }
    )
    res = cli("update", "--repo", repo)
    assert res.code == 2
    assert "error: bad: bad/kustomization.yaml: kustomize:" in res.stderr
    assert (repo / "goldens/path/a.yaml").is_file()
