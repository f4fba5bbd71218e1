"""FluxInstance syncs read from the files: the three shapes repos ship them in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from harness.flux import operator

Repo = Callable[[dict[str, str | bytes]], Path]


def instance(sync: dict[str, Any], patches: list[dict[str, Any]] | None = None) -> str:
    spec: dict[str, Any] = {"distribution": {"version": "2.x"}, "sync": sync}
    if patches is not None:
        spec["kustomize"] = {"patches": patches}
    return yaml.safe_dump(
        {
            "apiVersion": "fluxcd.controlplane.io/v1",
            "kind": "FluxInstance",
            "metadata": {"name": "flux", "namespace": "flux-system"},
            "spec": spec,
        }
    )


OCI = {"kind": "OCIRepository", "url": "oci://ghcr.io/org/fleet", "ref": "latest"}


def test_a_flux_instance_manifest(make_repo: Repo) -> None:
    repo = make_repo({"clusters/a/flux-system/fi.yaml": instance({**OCI, "path": "clusters/a"})})
    [sync] = operator.file_syncs(repo / "clusters/a/flux-system/fi.yaml")
    assert (sync.kind, sync.path, sync.name, sync.namespace) == (
        "OCIRepository",
        "clusters/a",
        "flux-system",
        "flux-system",
    )
    assert operator.source_root(sync, repo) == repo


def test_helm_release_values_of_the_flux_instance_chart(make_repo: Repo) -> None:
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "flux-instance", "namespace": "flux-system"},
        "spec": {
            "chartRef": {"kind": "OCIRepository", "name": "flux-instance"},
            "values": {
                "instance": {
                    "sync": {"kind": "GitRepository", "url": "https://x", "path": "k/cluster"}
                }
            },
        },
    }
    other = {**release, "spec": {**release["spec"], "chartRef": {"kind": "x", "name": "podinfo"}}}
    repo = make_repo(
        {
            "apps/fi/hr.yaml": yaml.safe_dump(release),
            "apps/podinfo/hr.yaml": yaml.safe_dump(other),
            "k/cluster/a.yaml": "x: 1\n",
        }
    )
    [sync] = operator.file_syncs(repo / "apps/fi/hr.yaml")
    assert (sync.shape, sync.kind, sync.path) == (
        "HelmRelease values",
        "GitRepository",
        "k/cluster",
    )
    assert operator.source_root(sync, repo) == repo
    assert operator.file_syncs(repo / "apps/podinfo/hr.yaml") == []


def test_an_oci_root_is_the_directory_the_artifact_is_pushed_from(make_repo: Repo) -> None:
    """xunholy's shape: values.yaml under kubernetes/, sync.path relative to kubernetes/."""
    values = yaml.safe_dump({"instance": {"sync": {**OCI, "path": "./clusters/c0"}}})
    repo = make_repo(
        {"kubernetes/clusters/c0/flux-system/fi/values.yaml": values, "clusters/other/a.yaml": ""}
    )
    [sync] = operator.file_syncs(repo / "kubernetes/clusters/c0/flux-system/fi/values.yaml")
    assert sync.shape == "values file"
    assert operator.source_root(sync, repo) == repo / "kubernetes"


def test_a_sync_path_outside_the_repo_has_no_root(make_repo: Repo) -> None:
    repo = make_repo({"fi.yaml": instance({**OCI, "path": "clusters/missing"})})
    [sync] = operator.file_syncs(repo / "fi.yaml")
    assert operator.source_root(sync, repo) is None
    templated = make_repo({"fi.yaml": instance({**OCI, "path": "clusters/${CLUSTER}"})})
    [sync] = operator.file_syncs(templated / "fi.yaml")
    assert operator.source_root(sync, templated) is None


def test_the_generated_objects_and_the_patches_that_reach_them(make_repo: Repo) -> None:
    root_patch = {
        "patch": "- op: add\n  path: /spec/decryption\n  value: {provider: sops}\n",
        "target": {"kind": "Kustomization", "name": "flux-system"},
    }
    deployment_patch = {
        "patch": "- op: add\n  path: /x\n  value: 1\n",
        "target": {"kind": "Deployment"},
    }
    smp = {"patch": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: all\n"}
    oci_patch = {
        "patch": "- op: add\n  path: /spec/verify\n  value: {provider: cosign}\n",
        "target": {"kind": "OCIRepository"},
    }
    any_kind = {
        "patch": "- op: add\n  path: /metadata/labels\n  value: {a: b}\n",
        "target": {"kind": "(OCIRepository|Kustomization)"},
    }
    patches = [root_patch, deployment_patch, smp, oci_patch, any_kind]
    repo = make_repo({"fi.yaml": instance({**OCI, "path": "c", "name": "root"}, patches)})
    [sync] = operator.file_syncs(repo / "fi.yaml")
    source, kustomization = operator.objects(sync)
    assert source["kind"] == "OCIRepository" and source["spec"]["ref"] == {"tag": "latest"}
    assert kustomization["metadata"] == {"name": "root", "namespace": "flux-system"}
    assert kustomization["spec"] == {
        "interval": "10m0s",
        "path": "c",
        "prune": True,
        "sourceRef": {"kind": "OCIRepository", "name": "root"},
    }
    assert operator.relevant_patches(sync) == [root_patch, oci_patch, any_kind]
