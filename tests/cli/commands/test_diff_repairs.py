"""Verdicts for repairs: a change that fixes a broken target, or removes one, is a change
that works, not a render error; a dependsOn on a Kustomization that is gone is a blocked
dependency, not a failed render."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests import fluxrepo as fr
from tests.conftest import Result
from tests.gitkit import commit_all, init

Cli = Callable[..., Result]


def _repo(tmp_path: Path, web_path: str) -> Path:
    root = init(tmp_path / "git")
    files = {
        **fr.cluster({"web": fr.flux_ks("web", web_path), "db": fr.flux_ks("db", "./apps/db")}),
        **fr.app("apps/web", "web", "web"),
        **fr.app("apps/db", "db", "db"),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit_all(root, "base")
    return root


def test_fixing_a_broken_spec_path_shows_what_it_now_applies(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, "./apps/wbe")  # the typo: nothing at that path
    fixed = repo / fr.CLUSTER / "web.yaml"
    fixed.write_text(fr.flux_ks("web", "./apps/web"))
    res = cli("diff", "--repo", repo, "-q")
    assert res.code == 0, res.stdout + res.stderr  # a repair is no render error
    out = res.stdout
    assert "error:" not in out and "render failed" not in out
    assert "fixed: dev/flux-system/web renders 3 documents (failed on base: " in out
    assert "apps/wbe" in out.split("fixed: dev/flux-system/web", 1)[1].splitlines()[0]
    assert "+ apps/Deployment/web/web" in out  # the documents it will apply, shown
    assert "1 target repaired: failed on the base; 1 renders now" in out
    data = json.loads(cli("diff", "--repo", repo, "-q", "-o", "json").stdout)
    assert data["errors"] == []
    assert data["exit_code"] == 0
    (repair,) = data["repairs"]
    assert repair["target"] == "dev/flux-system/web" and repair["outcome"] == "fixed"
    assert repair["documents_after"] == 3 and "apps/wbe" in repair["base_error"]
    assert data["summary"]["counts"]["targets_repaired"] == 1
    comment = cli("comment", "--repo", repo, "-q").stdout
    assert "> [!NOTE]\n> **1 target repaired**" in comment
    assert "[!CAUTION]" not in comment
    assert cli("diff", "--repo", repo, "-q", "--fail-on-diff").code == 1  # still a change


def test_removing_a_target_that_only_failed_on_base(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, "./apps/wbe")
    (repo / fr.CLUSTER / "web.yaml").unlink()
    (repo / fr.CLUSTER / "kustomization.yaml").write_text(fr.kustomization("sync.yaml", "db.yaml"))
    res = cli("diff", "--repo", repo, "-q")
    assert res.code == 0, res.stdout + res.stderr
    assert "removed: dev/flux-system/web, which failed on base (" in res.stdout
    assert "render failed" not in res.stdout


def test_breaking_a_target_is_still_exit_2(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, "./apps/web")
    (repo / fr.CLUSTER / "web.yaml").write_text(fr.flux_ks("web", "./apps/wbe"))
    res = cli("diff", "--repo", repo, "-q")
    assert res.code == 2
    assert "error: dev/flux-system/web (head): " in res.stdout
    assert "fixed:" not in res.stdout and "repaired" not in res.stdout


def test_a_dependency_on_a_removed_kustomization_is_blocked_not_failed(
    tmp_path: Path, cli: Cli
) -> None:
    root = init(tmp_path / "git")
    files = {
        **fr.cluster(
            {
                "web": fr.flux_ks("web", "./apps/web", depends=["db"]),
                "db": fr.flux_ks("db", "./apps/db"),
            }
        ),
        **fr.app("apps/web", "web", "web"),
        **fr.app("apps/db", "db", "db"),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit_all(root, "base")
    (root / fr.CLUSTER / "db.yaml").unlink()
    (root / fr.CLUSTER / "kustomization.yaml").write_text(fr.kustomization("sync.yaml", "web.yaml"))
    res = cli("diff", "--repo", root, "-q")
    assert "render failed" not in res.stdout and "error: dev/flux-system/web" not in res.stdout
    assert "dev/flux-system/web: 3 -> 3 documents" not in res.stdout  # web renders as before
    assert "depends-on" in res.stdout and "dependency not found" in res.stdout
    assert res.code == 0  # a hazard, gated only with --fail-on-hazard
    assert cli("diff", "--repo", root, "-q", "--fail-on-hazard", "error").code == 1
