"""`harness.api.render`, `lint` and `diff` on small repos: errors are data, a repo that cannot
be used is one HarnessError, the CLI's render cache is shared."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from harness import api
from tests.conftest import configmap, kustomization
from tests.flux.conftest import flux_ks
from tests.gitkit import commit_all, init

Repo = Callable[[dict[str, str | bytes]], Path]


def test_render_gives_documents_and_failed_targets(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "a/kustomization.yaml": kustomization("cm.yaml"),
            "a/cm.yaml": configmap("a", v="1"),
            "bad/kustomization.yaml": "resources: [\n",
        }
    )
    snap = api.render(repo)
    assert snap.renderer.startswith("kubectl v1.")
    (doc,) = snap.target("a").documents
    assert (doc.id, doc.object["data"]) == ("ConfigMap/default/a", {"v": "1"})
    assert snap.target("bad").error is not None
    assert snap.target("bad").error.startswith("bad/kustomization.yaml: kustomize:")
    assert [t.name for t in api.render(repo, targets=["a"]).targets] == ["a"]


def test_no_repo_is_found_as_the_cli_finds_it(
    make_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(
        {
            "harness.yaml": "{}\n",
            "a/kustomization.yaml": kustomization("cm.yaml"),
            "a/cm.yaml": configmap("a"),
        }
    )
    (repo / ".git").mkdir()  # a checkout's top
    monkeypatch.chdir(repo / "a")
    assert api.render().repo == repo  # the enclosing git root
    monkeypatch.chdir(repo)
    assert [t.name for t in api.render().targets] == ["a"]  # here: it has a harness.yaml


def test_a_repo_that_cannot_be_used_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(api.HarnessError, match=r"^repo .*/missing: not a directory$"):
        api.render(tmp_path / "missing")


def test_lint_renders_and_finds(make_repo: Repo) -> None:
    repo = make_repo(
        {"a/kustomization.yaml": kustomization("cm.yaml"), "a/cm.yaml": configmap("a")}
    )
    result = api.lint(repo)
    assert result.snapshot.target("a").ok
    assert result.findings == () and result.suppressed == 0


def test_render_reuses_the_cli_cache(make_repo: Repo) -> None:
    repo = make_repo(
        {"a/kustomization.yaml": kustomization("cm.yaml"), "a/cm.yaml": configmap("a")}
    )
    cache = Path(os.environ["HARNESS_CACHE_DIR"])
    api.render(repo)
    entries = sorted(p.name for p in cache.rglob("*") if p.is_file())
    assert entries  # written where the CLI reads (tests/conftest.py points it per test)
    again = api.render(repo, cache=False)
    assert again.target("a").documents[0].sha256 == api.render(repo).target("a").documents[0].sha256


def test_diff_judges_an_image_bump(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = init(tmp_path / "git")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    deploy = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: apps\n"
        "spec:\n  template:\n    spec:\n      containers:\n      - name: web\n"
        "        image: ghcr.io/o/web:{tag}\n"
    )
    (root / "web").mkdir()
    (root / "web/kustomization.yaml").write_text(kustomization("web.yaml"))
    (root / "web/web.yaml").write_text(deploy.format(tag="1.0"))
    commit_all(root, "base")
    (root / "web/web.yaml").write_text(deploy.format(tag="1.1"))
    result = api.diff(root)
    assert (result.verdict, result.summary) == (
        "changed",
        "changed: 1 object changes in 1 target: 1 changed, 0 added, 0 removed",
    )
    (change,) = [c for c in result.changes if c.real]
    assert [(f.path, f.before, f.after) for f in change.fields] == [
        ("spec.template.spec.containers[name=web].image", "ghcr.io/o/web:1.0", "ghcr.io/o/web:1.1")
    ]
    (image,) = result.images
    assert image.before is not None and image.after is not None
    assert (image.repository, image.before.tag, image.after.tag) == ("ghcr.io/o/web", "1.0", "1.1")
    assert result.base.repo == root and result.errors == ()
    with pytest.raises(api.HarnessError, match="nope"):
        api.diff(root, base="nope")


PDB = """apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: p
  namespace: media
spec:
  maxUnavailable: 1
"""


@pytest.mark.parametrize(
    ("kube_version", "rejected"), [("{dev: v1.24.0, '*': v1.36.0}", False), ("v1.36.0", True)]
)
def test_lint_judges_each_cluster_at_its_kube_version_as_the_cli_does(
    make_repo: Repo, kube_version: str, rejected: bool
) -> None:
    """policy/v1beta1 is served up to 1.24: the call reads the config as `harness lint` does."""
    repo = make_repo(
        {
            "harness.yaml": f"helm:\n  enabled: false\n  kube_version: {kube_version}\n",
            "clusters/dev/apps.yaml": flux_ks("apps", "./apps"),
            "apps/pdb.yaml": PDB,
        }
    )
    found = [f for f in api.lint(repo).findings if f.rule == "api-reject"]
    assert [f.severity for f in found] == (["error"] if rejected else [])
