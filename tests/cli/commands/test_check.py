"""`harness check`: exit 0 match, 1 drift (incl. new/stale targets), 2 errors; others still run."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, configmap, kustomization, run_harness

Repo = Callable[[dict[str, str | bytes]], Path]
Cli = Callable[..., Result]


def _repo(make_repo: Repo) -> Path:
    return make_repo(
        {
            "a/kustomization.yaml": kustomization("cm.yaml"),
            "a/cm.yaml": configmap("a", v="1"),
            "b/kustomization.yaml": kustomization("cm.yaml"),
            "b/cm.yaml": configmap("b", v="1"),
        }
    )


def test_match_drift_and_revert(make_repo: Repo, cli: Cli) -> None:
    repo = _repo(make_repo)
    assert cli("update", "--repo", repo).code == 0
    ok = cli("check", "--repo", repo)
    assert ok.code == 0
    assert ok.stdout.strip().splitlines()[-1] == "render-golden: 2/2 targets match"
    (repo / "a/cm.yaml").write_text(configmap("a", v="2"))
    drift = cli("check", "--repo", repo)
    assert drift.code == 1
    assert "a: 1 -> 1 documents (-0, +0, ~1)" in drift.stdout
    assert "~ ConfigMap/default/a" in drift.stdout
    assert drift.stdout.strip().splitlines()[-1] == (
        "render-golden: 1/2 targets match (1 drifted: 1 object changes)"
    )
    (repo / "a/cm.yaml").write_text(configmap("a", v="1"))
    assert cli("check", "--repo", repo).code == 0


def test_new_target_and_stale_golden_are_drift(make_repo: Repo, cli: Cli) -> None:
    repo = _repo(make_repo)
    cli("update", "--repo", repo)
    (repo / "b/kustomization.yaml").rename(repo / "b/old-kustomization.yaml")
    (repo / "c").mkdir()
    (repo / "c/kustomization.yaml").write_text("resources: []\n")
    res = cli("check", "--repo", repo)
    assert res.code == 1
    assert "1 without golden: c" in res.stdout
    assert "1 stale golden: b" in res.stdout


def test_render_error_is_exit_2_and_others_still_compared(make_repo: Repo, cli: Cli) -> None:
    repo = _repo(make_repo)
    cli("update", "--repo", repo)
    (repo / "a/kustomization.yaml").write_text(kustomization("cm.yaml", "helmrelease.yaml"))
    (repo / "b/cm.yaml").write_text(configmap("b", v="2"))
    res = cli("check", "--repo", repo)
    assert res.code == 2
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert errors[0].startswith("error: a: a/kustomization.yaml: kustomize: ")
    assert "helmrelease.yaml" in errors[0]
    assert "b: 1 -> 1 documents (-0, +0, ~1)" in res.stdout
    assert "(1 drifted: 1 object changes; 1 error: a)" in res.stdout


def test_no_goldens_yet(make_repo: Repo, cli: Cli) -> None:
    """A repo without harness.yaml is new: `init`; one with a config but no goldens: `update`."""
    repo = _repo(make_repo)
    res = cli("check", "--repo", repo)
    assert res.code == 1
    assert "no harness.yaml: run `harness init`" in res.stdout
    (repo / "harness.yaml").write_text("goldens: goldens\n")
    res = cli("check", "--repo", repo)
    assert res.code == 1
    assert "run `harness update` to create them" in res.stdout and "harness init" not in res.stdout


def test_one_drift_in_a_base_and_its_parent_is_said_once(make_repo: Repo, cli: Cli) -> None:
    """A ConfigMap of `base`, rendered by `base` and by `app` (which includes it), drifts:
    the object and its field change are printed once, then the targets it drifts in."""
    repo = make_repo(
        {
            "base/kustomization.yaml": kustomization("cm.yaml"),
            "base/cm.yaml": configmap("shared", v="1"),
            "app/kustomization.yaml": kustomization("../base"),
        }
    )
    assert cli("update", "--repo", repo).code == 0
    (repo / "base/cm.yaml").write_text(configmap("shared", v="2"))
    res = cli("check", "--repo", repo)
    assert res.code == 1
    assert res.stdout.count("data.v: 1 -> 2") == 1
    assert "~ ConfigMap/default/shared\n    data.v: 1 -> 2\n    in: app, base\n" in res.stdout
    assert res.stdout.strip().splitlines()[-1] == (
        "render-golden: 0/2 targets match (2 drifted: 1 object changes)"
    )
    data = json.loads(cli("check", "--repo", repo, "-o", "json").stdout)
    (change,) = data["changes"]
    assert (change["op"], change["id"], change["targets"]) == (
        "changed",
        "ConfigMap/default/shared",
        ["app", "base"],
    )
    assert change["fields"][0]["path"] == "data.v"
    assert [t["name"] for t in data["targets"] if t["status"] == "changed"] == ["app", "base"]


def test_json_output(make_repo: Repo, cli: Cli) -> None:
    repo = _repo(make_repo)
    cli("update", "--repo", repo)
    (repo / "a/cm.yaml").write_text(configmap("a", v="2"))
    res = cli("check", "--repo", repo, "--output", "json")
    assert res.code == 1
    payload = json.loads(res.stdout)
    assert payload["schema"] == "harness.check/v1"
    assert payload["summary"]["drifted"] == 1
    changed = next(t for t in payload["targets"] if t["name"] == "a")
    assert changed["changed"][0]["id"] == "ConfigMap/default/a"


def test_bad_config_is_exit_2_one_line(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo({"harness.yaml": "timeout: -1\n"})
    res = cli("check", "--repo", repo)
    assert res.code == 2
    assert res.stderr.strip().startswith("error: ")
    assert "harness.yaml: timeout must be a non-negative number" in res.stderr


def test_missing_kubectl_is_exit_2(make_repo: Repo, cli: Cli) -> None:
    res = cli("check", "--repo", _repo(make_repo), "--kubectl", "/nonexistent/kubectl")
    assert res.code == 2
    assert (
        res.stderr.strip() == "error: --kubectl: /nonexistent/kubectl: not found or not executable"
    )


SLOW_KUBECTL = """#!/bin/sh
if [ "$1" = "version" ]; then exec "{real}" "$@"; fi
sleep 0.4
exec "{real}" "$@"
"""


def test_a_long_render_prints_progress_lines_in_a_log(
    make_repo: Repo, kubectl: Path, tmp_path: Path
) -> None:
    """Not a terminal (a CI log): `rendering: N/M targets, elapsed` every period, then a last
    line; nothing with -q. The period is HARNESS_PROGRESS_EVERY (here 0.2 s, renders 0.4 s)."""
    repo = _repo(make_repo)
    slow = tmp_path / "slow-kubectl"
    slow.write_text(SLOW_KUBECTL.format(real=kubectl))
    slow.chmod(0o755)
    args = ("check", "--repo", repo, "--no-cache", "-j", "1", "--kubectl", slow)
    env = {"HARNESS_PROGRESS_EVERY": "0.2", "CI": "true"}
    res = run_harness(*args, env=env)
    assert res.code == 1  # no goldens
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("rendering: ")]
    assert len(lines) >= 3, res.stderr
    assert re.fullmatch(r"rendering: [0-2]/2 targets, 0:0\d elapsed", lines[0])
    assert re.fullmatch(r"rendering: 2/2 targets done in 0:0\d", lines[-1])
    quiet = run_harness(*args, "-q", env=env)
    assert "rendering:" not in quiet.stderr
