"""A Flux build that fails on a missing `substituteFrom` object is cached like a success.

Candidate cluster directories that another cluster builds fail this way on every run (their
ConfigMap comes from the cluster); the cached failure must say exactly what the build says,
including the variables `harness init` declares, and a change of what the existing objects
define must not reuse it.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, write_tree
from tests.flux.conftest import cm, flux_ks

LOGGING_KUBECTL = """#!/bin/sh
case "$1" in kustomize) echo "$@" >> {log};; esac
exec {real} "$@"
"""

APP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: default
data:
  domain: ${DOMAIN}
  level: ${LOG_LEVEL}
  tz: ${TIMEZONE}
"""


def _repo(root: Path, settings: dict[str, str]) -> Path:
    app_ks = flux_ks(
        "app",
        "./apps/app",
        postBuild={
            "substituteFrom": [
                {"kind": "ConfigMap", "name": "cluster-settings"},
                {"kind": "ConfigMap", "name": "cluster-secrets"},
            ]
        },
    )
    return write_tree(
        root,
        {
            "clusters/dev/flux-system/ks.yaml": flux_ks("flux-system", "./clusters/dev"),
            "clusters/dev/settings.yaml": cm("cluster-settings", "flux-system", **settings),
            "clusters/dev/app.yaml": app_ks,
            "apps/app/cm.yaml": APP,
        },
    )


@pytest.fixture
def logging_kubectl(tmp_path: Path, kubectl: Path) -> tuple[Path, Path]:
    log = tmp_path / "kustomize.log"
    fake = tmp_path / "kubectl"
    fake.write_text(LOGGING_KUBECTL.format(log=log, real=kubectl))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return fake, log


def test_missing_object_failure_is_cached_and_answers_alike(
    tmp_path: Path, cli: Callable[..., Result], logging_kubectl: tuple[Path, Path]
) -> None:
    fake, log = logging_kubectl
    cache_dir = tmp_path / "cache"
    repo = _repo(tmp_path / "repo", {"DOMAIN": "example.org"})
    outputs, runs = [], []
    for extra in (("--cache-dir", cache_dir), ("--cache-dir", cache_dir), ("--no-cache",)):
        log.write_text("")
        outputs.append(cli("render", "--repo", repo, "--kubectl", fake, "-o", "json", *extra))
        runs.append(len(log.read_text().splitlines()))
    cold, warm, uncached = outputs
    assert cold.code == 2
    assert "ConfigMap/flux-system/cluster-secrets" in cold.stdout
    assert [(r.code, r.stdout, r.stderr) for r in (warm, uncached)] == [
        (cold.code, cold.stdout, cold.stderr)
    ] * 2
    assert runs[0] > 0 and runs[1] == 0  # warm: the failing build too came from the cache


def test_cached_failure_lists_the_variables_a_declaration_needs(
    tmp_path: Path, cli: Callable[..., Result]
) -> None:
    """The error suggests declaring the variables nothing defines: from the cache, the same
    ones, and a ConfigMap that now defines one more is not answered by the old entry."""
    cache_dir = tmp_path / "cache"
    outputs = []
    for i, settings in enumerate(
        ({"DOMAIN": "a"}, {"DOMAIN": "a"}, {"DOMAIN": "a", "LOG_LEVEL": "info"})
    ):
        repo = _repo(tmp_path / "repo", settings)
        res = cli("render", "--repo", repo, "-o", "json", "--cache-dir", cache_dir)
        outputs.append(res.stdout)
        uncached = cli("render", "--repo", repo, "-o", "json", "--no-cache")
        assert (res.code, res.stdout) == (uncached.code, uncached.stdout), i
    assert outputs[0] == outputs[1]
    assert "placeholder-log-level" in outputs[0] and "placeholder-timezone" in outputs[0]
    assert "placeholder-log-level" not in outputs[2] and "placeholder-timezone" in outputs[2]


def test_a_strict_substitution_failure_is_remembered_and_answers_alike(
    tmp_path: Path, cli: Callable[..., Result], logging_kubectl: tuple[Path, Path]
) -> None:
    """A build that fails after kustomize succeeded (an unset variable, strict) fails the
    same way for the same key: a warm run answers it without running kustomize, and a
    change that fixes it is not answered by the remembered failure."""
    fake, log = logging_kubectl
    cache_dir = tmp_path / "cache"
    settings = {"DOMAIN": "a", "LOG_LEVEL": "info"}
    repo = _repo(tmp_path / "repo", settings)
    (repo / "clusters/dev/secrets.yaml").write_text(cm("cluster-secrets", "flux-system", X="1"))
    outputs, runs = [], []
    for extra in (("--cache-dir", cache_dir), ("--cache-dir", cache_dir), ("--no-cache",)):
        log.write_text("")
        outputs.append(cli("render", "--repo", repo, "--kubectl", fake, "-o", "json", *extra))
        runs.append(len(log.read_text().splitlines()))
    cold, warm, uncached = outputs
    assert cold.code == 2 and "variable not set (strict mode)" in cold.stdout
    assert '\\"TIMEZONE\\"' in cold.stdout or "TIMEZONE" in cold.stdout
    assert [(r.code, r.stdout, r.stderr) for r in (warm, uncached)] == [
        (cold.code, cold.stdout, cold.stderr)
    ] * 2
    assert runs[0] > 0 and runs[1] == 0
    fixed = {**settings, "TIMEZONE": "UTC"}
    (repo / "clusters/dev/settings.yaml").write_text(cm("cluster-settings", "flux-system", **fixed))
    after = cli("render", "--repo", repo, "-o", "json", "--cache-dir", cache_dir)
    assert after.code == 0, after.stdout + after.stderr
