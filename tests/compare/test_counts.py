"""One counting model: every output's numbers come from report/counts.py (in-memory
scenarios here; tests/commands/test_refactors.py checks the same through the CLI)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from harness.compare import gate
from harness.compare.analyze import Analysis, Origin, analyze
from harness.compare.counts import count, targets_line
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
    base = snapshot({"a": [cm("a")], "b": "kustomize: old", "c": "kustomize: same"})
    head = snapshot({"a": [cm("a", v="2")], "b": "kustomize: new", "c": "kustomize: same"})
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


def _counts(targets: tuple[int, ...], docs: tuple[int, ...], extra: tuple[int, ...]) -> dict:
    keys = ("targets", "targets_compared", "targets_changed", "targets_unchanged")
    keys += ("targets_error", "targets_preexisting_error")
    doc_keys = ("documents_before", "documents_after", "changed", "added", "removed")
    doc_keys += ("moved_with_changes",)
    extra_keys = ("kustomizations_changed", "duplicates", "change_targets", "documents_changing")
    return {
        **dict(zip(keys, targets, strict=True)),
        **dict(zip(doc_keys, docs, strict=True)),
        **dict(zip(extra_keys, extra, strict=True)),
    }


# What every output must say for each scenario, written out (never computed by the code
# under test): (counts, verdict line, comment headline, targets line).
EXPECTED = {
    "changed": (
        _counts((6, 6, 6, 0, 0, 0), (10, 10, 1, 0, 0, 2), (0, 0, 3, 3)),
        "changed: 1 changed, 0 added, 0 removed, 2 moved with changes",
        "3 documents change in 3 targets (1 changed, 0 added, 0 removed, 2 moved with changes)",
        "6 targets: 6 differ, 0 unchanged, 0 render errors",
    ),
    "errors": (
        _counts((3, 1, 1, 0, 1, 1), (1, 1, 1, 0, 0, 0), (0, 0, 1, 1)),
        "changed: 1 changed, 0 added, 0 removed, 1 render error",
        "1 render error (not compared); 1 document changes in 1 target "
        "(1 changed, 0 added, 0 removed)",
        "3 targets: 1 differs, 0 unchanged, 1 render error, 1 pre-existing error",
    ),
    "ks-only": (
        _counts((1, 1, 1, 0, 0, 0), (1, 1, 0, 0, 0, 0), (1, 0, 0, 0)),
        "changed: 0 changed, 0 added, 0 removed, 1 Flux Kustomization changes",
        "1 Flux Kustomization changes",
        "1 target: 1 differs, 0 unchanged, 0 render errors",
    ),
    "pure": (
        _counts((6, 6, 5, 1, 0, 0), (10, 10, 0, 0, 0, 0), (0, 0, 0, 0)),
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
    xml = ET.fromstring(junit.document("harness diff", junit.diff_cases(a, v)))
    assert int(xml.get("tests") or 0) == counts["targets"]
    assert int(xml.get("errors") or 0) == counts["targets_error"]
    assert int(xml.get("skipped") or 0) == counts["targets_preexisting_error"]
    assert targets_line(c) == targets


def test_errors_scenario_counts_targets_not_sides() -> None:
    a = _analysis("errors")
    c = count(a, gate.judge(a))
    assert (c.targets_error, c.targets_preexisting_error) == (1, 1)
    assert targets_line(c) == (
        "3 targets: 1 differs, 0 unchanged, 1 render error, 1 pre-existing error"
    )
