"""The per-cluster Kustomization graph comes from rendered Kustomization documents only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.core.model import DocId, Snapshot, Target
from harness.core.run import Run
from harness.flux.ksgraph import (
    ClusterGraph,
    cluster_graph,
    graphs,
    kube_config,
    placement,
    prune_protected,
    split_target_name,
)
from harness.pipeline import goldens
from tests.hazards.snap import (
    KUBECONFIG,
    cm,
    flux,
    helmrelease,
    hub_spoke,
    ks,
    ns,
    obj,
    snapshot,
    spoke,
)


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


PROD = "hub -> Secret/production/cluster-kubeconfig"
STAGING = "hub -> Secret/staging/cluster-kubeconfig"


def test_kubeconfig_names_the_applied_to_cluster_per_namespace() -> None:
    """One Secret name in two namespaces is two remotes; a child inherits its declarer's."""
    snap = hub_spoke(
        (ns("cert-manager"), ks("apps", namespace="production")),
        staging=(ns("cert-manager"),),
        extra=(spoke("apps", cm("a", "production")),),
    )
    hub = graphs(snap)["hub"]
    assert hub.applied_to(("production", "tenants")) == PROD
    assert hub.applied_to(("staging", "tenants")) == STAGING
    assert hub.applied_to(("production", "apps")) == PROD  # declared by a spoke's Kustomization
    assert hub.applied_to(("flux-system", "flux-system")) == "hub"
    assert hub.applied_clusters() == ["hub", PROD, STAGING]
    namespace = DocId("", "Namespace", "", "cert-manager")
    assert [k for k, _d in hub.find(namespace)] == [
        ("production", "tenants"),
        ("staging", "tenants"),
    ]
    assert [k for k, _d in hub.find(namespace, PROD)] == [("production", "tenants")]
    assert hub.find(namespace, "hub") == ()


def test_kubeconfig_reference_forms() -> None:
    assert kube_config({}, "a") is None
    assert kube_config({"kubeConfig": {"secretRef": {}}}, "a") is None
    ref = kube_config({"kubeConfig": {"secretRef": {"name": "k", "key": "value.yaml"}}}, "a")
    assert ref is not None and ref.remote("hub") == "hub -> Secret/a/k"  # a default key
    ref = kube_config({"kubeConfig": {"secretRef": {"name": "k", "key": "prod.yaml"}}}, "a")
    assert ref is not None and ref.remote("hub") == "hub -> Secret/a/k:prod.yaml"
    ref = kube_config({"kubeConfig": {"configMapRef": {"name": "eks"}}}, "apps")
    assert ref is not None and ref.remote("hub") == "hub -> ConfigMap/apps/eks"


def test_placement_of_flux_and_helm_targets() -> None:
    """A HelmRelease's chart lands where its own kubeConfig says, else with its Kustomization."""
    remote = {**helmrelease("cert-manager", "production"), "spec": {"kubeConfig": KUBECONFIG}}
    snap = hub_spoke(
        (ns("podinfo"),),
        root=(ks("infra", namespace="production"),),
        extra=(spoke("infra", remote, helmrelease("local", "production")),),
    )
    place = placement(snap)
    assert place.of(snap.results["hub/production/tenants"].target) == PROD
    assert place.of(snap.results["hub/production/infra"].target) == "hub"
    helm = Target("hub/production/cert-manager", "helm", Path("/r"), cluster="hub")
    assert place.of(helm) == PROD
    assert place.of(Target("hub/production/local@helm", "helm", Path("/r"), cluster="hub")) == "hub"
    assert place.of(Target("apps", "path", Path("/r"))) is None


def _fresh(snap: Snapshot) -> dict[str, ClusterGraph]:
    """The graphs outside any run: nothing remembered, every document parsed afresh."""
    return {
        c: cluster_graph(c, [r for r in snap.results.values() if r.target.cluster == c])
        for c in graphs(snap)
    }


def test_graphs_built_after_another_sides_are_the_fresh_ones() -> None:
    """Nodes and release specs are remembered by content within a run: a head whose
    dependsOn, kubeConfig or release dependsOn changed gets its own, as built from scratch."""
    release = obj("HelmRelease", "sonarr", "media", "helm.toolkit.fluxcd.io/v2", spec={})
    depends = {"dependsOn": [{"name": "postgres", "namespace": "db"}]}
    edited = obj("HelmRelease", "sonarr", "media", "helm.toolkit.fluxcd.io/v2", spec=depends)
    base = snapshot(
        flux("dev", "flux-system", ks("infra"), ks("apps", depends=["infra"])),
        flux("dev", "apps", release, ns("media")),
        flux("dev", "infra", ns("media")),
    )
    heads = [
        snapshot(  # a dependsOn edit
            flux("dev", "flux-system", ks("infra"), ks("apps", depends=[])),
            flux("dev", "apps", release, ns("media")),
            flux("dev", "infra", ns("media")),
        ),
        snapshot(  # the release's dependsOn
            flux("dev", "flux-system", ks("infra"), ks("apps", depends=["infra"])),
            flux("dev", "apps", edited, ns("media")),
            flux("dev", "infra", ns("media")),
        ),
        snapshot(  # apps now applies to a remote: the index splits per applied-to cluster
            flux("dev", "flux-system", ks("infra"), ks("apps", kubeConfig=KUBECONFIG)),
            flux("dev", "apps", release, ns("media")),
            flux("dev", "infra", ns("media")),
        ),
    ]
    fresh = [_fresh(base), *(_fresh(head) for head in heads)]
    with Run().entered():
        assert graphs(base) == fresh[0]
        for head, expected in zip(heads, fresh[1:], strict=True):
            assert graphs(head) == expected
            assert graphs(head) != graphs(base)
    dev = _fresh(heads[0])["dev"]
    assert dev.nodes[("flux-system", "apps")].depends_on == ()
    assert _fresh(heads[1])["dev"].releases[("media", "sonarr")].depends_on == (("db", "postgres"),)
    remote = _fresh(heads[2])["dev"]
    assert sorted(remote.indexes) == ["dev", "dev -> Secret/flux-system/cluster-kubeconfig"]
    assert remote.within("dev") != remote.index


def test_a_cluster_with_only_local_kustomizations_has_one_index() -> None:
    dev = graphs(_snap())["dev"]
    assert dev.indexes == {"dev": dev.index}
    nothing = graphs(snapshot(flux("dev", "flux-system", error="boom")))["dev"]
    assert nothing.indexes == {} and nothing.within("dev") == {}


def _same_graphs(made: dict[str, ClusterGraph], fresh: dict[str, ClusterGraph]) -> None:
    """Equal, and in the same order (rules walk the index and nodes in order)."""
    assert made == fresh
    for cluster, graph in made.items():
        assert list(graph.index) == list(fresh[cluster].index)
        assert [list(i) for i in graph.indexes.values()] == [
            list(i) for i in fresh[cluster].indexes.values()
        ]
        assert list(graph.nodes) == list(fresh[cluster].nodes)
        assert list(graph.releases) == list(fresh[cluster].releases)


def test_a_graph_derived_from_the_last_one_is_the_fresh_one() -> None:
    """Bytes changed under the same identities (an annotation, a release's values, a
    ConfigMap two targets render): the head's graph is derived from the base's and equals
    the one built from scratch, order included; a changed identity or failure rebuilds."""

    def side(
        value: str, extra: tuple[dict[str, Any], ...] = (), fail: bool = False, dep: str = ""
    ) -> Snapshot:
        sonarr = helmrelease("sonarr", "media", tag=value)
        if dep:
            sonarr["spec"]["dependsOn"] = [{"name": dep}]
        return snapshot(
            flux("dev", "flux-system", ks("infra"), ks("apps", depends=["infra"])),
            flux("dev", "apps", cm("shared", "media", v=value), sonarr, cm("x", "media"))
            if not fail
            else flux("dev", "apps", error="boom"),
            flux("dev", "infra", cm("shared", "media"), ns("media"), *extra),
        )

    base = side("1")
    heads = [
        side("2"),
        side("2", dep="postgres"),  # the release's dependsOn: same identities
        side("1", extra=(cm("new", "media"),)),
        side("2", fail=True),
        side("1"),
    ]
    fresh = [_fresh(base), *(_fresh(head) for head in heads)]
    with Run().entered():
        _same_graphs(graphs(base), fresh[0])
        for head, expected in zip(heads, fresh[1:], strict=True):
            _same_graphs(graphs(head), expected)
    assert fresh[1] != fresh[0] and fresh[5] == fresh[0]
    assert fresh[2]["dev"].releases[("media", "sonarr")].depends_on == (("media", "postgres"),)
