"""The issue's scenarios on a copy of examples/homelab committed into a temp git repo:
(a) the Cilium split, (b) headlamp into its own non-gating Kustomization, (c) one apps
Kustomization split into waves, (d) the Cilium split with a Helm value changed on the way,
(e) a render failure on head only.

Each scenario edits the example as text and asserts every edit applied, so a reshaped example
fails here loudly instead of silently testing nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result
from tests.gitkit import commit_all, state
from tests.homelab import cilium_transition as cilium_split
from tests.homelab import edit, split_cilium

Cli = Callable[..., Result]

APPS_KS = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  timeout: 5m
  path: ./apps
  prune: false
  wait: true
  dependsOn:
    - name: platform-config
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: cluster-vars
"""


def diff_json(cli: Cli, repo: Path, *args: str) -> tuple[int, dict[str, Any]]:
    res = cli("diff", "--repo", repo, "--output", "json", *args)
    assert res.code in (0, 1, 2), res.stderr
    return res.code, json.loads(res.stdout)


def target(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in data["targets"] if t["name"] == name)


@pytest.mark.slow
def test_a_cilium_split_is_a_pure_ownership_move(homelab: Path, cli: Cli) -> None:
    root = homelab.parent.parent
    commit_all(root, "base")
    cilium_docs = {
        d["id"]
        for d in json.loads(
            cli("render", "platform/cilium", "--repo", homelab, "-o", "json").stdout
        )["targets"][0]["docs"]
    }
    assert len(cilium_docs) == 3
    cilium_split(homelab)
    commit_all(root, "feat(flux): give Cilium its own Kustomization")
    before = state(root)

    text = cli("diff", "--repo", homelab, "--base", "HEAD~1", "--expect", "pure-move")
    assert text.code == 0, text.stdout + text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == (
        "pure ownership move: 3 documents platform -> cilium, "
        "byte-identical modulo owner labels; 0 changed"
    )
    assert lines[1] == "expected pure-move: holds"
    platform_header = next(line for line in lines if line.startswith("platform: "))
    assert platform_header.endswith("(-3, +0, ~0)")
    assert "  platform: prune true -> false, dependsOn +cilium" in lines
    assert "  cilium: added (path ./platform/cilium)" in lines

    code, data = diff_json(cli, homelab, "--base", "HEAD~1", "--expect", "pure-move")
    assert code == 0 and data["verdict"] == "pure-move"
    platform = target(data, "platform")
    assert platform["documents_before"] - platform["documents_after"] == 3
    assert {r["id"] for r in platform["removed"]} == cilium_docs
    assert platform["added"] == [] and platform["changed"] == []
    for removed in platform["removed"]:
        assert {"target": "platform/cilium", "identical": True} in [
            {"target": s["target"], "identical": s["identical"]}
            for s in removed["still_rendered_by"]
        ]
    clusters = sorted({m["cluster"] for m in data["moves"]})
    assert clusters == ["dev", "prod"]
    for cluster in clusters:
        moves = [m for m in data["moves"] if m["cluster"] == cluster]
        assert {m["id"] for m in moves} == cilium_docs
        assert all(
            m["from"] == f"{cluster}/flux-system/platform"
            and m["to"] == f"{cluster}/flux-system/cilium"
            and m["pure_ownership"]
            and not m["identical"]
            for m in moves
        )
    assert data["summary"]["moved_pure_ownership"] == 6
    assert data["summary"]["duplicates"] == 0 and data["summary"]["errors"] == 0
    assert state(root) == before


def test_d_cilium_split_with_a_helm_value_changed_fails_and_names_the_field(
    homelab: Path, cli: Cli
) -> None:
    commit_all(homelab.parent.parent, "base")
    cilium_split(homelab)
    edit(
        homelab / "platform/cilium/helmrelease.yaml", "k8sServicePort: 6443", "k8sServicePort: 6444"
    )
    res = cli("diff", "--repo", homelab, "--expect", "pure-move")
    assert res.code == 1, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    # the path copies (platform, platform/cilium) are what dev's and prod's Kustomizations
    # deploy: judged as those, the one change is the HelmRelease moving with a new value
    assert lines[0] == (
        "changed: 1 object changes in 2 clusters (2 targets): 0 changed, 0 added, 0 removed, "
        "1 moved with changes"
    )
    assert lines[1] == "expected pure-move: FAILED"
    assert res.stdout.count("spec.values.k8sServicePort: 6443 -> 6444") == 1
    assert (
        "- helm.toolkit.fluxcd.io/HelmRelease/kube-system/cilium  moved to flux-system/cilium "
        "(with changes)\n    spec.values.k8sServicePort: 6443 -> 6444\n"
        "    in: dev, prod: flux-system/platform\n"
    ) in res.stdout


@pytest.mark.slow
def test_b_headlamp_into_its_own_non_gating_kustomization(homelab: Path, cli: Cli) -> None:
    # Base: headlamp inside the gating platform tier, its HTTPRoute in platform-config.
    head_ks = (homelab / "clusters/base/headlamp.yaml").read_text()
    head_kustomization = (homelab / "platform/headlamp/kustomization.yaml").read_text()
    head_files = {
        p: (homelab / p).read_text()
        for p in (
            "platform/kustomization.yaml",
            "platform-config/kustomization.yaml",
            "clusters/base/kustomization.yaml",
        )
    }
    (homelab / "clusters/base/headlamp.yaml").unlink()
    edit(homelab / "clusters/base/kustomization.yaml", "  - headlamp.yaml\n", "")
    edit(homelab / "platform/kustomization.yaml", "  - cilium\n", "  - cilium\n  - headlamp\n")
    edit(homelab / "platform/headlamp/kustomization.yaml", "  - httproute.yaml\n", "")
    edit(
        homelab / "platform-config/kustomization.yaml",
        "  - ../platform/keycloak/httproute.yaml\n",
        "  - ../platform/keycloak/httproute.yaml\n  - ../platform/headlamp/httproute.yaml\n",
    )
    commit_all(homelab.parent.parent, "base: headlamp in platform")
    (homelab / "clusters/base/headlamp.yaml").write_text(head_ks)
    (homelab / "platform/headlamp/kustomization.yaml").write_text(head_kustomization)
    for rel, text in head_files.items():
        (homelab / rel).write_text(text)

    code, data = diff_json(cli, homelab, "--expect", "pure-move")
    assert code == 0, data["reasons"]
    assert data["verdict_line"] == (
        "pure ownership move: 3 documents platform -> headlamp, 1 document platform-config -> "
        "headlamp, byte-identical modulo owner labels; 0 changed"
    )
    orchestration = {o["kustomization"]: o["changes"] for o in data["orchestration"]}
    assert orchestration == {"headlamp": ["added (path ./platform/headlamp)"]}
    assert all(m["pure_ownership"] for m in data["moves"])
    route = next(r for r in target(data, "platform-config")["removed"])
    assert route["id"].endswith("HTTPRoute/headlamp/headlamp")
    assert [s["target"] for s in route["still_rendered_by"] if s["identical"]] == [
        "platform/headlamp"
    ]


@pytest.mark.slow
def test_c_one_apps_kustomization_split_into_waves(homelab: Path, cli: Cli) -> None:
    waves = {n: (homelab / f"clusters/base/apps-wave-{n}.yaml").read_text() for n in range(3)}
    base_kustomization = (homelab / "clusters/base/kustomization.yaml").read_text()
    for n in range(3):
        (homelab / f"clusters/base/apps-wave-{n}.yaml").unlink()
    (homelab / "clusters/base/apps.yaml").write_text(APPS_KS)
    edit(
        homelab / "clusters/base/kustomization.yaml",
        "  - apps-wave-0.yaml\n  - apps-wave-1.yaml\n  - apps-wave-2.yaml\n",
        "  - apps.yaml\n",
    )
    (homelab / "apps/kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources:\n  - wave-0\n  - wave-1\n  - wave-2\n"
    )
    commit_all(homelab.parent.parent, "base: one apps Kustomization")
    (homelab / "apps/kustomization.yaml").unlink()
    (homelab / "clusters/base/apps.yaml").unlink()
    for n, text in waves.items():
        (homelab / f"clusters/base/apps-wave-{n}.yaml").write_text(text)
    (homelab / "clusters/base/kustomization.yaml").write_text(base_kustomization)

    code, data = diff_json(cli, homelab, "--expect", "pure-move")
    assert code == 0, data["reasons"]
    assert data["verdict_line"].startswith("pure ownership move: ")
    for n in range(3):
        assert f" apps -> apps-wave-{n}" in data["verdict_line"]
    orchestration = {o["kustomization"]: o["changes"] for o in data["orchestration"]}
    assert orchestration["apps"] == ["removed"]
    assert orchestration["apps-wave-0"] == ["added (path ./apps/wave-0)"]
    apps = target(data, "apps")
    assert apps["status"] == "removed"
    assert all(
        any(s["identical"] and s["target"].startswith("apps/wave-") for s in r["still_rendered_by"])
        for r in apps["removed"]
    )
    assert target(data, "dev/flux-system/apps")["status"] == "removed"
    assert data["summary"]["duplicates"] == 0


@pytest.mark.slow
def test_e_render_failure_on_head_only(homelab: Path, cli: Cli) -> None:
    commit_all(homelab.parent.parent, "base")
    (homelab / "platform/cilium/helmrelease.yaml").unlink()
    res = cli("diff", "--repo", homelab, "--expect", "pure-move")
    assert res.code == 2
    errors = [line for line in res.stdout.splitlines() if line.startswith("error: ")]
    assert "error: platform/cilium (head): platform/cilium/kustomization.yaml: kustomize:" in (
        "\n".join(errors)
    )
    assert any(line.startswith("error: dev/flux-system/platform (head): ") for line in errors)
    assert "- helm.toolkit.fluxcd.io/HelmRelease" not in res.stdout
    code, data = diff_json(cli, homelab)
    assert code == 2
    failed = {(e["target"], e["side"]) for e in data["errors"]}
    assert {("platform", "head"), ("platform/cilium", "head")} <= failed
    assert all(side == "head" for _, side in failed)
    for name, _ in failed:
        t = target(data, name)
        assert t["status"] == "error" and t["removed"] == [] and t["added"] == []
    assert data["summary"]["removed"] == 0


@pytest.mark.slow
def test_unprotected_split_passes_pure_move_but_fails_on_hazard(homelab: Path, cli: Cli) -> None:
    """Content-wise a pure move; cluster-wise `kubectl delete namespace kube-system`."""
    commit_all(homelab.parent.parent, "base")
    split_cilium(homelab)
    code, data = diff_json(cli, homelab, "--expect", "pure-move", "--fail-on-hazard", "error")
    assert data["verdict"] == "pure-move" and data["expectation_met"] is True
    assert code == 1 and data["exit_code"] == 1
    races = [
        f for f in data["findings"] if f["rule"] == "ownership-race" and f["severity"] == "error"
    ]
    assert {f["cluster"] for f in races if "Namespace/kube-system" in f["documents"]} == {
        "dev",
        "prod",
    }
