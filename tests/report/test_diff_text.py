"""`harness diff` text: the verdict line, target headers, dyff-style field lines."""

from __future__ import annotations

import datetime

import pytest

from harness.compare import gate
from harness.compare.analyze import analyze
from harness.compare.docdiff import FieldChange
from harness.report import diff_json, diff_text
from harness.report.diff_text import field_lines, header, verdict_line
from tests.diffkit import cilium_split, cm, snapshot


def _line(base, head) -> str:  # type: ignore[no-untyped-def]
    a = analyze(base, head)
    return verdict_line(a, gate.judge(a))


def test_verdict_lines() -> None:
    assert _line(*cilium_split()) == (
        "pure ownership move: 2 documents platform -> cilium, "
        "byte-identical modulo owner labels; 0 changed"
    )
    assert (
        _line(*cilium_split(value="x"))
        == "changed: 1 object changes in 1 cluster (3 targets): 1 changed, 0 added, 0 removed, "
        "1 moved with changes"
    )
    same = snapshot({"a": [cm("x"), cm("y")], "b": [cm("z")]})
    assert _line(same, same) == "no change: 2 targets, 3 documents unchanged"
    base = snapshot({"platform": [cm("a"), cm("b")], "platform/x": [cm("a")]})
    head = snapshot({"platform": [cm("b")], "platform/x": [cm("a")]})
    assert (
        _line(base, head)
        == "pure move: 1 document platform -> platform/x, byte-identical; 0 changed"
    )
    failing = snapshot({"a": "boom"})
    assert _line(same, failing).endswith("1 render error")


def test_header_counts() -> None:
    a = analyze(*cilium_split())
    by_name = {t.name: t for t in a.targets}
    assert header(by_name["platform"]) == "platform: 3 -> 1 documents (-2, +0, ~0)"
    assert header(by_name["dev/flux-system/cilium"]) == (
        "dev/flux-system/cilium: - -> 2 documents (-0, +2, ~0) new flux target"
    )


def test_field_lines() -> None:
    fields = [
        FieldChange("spec.values.k8sServiceHost", "changed", "192.168.1.10", "192.168.2.10"),
        FieldChange("spec.dependsOn[1]", "added", None, {"name": "cilium"}),
        FieldChange("spec.wait", "removed", True, None),
        FieldChange("data.port", "changed", 1, "1"),
        FieldChange("data.script", "changed", "a\nb\nc\n", "a\nB\nc\n"),
    ]
    assert field_lines(fields, "  ") == [
        "  spec.values.k8sServiceHost: 192.168.1.10 -> 192.168.2.10",
        "  spec.dependsOn[1]: (absent) -> {name: cilium}",
        "  spec.wait: true -> (absent)",
        '  data.port: 1 -> "1"',
        "  data.script: (multi-line)",
        "     a",
        "    -b",
        "    +B",
        "     c",
    ]


def test_json_values_are_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert diff_json.jsonable({1: datetime.date(2024, 1, 2), "l": (1, None)}) == {
        "1": "2024-01-02",
        "l": [1, None],
    }


def test_print_diff_orders_sections(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    from harness.compare.analyze import Origin

    a = analyze(*cilium_split())
    diff_text.print_diff(
        a,
        gate.judge(a),
        Origin("git", "HEAD~1 (abc)"),
        Origin("worktree", "working tree"),
        expect="pure-move",
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("pure ownership move:")
    assert out[1] == "expected pure-move: holds"
    assert out[2] == "base: HEAD~1 (abc)  head: working tree"
    sections = [
        i
        for i, line in enumerate(out)
        if line in ("moves and relocations (4)", "Flux Kustomization orchestration")
    ]
    first_target = next(i for i, line in enumerate(out) if line.startswith("clusters/base: "))
    assert sections[0] < first_target < sections[1]
    # the same move in the path targets and in the cluster: one line each, not one per target
    assert out[sections[0] + 1 : sections[0] + 5] == [
        "  ConfigMap/kube-system/hr: platform -> platform/cilium (identical)",
        "  ConfigMap/kube-system/ns: platform -> platform/cilium (identical)",
        "  ConfigMap/kube-system/hr: dev: flux-system/platform -> flux-system/cilium "
        "(pure ownership)",
        "  ConfigMap/kube-system/ns: dev: flux-system/platform -> flux-system/cilium "
        "(pure ownership)",
    ]
    assert out[-1] == "6 targets: 5 differ, 1 unchanged, 0 render errors"


def test_unreachable_chart_errors_are_one_line_per_source(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: each release of an unreachable repository repeated its URL and Go error."""
    from pathlib import Path

    from harness.compare.analyze import Origin
    from harness.core.model import HelmInfo, RendererInfo, Snapshot, Target, TargetResult
    from tests.diffkit import result

    monkeypatch.setenv("NO_COLOR", "1")
    message = 'HelmRepository/obs/grafana: Get "https://grafana.invalid/index.yaml": no such host'
    info = HelmInfo(source="HelmRepository/obs/grafana", unreachable=True)
    names = ("dev/obs/alloy", "dev/obs/loki", "prod/obs/loki")
    base = {n: result(n, [cm(n.replace("/", "-"))]) for n in names}
    head = {
        n: TargetResult(Target(n, "helm", Path("/repo"), n.split("/")[0], info), error=message)
        for n in names
    }
    renderer = RendererInfo("kubectl", "v1")
    a = analyze(Snapshot(renderer, base), Snapshot(renderer, head))
    diff_text.print_diff(a, gate.judge(a), Origin("git", "HEAD"), Origin("worktree", "tree"))
    errors = [line for line in capsys.readouterr().out.splitlines() if line.startswith("error")]
    assert errors == [
        f"error: {message} (head; chart not fetched for 3 helm targets: dev/obs/alloy, "
        "dev/obs/loki, prod/obs/loki)"
    ]
