"""One counting model: every output's numbers come from report/counts.py (in-memory
scenarios here; tests/commands/test_refactors.py checks the same through the CLI)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from harness.compare import gate
from harness.compare.analyze import Analysis, Origin, analyze
from harness.compare.counts import (
    count,
    objects_breakdown,
    objects_phrase,
    plural,
    targets_line,
)
from harness.core.model import Snapshot
from harness.report import diff_json, junit, markdown
from harness.report.diff_text import verdict_line
from tests.diffkit import cilium_split, cm, ks, snapshot


def _ks_only() -> tuple[Snapshot, Snapshot]:
    """Only a Flux Kustomization changes (a real field): no document changes."""
    base = snapshot({"clusters/base": [ks("apps", "./apps")]})
    head = snapshot({"clusters/base": [ks("apps", "./apps", extra="  serviceAccountName: x\n")]})
    return base, head


def _errors() -> tuple[Snapshot, Snapshot]:
    """`b` fails on both sides (2 errors, one target), `d` only in head, `c` pre-existing."""
    base = snapshot({"a": [cm("a")], "b": "kustomize: old", "c": "kustomize: same", "d": [cm("d")]})
    head = snapshot(
        {"a": [cm("a", v="2")], "b": "kustomize: new", "c": "kustomize: same", "d": "boom"}
    )
    return base, head


SCENARIOS = {
    "pure": lambda: cilium_split(),
    "changed": lambda: cilium_split(value="changed"),
    "ks-only": _ks_only,
    "errors": _errors,
}


def _analysis(name: str) -> Analysis:
    base, head = SCENARIOS[name]()
    return analyze(base, head, same_inputs={"c"})


def _counts(
    targets: tuple[int, ...],
    docs: tuple[int, ...],
    extra: tuple[int, ...],
    objects: tuple[int, ...],
) -> dict:
    keys = ("targets", "targets_compared", "targets_changed", "targets_unchanged")
    keys += ("targets_error", "targets_preexisting_error")
    doc_keys = ("documents_before", "documents_after", "changed", "added", "removed")
    doc_keys += ("moved_with_changes",)
    extra_keys = ("kustomizations_changed", "duplicates", "change_targets", "documents_changing")
    object_keys = ("objects", "objects_changed", "objects_added", "objects_removed")
    object_keys += ("objects_moved_with_changes", "clusters")
    return {
        **dict(zip(keys, targets, strict=True)),
        **dict(zip(doc_keys, docs, strict=True)),
        **dict(zip(extra_keys, extra, strict=True)),
        **dict(zip(object_keys, objects, strict=True)),
        "targets_repaired": 0,
        "targets_not_judged": 0,
    }


# What every output must say for each scenario, written out (never computed by the code
# under test): (counts, verdict line, comment headline, targets line).
EXPECTED = {
    "changed": (
        # the path copies (platform, platform/cilium) are what dev's Kustomizations deploy:
        # judged as those, the one change is hr moving platform -> cilium with a new value
        _counts((6, 6, 6, 0, 0, 0), (10, 10, 0, 0, 0, 1), (0, 0, 1, 1), (1, 0, 0, 0, 1, 1)),
        "changed: 1 object changes in 1 cluster (1 target): 0 changed, 0 added, 0 removed, "
        "1 moved with changes",
        "1 object changes in 1 cluster (1 target): 0 changed, 0 added, 0 removed, "
        "1 moved with changes",
        "6 targets: 6 differ, 0 unchanged, 0 render errors",
    ),
    "errors": (
        _counts((4, 1, 1, 0, 2, 1), (2, 1, 1, 0, 0, 0), (0, 0, 1, 1), (1, 1, 0, 0, 0, 0)),
        "changed: 1 object changes in 1 target: 1 changed, 0 added, 0 removed; 2 render errors",
        "2 render errors (not compared); 1 object changes in 1 target: 1 changed, 0 added, "
        "0 removed",
        "4 targets: 1 differs, 0 unchanged, 2 render errors, 1 pre-existing error",
    ),
    "ks-only": (
        _counts((1, 1, 1, 0, 0, 0), (1, 1, 0, 0, 0, 0), (1, 0, 0, 0), (0, 0, 0, 0, 0, 0)),
        "changed: 1 Flux Kustomization changes",
        "1 Flux Kustomization changes",
        "1 target: 1 differs, 0 unchanged, 0 render errors",
    ),
    "pure": (
        _counts((6, 6, 5, 1, 0, 0), (10, 10, 0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0, 0, 0)),
        "pure ownership move: 2 documents platform -> cilium, byte-identical modulo owner "
        "labels; 0 changed",
        "Pure ownership move: 2 documents platform -> cilium (byte-identical modulo owner "
        "labels), 0 changed, 0 added, 0 removed",
        "6 targets: 5 differ, 1 unchanged, 0 render errors",
    ),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_outputs_share_the_counts(name: str) -> None:
    counts, verdict, headline, targets = EXPECTED[name]
    a = _analysis(name)
    v = gate.judge(a)
    c = count(a, v)
    assert c.as_dict() == counts
    origin = Origin("git", "base")
    data = diff_json.payload(a, v, origin, origin)
    assert data["summary"]["counts"] == counts
    assert data["verdict_line"] == verdict_line(a, v) == verdict
    assert markdown.headline(a, v) == headline
    assert data["summary"]["counts"] == c.as_dict()
    assert data["verdict_line"] == verdict_line(a, v)
    head = markdown.headline(a, v)
    if v.verdict == "changed" and c.documents_changing:
        phrase = f"{objects_phrase(c)}: {objects_breakdown(c)}"
        assert verdict_line(a, v).startswith(f"changed: {phrase}")
        assert phrase[1:] in head  # the comment capitalises it
        assert c.objects <= c.documents_changing  # each object once, however many targets
    if c.targets_error:  # the headline and the box count targets, not target x side
        body = markdown.comment(a, markdown.comment_input(a, v, "a", "b")).bodies[0]
        assert f"{plural(c.targets_error, 'render error')} (not compared)" in head
        assert f"**{plural(c.targets_error, 'render error')}**" in body
    if c.kustomizations_changed and not c.documents_changing:
        assert "document" not in head.split(";")[-1]  # Kustomizations are never documents
        assert head.endswith(f"{c.kustomizations_changed} Flux Kustomization changes")
    xml = ET.fromstring(junit.document("harness diff", junit.diff_cases(a, v)))
    assert int(xml.get("tests") or 0) == counts["targets"]
    assert int(xml.get("errors") or 0) == counts["targets_error"]
    assert int(xml.get("skipped") or 0) == counts["targets_preexisting_error"]
    assert targets_line(c) == targets


def test_errors_scenario_counts_targets_not_sides() -> None:
    a = _analysis("errors")
    c = count(a, gate.judge(a))
    assert (c.targets_error, c.targets_preexisting_error) == (2, 1)
    assert len(a.errors) == 3  # b on both sides, d in head
    assert targets_line(c) == (
        "4 targets: 1 differs, 0 unchanged, 2 render errors, 1 pre-existing error"
    )


def test_one_change_in_many_targets_is_one_object() -> None:
    """A shared base's value in a path target, its parent and two clusters' Kustomizations."""
    docs = {
        "apps": [cm("cfg", v="1")],
        "apps/web": [cm("cfg", v="1")],
        "dev/flux-system/apps": [cm("cfg", v="1")],
        "prod/flux-system/apps": [cm("cfg", v="1")],
    }
    base = snapshot(docs)
    head = snapshot({name: [cm("cfg", v="2")] for name in docs})
    a = analyze(base, head)
    v = gate.judge(a)
    c = count(a, v)
    assert (c.changed, c.change_targets, c.objects, c.objects_changed, c.clusters) == (
        4,
        4,
        1,
        1,
        2,
    )
    assert verdict_line(a, v) == (
        "changed: 1 object changes in 2 clusters (4 targets): 1 changed, 0 added, 0 removed"
    )
    assert markdown.headline(a, v) == (
        "1 object changes in 2 clusters (4 targets): 1 changed, 0 added, 0 removed"
    )


def test_a_path_copy_without_namespace_is_the_flux_copy_it_deploys_as() -> None:
    """`apps/src` leaves the ConfigMap without a namespace, its Flux target puts it into
    flux-system (targetNamespace); a ConfigMap of the same name deployed into two
    namespaces elsewhere stays two objects."""

    def side(v: str) -> Snapshot:
        bare = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\ndata:\n  v: '{v}'\n"
        return snapshot(
            {
                "apps/src": [bare],
                "dev/flux-system/src": [cm("src", "flux-system", owner="src", v=v)],
                "apps/twice": [bare.replace("name: src", "name: twice")],
                "dev/flux-system/a": [cm("twice", "a", owner="a", v=v)],
                "dev/flux-system/b": [cm("twice", "b", owner="b", v=v)],
            }
        )

    analysis = analyze(side("1"), side("2"))
    verdict = gate.judge(analysis)
    c = count(analysis, verdict)
    assert (c.changed, c.objects, c.objects_changed, c.change_targets) == (5, 3, 3, 5)
    assert objects_phrase(c) == "3 objects change in 1 cluster (5 targets)"
