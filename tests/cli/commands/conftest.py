"""Fixtures for the verbs that compare two sides: small git repos and the example in git."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, configmap, kustomization
from tests.gitkit import commit_all, init

SECRET = (
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: default\n"
    "stringData:\n  password: {pw}\n  user: admin-user\n"
)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """git root with the harness repo in `deploy/`: a/ (ConfigMap + Secret), b/ (ConfigMap)."""
    monkeypatch.setenv("TMPDIR", str(private_tmpdir(tmp_path)))
    monkeypatch.setattr("tempfile.tempdir", None)
    root = init(tmp_path / "git")
    files = {
        "deploy/a/kustomization.yaml": kustomization("cm.yaml", "secret.yaml"),
        "deploy/a/cm.yaml": configmap("a", v="1", w="x"),
        "deploy/a/secret.yaml": SECRET.format(pw="hunter2"),
        "deploy/b/kustomization.yaml": kustomization("cm.yaml"),
        "deploy/b/cm.yaml": configmap("b", v="1"),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit_all(root, "base")
    return root / "deploy"


def private_tmpdir(tmp_path: Path) -> Path:
    """A TMPDIR of the test's own, so a leftover temp checkout is visible."""
    path = tmp_path / "tmp"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def homelab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """examples/homelab inside a fresh git repo, at the same subdirectory as in the project."""
    monkeypatch.setenv("TMPDIR", str(private_tmpdir(tmp_path)))
    monkeypatch.setattr("tempfile.tempdir", None)
    root = init(tmp_path / "git")
    shutil.copytree(EXAMPLE, root / "examples" / "homelab")
    return root / "examples" / "homelab"
