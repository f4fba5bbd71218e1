"""GitHub workflow annotations (escaped as the runner's toolkit does) and the step summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.compare import gate
from harness.compare.analyze import analyze
from harness.compare.snapshots import compare
from harness.report import github
from tests.compare.test_analyze import cilium_split
from tests.diffkit import cm, snapshot


def test_escaping_matches_the_toolkit() -> None:
    assert github.escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_annotation_line() -> None:
    line = github.annotation(
        "error", "platform: 1 changed\n~ x", title="harness check: a,b", file="p/k.yaml"
    )
    assert line == ("::error file=p/k.yaml,title=harness check%3A a%2Cb::platform: 1 changed%0A~ x")
    assert github.annotation("notice", "ok") == "::notice::ok"
    long = github.annotation("error", "x" * 10000)
    assert len(long) < 4100 and long.endswith("... (truncated)")


def test_check_lines_point_at_the_kustomization(tmp_path: Path) -> None:
    base = snapshot({"a": [cm("a", k="1")], "b": [cm("b")]})
    head = snapshot({"a": [cm("a", k="2")], "b": [cm("b")]})
    target_dir = tmp_path / "a"
    target_dir.mkdir()
    (target_dir / "kustomization.yaml").write_text("resources: []\n")
    result = head.results["a"]
    moved = type(result)(
        type(result.target)("a", "path", target_dir), result.documents, result.sha256
    )
    head = type(head)(head.renderer, {**head.results, "a": moved}, head.label)
    comparison = compare(base, head)
    assert github.target_file(head, "a", tmp_path) == "a/kustomization.yaml"
    assert github.target_file(head, "b", tmp_path) is None
    lines = github.check_lines(comparison)
    assert len(lines) == 2
    assert lines[0].startswith("::error ")
    assert "title=harness check%3A a::a: 1 -> 1 documents (-0, +0, ~1)%0A~ ConfigMap" in lines[0]
    assert lines[1] == (
        "::error title=harness check::render-golden: 1/2 targets match "
        "(1 drifted: 1 object changes)"
    )


def test_clean_check_is_a_notice() -> None:
    snap = snapshot({"a": [cm("a")]})
    assert github.check_lines(compare(snap, snap)) == [
        "::notice title=harness check::render-golden: 1/1 targets match"
    ]


def test_diff_lines_for_a_pure_move_and_a_failed_one() -> None:
    a = analyze(*cilium_split())
    lines = github.diff_lines(a, gate.judge(a), "pure-move")
    assert lines == [lines[-1]] and lines[-1].startswith("::notice title=harness diff::pure")
    a = analyze(*cilium_split(value="2"))
    lines = github.diff_lines(a, gate.judge(a), "pure-move")
    # platform/cilium is what dev/flux-system/cilium deploys: judged there
    assert any("title=harness diff%3A dev/flux-system/cilium::" in line for line in lines)
    assert not any("title=harness diff%3A platform/cilium::" in line for line in lines)
    assert lines[-1].startswith("::error title=harness diff::changed")


def test_render_error_annotation() -> None:
    a = analyze(snapshot({"a": [cm("a")]}), snapshot({"a": "kustomize: missing.yaml"}))
    lines = github.diff_lines(a, gate.judge(a))
    assert lines[0] == (
        "::error title=harness diff%3A a%3A render error::head: kustomize: missing.yaml"
    )


def test_step_summary_appends_only_when_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert github.append_step_summary("# x") is False
    path = tmp_path / "summary.md"
    path.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    assert github.append_step_summary("### one\n") is True
    assert github.append_step_summary("### two") is True
    assert path.read_text() == "earlier step\n### one\n\n### two\n\n"


def test_unwritable_step_summary_warns_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing-dir" / "summary.md"))
    assert github.append_step_summary("x") is False
    assert "warning: cannot write GITHUB_STEP_SUMMARY" in capsys.readouterr().err


def test_summaries_are_short_markdown() -> None:
    base = snapshot({f"t{i}": [cm("a", k="1")] for i in range(80)})
    head = snapshot({f"t{i}": [cm("a", k="2")] for i in range(80)})
    text = github.check_summary(compare(base, head))
    assert text.startswith("### render-golden: 0/80 targets match")
    assert text.count("| `t") == github.SUMMARY_ROWS
    assert "... and 30 more targets" in text
    a = analyze(base, head)
    text = github.diff_summary(a, gate.judge(a))
    assert text.count("| `t") == github.SUMMARY_ROWS


def test_the_diff_summary_lists_image_changes_before_the_table() -> None:
    from tests.compare.test_images import deploy

    base = snapshot({"c/flux-system/apps": [deploy("web", "ghcr.io/o/web:1.0")]})
    head = snapshot({"c/flux-system/apps": [deploy("web", "ghcr.io/o/web:1.1")]})
    a = analyze(base, head)
    text = github.diff_summary(a, gate.judge(a))
    assert text.split("\n")[2:6] == [
        "**Images** (1)",
        "",
        "- `ghcr.io/o/web`: `1.0` -> `1.1` (apps/Deployment/apps/web in c)",
        "",
    ]
    assert text.index("**Images**") < text.index("| target |")
