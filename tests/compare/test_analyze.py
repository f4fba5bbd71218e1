"""The diff engine on hand-built snapshots: relocations, Flux moves, duplicates, errors."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.compare import analyze as analyze_mod
from harness.compare import gate
from harness.compare.analyze import Duplicate, analyze, summarize
from harness.compare.counts import count
from harness.core.model import DocId, Snapshot
from harness.flux.ksgraph import Placement, graphs
from tests.diffkit import cilium_split, cm, snapshot
from tests.hazards.snap import KUBECONFIG, hub_spoke, ks, ns, spoke

NS = DocId("", "ConfigMap", "kube-system", "ns")
HR = DocId("", "ConfigMap", "kube-system", "hr")


def test_path_target_loses_exactly_the_moved_documents_still_rendered_identically() -> None:
    a = analyze(*cilium_split())
    platform = next(t for t in a.targets if t.name == "platform")
    assert (platform.documents_before, platform.documents_after) == (3, 1)
    assert [str(r.doc.id) for r in platform.removed] == [
        "ConfigMap/kube-system/hr",
        "ConfigMap/kube-system/ns",
    ]
    for r in platform.removed:
        assert [(loc.target, loc.identical) for loc in r.still_rendered_by] == [
            ("platform/cilium", True)
        ]
        assert r.accounted
    assert not platform.added and not platform.changed


def test_flux_moves_are_pure_ownership_within_one_cluster() -> None:
    a = analyze(*cilium_split())
    assert [(m.cluster, m.source, m.dest, m.id) for m in a.moves] == [
        ("dev", "dev/flux-system/platform", "dev/flux-system/cilium", HR),
        ("dev", "dev/flux-system/platform", "dev/flux-system/cilium", NS),
    ]
    assert all(m.pure_ownership and not m.identical for m in a.moves)
    new = next(t for t in a.targets if t.name == "dev/flux-system/cilium")
    assert new.status == "added"
    assert all(
        [loc.target for loc in ad.previously_rendered_by] == ["dev/flux-system/platform"]
        for ad in new.added
    )
    s = summarize(a)
    assert (s.moved, s.moved_pure_ownership, s.moved_identical) == (2, 2, 0)
    assert s.duplicates == 0 and s.errors == 0


def test_a_value_changed_on_the_way_shows_in_the_move_and_the_relocation() -> None:
    a = analyze(*cilium_split(value="2"))
    hr_move = next(m for m in a.moves if m.id == HR)
    assert not hr_move.pure_ownership
    assert [(f.path, f.before, f.after) for f in hr_move.change.fields] == [
        ("metadata.labels.kustomize.toolkit.fluxcd.io/name", "platform", "cilium"),
        ("data.k", "v", "2"),
    ]
    platform = next(t for t in a.targets if t.name == "platform")
    removed_hr = next(r for r in platform.removed if r.doc.id == HR)
    assert not removed_hr.accounted
    assert [f.path for f in removed_hr.still_rendered_by[0].change.fields] == ["data.k"]


def test_relocations_stay_within_kind_and_cluster() -> None:
    base = snapshot(
        {
            "a": [cm("x")],
            "dev/flux-system/one": [cm("x", owner="one")],
            "prod/flux-system/one": [cm("x", owner="one")],
        }
    )
    head = snapshot(
        {
            "a": [],
            "dev/flux-system/one": [],
            "prod/flux-system/one": [cm("x", owner="one")],
        }
    )
    a = analyze(base, head)
    by_name = {t.name: t for t in a.targets}
    assert by_name["a"].removed[0].still_rendered_by == ()
    assert by_name["dev/flux-system/one"].removed[0].still_rendered_by == ()
    assert a.moves == ()


def test_a_target_failing_on_one_side_is_an_error_not_a_mass_removal() -> None:
    base = snapshot({"a": [cm("x"), cm("y")], "b": [cm("z")]})
    head = snapshot({"a": "kustomize: accumulating resources: missing.yaml", "b": [cm("z")]})
    a = analyze(base, head)
    failed = next(t for t in a.targets if t.name == "a")
    assert failed.status == "error"
    assert failed.removed == () and failed.added == ()
    assert [(e.target, e.side) for e in a.errors] == [("a", "head")]
    assert summarize(a).removed == 0


def test_errors_on_both_sides_are_both_reported() -> None:
    a = analyze(snapshot({"a": "broken before"}), snapshot({"a": "broken after"}))
    assert [(e.side, e.message) for e in a.errors] == [
        ("base", "broken before"),
        ("head", "broken after"),
    ]


def test_duplicates_are_one_identity_in_two_flux_targets_of_one_cluster() -> None:
    base = snapshot(
        {
            "dev/flux-system/a": [cm("x", owner="a"), cm("old", owner="a")],
            "dev/flux-system/b": [cm("old", owner="b")],
            "prod/flux-system/a": [cm("x", owner="a")],
        }
    )
    head = snapshot(
        {
            "dev/flux-system/a": [cm("x", owner="a"), cm("old", owner="a")],
            "dev/flux-system/b": [cm("x", owner="b"), cm("old", owner="b")],
            "prod/flux-system/a": [cm("x", owner="a")],
        }
    )
    dups = analyze(base, head).duplicates
    assert [(d.cluster, str(d.id), d.targets, d.in_base) for d in dups] == [
        ("dev", "ConfigMap/default/old", ("dev/flux-system/a", "dev/flux-system/b"), True),
        ("dev", "ConfigMap/default/x", ("dev/flux-system/a", "dev/flux-system/b"), False),
    ]


def test_targets_added_and_removed_as_a_whole() -> None:
    base = snapshot({"apps": [cm("a"), cm("b")], "apps/wave-0": [cm("a")]})
    head = snapshot({"apps/wave-0": [cm("a")], "apps/wave-1": [cm("b")]})
    a = analyze(base, head)
    by_name = {t.name: t for t in a.targets}
    assert by_name["apps"].status == "removed"
    assert all(r.accounted for r in by_name["apps"].removed)
    assert by_name["apps/wave-1"].status == "added"
    assert by_name["apps/wave-1"].added[0].accounted
    assert by_name["apps/wave-0"].status == "match"


def test_an_identity_leaving_one_spoke_for_another_is_no_move() -> None:
    """The production and staging spokes are two applied-to clusters (kubeConfig): what
    leaves production's tenants and appears in staging's is a removal and an addition."""
    base = hub_spoke((ns("podinfo"),), staging=(ns("other"),))
    head = hub_spoke((ns("other"),), staging=(ns("podinfo"),))
    a = analyze(base, head)
    assert a.moves == ()
    prod = next(t for t in a.targets if t.name == "hub/production/tenants")
    assert prod.applied_to == "hub -> Secret/production/cluster-kubeconfig"
    assert [r.doc.id.name for r in prod.removed] == ["podinfo"]
    assert prod.removed[0].still_rendered_by == ()
    c = count(a, gate.judge(a))
    assert (c.objects, c.clusters) == (2, 2)  # 2 Namespaces, 2 spokes (not `1 cluster`)


def test_duplicates_are_per_applied_to_cluster() -> None:
    one = hub_spoke((ns("podinfo"),))
    assert analyze(one, one).duplicates == ()


def test_a_new_overlay_beside_an_unchanged_one_is_an_addition_not_a_move() -> None:
    """clusters/production/apps appears with its own value while clusters/staging/apps
    renders its variant unchanged: nothing moved (flux2-hub-spoke-example 5dcfc42)."""
    base = snapshot({"clusters/staging/apps": [cm("podinfo", host="podinfo.staging")]})
    head = snapshot(
        {
            "clusters/staging/apps": [cm("podinfo", host="podinfo.staging")],
            "clusters/production/apps": [cm("podinfo", host="podinfo.production")],
        }
    )
    a = analyze(base, head)
    (new,) = (t for t in a.targets if t.differs)
    (added,) = new.added
    assert added.relocations == () and [loc.stayed for loc in added.previously_rendered_by] == [
        True
    ]
    tally = gate.judge(a).tally
    assert (tally.added, tally.moved_with_changes) == (1, 0)


def _both_ways(base: Snapshot, head: Snapshot) -> tuple[Duplicate, ...]:
    """The duplicates from the graphs' indexes, held to the walk of every document."""
    base_graphs, head_graphs = graphs(base), graphs(head)
    base_place, head_place = Placement(base_graphs), Placement(head_graphs)
    fast = analyze_mod._duplicates(base, head, base_place, head_place, base_graphs, head_graphs)
    assert fast == analyze_mod._walked_duplicates(base, head, base_place, head_place)
    return fast


def test_duplicates_from_the_graphs_are_the_walked_ones() -> None:
    base = snapshot(
        {
            "dev/flux-system/a": [cm("x", owner="a"), cm("old", owner="a"), cm("old", owner="a")],
            "dev/flux-system/b": [cm("old", owner="b")],
            "prod/flux-system/a": [cm("x", owner="a")],
        }
    )
    head = snapshot(
        {
            "dev/flux-system/a": [cm("x", owner="a"), cm("old", owner="a")],
            "dev/flux-system/b": [cm("x", owner="b"), cm("old", owner="b")],
            "prod/flux-system/a": [cm("x", owner="a")],
            "prod/flux-system/b": "failed",
        }
    )
    assert len(_both_ways(base, head)) == 2
    assert _both_ways(head, base)[0].in_base


def test_duplicates_per_spoke_from_the_graphs_are_the_walked_ones() -> None:
    """A Namespace in both spokes is no duplicate; in one spoke's two targets it is."""
    base = hub_spoke((ns("podinfo"),))
    more = (ks("more", namespace="production", kubeConfig=KUBECONFIG),)
    head = hub_spoke((ns("podinfo"),), root=more, extra=(spoke("more", ns("podinfo")),))
    assert _both_ways(base, base) == ()
    dups = _both_ways(base, head)
    assert [(d.applied_to, d.targets) for d in dups] == [
        (
            "hub -> Secret/production/cluster-kubeconfig",
            ("hub/production/more", "hub/production/tenants"),
        )
    ]


def test_a_flux_target_outside_any_graph_takes_the_walk() -> None:
    """A flux target not named `<cluster>/<namespace>/<name>` is in no graph: the walk
    answers, as before."""
    base = snapshot({"dev/flux-system/a": [cm("x", owner="a")]})
    odd = base.results["dev/flux-system/a"]
    stray = replace(odd, target=replace(odd.target, name="stray"))
    head = replace(base, results={**base.results, "stray": stray})
    assert not analyze_mod._GraphOwners.covers(head, graphs(head), Placement(graphs(head)))
    assert [d.targets for d in _both_ways(head, head)] == [("dev/flux-system/a", "stray")]


_PART = st.sampled_from(["a", "b", "b-c", "b.d", "c"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(_PART, min_size=1, max_size=4), min_size=1, max_size=6),
    st.lists(_PART, max_size=3),
)
def test_below_all_is_below_the_common_path(paths: list[list[str]], directory: list[str]) -> None:
    """First and last by parts decide it for all: what commonpath says (`b-c` sorts between
    `b` and `b/...` as a string, not as parts)."""
    dirs = [Path("/repo", *p) for p in paths]
    where = Path("/repo", *directory)
    common = Path(os.path.commonpath([str(d) for d in dirs]))
    assert analyze_mod._below_all(dirs)(where) == common.is_relative_to(where)
