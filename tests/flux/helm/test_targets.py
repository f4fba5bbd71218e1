"""Helm targets from a whole Flux render: sources, post-renderers, names, errors."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.core import config as config_mod
from harness.core.errors import ConfigError
from harness.core.model import TargetResult
from harness.flux.helm import sdk
from harness.pipeline.repo import RenderOptions, render_repo
from harness.render import kustomize as render_mod
from tests.conftest import write_tree
from tests.flux.helm.charts import (
    GADGET_CRD,
    cluster_repo,
    dump,
    flux_ks,
    helm_release,
    local_chart,
    oci_repository,
)
from tests.flux.helm.conftest import package


def _render(repo: Path, **options: Any) -> dict[str, TargetResult]:
    cfg = config_mod.load(repo)
    renderer = render_mod.resolve(flags=cfg.kubectl_flags)
    snapshot = render_repo(cfg, renderer, RenderOptions(jobs=2, helm=True, **options))
    return snapshot.results


def _objects(result: TargetResult) -> dict[str, dict[str, Any]]:
    assert result.ok, result.error
    return {str(d.id): yaml.safe_load(d.text) for d in result.documents}


def test_post_renderers_common_metadata_and_target_namespace(make_repo: Any) -> None:
    release = helm_release(
        chart=local_chart(),
        targetNamespace="web-prod",
        install={"crds": "Skip"},
        commonMetadata={"labels": {"team": "web", "helm.toolkit.fluxcd.io/name": "nope"}},
        postRenderers=[
            {
                "kustomize": {
                    "patches": [
                        {
                            "target": {"kind": "Deployment"},
                            "patch": "- op: add\n  path: /spec/paused\n  value: true\n",
                        }
                    ],
                    "images": [{"name": "ghcr.io/example/web", "newTag": "pinned"}],
                }
            }
        ],
    )
    results = _render(make_repo(cluster_repo(release)))
    web = results["prod/apps/web"]
    objs = _objects(web)
    assert web.target.helm is not None and web.target.helm.release == "web-prod-web"
    deploy = objs["apps/Deployment/web-prod/web-prod-web-web"]
    assert deploy["spec"]["paused"] is True
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "ghcr.io/example/web:pinned"
    )
    # origin labels win over commonMetadata; commonMetadata lands on every object
    assert deploy["metadata"]["labels"]["helm.toolkit.fluxcd.io/name"] == "web"
    assert deploy["metadata"]["labels"]["team"] == "web"
    # install.crds: Skip leaves crds/ out; the templated CRD stays
    assert "apiextensions.k8s.io/CustomResourceDefinition/widgets.demo.example.com" not in objs
    assert "apiextensions.k8s.io/CustomResourceDefinition/gadgets.demo.example.com" in objs


def test_secret_values_never_reach_the_documents(make_repo: Any) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "web-secret", "namespace": "apps"},
        "stringData": {"values.yaml": "greeting: hunter2-greeting\ntoken: hunter2-token\n"},
    }
    release = helm_release(
        chart=local_chart(), valuesFrom=[{"kind": "Secret", "name": "web-secret"}]
    )
    results = _render(make_repo(cluster_repo(release, config=[secret])))
    text = results["prod/apps/web"].text()
    assert "hunter2" not in text
    assert "value: <redacted sha256:" in text  # the Deployment env var shows the marker


def test_helm_chart_ref_with_values_files(make_repo: Any) -> None:
    helm_chart = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmChart",
        "metadata": {"name": "apps-web", "namespace": "apps"},
        "spec": {
            "chart": "./charts/demo",
            "sourceRef": {
                "kind": "GitRepository",
                "name": "flux-system",
                "namespace": "flux-system",
            },
            "valuesFiles": ["charts/demo/values.yaml", "charts/demo/values-prod.yaml"],
        },
    }
    release = helm_release(chartRef={"kind": "HelmChart", "name": "apps-web"})
    results = _render(make_repo(cluster_repo(release, sources=[helm_chart])))
    objs = _objects(results["prod/apps/web"])
    assert objs["apps/Deployment/apps/web-web"]["spec"]["replicas"] == 5
    assert objs["ConfigMap/apps/web-settings"]["data"]["level"] == "warn"


def test_missing_values_file_fails_unless_ignored(make_repo: Any) -> None:
    chart = {**local_chart(), "valuesFiles": ["charts/demo/nope.yaml"]}
    results = _render(make_repo(cluster_repo(helm_release(chart=chart))))
    assert results["prod/apps/web"].error == (
        "valuesFiles: charts/demo/nope.yaml does not exist in the chart source"
    )
    chart["ignoreMissingValuesFiles"] = True
    results = _render(make_repo(cluster_repo(helm_release(chart=chart))))
    assert results["prod/apps/web"].ok


def test_errors_are_per_target_and_one_line(make_repo: Any) -> None:
    files = cluster_repo(helm_release(chart=local_chart()))
    bad = helm_release("bad", chart={"chart": "./charts/demo"})
    unmapped = helm_release(
        "other", chart={"chart": "./x", "sourceRef": {"kind": "GitRepository", "name": "other"}}
    )
    missing = helm_release("gone", chart=local_chart("./charts/none"))
    no_values = helm_release(
        "novals", chart=local_chart(), valuesFrom=[{"kind": "ConfigMap", "name": "absent"}]
    )
    files["apps/release.yaml"] = dump(
        helm_release(chart=local_chart()), bad, unmapped, missing, no_values
    )
    results = _render(write_tree(make_repo({}), files))
    assert results["prod/apps/web"].ok
    assert results["prod/apps/bad"].error == (
        "invalid HelmRelease: spec.chart.spec.sourceRef.kind is required"
    )
    assert results["prod/apps/other"].error == (
        "unmapped source GitRepository/apps/other (map it in harness.yaml `sources:`)"
    )
    assert (results["prod/apps/gone"].error or "").startswith("chart './charts/none' of ")
    assert results["prod/apps/novals"].error == (
        "valuesFrom ConfigMap/absent: no such ConfigMap in namespace apps in this cluster's "
        "rendered objects"
    )


def test_name_collision_with_a_flux_target_gets_a_suffix(make_repo: Any) -> None:
    files = cluster_repo(helm_release(chart=local_chart()))
    files["apps/release.yaml"] = dump(helm_release("apps", "flux-system", chart=local_chart()))
    results = _render(write_tree(make_repo({}), files))
    assert results["prod/flux-system/apps"].target.kind == "flux"
    assert results["prod/flux-system/apps@helm"].target.kind == "helm"


def test_config_helm_globs_and_selection(make_repo: Any) -> None:
    files = cluster_repo(helm_release(chart=local_chart()))
    files["apps/release.yaml"] = dump(
        helm_release(chart=local_chart()), helm_release("api", chart=local_chart())
    )
    files["harness.yaml"] = "helm:\n  - '*/apps/api'\n"
    repo = write_tree(make_repo({}), files)
    helm = sorted(n for n, r in _render(repo).items() if r.target.kind == "helm")
    assert helm == ["prod/apps/api"]
    cfg = config_mod.load(repo)
    assert cfg.helm and cfg.helm_targets == ("*/apps/api",)
    (repo / "harness.yaml").write_text("helm: maybe\n")
    with pytest.raises(ConfigError, match="helm must be true, false, a list of helm target globs"):
        config_mod.load(repo)


def test_helm_globs_match_with_or_without_the_suffix_and_warn_when_empty(
    make_repo: Any, cli: Any
) -> None:
    files = cluster_repo(helm_release(chart=local_chart()))
    # the usual layout: the HelmRelease shares its Kustomization's name and namespace
    files["apps/release.yaml"] = dump(helm_release("apps", "flux-system", chart=local_chart()))
    files["harness.yaml"] = "helm: ['prod/flux-system/apps', '*/default/sonarr']\n"
    repo = write_tree(make_repo({}), files)
    res = cli("render", "--repo", repo, "-q", "-o", "json")
    names = [t["name"] for t in json.loads(res.stdout)["targets"] if t["kind"] == "helm"]
    assert names == ["prod/flux-system/apps@helm"]
    assert res.stderr.strip().splitlines()[-1] == (
        "warning: config helm: '*/default/sonarr' matches no helm target (names are "
        "<cluster>/<namespace>/<name>, with @helm when a Flux Kustomization has the same name)"
    )


def test_a_kube_version_key_naming_no_cluster_is_warned_about(make_repo: Any, cli: Any) -> None:
    files = cluster_repo(helm_release(chart=local_chart()))
    files["harness.yaml"] = "helm:\n  kube_version: {prod: v1.31.0, prdo: v1.30.0}\n"
    repo = write_tree(make_repo({}), files)
    res = cli("render", "--repo", repo, "-q", "-o", "json")
    assert res.code == 0
    assert res.stderr.strip().splitlines()[-1] == (
        "warning: config helm.kube_version: 'prdo' names no cluster (clusters: prod)"
    )


def test_moved_between_kustomizations_renders_the_same(make_repo: Any) -> None:
    files = cluster_repo(helm_release(chart=local_chart()))
    first = _render(write_tree(make_repo({}), files))["prod/apps/web"]
    files["clusters/prod/apps.yaml"] = dump(flux_ks("apps", "./apps"), flux_ks("extra", "./extra"))
    files["apps/kustomization.yaml"] = files["apps/kustomization.yaml"].replace(
        "- release.yaml\n", ""
    )
    files["extra/kustomization.yaml"] = "resources:\n- release.yaml\n"
    files["extra/release.yaml"] = files.pop("apps/release.yaml")
    (Path(make_repo({})) / "apps" / "release.yaml").unlink()
    second = _render(write_tree(make_repo({}), files))["prod/apps/web"]
    assert second.sha256 == first.sha256
    assert second.target.helm is not None and second.target.helm.owner == "prod/flux-system/extra"


def test_oci_sources_end_to_end(
    tmp_path: Path, make_repo: Any, oci_registry: str, cli: Any
) -> None:
    sdk.module().push(
        str(package(tmp_path, "1.2.0")), f"oci://{oci_registry}/charts", plain_http=True
    )
    oci_repo = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmRepository",
        "metadata": {"name": "oci-charts", "namespace": "flux-system"},
        "spec": {"type": "oci", "url": f"oci://{oci_registry}/charts", "insecure": True},
    }
    oci_artifact = oci_repository(oci_registry)
    by_repo = helm_release(
        "byrepo",
        chart={
            "chart": "demo",
            "version": "1.2.0",
            "sourceRef": {
                "kind": "HelmRepository",
                "name": "oci-charts",
                "namespace": "flux-system",
            },
        },
    )
    by_ref = helm_release("byref", chartRef={"kind": "OCIRepository", "name": "demo"})
    files = cluster_repo(by_repo, sources=[oci_repo, oci_artifact])
    files["apps/release.yaml"] = dump(by_repo, by_ref)
    repo = make_repo(files)
    res = cli("render", "--repo", repo, "-q", "-o", "json")
    assert res.code == 0, res.stdout
    import json

    targets = {t["name"]: t for t in json.loads(res.stdout)["targets"]}
    for name in ("prod/apps/byrepo", "prod/apps/byref"):
        t = targets[name]
        assert (t["kind"], t["chart"], t["version"]) == ("helm", "demo", "1.2.0"), t
        assert t["documents"] == 6
    assert targets["prod/apps/byref"]["source"] == "OCIRepository/apps/demo"


def test_missing_sdk_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "helm_python", None)
    with pytest.raises(sdk.SdkMissing, match=r"pip install 'flux-harness\[helm\]'"):
        sdk.module()


def test_helm_off_by_default(make_repo: Any) -> None:
    repo = make_repo(cluster_repo(helm_release(chart=local_chart()), harness_yaml=""))
    cfg = config_mod.load(repo)
    assert not cfg.helm
    snapshot = render_repo(cfg, render_mod.resolve(flags=cfg.kubectl_flags), RenderOptions(jobs=2))
    assert not [r for r in snapshot.results.values() if r.target.kind == "helm"]
    assert replace(cfg, helm=True).helm


def _parent_chart(repository: str) -> dict[str, str]:
    return {
        "charts/parent/Chart.yaml": (
            "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n"
            f"  - name: demo\n    version: 1.0.0\n    repository: {repository}\n"
        ),
        "charts/parent/values.yaml": "demo:\n  replicas: 7\n",
        "charts/parent/templates/cm.yaml": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: parent\ndata: {}\n"
        ),
    }


def test_local_chart_dependencies_are_built_on_a_copy(make_repo: Any) -> None:
    files = cluster_repo(helm_release(chart=local_chart("./charts/parent")))
    files.update(_parent_chart("file://../demo"))
    repo = make_repo(files)
    objs = _objects(_render(repo)["prod/apps/web"])
    assert objs["apps/Deployment/apps/web-web"]["spec"]["replicas"] == 7
    assert "ConfigMap/apps/parent" in objs
    assert not (repo / "charts" / "parent" / "charts").exists()  # the repo is never written


def test_remote_chart_dependencies(make_repo: Any, tmp_path: Path, chart_repo: Any) -> None:
    chart_repo.publish(package(tmp_path, "1.0.0"))
    files = cluster_repo(helm_release(chart=local_chart("./charts/parent")))
    files.update(_parent_chart(chart_repo.url))
    repo = make_repo(files)
    offline = _render(repo, offline=True)["prod/apps/web"]
    assert offline.error == (
        "--offline: chart dependencies demo 1.0.0 are not in charts/ and must be downloaded"
    )
    objs = _objects(_render(repo)["prod/apps/web"])
    assert objs["apps/Deployment/apps/web-web"]["spec"]["replicas"] == 7


def test_release_namespace_only_on_namespaced_objects(make_repo: Any) -> None:
    crd = yaml.safe_load(
        GADGET_CRD.replace("gadget", "fence")
        .replace("Gadget", "Fence")
        .replace("Namespaced", "Cluster")
    )
    files = cluster_repo(helm_release(chart=local_chart()), config=[crd])
    files["charts/demo/templates/fence.yaml"] = (
        "apiVersion: demo.example.com/v1\nkind: Fence\nmetadata:\n  name: fence\n---\n"
        "apiVersion: demo.example.com/v1\nkind: Gadget\nmetadata:\n  name: gadget\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: cr\n"
    )
    objs = _objects(_render(make_repo(files))["prod/apps/web"])
    assert "demo.example.com/Fence/fence" in objs  # cluster-scoped by the cluster's CRD
    assert "demo.example.com/Gadget/apps/gadget" in objs  # namespaced by the chart's CRD
    assert "rbac.authorization.k8s.io/ClusterRole/cr" in objs


def _chart_generator(*copies: tuple[str, str]) -> dict[str, Any]:
    """source-watcher's ArtifactGenerator publishing `demo-chart` from the bootstrap repo."""
    return {
        "apiVersion": "source.extensions.fluxcd.io/v1beta1",
        "kind": "ArtifactGenerator",
        "metadata": {"name": "charts", "namespace": "flux-system"},
        "spec": {
            "sources": [{"alias": "repo", "kind": "GitRepository", "name": "flux-system"}],
            "artifacts": [
                {"name": "demo-chart", "copy": [{"from": f, "to": t} for f, t in copies]}
            ],
        },
    }


def test_chart_ref_to_an_external_artifact_renders_its_chart(make_repo: Any) -> None:
    """helm-controller loads the ExternalArtifact as a chart archive: its one top directory
    is the chart; what the generator did not copy is not there."""
    release = helm_release(chart=None, values={"replicas": 3})
    release["spec"]["chartRef"] = {
        "kind": "ExternalArtifact",
        "name": "demo-chart",
        "namespace": "flux-system",
    }
    files = cluster_repo(
        release, sources=[_chart_generator(("@repo/charts/demo/**", "@artifact/demo/"))]
    )
    results = _render(make_repo(files))
    result = results["prod/apps/web"]
    objs = _objects(result)
    assert objs["apps/Deployment/apps/web-web"]["spec"]["replicas"] == 3
    assert result.target.helm is not None
    assert result.target.helm.chart == "demo" and result.target.helm.version == "1.0.0"
    assert result.target.helm.source == "ExternalArtifact/flux-system/demo-chart demo"


def test_chart_ref_to_an_artifact_that_is_no_chart_fails_with_one_line(make_repo: Any) -> None:
    release = helm_release(chart=None)
    release["spec"]["chartRef"] = {"kind": "ExternalArtifact", "name": "demo-chart"}
    generated = _chart_generator(("@repo/charts/demo/templates/", "@artifact/"))
    generated["metadata"]["namespace"] = "apps"  # its source: GitRepository/apps/flux-system
    files = cluster_repo(release, sources=[generated])
    result = _render(make_repo(files))["prod/apps/web"]
    assert result.error == (
        "ExternalArtifact/apps/demo-chart: unmapped source GitRepository/apps/flux-system "
        "(map it in harness.yaml `sources:`)"
    )
    generated["spec"]["sources"][0]["namespace"] = "flux-system"
    files = cluster_repo(release, sources=[generated])
    result = _render(make_repo(files))["prod/apps/web"]
    assert result.error == (
        "spec.chartRef ExternalArtifact/apps/demo-chart: not a chart archive (one top "
        "directory holding Chart.yaml), the artifact holds templates"
    )
    release["spec"]["chartRef"]["name"] = "nobody-makes-it"
    files = cluster_repo(release, sources=[generated])
    result = _render(make_repo(files))["prod/apps/web"]
    assert result.error == (
        "ExternalArtifact/apps/nobody-makes-it: no ArtifactGenerator of this cluster declares it"
    )


def test_kube_version_per_cluster_sets_each_clusters_capabilities(make_repo: Any) -> None:
    """`helm.kube_version: {cluster: version, "*": version}`: a chart sees its own cluster's."""
    files = cluster_repo(
        helm_release(chart=local_chart()),
        harness_yaml="helm:\n  kube_version: {prod: v1.31.2, '*': v1.34.0}\n",
    )
    for name in ("kustomization.yaml", "infra.yaml", "apps.yaml"):
        files[f"clusters/dev/{name}"] = files[f"clusters/prod/{name}"]
    files["charts/demo/templates/kube.yaml"] = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube}\n"
        "data: {version: '{{ .Capabilities.KubeVersion.Version }}'}\n"
    )
    results = _render(write_tree(make_repo({}), files))
    seen = {
        name: _objects(results[name])["ConfigMap/apps/kube"]["data"]["version"]
        for name in ("prod/apps/web", "dev/apps/web")
    }
    assert seen == {"prod/apps/web": "v1.31.2", "dev/apps/web": "v1.34.0"}
