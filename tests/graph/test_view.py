"""The Kustomization graph model: edges of each kind, change marks, hazard marks, focus."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.graph import style as gs
from harness.graph import view as graph
from harness.hazards.finding import Finding
from tests.diffkit import cilium_split, cm, ks, snapshot
from tests.hazards.snap import KUBECONFIG, hub_spoke, spoke
from tests.hazards.snap import crd as snap_crd
from tests.hazards.snap import ks as snap_ks
from tests.hazards.snap import obj as snap_obj

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  names:
    kind: Widget
    plural: widgets
  scope: Namespaced
"""
WIDGET = "apiVersion: example.io/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: default\n"
SUBST = "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: vars\n"


def _edges(g: graph.Graph) -> set[tuple[str, str, str]]:
    return {(e.kind, e.source[1], e.target[1]) for e in g.edges()}


def test_edges_of_every_kind_point_from_what_comes_first() -> None:
    snap = snapshot(
        {
            "dev/flux-system/flux-system": [
                ks("infra", "./infra", owner="flux-system"),
                ks("apps", "./apps", depends=["infra", "ghost"], owner="flux-system", extra=SUBST),
                cm("vars", "flux-system", owner="flux-system"),
            ],
            "dev/flux-system/infra": [CRD],
            "dev/flux-system/apps": [WIDGET],
        }
    )
    g = graph.build(snap)
    assert _edges(g) == {
        ("dependsOn", "infra", "apps"),
        ("dependsOn", "ghost", "apps"),
        ("substituteFrom", "flux-system", "apps"),
        ("crd", "infra", "apps"),
    }
    (view,) = g.clusters
    ghost = view.node(("flux-system", "ghost"))
    assert ghost is not None and ghost.missing and ghost.documents is None
    apps = view.node(("flux-system", "apps"))
    assert apps is not None and apps.documents == 1
    crd = next(e for e in g.edges() if e.kind == "crd")
    assert crd.label == "example.io"


def test_helm_release_depends_on_joins_the_kustomizations_rendering_them() -> None:
    def release(name: str, *deps: str) -> str:
        spec = "".join(f"\n    - name: {d}" for d in deps)
        return (
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n"
            f"  name: {name}\n  namespace: media\nspec:\n"
            + (f"  dependsOn:{spec}\n" if deps else "  interval: 1h\n")
        )

    snap = snapshot(
        {
            "dev/flux-system/flux-system": [
                ks("db", "./db", owner="flux-system"),
                ks("apps", "./apps", owner="flux-system"),
            ],
            "dev/flux-system/db": [release("postgres")],
            "dev/flux-system/apps": [release("sonarr", "postgres", "missing"), release("radarr")],
        }
    )
    g = graph.build(snap)
    [edge] = [e for e in g.edges() if e.kind == "dependsOn"]
    assert (edge.source[1], edge.target[1]) == ("db", "apps")
    assert edge.label == "HelmRelease media/postgres -> media/sonarr"
    assert gs.edge_caption(edge, brief=True) == "HelmRelease"


def test_compare_marks_added_changed_and_moves() -> None:
    base, head = cilium_split()
    g = graph.compare(base, head)
    (view,) = g.clusters
    cilium = view.node(("flux-system", "cilium"))
    platform = view.node(("flux-system", "platform"))
    assert cilium is not None and platform is not None
    assert cilium.marks == ("added", "moved-into") and cilium.moved_in == 2
    assert platform.marks == ("changed", "moved-out-of") and platform.moved_out == 2
    move = next(e for e in g.edges() if e.kind == "move")
    assert (move.source[1], move.target[1]) == ("platform", "cilium")
    assert move.documents == ("ConfigMap/kube-system/hr", "ConfigMap/kube-system/ns")
    dep = next(e for e in g.edges() if e.kind == "dependsOn" and e.source[1] == "cilium")
    assert dep.change == "added"


def test_removed_kustomization_stays_in_the_picture() -> None:
    base, head = cilium_split()
    g = graph.compare(head, base)  # the other way round: cilium goes away
    (view,) = g.clusters
    cilium = view.node(("flux-system", "cilium"))
    assert cilium is not None and cilium.change == "removed" and cilium.moved_out == 2
    assert any(e.change == "removed" and e.source[1] == "cilium" for e in g.edges())


def _finding(*names: str, docs: tuple[str, ...] = (), severity: str = "error") -> Finding:
    return Finding(
        id=f"x:{names}",
        rule="prune-delete",
        severity=severity,  # type: ignore[arg-type]
        cluster="dev",
        kustomizations=names,
        documents=docs,
        message="m",
    )


def test_hazards_mark_nodes_edges_between_them_and_the_move_that_carried_a_document() -> None:
    base, head = cilium_split()
    g = graph.with_hazards(
        graph.compare(base, head),
        [
            _finding("platform", docs=("ConfigMap/kube-system/ns",)),
            _finding("platform", "cilium", severity="warning"),
            Finding("y", "r", "error", None, ("platform",), (), "source-level"),
        ],
    )
    (view,) = g.clusters
    platform = view.node(("flux-system", "platform"))
    assert platform is not None and [m.severity for m in platform.hazards] == ["error", "warning"]
    move = next(e for e in g.edges() if e.kind == "move")
    assert move.severity == "error"
    dep = next(e for e in g.edges() if e.kind == "dependsOn" and e.source[1] == "cilium")
    assert dep.severity == "warning"  # named together by the second finding
    flux = view.node(("flux-system", "flux-system"))
    assert flux is not None and not flux.hazards
    assert g.counts()["hazard_edges"] == 2


def test_focus_keeps_the_neighbourhood_and_names_unknown_nodes() -> None:
    snap = snapshot(
        {
            "dev/flux-system/flux-system": [
                ks("a", "./a", owner="flux-system"),
                ks("b", "./b", depends=["a"], owner="flux-system"),
                ks("c", "./c", depends=["b"], owner="flux-system"),
                ks("d", "./d", depends=["c"], owner="flux-system"),
            ],
        }
    )
    g = graph.build(snap)
    near = graph.focus(g, ["c"], depth=1)
    assert {n.name for n in near.nodes()} == {"b", "c", "d"}
    assert near.hidden_nodes == 2 and near.depth == 1
    assert _edges(near) == {("dependsOn", "b", "c"), ("dependsOn", "c", "d")}
    assert {n.name for n in graph.focus(g, ["dev/flux-system/a"], depth=0).nodes()} == {"a"}
    with pytest.raises(KeyError, match="nope"):
        graph.focus(g, ["nope", "a"])
    assert list(graph.focus(g, [graph.CHANGED]).nodes()) == []  # nothing changed


def test_merge_alike_draws_identical_clusters_once() -> None:
    base, head = cilium_split()
    g = graph.compare(base, head)
    twin = graph.Graph((*g.clusters, graph.ClusterView("prod", *_renamed(g, "prod"))))
    merged = graph.merge_alike(twin)
    assert [v.cluster for v in merged.clusters] == ["dev, prod"]


def _renamed(g: graph.Graph, cluster: str) -> tuple[tuple[graph.Node, ...], tuple[graph.Edge, ...]]:
    (view,) = g.clusters
    return (
        tuple(replace(n, cluster=cluster, path="elsewhere") for n in view.nodes),
        tuple(replace(e, cluster=cluster) for e in view.edges),
    )


def _big(apps: int = 50, namespaces: int = 5) -> graph.Graph:
    """`infra` (a CRD) and `apps` Kustomizations in `namespaces` target namespaces, each
    dependsOn infra and rendering a Widget."""
    kss = [ks("infra", "./infra", owner="flux-system")]
    spec: dict[str, list[str]] = {"dev/flux-system/infra": [CRD]}
    for i in range(apps):
        ns = f"team-{i % namespaces}"
        extra = f"  targetNamespace: {ns}\n"
        kss.append(
            ks(f"app-{i:02d}", f"./apps/{i}", depends=["infra"], owner="flux-system", extra=extra)
        )
        spec[f"dev/flux-system/app-{i:02d}"] = [WIDGET.replace("default", ns)]
    spec["dev/flux-system/flux-system"] = kss
    return graph.build(snapshot(spec))


def test_only_edges_counts_what_it_leaves_out() -> None:
    g = _big()
    kinds = {e.kind for e in g.edges()}
    assert kinds == {"dependsOn", "crd"}
    trimmed = graph.only_edges(g, ["dependsOn"])
    assert {e.kind for e in trimmed.edges()} == {"dependsOn"}
    assert trimmed.hidden_edges == (("crd", 50),)


def test_collapse_boxes_namespaces_keeps_the_change_and_merges_edges() -> None:
    g = _big()
    (view,) = g.clusters
    touched = replace(
        g,
        clusters=(
            replace(
                view,
                nodes=tuple(
                    replace(n, change="changed") if n.name == "app-07" else n for n in view.nodes
                ),
            ),
        ),
    )
    boxed = graph.collapse(touched, above=10)
    (cv,) = boxed.clusters
    names = {n.display for n in cv.nodes}
    assert "app-07" in names  # the change stays a box of its own
    box = next(n for n in cv.nodes if n.name == "team-2")
    assert len(box.members) == 9 and box.display == "team-2 (9 Kustomizations)"
    assert cv.kustomizations == 52  # flux-system, infra and 50 apps, boxes counted whole
    assert boxed.grouped == sum(len(n.members) for n in cv.nodes)
    merged = [e for e in cv.edges if e.target == box.key and e.kind == "dependsOn"]
    assert len(merged) == 1 and merged[0].label == "9 dependsOn"
    assert len(cv.nodes) <= 10 + 1  # within the budget (plus the kept change)


def test_for_picture_defaults_scale_with_the_cluster() -> None:
    small = graph.for_picture(_big(apps=6))
    assert {e.kind for e in small.edges()} == {"dependsOn", "crd"} and not small.grouped
    big = graph.for_picture(_big(apps=120, namespaces=6))
    assert "crd" not in {e.kind for e in big.edges()}
    assert dict(big.hidden_edges)["crd"] == 120 and big.grouped >= 100
    asked = graph.for_picture(_big(apps=120, namespaces=6), edges=["crd"], group="none")
    assert {e.kind for e in asked.edges()} == {"crd"} and not asked.grouped


def test_no_crd_edge_across_applied_to_clusters() -> None:
    """The hub's CRD is no provider for a spoke's custom resource (kubeConfig); a CRD the
    same spoke gets is."""
    widget = snap_obj("Widget", "w", "podinfo", "example.io/v1")
    widgets = snap_crd("example.io", "Widget", "widgets")
    local = hub_spoke(
        (widget,),
        root=(snap_ks("crds", namespace="production"),),
        extra=(spoke("crds", widgets),),
    )
    assert ("crd", "crds", "tenants") not in _edges(graph.build(local))
    remote = hub_spoke(
        (widget,),
        root=(snap_ks("crds", namespace="production", kubeConfig=KUBECONFIG),),
        extra=(spoke("crds", widgets),),
    )
    assert ("crd", "crds", "tenants") in _edges(graph.build(remote))
