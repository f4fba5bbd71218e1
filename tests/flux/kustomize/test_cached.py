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

from harness.flux.kustomize.build import BuildError, Built
from harness.flux.kustomize.cached import _Rebuild
from tests.conftest import Result, run_harness, write_tree
from tests.flux.conftest import cm, flux_ks
from tests.gitkit import commit_all, init

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


FLUX_INSTANCE = """apiVersion: fluxcd.controlplane.io/v1
kind: FluxInstance
metadata:
  name: flux
  namespace: flux-system
spec:
  distribution:
    version: 2.x
  sync:
    kind: GitRepository
    url: https://example.invalid/home.git
    ref: refs/heads/main
    path: clusters/home
  kustomize:
    patches:
      - target:
          kind: Kustomization
        patch: |
          - op: add
            path: /spec/decryption
            value: {provider: sops, secretRef: {name: sops-age}}
          - op: add
            path: /spec/postBuild
            value:
              substituteFrom:
                - kind: Secret
                  name: cluster-secrets
"""

# SOPS-encrypted, with one value left plaintext (sops' `_unencrypted` suffix): a value
# the cache must not store, so a cache hit holds the Secret redacted.
CLUSTER_SECRETS = """apiVersion: v1
kind: Secret
metadata:
  name: cluster-secrets
  namespace: flux-system
stringData:
  DOMAIN: ENC[AES256_GCM,data:Zm9v,iv:aXY=,tag:dGFn,type:str]
  ZONE_unencrypted: home.arpa
sops:
  mac: ENC[AES256_GCM,data:bWFj,iv:aXY=,tag:dGFn,type:str]
  version: 3.9.0
"""

HARNESS_YAML = """outside_git:
  home:
    objects:
      - kind: Secret
        namespace: flux-system
        name: cluster-secrets
        keys: {}
"""


def test_a_kustomization_substituting_from_a_secret_it_renders_diffs_warm(
    tmp_path: Path,
) -> None:
    """Issue 33: the FluxInstance root renders a SOPS Secret and (through the instance's
    patch) substitutes from it; `apps` substitutes from it too. Warm, `apps` reading the
    Secret rebuilt the root, whose lookup found that same Secret and rebuilt the root
    again, inside the first rebuild's lock: `check` and `diff` never ended. The timeout
    only guards the suite against a hang; it asserts nothing about time."""
    repo = init(tmp_path / "repo")
    write_tree(
        repo,
        {
            "harness.yaml": HARNESS_YAML,
            "clusters/home/flux-system/flux-instance.yaml": FLUX_INSTANCE,
            "clusters/home/cluster-secrets.sops.yaml": CLUSTER_SECRETS,
            "clusters/home/apps.yaml": flux_ks(
                "apps",
                "./apps",
                postBuild={"substituteFrom": [{"kind": "Secret", "name": "cluster-secrets"}]},
            ),
            "apps/cm.yaml": cm("web", "default", host="web.${ZONE_unencrypted}"),
        },
    )
    env = {"HARNESS_CACHE_DIR": str(tmp_path / "cache"), "HARNESS_NO_REPLAY": "1"}
    update = run_harness("update", cwd=repo, env=env)
    assert (update.code, update.stderr) == (0, ""), update.stdout
    commit_all(repo, "goldens")
    check = run_harness("check", cwd=repo, env=env)
    assert (check.code, check.stdout) == (0, "render-golden: 2/2 flux targets match\n")
    expected = run_harness("diff", "--no-cache", cwd=repo, env=env)
    assert expected.code == 0 and expected.stdout.startswith("no change: 2 targets")
    for _ in range(2):
        warm = run_harness("diff", cwd=repo, env=env)
        assert (warm.code, warm.stdout) == (0, expected.stdout)


def test_a_rebuild_that_needs_itself_fails_instead_of_waiting() -> None:
    """The last guard against the same shape: no lock is held while a rebuild runs, and a
    thread that asks for the rebuild it is running gets an error, not a hang."""
    rebuild: _Rebuild

    def run() -> Built:
        rebuild.raw()
        return Built((), ())

    rebuild = _Rebuild(run, "Kustomization flux-system/flux-system")
    with pytest.raises(BuildError) as caught:
        rebuild.raw()
    assert str(caught.value) == (
        "Kustomization flux-system/flux-system: rebuilding it needs its own output"
    )
    done = _Rebuild(lambda: Built((), ({"kind": "Secret"},)), "x")
    assert done.raw() == ({"kind": "Secret"},) == done.raw()
