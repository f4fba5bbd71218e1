"""`harness diff` end to end on small git repos: sides, gates, exit codes, outputs, secrets,
errors, and the user's repository left exactly as it was (also when interrupted)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core import documents
from tests.cli.commands.conftest import SECRET, private_tmpdir
from tests.conftest import Result, configmap, fresh_python, kustomization, modules_after
from tests.gitkit import commit_all, make_busy, state

Cli = Callable[..., Result]


def test_clean_tree_against_head_is_no_change(repo: Path, cli: Cli) -> None:
    res = cli("diff", "--repo", repo, "--expect", "no-change")
    assert res.code == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "no change: 2 targets, 3 documents unchanged"
    assert lines[1] == "expected no-change: holds"


def test_working_tree_change_gates_and_field_lines(repo: Path, cli: Cli) -> None:
    (repo / "a/cm.yaml").write_text(configmap("a", v="2", w="x"))
    plain = cli("diff", "--repo", repo, "--base", "HEAD")
    assert plain.code == 0
    assert plain.stdout.splitlines()[0] == (
        "changed: 1 object changes in 1 target: 1 changed, 0 added, 0 removed"
    )
    assert "a: 2 -> 2 documents (-0, +0, ~1)" in plain.stdout
    assert "~ ConfigMap/default/a\n    data.v: 1 -> 2\n    in: a\n" in plain.stdout
    assert cli("diff", "--repo", repo, "--fail-on-diff").code == 1
    failed = cli("diff", "--repo", repo, "--expect", "no-change")
    assert failed.code == 1
    assert "expected no-change: FAILED" in failed.stdout
    assert failed.stdout.count("data.v: 1 -> 2") == 1  # said once, not as a reason again
    assert cli("diff", "--repo", repo, "--expect", "pure-move").code == 1


def test_head_ref_and_unified(repo: Path, cli: Cli) -> None:
    (repo / "b/cm.yaml").write_text(configmap("b", v="9"))
    commit_all(repo.parent, "second")
    (repo / "b/cm.yaml").write_text(configmap("b", v="1"))  # the work tree is ignored with --head
    res = cli("diff", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "-U", "0")
    assert res.code == 0
    assert "base: HEAD~1 (" in res.stdout and "head: HEAD (" in res.stdout
    assert '      -  v: "1"' in res.stdout and '      +  v: "9"' in res.stdout
    same = cli("diff", "--repo", repo, "--base", "HEAD~1", "--expect", "no-change")
    assert same.code == 0  # the work tree was reverted to HEAD~1's content


def test_diff_lines_print_the_bytes_of_the_documents(repo: Path, cli: Cli) -> None:
    """Issue 33: field lines and `-U` lines went through console markup, so `\\[` lost its
    backslash; they print what the documents hold."""
    value = "\\[(x)\\] [bold]b[/bold] :smile: \\"  # as YAML: one backslash each
    (repo / "b/cm.yaml").write_text(configmap("b").replace("  k: v", f"  v: '{value}'"))
    res = cli("diff", "--repo", repo, "-U", "0")
    assert res.code == 0, res.stderr
    assert f"\n    data.v: 1 -> {value}\n    in: b\n" in res.stdout
    assert f"\n      -  v: \"1\"\n      +  v: '{value}'\n\n" in res.stdout


def test_bad_ref_is_exit_2_with_one_line(repo: Path, cli: Cli) -> None:
    res = cli("diff", "--repo", repo, "--base", "no-such-ref")
    assert res.code == 2
    assert (
        res.stderr.strip()
        == f"error: unknown revision 'no-such-ref': not a commit in {repo.parent.resolve()}"
    )
    assert res.stdout == ""
    assert cli("diff", "--repo", repo, "--head", "nope").code == 2
    assert cli("diff", "--repo", repo, "--goldens", "--base", "HEAD").code == 2


def test_outside_git_needs_goldens(tmp_path: Path, cli: Cli) -> None:
    plain = tmp_path / "plain"
    (plain / "a").mkdir(parents=True)
    (plain / "a/kustomization.yaml").write_text(kustomization("cm.yaml"))
    (plain / "a/cm.yaml").write_text(configmap("a"))
    res = cli("diff", "--repo", plain)
    assert res.code == 2 and "not inside a git work tree" in res.stderr
    assert cli("update", "--repo", plain).code == 0
    assert cli("diff", "--repo", plain, "--goldens", "--expect", "no-change").code == 0


def test_goldens_side(repo: Path, cli: Cli) -> None:
    assert cli("update", "--repo", repo).code == 0
    (repo / "b/cm.yaml").write_text(configmap("b", v="3"))
    res = cli("diff", "--repo", repo, "--goldens", "--output", "json")
    assert res.code == 0
    data = json.loads(res.stdout)
    assert data["base"]["source"] == "goldens" and data["head"]["source"] == "worktree"
    [changed] = [t for t in data["targets"] if t["changed"]]
    assert changed["name"] == "b"
    assert changed["changed"][0]["fields"] == [
        {"path": "data.v", "op": "changed", "before": "1", "after": "3", "masked": False}
    ]


def test_json_schema_fields(repo: Path, cli: Cli) -> None:
    (repo / "b/cm.yaml").write_text(configmap("b2", v="1"))
    res = cli("diff", "--repo", repo, "--output", "json", "--expect", "pure-move")
    assert res.code == 1
    data = json.loads(res.stdout)
    assert data["schema"] == "harness.diff/v1"
    assert set(data) >= {
        "schema",
        "base",
        "head",
        "summary",
        "verdict",
        "targets",
        "moves",
        "duplicates",
        "errors",
    }
    assert set(data["summary"]) >= {
        "targets",
        "targets_changed",
        "added",
        "removed",
        "changed",
        "moved",
        "moved_identical",
        "moved_pure_ownership",
        "duplicates",
        "errors",
    }
    assert data["verdict"] == "changed" and data["expectation_met"] is False
    assert data["base"]["ref"] == "HEAD" and len(data["base"]["sha"]) == 40
    b = next(t for t in data["targets"] if t["name"] == "b")
    assert set(b) >= {
        "name",
        "kind",
        "cluster",
        "documents_before",
        "documents_after",
        "added",
        "removed",
        "changed",
    }
    assert b["added"] == ["ConfigMap/default/b2"]
    assert b["removed"] == [
        {"id": "ConfigMap/default/b", "sha256": b["removed"][0]["sha256"], "still_rendered_by": []}
    ]
    assert data["summary"]["targets_changed"] == 1


def test_secrets_are_masked_in_every_output(repo: Path, cli: Cli) -> None:
    (repo / "a/secret.yaml").write_text(SECRET.format(pw="hunter3"))
    outputs = [
        cli("diff", "--repo", repo, "-U", "3").stdout,
        cli("diff", "--repo", repo, "-U", "3", "--output", "json").stdout,
        cli("diff", "--repo", repo, "--expect", "no-change").stdout,
    ]
    for out in outputs:
        for leak in ("hunter2", "hunter3", "admin-user", documents.REDACTED_PREFIX):
            assert leak not in out
    assert "stringData.password: *** (before) -> *** (after)" in outputs[0]
    assert "-  password: *** (before)" in outputs[0]
    assert "+  password: *** (after)" in outputs[0]
    fields = json.loads(outputs[1])["targets"][0]["changed"][0]["fields"]
    assert fields == [
        {
            "path": "stringData.password",
            "op": "changed",
            "before": "*** (before)",
            "after": "*** (after)",
            "masked": True,
        }
    ]


def test_head_render_failure_is_an_error_not_removals(repo: Path, cli: Cli) -> None:
    (repo / "a/kustomization.yaml").write_text(kustomization("cm.yaml", "missing.yaml"))
    res = cli("diff", "--repo", repo, "--expect", "pure-move")
    assert res.code == 2
    assert "error: a (head): a/kustomization.yaml: kustomize:" in res.stdout
    assert "- ConfigMap" not in res.stdout
    data = json.loads(cli("diff", "--repo", repo, "--output", "json").stdout)
    assert data["summary"]["removed"] == 0 and data["summary"]["errors"] == 1
    assert [(e["target"], e["side"]) for e in data["errors"]] == [("a", "head")]
    assert data["exit_code"] == 2


def test_repository_state_is_untouched(repo: Path, cli: Cli, tmp_path: Path) -> None:
    root = repo.parent
    (repo / "b/cm.yaml").write_text(configmap("b", v="2"))
    commit_all(root, "second")
    make_busy(
        root,
        staged="deploy/a/cm.yaml",
        stashed="deploy/b/cm.yaml",
        unstaged="deploy/b/kustomization.yaml",
    )
    before = state(root)
    for args in (("--base", "HEAD~1"), ("--base", "HEAD~1", "--head", "HEAD"), ("--base", "bad")):
        cli("diff", "--repo", repo, *args)
        assert state(root) == before
    assert list(private_tmpdir(tmp_path).iterdir()) == []


def test_check_shows_field_level_changes_and_keeps_its_summary_last(repo: Path, cli: Cli) -> None:
    assert cli("update", "--repo", repo).code == 0
    (repo / "a/cm.yaml").write_text(configmap("a", v="1", w="y"))
    res = cli("check", "--repo", repo)
    assert res.code == 1
    assert "~ ConfigMap/default/a\n    data.w: x -> y\n    in: a\n" in res.stdout
    assert res.stdout.strip().splitlines()[-1].startswith("render-golden: 1/2 targets match")


SLOW_KUBECTL = """#!/bin/sh
if [ "$1" = "version" ]; then exec "{real}" "$@"; fi
touch "{marker}"
sleep 2
exec "{real}" "$@"
"""


def test_interrupted_diff_leaves_nothing_behind(repo: Path, tmp_path: Path, kubectl: Path) -> None:
    """SIGINT while the base checkout is being rendered: exit 130, no temp dir, repo as before."""
    root = repo.parent
    make_busy(
        root,
        staged="deploy/a/cm.yaml",
        stashed="deploy/b/cm.yaml",
        unstaged="deploy/b/kustomization.yaml",
    )
    before = state(root)
    marker = tmp_path / "rendering"
    fake = tmp_path / "slow-kubectl"
    fake.write_text(SLOW_KUBECTL.format(real=kubectl, marker=marker))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "TMPDIR": str(private_tmpdir(tmp_path)), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "diff",
            "--repo",
            str(repo),
            "--base",
            "HEAD",
            "--kubectl",
            str(fake),
            "-j",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 300  # a hang guard: the wait ends when the marker appears
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert [p.name for p in private_tmpdir(tmp_path).iterdir() if p.name.startswith("harness-ref-")]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert list(private_tmpdir(tmp_path).iterdir()) == []
    assert state(root) == before


# what a run only needs for other outputs, other options or other verbs
OTHER_OUTPUTS = {
    "harness.report.diff_json",
    "harness.report.json_out",
    "harness.report.junit",
    "harness.report.github",
    "harness.report.markdown_budget",
    "xml.etree.ElementTree",
}
NOT_FOR_A_PLAIN_DIFF = {
    "harness.pipeline.shard",
    "harness.pipeline.goldens",
    "harness.hazards.introduced",
    "harness.hazards.preinstalled",
    "harness.hazards.sources",
    "helm_python",
    "rich.progress",
    # what only a changed document, a failed build or a finding needs
    "harness.compare.docdiff",
    "harness.compare.fieldpath",
    "harness.compare.masking",
    "harness.render.errors",
    "harness.report.findings",
}
# what importing the diff and watch verbs must not load: other outputs and verbs, the Helm
# engines, the template engine of ResourceSets, schema and diff libraries, and what only a
# render, a changed document, a failure or a finding needs
NOT_AT_IMPORT = OTHER_OUTPUTS | {
    "harness.report.html",
    "harness.report.markdown",
    "harness.report.diff_text",
    "harness.flux.targets",
    "harness.flux.gotemplate",
    "harness.flux.helm.native",
    "harness.flux.helm.sdk",
    "harness.flux.helm.worker",
    "harness.flux.helm.engine",
    "harness.compare.docdiff",
    "harness.compare.images",
    "harness.flux.clusters",
    "harness.render.errors",
    "harness.report.findings",
    "harness.hazards.preinstalled",
    "harness.hazards.sources",
    "deepdiff",
    "kubernetes_validate",
    "jsonschema",
    "importlib.resources",
    "importlib.metadata",
    # what a diff runs loads when it runs (the verbs' modules are built for --help too)
    "harness.cli.context",
    "harness.cli.watching",
    "harness.cache.store",
    "harness.core.config",
    "harness.pipeline.repo",
    "harness.render.kustomize",
    "harness.compare.analyze",
    "harness.compare.gate",
    "harness.hazards.engine",
    "harness.report.console",
    "yaml",
    "rich.console",
    # typer's coercion (cli/direct.py reads a plain command line without it)
    "pydantic",
}
# all of harness that importing the diff and watch verbs loads
AT_IMPORT = {
    "harness",
    "harness._version",
    "harness.cli",
    "harness.cli.commands",
    "harness.cli.commands.diff",
    "harness.cli.commands.watch",
    "harness.cli.errors",
    "harness.cli.flags",
    "harness.cli.shared",
}


def test_importing_the_diff_verbs_loads_only_their_common_path() -> None:
    """Start-up is a large part of a warm diff (docs/benchmark.md): importing `diff` and `watch`
    loads their options and nothing a run needs (that loads when it runs); what is guarded is
    what is loaded, never a timing."""
    loaded = set(
        fresh_python(
            "import sys\n"
            "import harness.cli.commands.diff, harness.cli.commands.watch\n"
            "print(' '.join(sorted(sys.modules)))\n"
        ).split()
    )
    assert "typer" in loaded  # the scan sees what the verbs import
    assert loaded & NOT_AT_IMPORT == set()
    assert {m for m in loaded if m.startswith("harness")} == AT_IMPORT


def test_a_diff_imports_only_its_output_format(repo: Path) -> None:
    """Start-up is most of a warm one-file diff: the text diff loads no other report format,
    shard planner, goldens or lint-pass module (no lint pass runs when the renders are equal)."""
    text, modules = modules_after("diff", "--repo", repo, "-q", cwd=repo)
    assert text.code == 0, text.stderr
    assert text.stdout.startswith("no change: 2 targets")
    assert "harness.report.diff_text" in modules
    assert modules & (OTHER_OUTPUTS | NOT_FOR_A_PLAIN_DIFF) == set()
    assert "pydantic" not in modules  # its command line is read by cli/direct.py
    # a changed value is explained without deepdiff
    (repo / "a/cm.yaml").write_text(configmap("a", v="2", w="x"))
    changed, modules = modules_after("diff", "--repo", repo, "-q", cwd=repo)
    assert "    data.v: 1 -> 2" in changed.stdout
    assert "deepdiff" not in modules
    as_json, modules = modules_after("diff", "--repo", repo, "-q", "-o", "json", cwd=repo)
    assert as_json.code == 0, as_json.stderr
    assert json.loads(as_json.stdout)["exit_code"] == 0  # a change, no expectation
    assert "harness.report.diff_json" in modules
    assert modules & {"harness.report.junit", "harness.report.github"} == set()


def test_each_ref_is_resolved_once(repo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The refs are resolved up front (a typo fails first) and the checkouts reuse the
    answers: one `rev-parse --show-toplevel` and one per ref, not two of each."""
    from harness.pipeline import gitref

    asked: list[tuple[str, ...]] = []
    real = gitref.git

    def counting(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
        if args[0] == "rev-parse":
            asked.append(args)
        return real(cwd, *args, env=env)

    monkeypatch.setattr(gitref, "git", counting)
    assert cli("diff", "--repo", repo).code == 0
    assert [a[1] for a in asked] == ["--show-toplevel", "--verify"]
    asked.clear()
    commit_all(repo.parent, "second")
    assert cli("diff", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD").code == 0
    assert [a[-1] for a in asked[1:]] == ["HEAD~1^{commit}", "HEAD^{commit}"]
    assert len(asked) == 3
