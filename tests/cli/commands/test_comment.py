"""`harness comment` end to end: the diff's inputs and exit codes, Markdown out, parts to files,
and a snapshot of the Cilium-split comment on examples/homelab."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.report import markdown_budget as mb
from tests.cli.commands.conftest import SECRET
from tests.conftest import Result, configmap
from tests.gitkit import commit_all, state
from tests.homelab import cilium_transition as cilium_split
from tests.report import mdcheck

Cli = Callable[..., Result]
GOLDEN = Path(__file__).parent / "golden" / "cilium-split-comment.md"
_SHA = re.compile(r"\(([0-9a-f]{12})\)")


def test_comment_on_a_working_tree_change(repo: Path, cli: Cli) -> None:
    (repo / "a/cm.yaml").write_text(configmap("a", v="2", w="x"))
    (repo / "a/secret.yaml").write_text(SECRET.format(pw="s3cr3t-new"))
    res = cli("comment", "--repo", repo, "--base", "HEAD")
    assert res.code == 0, res.stderr
    body = res.stdout
    mdcheck.check(body)
    assert body.startswith("### 2 objects change in 1 target: 2 changed, 0 added, 0 removed\n")
    assert "| paths | `a` | 2 -> 2 | +0 | -0 | ~2 |" in body
    assert "data.v: 1 -> 2" in body and "```diff\n--- HEAD (" in body
    assert "hunter2" not in body and "s3cr3t-new" not in body
    assert "stringData.password: *** (before) -> *** (after)" in body
    assert body.endswith("\n<!-- harness:comment -->\n")
    assert cli("comment", "--repo", repo, "--expect", "no-change").code == 1
    assert cli("comment", "--repo", repo, "--fail-on-diff").code == 1


def test_comment_exit_2_on_bad_options_before_rendering(repo: Path, cli: Cli) -> None:
    res = cli("comment", "--repo", repo, "--split")
    assert res.code == 2 and "--output-dir" in res.stderr
    res = cli("comment", "--repo", repo, "--budget", "10")
    assert res.code == 2 and "--budget must be at least" in res.stderr
    res = cli("comment", "--repo", repo, "--marker", "a--b")
    assert res.code == 2 and "--marker" in res.stderr


def test_render_error_is_exit_2_and_leads_the_comment(repo: Path, cli: Cli) -> None:
    (repo / "b/kustomization.yaml").write_text("resources:\n  - missing.yaml\n")
    res = cli("comment", "--repo", repo)
    assert res.code == 2
    mdcheck.check(res.stdout)
    assert "> **1 render error**: these targets were not compared" in res.stdout
    assert "> - `b` (head): `b/kustomization.yaml: kustomize: " in res.stdout
    assert "`- ConfigMap/default/b`" not in res.stdout


def test_output_dir_parts_marker_from_config_and_step_summary(
    repo: Path,
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (repo / "harness.yaml").write_text("comment:\n  id: infra:diff\n  budget: 2000\n")
    for n in range(60):
        (repo / f"a/cm{n}.yaml").write_text(configmap(f"extra-{n:02d}", v="x" * 40))
    (repo / "a/kustomization.yaml").write_text(
        "resources:\n  - cm.yaml\n  - secret.yaml\n"
        + "".join(f"  - cm{n}.yaml\n" for n in range(60))
    )
    out = tmp_path / "out"
    out.mkdir()
    (out / "comment-part-9.md").write_text("stale part from an earlier run")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    res = cli("comment", "--repo", repo, "--split", "--output-dir", out)
    assert res.code == 0, res.stderr
    parts = sorted(out.glob("comment-part-*.md"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    assert len(parts) > 1
    assert res.stdout.splitlines() == [str(p) for p in parts]
    assert not (out / "comment-part-9.md").exists() or len(parts) >= 9
    listed = ""
    for n, path in enumerate(parts, start=1):
        body = path.read_text()
        mdcheck.check(body, 2000, marker_id="infra:diff", part=(n, len(parts)))
        listed += body
    for n in range(60):
        assert f"ConfigMap/default/extra-{n:02d}" in listed
    assert summary.read_text().startswith("### 60 objects change in 1 target: 0 changed, 60 added")
    single = cli("comment", "--repo", repo, "--output-dir", out)
    assert single.code == 0
    assert [p.name for p in out.glob("comment-part-*.md")] == ["comment-part-1.md"]
    mdcheck.check((out / "comment-part-1.md").read_text(), 2000, marker_id="infra:diff")


def _normalise(text: str) -> str:
    return _SHA.sub("(<sha>)", text)


@pytest.mark.slow
def test_cilium_split_comment_snapshot(homelab: Path, cli: Cli) -> None:
    """The issue's done-when: one screen, first line says pure ownership move."""
    root = homelab.parent.parent
    commit_all(root, "base")
    cilium_split(homelab)
    commit_all(root, "feat(flux): give Cilium its own Kustomization")
    before = state(root)
    res = cli("comment", "--repo", homelab, "--base", "HEAD~1", "--expect", "pure-move")
    assert res.code == 0, res.stderr
    body = res.stdout
    mdcheck.check(body)
    assert state(root) == before
    first = body.splitlines()[0]
    assert first == (
        "### Pure ownership move: 3 documents platform -> cilium "
        "(byte-identical modulo owner labels), 0 changed, 0 added, 0 removed"
    )
    head = body.split("<details>")[0]  # the graph picture is the first collapsed block
    assert "<summary>Kustomization graph: 3 touched by this change" in body
    assert len(head.splitlines()) <= 50  # one screen before the collapsed details
    assert mb.size(body) < 16000
    text = _normalise(body)
    if os.environ.get("HARNESS_UPDATE_SNAPSHOTS"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), (
        "comment changed; review and regenerate with HARNESS_UPDATE_SNAPSHOTS=1"
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("comment:\n  budget: 100\n", "comment.budget must be an integer >= 1024"),
        ("comment:\n  budget: lots\n", "comment.budget must be an integer >= 1024"),
        ("comment:\n  size: 1\n", "unknown comment key(s): size"),
        ("comment:\n  id: a--b\n", "comment.id 'a--b'"),
    ],
)
def test_bad_comment_config_is_one_line_exit_2(
    repo: Path,
    cli: Cli,
    config: str,
    message: str,
) -> None:
    (repo / "harness.yaml").write_text(config)
    res = cli("comment", "--repo", repo)
    assert res.code == 2
    assert message in res.stderr and "Traceback" not in res.stderr
