"""`harness lint`: exit 0 clean, 1 at --fail-on, 2 on render errors; text and JSON output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, configmap, kustomization, modules_after

Repo = Callable[[dict[str, str | bytes]], Path]
Cli = Callable[..., Result]

FLUX_KS = """apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: {name}
  namespace: flux-system
spec:
  interval: 10m
  path: ./{path}
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
{extra}"""


def _repo(make_repo: Repo, extra: str = "", apps_ns: str = "apps", twice: bool = False) -> Path:
    second = FLUX_KS.format(name="apps-copy", path="apps", extra="") if twice else ""
    return make_repo(
        {
            "clusters/dev/kustomization.yaml": kustomization("apps.yaml"),
            "clusters/dev/apps.yaml": FLUX_KS.format(name="apps", path="apps", extra=extra)
            + ("---\n" + second if second else ""),
            "apps/kustomization.yaml": kustomization("ns.yaml", "cm.yaml"),
            "apps/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {apps_ns}\n",
            "apps/cm.yaml": configmap("settings", "apps", v="1"),
        }
    )


def test_clean_repo_exits_0_with_the_gate_line(make_repo: Repo, cli: Cli) -> None:
    result = cli("lint", "--repo", _repo(make_repo))
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-2:] == [
        "lint: 0 errors, 0 warnings, 0 info (fail on error)",
        "substitution gate: 0 assertions, 0 hazards",
    ]


def test_findings_at_fail_on_exit_1_summary_first_and_json_lists_them(
    make_repo: Repo, cli: Cli
) -> None:
    repo = _repo(make_repo, twice=True)  # two Kustomizations render one ConfigMap: a warning
    assert cli("lint", "--repo", repo).code == 0
    text = cli("lint", "--repo", repo, "--fail-on", "warning")
    assert text.code == 1, text.stdout + text.stderr
    lines = text.stdout.splitlines()
    # one line per lint rule first (diff-only rules have no lint part), then the details
    assert [line.split()[0] for line in lines[:6]] == [
        "sole-namespace-declarer",
        "duplicate-owner",
        "substitution",
        "depends-on",
        "crd-order",
        "overlay-parity",
    ]
    assert lines[1].split()[1:3] == ["2", "warnings"] and lines[2].split()[1] == "ok"
    assert "duplicate-owner (2 warnings)" in text.stdout
    assert "warning duplicate-owner:dev:ConfigMap/apps/settings" in text.stdout
    assert text.stdout.index("duplicate-owner (2 warnings)") > text.stdout.index("crd-order")
    data = json.loads(
        cli("lint", "--repo", repo, "--output", "json", "--fail-on", "warning").stdout
    )
    assert data["schema"] == "harness.lint/v1"
    finding = data["findings"][0]
    assert set(finding) == {
        "id",
        "rule",
        "severity",
        "cluster",
        "kustomizations",
        "documents",
        "message",
        "cause",
    }
    assert finding["kustomizations"] == ["apps", "apps-copy"]
    assert data["summary"]["exit_code"] == 1 and data["suppressed"] == []
    rules = {r["rule"]: r for r in data["rules"]}
    assert rules["duplicate-owner"]["warnings"] == 2
    assert rules["duplicate-owner"]["line"] == "duplicate-owner: 2 warnings"
    assert rules["crd-order"]["line"] == "crd-order: ok" and data["preinstalled"] == []
    assert data["gates"]["substitution"] == {
        "assertions": 0,
        "hazards": 0,
        "line": "substitution gate: 0 assertions, 0 hazards",
    }


def test_suppression_with_reason_and_fail_on(make_repo: Repo, cli: Cli) -> None:
    repo = _repo(make_repo, twice=True)
    (repo / "harness.yaml").write_text(
        "suppress:\n  - rule: duplicate-owner\n    target: dev\n    reason: migrating\n"
    )
    result = cli("lint", "--repo", repo, "-o", "json")
    assert result.code == 0
    data = json.loads(result.stdout)
    assert data["findings"] == [] and data["suppressed"][0]["reason"] == "migrating"
    (repo / "harness.yaml").write_text("suppress:\n  - rule: duplicate-owner\n")
    bad = cli("lint", "--repo", repo)
    assert bad.code == 2 and "needs a reason" in bad.stderr


def test_fail_on_info(make_repo: Repo, cli: Cli) -> None:
    repo = _repo(make_repo)  # no postBuild: ${DS_PROMETHEUS} ships literally (latent: info)
    (repo / "apps/cm.yaml").write_text(configmap("settings", "apps", v="${DS_PROMETHEUS}"))
    assert cli("lint", "--repo", repo).code == 0
    assert cli("lint", "--repo", repo, "--fail-on", "warning").code == 0
    warned = cli("lint", "--repo", repo, "--fail-on", "info")
    assert warned.code == 1
    assert "info    substitution:dev:apps:DS_PROMETHEUS:literal" in warned.stdout
    assert "substitution gate: 1 assertions, 0 hazards" in warned.stdout  # info is latent


def test_render_error_exits_2(make_repo: Repo, cli: Cli) -> None:
    repo = _repo(make_repo)
    (repo / "apps/kustomization.yaml").write_text(kustomization("missing.yaml"))
    result = cli("lint", "--repo", repo)
    assert result.code == 2
    assert "error: apps:" in result.stderr


def test_a_text_lint_loads_no_comparison_or_other_output(make_repo: Repo) -> None:
    """lint renders one side: no goldens, comparison, JSON report or shard planner load."""
    repo = _repo(make_repo)
    res, modules = modules_after("lint", "--repo", repo, "-q", cwd=repo)
    assert res.code == 0, res.stderr
    assert "harness.report.lint_text" in modules
    unused = {
        "harness.report.json_out",
        "harness.pipeline.goldens",
        "harness.compare.snapshots",
        "harness.compare.gate",
    }
    unused |= {
        "harness.pipeline.shard",
        "harness.report.junit",
        "harness.report.github",
        "helm_python",
    }
    assert modules & unused == set()


HELMRELEASE = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: kube-prometheus-stack
  namespace: monitoring
spec:
  interval: 1h
  chart:
    spec:
      chart: kube-prometheus-stack
      sourceRef:
        kind: HelmRepository
        name: prometheus-community
"""
SERVICE_MONITOR = """apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {name}
  namespace: {name}
spec:
  selector:
    matchLabels:
      app: {name}
"""


def test_findings_of_one_cause_are_one_entry(make_repo: Repo, cli: Cli) -> None:
    """Four apps with a ServiceMonitor and no dependsOn on the Kustomization installing its
    CRD: one crd-order entry, `4 Kustomizations: add dependsOn monitoring`, not four."""
    apps = [f"app-{c}" for c in "abcd"]
    files: dict[str, str | bytes] = {
        "clusters/dev/kustomization.yaml": kustomization("monitoring.yaml", "apps.yaml"),
        "clusters/dev/monitoring.yaml": FLUX_KS.format(
            name="monitoring", path="monitoring", extra=""
        ),
        "clusters/dev/apps.yaml": "---\n".join(
            FLUX_KS.format(name=a, path=f"apps/{a}", extra="") for a in apps
        ),
        "monitoring/kustomization.yaml": kustomization("hr.yaml"),
        "monitoring/hr.yaml": HELMRELEASE,
    }
    for a in apps:
        files[f"apps/{a}/kustomization.yaml"] = kustomization("sm.yaml")
        files[f"apps/{a}/sm.yaml"] = SERVICE_MONITOR.format(name=a)
    repo = make_repo(files)
    res = cli("lint", "--repo", repo)
    assert res.code == 0, res.stdout + res.stderr
    assert "crd-order (4 info)" in res.stdout
    entry = [ln for ln in res.stdout.splitlines() if "Kustomizations: add dependsOn" in ln]
    assert len(entry) == 1
    assert entry[0].split()[:5] == ["info", "4", "Kustomizations:", "add", "dependsOn"]
    assert "app-a, app-b, app-c and app-d (-v lists each finding)" in res.stdout
    assert res.stdout.count("crd-order:dev:") == 0  # the ids are behind -v
    verbose = cli("lint", "--repo", repo, "-v").stdout
    assert verbose.count("crd-order:dev:app-") == 4
    data = json.loads(cli("lint", "--repo", repo, "-o", "json").stdout)
    (group,) = data["groups"]
    assert (group["rule"], group["count"], group["kustomizations"]) == ("crd-order", 4, apps)
    assert group["cause"].startswith("add dependsOn monitoring")
    crd_order = [f for f in data["findings"] if f["rule"] == "crd-order"]
    assert len(crd_order) == 4 and all(f["cause"] == group["cause"] for f in crd_order)
