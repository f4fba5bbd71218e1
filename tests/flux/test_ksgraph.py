"""The per-cluster Kustomization graph comes from rendered Kustomization documents only."""

from __future__ import annotations

from pathlib import Path

from harness.core.model import Snapshot
from harness.flux.ksgraph import graphs, prune_protected, split_target_name
from harness.pipeline import goldens
from tests.hazards.snap import cm, flux, ks, ns, obj, snapshot


def _snap() -> Snapshot:
    return snapshot(
        flux(
            "dev",
            "flux-system",
            ks("platform", depends=["flux-system"], subst_from=["vars"], wait=True),
            ks("apps", prune=False, depends=["platform"], targetNamespace="apps"),
            cm("vars", "flux-system", A="1"),
        ),
        flux("dev", "platform", ns("kube-system")),
        flux("dev", "apps", error="boom"),
        flux("prod", "flux-system", ks("platform")),
        flux("prod", "platform", ns("kube-system")),
    )


def test_nodes_from_rendered_kustomizations() -> None:
    g = graphs(_snap())
    assert sorted(g) == ["dev", "prod"]
    dev = g["dev"]
    platform = dev.nodes[("flux-system", "platform")]
    assert platform.prune and platform.wait and platform.spec_known
    assert platform.depends_on == (("flux-system", "flux-system"),)
    assert platform.post_build is not None
    assert [str(s) for s in platform.post_build.substitute_from] == ["ConfigMap/vars"]
    assert platform.declared_by == "dev/flux-system/flux-system"
    apps = dev.nodes[("flux-system", "apps")]
    assert not apps.prune and apps.target_namespace == "apps"


def test_synthesised_root_is_a_node_with_unknown_spec() -> None:
    root = graphs(_snap())["dev"].nodes[("flux-system", "flux-system")]
    assert not root.spec_known and root.prune


def test_deps_are_transitive_and_index_skips_failed_targets() -> None:
    dev = graphs(_snap())["dev"]
    apps = ("flux-system", "apps")
    assert dev.deps(apps) == {("flux-system", "platform"), ("flux-system", "flux-system")}
    assert dev.failed() == [apps]
    kube_system = dev.documents(("flux-system", "platform"))[0].id
    assert [key for key, _doc in dev.find(kube_system)] == [("flux-system", "platform")]


def test_prune_protection_keys() -> None:
    key = "kustomize.toolkit.fluxcd.io/prune"
    assert prune_protected(obj("A", "a", annotations={key: "disabled"})) == f"{key}: disabled"
    assert prune_protected(obj("A", "a", labels={key: "disabled"})) is not None
    ssa = "kustomize.toolkit.fluxcd.io/ssa"
    assert prune_protected(obj("A", "a", annotations={ssa: "Ignore"})) == f"{ssa}: Ignore"
    assert prune_protected(obj("A", "a")) is None


def test_target_names_split_from_the_right() -> None:
    assert split_target_name("east/prod/flux-system/apps") == ("east/prod", "flux-system", "apps")
    assert split_target_name("platform") is None


def test_goldens_snapshot_gives_the_same_graph(tmp_path: Path) -> None:
    snap = _snap()
    goldens.write(tmp_path, snap)
    again = graphs(goldens.to_snapshot(goldens.load(tmp_path), Path("/repo")))
    first = graphs(snap)
    assert set(first) == set(again) == {"dev", "prod"}  # the loop below runs for both
    for cluster, graph in first.items():
        assert again[cluster].nodes.keys() == graph.nodes.keys()
        assert (
            again[cluster].nodes[("flux-system", "platform")]
            == graph.nodes[("flux-system", "platform")]
        )
        assert set(again[cluster].index) == set(graph.index)


def test_helm_releases_with_their_owners_and_depends_on() -> None:
    postgres = obj("HelmRelease", "postgres", "db", "helm.toolkit.fluxcd.io/v2", spec={})
    sonarr = obj(
        "HelmRelease",
        "sonarr",
        "media",
        "helm.toolkit.fluxcd.io/v2",
        spec={"dependsOn": [{"name": "postgres", "namespace": "db"}, {"name": "radarr"}, "bad"]},
    )
    snap = snapshot(
        flux("dev", "flux-system", ks("infra"), ks("apps")),
        flux("dev", "infra", postgres),
        flux("dev", "apps", sonarr),
    )
    releases = graphs(snap)["dev"].releases
    assert sorted(releases) == [("db", "postgres"), ("media", "sonarr")]
    node = releases[("media", "sonarr")]
    assert node.owners == (("flux-system", "apps"),)
    assert node.depends_on == (("db", "postgres"), ("media", "radarr"))
    assert node.display == "media/sonarr"


def test_a_resourceset_is_a_node_with_its_depends_on() -> None:
    rset = {
        "apiVersion": "fluxcd.controlplane.io/v1",
        "kind": "ResourceSet",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {
            "dependsOn": [
                {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization"}
                | {"name": "infra", "namespace": "monitoring"},
                {"apiVersion": "fluxcd.controlplane.io/v1", "kind": "ResourceSet"}
                | {"name": "policies"},
                {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}
                | {"name": "x.example.com"},
            ]
        },
    }
    snap = snapshot(
        flux("dev", "flux-system", ks("tenants")),
        flux("dev", "tenants", rset),
        flux("dev", "apps@resourceset", ks("web", namespace="team-a")),
    )
    dev = graphs(snap)["dev"]
    node = dev.nodes[("flux-system", "apps@resourceset")]
    assert node.spec_known and node.prune
    assert node.declared_by == "dev/flux-system/tenants"
    assert node.depends_on == (("monitoring", "infra"), ("flux-system", "policies@resourceset"))
    assert dev.nodes[("team-a", "web")].declared_by == "dev/flux-system/apps@resourceset"
