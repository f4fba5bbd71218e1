"""JUnit XML in the shape GitLab and Jenkins read: one testcase per target."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from harness.compare import gate
from harness.compare.analyze import analyze
from harness.compare.snapshots import compare
from harness.report import junit
from tests.compare.test_analyze import cilium_split
from tests.conftest import Result, configmap, kustomization
from tests.diffkit import cm, snapshot

SUITE_ATTRS = {"name", "tests", "failures", "errors", "skipped", "time"}


def assert_junit_shape(xml: str) -> ET.Element:
    """The common denominator of the GitLab and Jenkins JUnit readers."""
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(xml.encode())
    assert root.tag == "testsuites"
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite in root:
        assert suite.tag == "testsuite"
        assert set(suite.attrib) >= SUITE_ATTRS
        float(suite.get("time", "x"))
        cases = list(suite)
        assert all(c.tag == "testcase" for c in cases)
        assert int(suite.get("tests", "-1")) == len(cases)
        failures = errors = 0
        for case in cases:
            assert {"name", "classname", "time"} <= set(case.attrib)
            float(case.get("time", "x"))
            outcomes = [c for c in case if c.tag in ("failure", "error", "skipped")]
            assert len(outcomes) <= 1
            for child in outcomes:
                assert child.get("message") and child.get("type")
                assert child.text
            failures += sum(1 for c in outcomes if c.tag == "failure")
            errors += sum(1 for c in outcomes if c.tag == "error")
            assert all(c.tag in ("failure", "error", "skipped", "system-out") for c in case)
        assert int(suite.get("failures", "-1")) == failures
        assert int(suite.get("errors", "-1")) == errors
        assert suite.get("skipped") == "0"
        totals["tests"] += len(cases)
        totals["failures"] += failures
        totals["errors"] += errors
    for key, value in totals.items():
        assert int(root.get(key, "-1")) == value
    return root


def _cases(root: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name", ""): c for c in root.iter("testcase")}


def test_check_cases_drift_new_stale_error() -> None:
    base = snapshot(
        {"a": [cm("a", k="1")], "b": [cm("b")], "gone": [cm("g")], "dev/flux-system/x": [cm("x")]}
    )
    head = snapshot(
        {
            "a": [cm("a", k="2")],
            "b": [cm("b")],
            "new": [cm("n")],
            "dev/flux-system/x": "kustomize: \x1b[31mboom\x1b[0m: missing.yaml",
        }
    )
    comparison = compare(base, head)
    xml = junit.document("harness check", junit.check_cases(comparison), elapsed=1.5)
    root = assert_junit_shape(xml)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "3", "1")
    assert root.get("time") == "1.500"
    cases = _cases(root)
    assert cases["b"].find("failure") is None
    failure = cases["a"].find("failure")
    assert failure is not None and failure.get("type") == "drift"
    assert failure.get("message") == "a: 1 -> 1 documents (-0, +0, ~1)"
    assert "~ ConfigMap/default/a" in (failure.text or "")
    assert cases["new"].find("failure").get("type") == "no-golden"  # type: ignore[union-attr]
    assert cases["gone"].find("failure").get("type") == "stale-golden"  # type: ignore[union-attr]
    error = cases["dev/flux-system/x"].find("error")
    assert error is not None and "boom" in (error.text or "") and "\x1b" not in xml
    assert cases["dev/flux-system/x"].get("classname") == "harness.flux.dev"
    assert cases["a"].get("classname") == "harness.path"
    suites = {s.get("name") for s in root}
    assert suites == {"harness check: path", "harness check: flux.dev"}


def test_check_cases_carry_field_changes_when_explained() -> None:
    from harness.compare.analyze import explain_changes

    comparison = compare(snapshot({"a": [cm("a", k="1")]}), snapshot({"a": [cm("a", k="2")]}))
    cases = junit.check_cases(comparison, explain_changes(comparison))
    assert cases[0].failure is not None
    assert "    data.k: 1 -> 2" in cases[0].failure[2]


def test_diff_pure_move_passes_and_a_changed_value_fails() -> None:
    a = analyze(*cilium_split())
    v = gate.judge(a)
    root = assert_junit_shape(junit.document("harness diff", junit.diff_cases(a, v, "pure-move")))
    assert root.get("failures") == "0" and root.get("errors") == "0"
    moved = _cases(root)["dev/flux-system/cilium"]
    assert "ConfigMap/kube-system/ns" in (moved.findtext("system-out") or "")

    a = analyze(*cilium_split(value="2"))
    v = gate.judge(a)
    root = assert_junit_shape(junit.document("harness diff", junit.diff_cases(a, v, "pure-move")))
    failed = {c.get("name") for c in root.iter("testcase") if c.find("failure") is not None}
    assert failed == {"dev/flux-system/cilium"}  # platform/cilium is what it deploys
    failure = _cases(root)["dev/flux-system/cilium"].find("failure")
    assert failure is not None and failure.get("type") == "not-a-pure-move"
    assert "data.k: v -> 2" in (failure.text or "")


def test_diff_without_expectation_fails_every_differing_target() -> None:
    a = analyze(*cilium_split())
    v = gate.judge(a)
    root = assert_junit_shape(junit.document("harness diff", junit.diff_cases(a, v)))
    assert int(root.get("failures", "0")) == len(a.differing)


def test_render_error_is_an_error_not_deletions() -> None:
    base = snapshot({"a": [cm("a"), cm("b")]})
    head = snapshot({"a": "kustomize: accumulating resources: missing.yaml"})
    a = analyze(base, head)
    root = assert_junit_shape(junit.document("harness diff", junit.diff_cases(a, gate.judge(a))))
    case = _cases(root)["a"]
    assert case.find("failure") is None
    error = case.find("error")
    assert error is not None and error.get("message", "").startswith("head: kustomize:")


Cli = Callable[..., Result]


def test_check_output_junit_and_github_from_the_cli(
    make_repo: Callable[[dict[str, str | bytes]], Path], cli: Cli, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo(
        {
            "a/kustomization.yaml": kustomization("cm.yaml"),
            "a/cm.yaml": configmap("a", v="1"),
            "b/kustomization.yaml": kustomization("cm.yaml"),
            "b/cm.yaml": configmap("b", v="1"),
        }
    )
    assert cli("update", "--repo", repo).code == 0
    (repo / "a/cm.yaml").write_text(configmap("a", v="2"))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    res = cli("check", "--repo", repo, "--output", "junit")
    assert res.code == 1
    root = assert_junit_shape(res.stdout)
    assert (root.get("tests"), root.get("failures")) == ("2", "1")
    assert "data.v: 1 -> 2" in (_cases(root)["a"].findtext("failure") or "")
    res = cli("check", "--repo", repo, "--output", "github")
    assert res.code == 1
    lines = res.stdout.splitlines()
    assert lines[0].startswith("::error ")
    assert "title=harness check%3A a::a: 1 -> 1 documents (-0, +0, ~1)%0A" in lines[0]
    assert lines[-1].startswith("::error title=harness check::render-golden: 1/2 targets match")
    written = summary.read_text()
    assert written.count("### render-golden: 1/2 targets match") == 2
    assert "| `a` | drift | 1 -> 1 | 0 | 0 | 1 |" in written


def test_diff_output_junit_and_github_from_the_cli(tmp_path: Path, cli: Cli) -> None:
    from tests.gitkit import commit_all, init

    root = init(tmp_path / "git")
    (root / "a").mkdir()
    (root / "a/kustomization.yaml").write_text(kustomization("cm.yaml"))
    (root / "a/cm.yaml").write_text(configmap("a", v="1"))
    commit_all(root, "base")
    (root / "a/cm.yaml").write_text(configmap("a", v="2"))
    res = cli("diff", "--repo", root, "--output", "junit", "--expect", "no-change")
    assert res.code == 1, res.stderr
    root_el = assert_junit_shape(res.stdout)
    failure = _cases(root_el)["a"].find("failure")
    assert failure is not None and "data.v: 1 -> 2" in (failure.text or "")
    res = cli("diff", "--repo", root, "--output", "github")
    assert res.code == 0
    lines = res.stdout.splitlines()
    assert lines[0].startswith("::warning title=harness diff%3A a::")
    assert lines[-1].startswith("::notice title=harness diff::changed")
