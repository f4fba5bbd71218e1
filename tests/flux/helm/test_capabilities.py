"""Capabilities as the cluster gives them: built-in APIs per Kubernetes version, CRDs and custom
resources of the cluster, config extras; and Helm's check of a chart's `kubeVersion`."""

from __future__ import annotations

import pytest

from harness.flux.helm import capabilities as caps

GATEWAY_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "httproutes.gateway.networking.k8s.io"},
    "spec": {
        "group": "gateway.networking.k8s.io",
        "names": {"kind": "HTTPRoute", "plural": "httproutes"},
        "versions": [
            {"name": "v1", "served": True, "storage": True},
            {"name": "v1beta1", "served": True},
            {"name": "v1alpha2", "served": False},
        ],
    },
}


def test_builtin_apis_follow_the_kubernetes_version() -> None:
    at_1_33 = caps.builtin("v1.33.4+k3s1")
    assert {"v1", "v1/Secret", "apps/v1/Deployment", "policy/v1/PodDisruptionBudget"} <= at_1_33
    assert "autoscaling/v2/HorizontalPodAutoscaler" in at_1_33
    assert "networking.k8s.io/v1/ServiceCIDR" in at_1_33  # GA in 1.33
    assert "policy/v1beta1" not in at_1_33 and "batch/v1beta1/CronJob" not in at_1_33
    at_1_24 = caps.builtin("1.24")
    assert "batch/v1beta1/CronJob" in at_1_24 and "batch/v1/CronJob" in at_1_24
    assert "policy/v1beta1/PodSecurityPolicy" in at_1_24
    assert "networking.k8s.io/v1/ServiceCIDR" not in at_1_24
    at_1_20 = caps.builtin("v1.20.0")
    assert "policy/v1/PodDisruptionBudget" not in at_1_20
    assert "networking.k8s.io/v1beta1/Ingress" in at_1_20
    with pytest.raises(caps.VersionError, match="not a Kubernetes version"):
        caps.builtin("latest")


def test_crds_and_custom_resources_of_the_cluster_join_the_set() -> None:
    assert caps.crd_apis(GATEWAY_CRD) == {
        "gateway.networking.k8s.io/v1",
        "gateway.networking.k8s.io/v1/HTTPRoute",
        "gateway.networking.k8s.io/v1beta1",
        "gateway.networking.k8s.io/v1beta1/HTTPRoute",
    }
    v1beta1_crd = {
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "spec": {"group": "old.example.com", "version": "v2", "names": {"kind": "Thing"}},
    }
    assert caps.crd_apis(v1beta1_crd) == {"old.example.com/v2", "old.example.com/v2/Thing"}
    monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor"}
    assert caps.applied_apis(monitor) == {
        "monitoring.coreos.com/v1",
        "monitoring.coreos.com/v1/ServiceMonitor",
    }
    assert caps.applied_apis({"apiVersion": "apps/v1", "kind": "Deployment"}) == set()
    cluster = caps.for_cluster(
        [GATEWAY_CRD, monitor, {"apiVersion": "v1", "kind": "ConfigMap"}],
        "v1.31.0",
        extras=("cert-manager.io/v1",),
        preinstalled=("kyverno.io/v1/ClusterPolicy",),
    )
    assert cluster.kube_version == "v1.31.0"
    for api in (
        "gateway.networking.k8s.io/v1/HTTPRoute",
        "monitoring.coreos.com/v1/ServiceMonitor",
        "cert-manager.io/v1",
        "kyverno.io/v1/ClusterPolicy",
        "batch/v1/CronJob",
    ):
        assert cluster.has(api), api
    assert not cluster.has("gateway.networking.k8s.io/v1alpha2")
    assert list(cluster.api_versions) == sorted(set(cluster.api_versions))
    # the digest stands for the whole set in a cache key
    assert cluster.digest in repr(cluster)
    assert caps.for_cluster([], "v1.31.0").digest != cluster.digest


@pytest.mark.parametrize(
    ("version", "constraint", "ok"),
    [
        ("v1.33.4+k3s1", ">=1.19.0-0", True),
        ("v1.31.0-gke.1", ">=1.19.0", False),  # a prerelease needs a prerelease condition
        ("v1.31.0-gke.1", ">=1.19.0-0", True),
        ("v1.25.0", ">=1.26.0-0", False),
        ("v1.29.0", ">= 1.16.0-0 < 1.30.0-0", True),
        ("v1.30.0", ">= 1.16.0-0 < 1.30.0-0", False),
        ("1.29.3", "~1.29", True),
        ("1.30.0", "~1.29", False),
        ("1.29.0", "^1.20", True),
        ("1.22.9", "1.19 - 1.22", True),
        ("1.23.0", "1.19 - 1.22", False),
        ("1.30.0", "<1.25 || >=1.28", True),
        ("1.26.0", "<1.25 || >=1.28", False),
        ("1.25.5", ">1.25.x", False),
        ("1.26.0", ">1.25.x", True),
        ("1.29.1", "1.29.x", True),
    ],
)
def test_kube_version_constraints(version: str, constraint: str, ok: bool) -> None:
    assert caps.satisfies(version, constraint) is ok
