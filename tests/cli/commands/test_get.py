"""`harness get ks|hr`: the example's Kustomizations and HelmReleases, and a hub-and-spoke
shaped repo (namespaced Kustomizations per environment, as fluxcd's flux2-hub-spoke-example
lays them out) with a failed parent, an external source and a HelmRelease."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, configmap, kustomization

Cli = Callable[..., Result]
Repo = Callable[[dict[str, str | bytes]], Path]


def _flux_ks(name: str, namespace: str, path: str, *deps: str, source: str = "flux-system") -> str:
    depends = "".join(f"    - name: {d}\n" for d in deps)
    return (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
        f"  name: {name}\n  namespace: {namespace}\nspec:\n  interval: 10m\n"
        f"  path: {path}\n  prune: true\n"
        f"  sourceRef:\n    kind: GitRepository\n    name: {source}\n"
        "    namespace: flux-system\n" + (f"  dependsOn:\n{depends}" if depends else "")
    )


RELEASE = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ingress-nginx
  namespace: ingress
spec:
  interval: 1h
  chart:
    spec:
      chart: ingress-nginx
      version: 4.11.3
      sourceRef:
        kind: HelmRepository
        name: ingress-nginx
"""


# home-ops' shape: an app-template HelmRelease through `chartRef` on an OCIRepository
APP_TEMPLATE = """apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: echo
  namespace: production
spec:
  interval: 1h
  url: oci://ghcr.io/bjw-s-labs/helm/app-template
  ref:
    tag: 4.2.0
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: echo
  namespace: production
spec:
  interval: 1h
  chartRef:
    kind: OCIRepository
    name: echo
  dependsOn:
    - name: ingress-nginx
      namespace: ingress
"""


def _hub_spoke(make_repo: Repo) -> Path:
    return make_repo(
        {
            "harness.yaml": (
                "clusters: [clusters/hub]\n"
                "outside_git:\n  '*':\n    sources:\n"
                "      GitRepository/flux-system/tenant-repo: external\n"
            ),
            "clusters/hub/kustomization.yaml": kustomization(
                "infra.yaml", "apps.yaml", "tenant.yaml"
            ),
            "clusters/hub/infra.yaml": _flux_ks("infra", "production", "./deploy/infra"),
            "clusters/hub/apps.yaml": _flux_ks("apps", "production", "./deploy/apps", "infra"),
            "clusters/hub/tenant.yaml": _flux_ks(
                "tenant", "production", "./", source="tenant-repo"
            ),
            "deploy/infra/kustomization.yaml": kustomization(
                "cm.yaml", "release.yaml", "echo.yaml"
            ),
            "deploy/infra/echo.yaml": APP_TEMPLATE,
            "deploy/infra/cm.yaml": configmap("infra-settings", "production"),
            "deploy/infra/release.yaml": RELEASE,
            # the apps build fails (a missing file), hiding the Kustomization it declares
            "deploy/apps/kustomization.yaml": kustomization("web.yaml", "missing.yaml"),
            "deploy/apps/web.yaml": _flux_ks("web", "apps", "./deploy/web"),
        }
    )


def test_kustomizations_of_a_hub_and_spoke_repo(make_repo: Repo, cli: Cli) -> None:
    repo = _hub_spoke(make_repo)
    res = cli("get", "ks", "--repo", repo, "-q", "-v")
    assert res.code == 2  # apps failed
    lines = res.stdout.splitlines()
    assert lines[0].split() == [
        "cluster",
        "name",
        "path",
        "source",
        "depends",
        "on",
        "suspend",
        "documents",
        "status",
    ]
    rows = {line.split()[1]: line.split() for line in lines[1:-1]}
    assert rows["production/infra"] == [
        "hub",
        "production/infra",
        "./deploy/infra",
        "GitRepository/flux-system/flux-system",
        "-",
        "-",
        "4",
        "rendered",
    ]
    assert rows["production/apps"][4:] == ["production/infra", "-", "-", "failed"]
    assert rows["production/tenant"][6:] == ["-", "skipped"]
    assert rows["apps/web"] == ["hub", "apps/web", "-", "-", "-", "-", "-", "not", "judged"]
    assert rows["flux-system/flux-system"][2] == "./clusters/hub"
    assert lines[-1] == (
        "5 Kustomizations in 1 cluster: 2 rendered, 1 failed, 1 skipped, 1 not judged"
    )
    assert "error: hub/production/apps: deploy/apps: kustomize: missing.yaml: no such" in res.stderr
    assert (
        "info: hub/apps/web: not judged, declared under hub/production/apps, which failed"
        in res.stderr
    )
    assert "info: hub/production/tenant: skipped," in res.stderr


def test_json_names_and_clusters_filter(make_repo: Repo, cli: Cli) -> None:
    repo = _hub_spoke(make_repo)
    res = cli("get", "ks", "production/in*", "--cluster", "hub", "--repo", repo, "-o", "json")
    assert res.code == 0, res.stderr  # the failed one is not listed
    payload = json.loads(res.stdout)
    assert payload["schema"] == "harness.get/v1"
    assert [i["name"] for i in payload["items"]] == ["infra"]
    assert payload["counts"] == {"rendered": 1, "failed": 0, "skipped": 0, "not judged": 0}
    hr = json.loads(cli("get", "hr", "--repo", repo, "-o", "json").stdout)
    assert hr["kind"] == "HelmRelease"
    release, echo = hr["items"]
    assert {k: echo[k] for k in ("name", "chart", "source", "depends_on")} == {
        "name": "echo",
        "chart": "",
        "source": "OCIRepository/production/echo",
        "depends_on": ["ingress/ingress-nginx"],
    }
    assert {k: release[k] for k in ("namespace", "name", "chart", "version", "source")} == {
        "namespace": "ingress",
        "name": "ingress-nginx",
        "chart": "ingress-nginx",
        "version": "4.11.3",
        "source": "HelmRepository/ingress/ingress-nginx",
    }
    assert release["kustomizations"] == ["production/infra"]
    assert (release["status"], release["documents"]) == ("skipped", None)


def test_unknown_cluster_and_unmatched_name_are_one_line(make_repo: Repo, cli: Cli) -> None:
    repo = _hub_spoke(make_repo)
    res = cli("get", "ks", "--cluster", "spoke", "--repo", repo)
    assert res.code == 2
    assert res.stderr.strip().splitlines()[-1] == (
        "error: --cluster spoke: no such cluster (clusters: hub)"
    )
    res = cli("get", "hr", "nothing-here", "--repo", repo)
    assert res.code == 2
    assert "error: no HelmRelease matches nothing-here (try `harness get hr`)" in res.stderr


def test_the_example(example_copy: Path, cli: Cli, tmp_path: Path) -> None:
    """Both clusters of examples/homelab; its in-repo chart's HelmRelease renders."""
    cache = tmp_path / "cache"
    res = cli("get", "ks", "--repo", example_copy, "--cache-dir", cache, "-o", "json")
    assert res.code == 0, res.stderr
    items = json.loads(res.stdout)["items"]
    assert len(items) == 22
    assert {i["cluster"] for i in items} == {"dev", "prod"}
    platform = next(i for i in items if (i["cluster"], i["name"]) == ("dev", "platform"))
    assert (platform["path"], platform["documents"], platform["status"]) == (
        "./platform",
        82,
        "rendered",
    )
    assert platform["depends_on"] == ["flux-system/flux-system"]
    res = cli("get", "hr", "--repo", example_copy, "--cache-dir", cache, "--cluster", "dev")
    assert res.code == 0, res.stderr
    whoami = next(line for line in res.stdout.splitlines() if "media/whoami" in line)
    assert whoami.split()[2:] == [
        "./charts/whoami",
        "GitRepository/flux-system/flux-system",
        "-",
        "-",
        "3",
        "rendered",
    ]
    assert res.stdout.splitlines()[-1] == "15 HelmReleases in 1 cluster: 1 rendered, 14 skipped"
