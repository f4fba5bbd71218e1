"""Charts shaped like real public ones (shapes.py), served on 127.0.0.1 (an HTTP chart
repository and an OCI registry), through the whole pipeline and the CLI's check, diff and
comment: what harness renders equals Helm's own `helm template` for the same inputs and
capabilities, and the cluster's capabilities decide what a chart renders.

Two clusters share the apps: `prod` renders the Gateway API HTTPRoute CRD and applies a
ServiceMonitor (so it serves `gateway.networking.k8s.io/v1/HTTPRoute` and
`monitoring.coreos.com/v1`), `dev` does neither.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.core import config as config_mod
from harness.core.model import Snapshot
from harness.flux.helm import capabilities, sdk
from harness.pipeline.repo import RenderOptions, render_repo
from harness.render import kustomize as render_mod
from tests import gitkit
from tests.conftest import write_tree
from tests.flux.helm import shapes
from tests.flux.helm.charts import dump, flux_ks, helm_repository, kustomization
from tests.flux.helm.conftest import ChartRepo

Cli = Callable[..., Any]
KUBE = "v1.31.4"
CLUSTER_SCOPED = {
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
}
HTTPROUTE_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "httproutes.gateway.networking.k8s.io"},
    "spec": {
        "group": "gateway.networking.k8s.io",
        "scope": "Namespaced",
        "names": {"kind": "HTTPRoute", "plural": "httproutes"},
        "versions": [
            {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {}}}
        ],
    },
}
MONITOR: dict[str, Any] = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "ServiceMonitor",
    "metadata": {"name": "kubelet", "namespace": "kube-system"},
    "spec": {"endpoints": [{"port": "https-metrics"}]},
}
# (name, namespace, chart): the HelmReleases every cluster has
RELEASES = (("watcher", "tools"), ("dns", "network"), ("stack", "monitoring"), ("app", "media"))


def _release(name: str, namespace: str, version: str) -> dict[str, Any]:
    if name == "app":  # app-template's usual source: an OCIRepository
        chart: dict[str, Any] = {"chartRef": {"kind": "OCIRepository", "name": "app"}}
    else:
        chart = {
            "chart": {
                "spec": {
                    "chart": name,
                    "version": version,
                    "sourceRef": {
                        "kind": "HelmRepository",
                        "name": "charts",
                        "namespace": "flux-system",
                    },
                }
            }
        }
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"interval": "1h", **chart, "values": shapes.VALUES[name]},
    }


def gitops(
    repo_url: str, registry: str, *, watcher: str = "1.0.0", harness_yaml: str = ""
) -> dict[str, str]:
    """Two clusters; the media/app HelmRelease shares its Flux Kustomization's name."""
    oci = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "OCIRepository",
        "metadata": {"name": "app", "namespace": "media"},
        "spec": {"url": f"oci://{registry}/charts/app", "ref": {"tag": "1.0.0"}, "insecure": True},
    }
    files = {
        "harness.yaml": harness_yaml or f"helm:\n  kube_version: {KUBE}\n",
        "apps/kustomization.yaml": kustomization("releases.yaml"),
        "apps/releases.yaml": dump(
            *(_release(n, ns, watcher if n == "watcher" else "1.0.0") for n, ns in RELEASES[:3])
        ),
        "media/app/kustomization.yaml": kustomization("release.yaml", "source.yaml"),
        "media/app/release.yaml": dump(_release("app", "media", "1.0.0")),
        "media/app/source.yaml": dump(oci),
        "infra/base/kustomization.yaml": kustomization("sources.yaml"),
        "infra/base/sources.yaml": dump(helm_repository(repo_url)),
        "infra/prod/kustomization.yaml": kustomization("../base", "gateway.yaml", "monitor.yaml"),
        "infra/prod/gateway.yaml": dump(HTTPROUTE_CRD),
        "infra/prod/monitor.yaml": dump(MONITOR),
        "infra/dev/kustomization.yaml": kustomization("../base"),
    }
    for cluster in ("prod", "dev"):
        app_ks = flux_ks(
            "app", "./media/app", dependsOn=[{"name": "infra", "namespace": "flux-system"}]
        )
        app_ks["metadata"]["namespace"] = "media"
        app_ks["spec"]["sourceRef"]["namespace"] = "flux-system"
        files[f"clusters/{cluster}/kustomization.yaml"] = kustomization("flux.yaml")
        files[f"clusters/{cluster}/flux.yaml"] = dump(
            flux_ks("infra", f"./infra/{cluster}"),
            flux_ks("apps", "./apps", dependsOn=[{"name": "infra"}]),
            app_ks,
        )
    return files


@pytest.fixture
def served(tmp_path: Path, chart_repo: ChartRepo, oci_registry: str) -> tuple[str, str]:
    """watcher 1.0.0 and 1.1.0, dns and stack over HTTP; app over OCI."""
    for name, version in (("watcher", "1.0.0"), ("watcher", "1.1.0"), ("dns", "1.0.0")):
        chart_repo.publish(shapes.package(tmp_path / "pkg", name, version))
    chart_repo.publish(shapes.package(tmp_path / "pkg", "stack"))
    app = shapes.package(tmp_path / "pkg", "app")
    sdk.module().push(str(app), f"oci://{oci_registry}/charts", plain_http=True)
    return chart_repo.url, oci_registry


def _helm_template(
    helm: Path, chart: Path, name: str, namespace: str, caps: capabilities.Capabilities
) -> list[dict[str, Any]]:
    """`helm template` of one release as the cluster receives it: helm-controller's origin
    labels, and the release namespace on namespaced objects."""
    values = chart.parent / f"{name}-values.json"
    values.write_text(json.dumps(shapes.VALUES[name]))
    argv = [str(helm), "template", name, str(chart), "-n", namespace, "-f", str(values)]
    argv += ["--include-crds", "--skip-tests", "--kube-version", caps.kube_version]
    argv += ["--api-versions", ",".join(caps.api_versions)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    objs = [o for chunk in re.split(r"(?m)^---$", out) for o in yaml.safe_load_all(chunk) if o]
    for obj in objs:
        meta = obj["metadata"]
        meta["labels"] = {
            **(meta.get("labels") or {}),
            "helm.toolkit.fluxcd.io/name": name,
            "helm.toolkit.fluxcd.io/namespace": namespace,
        }
        if obj["kind"] not in CLUSTER_SCOPED:
            meta.setdefault("namespace", namespace)
    return objs


def _render(repo: Path, binary: Path | None) -> Snapshot:
    cfg = replace(config_mod.load(repo), helm=True)
    renderer = render_mod.resolve(flags=cfg.kubectl_flags)
    return render_repo(
        cfg, renderer, RenderOptions(jobs=2, helm=True, helm_binary=str(binary) if binary else None)
    )


def _git(tmp_path: Path, base: dict[str, str], head: dict[str, str]) -> Path:
    repo = gitkit.init(tmp_path / "gitops")
    write_tree(repo, base)
    gitkit.commit_all(repo, "base")
    write_tree(repo, head)
    return repo


@pytest.mark.slow
def test_real_chart_shapes_equal_helm_template_with_the_clusters_capabilities(
    tmp_path: Path, served: tuple[str, str], helm_binary: Path, cli: Cli
) -> None:
    url, registry = served
    base = gitops(url, registry)
    repo = _git(tmp_path, base, gitops(url, registry, watcher="1.1.0"))
    gitkit.commit_all(repo, "bump watcher")  # head == HEAD; base is HEAD~1
    snapshot = _render(repo, helm_binary)
    cluster_objects = {"prod": [HTTPROUTE_CRD, MONITOR], "dev": []}
    for cluster in ("prod", "dev"):
        caps = capabilities.for_cluster(
            [*cluster_objects[cluster], *_flux_objects(snapshot, cluster)], KUBE
        )
        for name, namespace in RELEASES:
            target = f"{cluster}/{namespace}/{name}" + ("@helm" if name == "app" else "")
            result = snapshot.results[target]
            assert result.ok, (target, result.error, sorted(snapshot.results))
            assert not result.notes, result.notes  # a binary gets the capabilities
            ours = [yaml.safe_load(d.text) for d in result.documents]
            version = "1.1.0" if name == "watcher" else "1.0.0"
            chart = shapes.write_chart(tmp_path / "expected" / cluster, name, version)
            assert ours == _helm_template(helm_binary, chart, name, namespace, caps), target
    kinds = {
        c: {d.id.kind: d.api_version for d in snapshot.results[f"{c}/media/app@helm"].documents}
        for c in ("prod", "dev")
    }
    assert kinds["prod"]["HTTPRoute"] == "gateway.networking.k8s.io/v1"
    assert kinds["dev"]["HTTPRoute"] == "gateway.networking.k8s.io/v1alpha2"
    watcher = {
        c: {d.id.kind for d in snapshot.results[f"{c}/tools/watcher"].documents}
        for c in ("prod", "dev")
    }
    assert "ServiceMonitor" in watcher["prod"] and "ServiceMonitor" not in watcher["dev"]

    binary = ("--helm-binary", helm_binary)
    assert cli("update", "--repo", repo, "-q", *binary).code == 0
    check = cli("check", "--repo", repo, "-q", *binary)
    assert check.code == 0, check.stdout + check.stderr
    diff = cli("diff", "--repo", repo, "--base", "HEAD~1", "-q", "-o", "json", *binary)
    assert diff.code == 0, diff.stderr
    payload = json.loads(diff.stdout)
    changed = {t["name"] for t in payload["targets"] if t["status"] == "changed"}
    assert changed == {
        "apps",  # the path target of the directory
        "prod/tools/watcher",
        "dev/tools/watcher",
        "prod/flux-system/apps",
        "dev/flux-system/apps",
    }
    assert payload["errors"] == []
    comment = cli("comment", "--repo", repo, "--base", "HEAD~1", "-q", *binary)
    assert comment.code == 0, comment.stderr
    assert "`prod/tools/watcher`" in comment.stdout and "| helm: prod |" in comment.stdout


@pytest.mark.slow
def test_in_process_sdk_renders_with_the_clusters_capabilities(
    tmp_path: Path, served: tuple[str, str], helm_binary: Path, cli: Cli
) -> None:
    """The default engine: every chart renders (NOTES, partials, hooks, subcharts) equal to
    `helm template --kube-version ... --api-versions ...` given the cluster's capabilities:
    app-template's HTTPRoute is `v1` where the cluster renders the Gateway API v1 CRD and
    `v1alpha2` where it does not, the ServiceMonitor follows the monitoring CRD; no note,
    no capabilities warning."""
    url, registry = served
    repo = _git(tmp_path, gitops(url, registry), gitops(url, registry, watcher="1.1.0"))
    snapshot = _render(repo, None)
    assert not [w for w in snapshot.warnings if "Capabilities" in w]
    cluster_objects = {"prod": [HTTPROUTE_CRD, MONITOR], "dev": []}
    for cluster in ("prod", "dev"):
        caps = capabilities.for_cluster(
            [*cluster_objects[cluster], *_flux_objects(snapshot, cluster)], KUBE
        )
        for name, namespace in RELEASES:
            target = f"{cluster}/{namespace}/{name}" + ("@helm" if name == "app" else "")
            result = snapshot.results[target]
            assert result.ok, result.error
            assert not result.notes, result.notes
            ours = [yaml.safe_load(d.text) for d in result.documents]
            version = "1.1.0" if name == "watcher" else "1.0.0"
            chart = shapes.write_chart(tmp_path / "expected" / cluster, name, version)
            assert ours == _helm_template(helm_binary, chart, name, namespace, caps), target
    route = {
        c: [d.api_version for d in snapshot.results[f"{c}/media/app@helm"].documents]
        for c in ("prod", "dev")
    }
    assert "gateway.networking.k8s.io/v1" in route["prod"]
    assert "gateway.networking.k8s.io/v1alpha2" not in route["prod"]
    assert "gateway.networking.k8s.io/v1alpha2" in route["dev"]
    watcher = {
        c: {d.id.kind for d in snapshot.results[f"{c}/tools/watcher"].documents}
        for c in ("prod", "dev")
    }
    assert "ServiceMonitor" in watcher["prod"] and "ServiceMonitor" not in watcher["dev"]

    check = cli("update", "--repo", repo, "-q")
    assert check.code == 0
    assert ".Capabilities" not in check.stderr
    assert cli("check", "--repo", repo, "-q").code == 0
    diff = cli("diff", "--repo", repo, "--base", "HEAD", "-q", "-o", "json")
    assert diff.code == 0, diff.stderr
    changed = {t["name"] for t in json.loads(diff.stdout)["targets"] if t["status"] == "changed"}
    assert {"prod/tools/watcher", "dev/tools/watcher"} <= changed
    assert cli("comment", "--repo", repo, "--base", "HEAD", "-q").code == 0


def _flux_objects(snapshot: Snapshot, cluster: str) -> list[dict[str, Any]]:
    return [
        yaml.safe_load(d.text)
        for r in snapshot.results.values()
        if r.target.kind == "flux" and r.target.cluster == cluster and r.ok
        for d in r.documents
    ]


@pytest.mark.slow
def test_preinstalled_crds_are_capabilities_too(
    tmp_path: Path, helm_binary: Path, cli: Cli
) -> None:
    """Gateway API CRDs applied before Flux (a bootstrap kustomize directory outside the
    Flux tree, hazards/preinstalled.py) are served to charts like rendered ones."""
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "app", "namespace": "media"},
        "spec": {
            "chart": {
                "spec": {
                    "chart": "./charts/app",
                    "sourceRef": {
                        "kind": "GitRepository",
                        "name": "flux-system",
                        "namespace": "flux-system",
                    },
                }
            },
            "values": shapes.VALUES["app"],
        },
    }
    files = {
        "harness.yaml": "helm: true\n",
        "clusters/prod/kustomization.yaml": kustomization("apps.yaml"),
        "clusters/prod/apps.yaml": dump(flux_ks("apps", "./apps")),
        "apps/kustomization.yaml": kustomization("release.yaml"),
        "apps/release.yaml": dump(release),
    }
    repo = write_tree(tmp_path / "gitops", files)
    shapes.write_chart(repo / "charts", "app")

    def route(*engine: str | Path) -> str:
        res = cli("render", "--repo", repo, "-q", "-o", "json", *engine)
        assert res.code == 0, res.stdout + res.stderr
        target = next(t for t in json.loads(res.stdout)["targets"] if t["name"] == "prod/media/app")
        return next(d["apiVersion"] for d in target["docs"] if d["kind"] == "HTTPRoute")

    binary = ("--helm-binary", helm_binary)
    assert route(*binary) == route() == "gateway.networking.k8s.io/v1alpha2"
    write_tree(
        repo,
        {
            "bootstrap/gateway/kustomization.yaml": kustomization("crds.yaml"),
            "bootstrap/gateway/crds.yaml": dump(HTTPROUTE_CRD),
        },
    )
    assert route(*binary) == route() == "gateway.networking.k8s.io/v1"
