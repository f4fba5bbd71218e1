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


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_outputs_share_the_counts(name: str) -> None:
    a = _analysis(name)
    v = gate.judge(a)
    c = count(a, v)
    assert c.targets == c.targets_changed + c.targets_unchanged + c.targets_error + (
        c.targets_preexisting_error
    )
    origin = Origin("git", "base")
    data = diff_json.payload(a, v, origin, origin)
    assert data["summary"]["counts"] == c.as_dict()
    assert data["verdict_line"] == verdict_line(a, v)
    if v.verdict == "changed":
        assert verdict_line(a, v).startswith(
            f"changed: {c.changed} changed, {c.added} added, {c.removed} removed"
        )
    head = markdown.headline(a, v)
    if v.verdict == "changed" and c.documents_changing:
        assert f"({c.changed} changed, {c.added} added, {c.removed} removed" in head
    if c.kustomizations_changed and not c.documents_changing:
        assert "document" not in head.split(";")[-1]  # Kustomizations are never documents
        assert head.endswith(f"{c.kustomizations_changed} Flux Kustomization changes")
    xml = ET.fromstring(junit.document("harness diff", junit.diff_cases(a, v)))
    assert int(xml.get("tests") or 0) == c.targets
    assert int(xml.get("errors") or 0) == c.targets_error
    assert int(xml.get("skipped") or 0) == c.targets_preexisting_error
    noun = "target" if c.targets == 1 else "targets"
    assert targets_line(c).startswith(f"{c.targets} {noun}: {c.targets_changed} ")


def test_errors_scenario_counts_targets_not_sides() -> None:
    a = _analysis("errors")
    c = count(a, gate.judge(a))
    assert (c.targets_error, c.targets_preexisting_error) == (1, 1)
    assert targets_line(c) == (
        "3 targets: 1 differs, 0 unchanged, 1 render error, 1 pre-existing error"
    )
