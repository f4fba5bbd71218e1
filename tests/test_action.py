"""The GitHub Action and pre-commit hook: their files, the sticky-comment script against a fake
`gh`, and the action's run script end to end with the real harness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import PROJECT, configmap, kustomization
from tests.gitkit import commit_all, init

SCRIPTS = PROJECT / "scripts"

FAKE_GH = """#!{python}
import base64, json, os, sys
args = sys.argv[1:]
log = os.environ["FAKE_GH_LOG"]
if "--paginate" in args:
    for c in json.load(open(os.environ["FAKE_GH_COMMENTS"])):
        body = base64.b64encode(c["body"].encode()).decode()
        print(f"{{c['id']}}\\t{{body}}")
    sys.exit(0)
entry = {{"args": args}}
for i, a in enumerate(args):
    if a == "-F" and args[i + 1].startswith("body=@"):
        entry["body"] = open(args[i + 1][len("body=@"):]).read()
with open(log, "a") as fh:
    fh.write(json.dumps(entry) + "\\n")
sys.exit(int(os.environ.get("FAKE_GH_EXIT", "0")))
"""


@pytest.fixture
def fake_gh(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable))
    gh.chmod(0o755)
    return {
        "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
        + os.environ["PATH"],
        "FAKE_GH_LOG": str(tmp_path / "gh.log"),
        "FAKE_GH_COMMENTS": str(tmp_path / "comments.json"),
        "GITHUB_REPOSITORY": "owner/repo",
        "GH_TOKEN": "not-a-token",
    }


def _calls(env: dict[str, str]) -> list[dict[str, Any]]:
    log = Path(env["FAKE_GH_LOG"])
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _parts(directory: Path, count: int, marker_id: str = "harness:comment") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for n in range(1, count + 1):
        mark = f"<!-- {marker_id} part={n}/{count} -->" if count > 1 else f"<!-- {marker_id} -->"
        (directory / f"comment-part-{n}.md").write_text(f"### part {n}\n\n{mark}\n")


def _sticky(env: dict[str, str], directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPTS / "sticky-comment.sh"), "7", str(directory)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_sticky_comment_updates_parts_and_deletes_stale_ones(
    fake_gh: dict[str, str], tmp_path: Path
) -> None:
    comments = [
        {"id": 11, "body": "old part 1\n<!-- harness:comment part=1/3 -->\n"},
        {"id": 12, "body": "old part 2\n<!-- harness:comment part=2/3 -->\n"},
        {"id": 13, "body": "old part 3\n<!-- harness:comment part=3/3 -->\n"},
        {"id": 14, "body": "LGTM, thanks"},
        {"id": 15, "body": "a duplicate\n<!-- harness:comment part=1/3 -->\n"},
        {"id": 16, "body": "another tool\n<!-- harness:comment:prod -->\n"},
    ]
    Path(fake_gh["FAKE_GH_COMMENTS"]).write_text(json.dumps(comments))
    out = tmp_path / "out"
    _parts(out, 2)
    res = _sticky(fake_gh, out)
    assert res.returncode == 0, res.stderr
    calls = _calls(fake_gh)
    assert [c["args"][3:5] for c in calls] == [
        ["PATCH", "repos/owner/repo/issues/comments/11"],
        ["PATCH", "repos/owner/repo/issues/comments/12"],
        ["DELETE", "repos/owner/repo/issues/comments/15"],
        ["DELETE", "repos/owner/repo/issues/comments/13"],
    ]
    assert calls[0]["body"] == (out / "comment-part-1.md").read_text()
    assert calls[1]["body"].startswith("### part 2")


def test_sticky_comment_creates_when_none_exist_and_matches_plain_marker(
    fake_gh: dict[str, str], tmp_path: Path
) -> None:
    Path(fake_gh["FAKE_GH_COMMENTS"]).write_text(
        json.dumps([{"id": 21, "body": "earlier single\n\n<!-- infra:diff -->\n"}])
    )
    out = tmp_path / "out"
    _parts(out, 3, "infra:diff")
    assert _sticky(fake_gh, out).returncode == 0
    calls = _calls(fake_gh)
    assert [c["args"][3:5] for c in calls] == [
        ["PATCH", "repos/owner/repo/issues/comments/21"],
        ["POST", "repos/owner/repo/issues/7/comments"],
        ["POST", "repos/owner/repo/issues/7/comments"],
    ]
    assert [c["body"].splitlines()[0] for c in calls] == ["### part 1", "### part 2", "### part 3"]


def test_sticky_comment_refuses_a_directory_without_parts(
    fake_gh: dict[str, str], tmp_path: Path
) -> None:
    res = _sticky(fake_gh, tmp_path)
    assert res.returncode == 1 and "no " in res.stderr
    assert _calls(fake_gh) == []


def _git_repo(tmp_path: Path) -> Path:
    root = init(tmp_path / "git")
    (root / "a").mkdir()
    (root / "a/kustomization.yaml").write_text(kustomization("cm.yaml"))
    (root / "a/cm.yaml").write_text(configmap("a", v="1"))
    commit_all(root, "base")
    (root / "a/cm.yaml").write_text(configmap("a", v="2"))
    commit_all(root, "change")
    return root


def _action(env: dict[str, str], tmp_path: Path, **inputs: str) -> subprocess.CompletedProcess[str]:
    output = tmp_path / "github_output"
    full = {
        **os.environ,
        **env,
        "GITHUB_OUTPUT": str(output),
        "RUNNER_TEMP": str(tmp_path / "runner"),
        "NO_COLOR": "1",
        **inputs,
    }
    full.pop("GITHUB_STEP_SUMMARY", None)
    (tmp_path / "runner").mkdir(exist_ok=True)
    return subprocess.run(
        ["bash", str(SCRIPTS / "action-run.sh")],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_action_comment_mode_posts_and_keeps_the_exit_code(
    fake_gh: dict[str, str], tmp_path: Path
) -> None:
    root = _git_repo(tmp_path)
    Path(fake_gh["FAKE_GH_COMMENTS"]).write_text("[]")
    res = _action(
        fake_gh,
        tmp_path,
        MODE="comment",
        REPO_PATH=str(root),
        BASE_REF="HEAD~1",
        EXTRA_ARGS="--expect no-change",
        PR_NUMBER="7",
    )
    assert res.returncode == 1, res.stderr
    outputs = (tmp_path / "github_output").read_text().splitlines()
    assert "exit-code=1" in outputs
    assert f"comment-dir={tmp_path / 'runner' / 'harness-comment'}" in outputs
    report = tmp_path / "runner" / "harness-report" / "harness-report.html"
    assert f"html-report={report}" in outputs
    assert report.read_text().startswith("<!doctype html>")
    [call] = _calls(fake_gh)
    assert call["args"][3:5] == ["POST", "repos/owner/repo/issues/7/comments"]
    assert call["body"].startswith("### 1 object changes in 1 target: 1 changed")
    assert "**expected no-change: FAILED**" in call["body"]


def test_action_check_mode_prints_annotations(fake_gh: dict[str, str], tmp_path: Path) -> None:
    root = _git_repo(tmp_path)
    res = _action(fake_gh, tmp_path, MODE="check", REPO_PATH=str(root))
    assert res.returncode == 1
    assert "::error title=harness check::render-golden: 0/1 targets match" in res.stdout
    assert _calls(fake_gh) == []


def test_action_rejects_an_unknown_mode(fake_gh: dict[str, str], tmp_path: Path) -> None:
    res = _action(fake_gh, tmp_path, MODE="deploy")
    assert res.returncode == 2
    assert "::error title=harness::mode must be check, diff or comment" in res.stdout


def test_action_and_hook_definitions() -> None:
    action = yaml.safe_load((PROJECT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert {"mode", "base-ref", "repo-path", "extra-args", "python-version"} <= set(
        action["inputs"]
    )
    runs = " ".join(step.get("run", "") for step in action["runs"]["steps"])
    assert "pip install" in runs and "scripts/action-run.sh" in runs
    [upload] = [s for s in action["runs"]["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload["with"]["path"] == "${{ steps.run.outputs.html-report }}"
    assert "html-report" in action["inputs"] and "html-report" in action["outputs"]
    assert all(s.get("shell") == "bash" for s in action["runs"]["steps"] if "run" in s)
    [hook] = yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "harness-check"
    assert hook["language"] == "python" and hook["pass_filenames"] is False
    assert hook["entry"] == "harness check"
    for script in ("action-run.sh", "sticky-comment.sh"):
        res = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True)
        assert res.returncode == 0, res.stderr


FAKE_PYTHON = """#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$@" >> "$FAKE_PIP_LOG"; exit 0; fi
exec {python} "$@"
"""


@pytest.mark.parametrize(
    ("config", "helm", "extra", "installs"),
    [
        ("helm: true\n", "auto", "", True),
        ('helm: ["*/media/whoami"]\n', "auto", "", True),
        ("", "auto", "", False),
        ("", "auto", "--helm -q", True),
        ("helm: true\n", "false", "", False),
        ("", "true", "", True),
    ],
)
def test_action_installs_the_helm_extra_when_the_repo_enables_helm(
    tmp_path: Path, config: str, helm: str, extra: str, installs: bool
) -> None:
    root = _git_repo(tmp_path)
    if config:
        (root / "harness.yaml").write_text(config)
    bin_dir = tmp_path / "pybin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(FAKE_PYTHON.format(python=sys.executable))
    (bin_dir / "python").chmod(0o755)
    log = tmp_path / "pip.log"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_PIP_LOG": str(log),
        "HELM": helm,
        "REPO_PATH": str(root),
        "EXTRA_ARGS": extra,
    }
    res = subprocess.run(
        ["bash", str(SCRIPTS / "action-run.sh"), "helm-extra"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    if installs:
        [call] = calls
        assert call.endswith(f"{PROJECT}[helm]")
    else:
        assert calls == []


def test_action_caches_renders_keyed_so_a_pull_request_finds_its_base() -> None:
    action = yaml.safe_load((PROJECT / "action.yml").read_text())
    steps = action["runs"]["steps"]
    [restore] = [s for s in steps if s.get("uses", "").startswith("actions/cache/restore@")]
    [save] = [s for s in steps if s.get("uses", "").startswith("actions/cache/save@")]
    [run] = [s for s in steps if s.get("id") == "run"]
    assert restore["with"]["path"] == save["with"]["path"]
    assert "harness-cache" in run["env"]["HARNESS_CACHE_DIR"]
    assert save["with"]["key"] == restore["with"]["key"]
    assert "github.sha" in save["with"]["key"]  # the base branch's run saves its commit
    first = restore["with"]["restore-keys"].splitlines()[0]
    assert "github.event.pull_request.base.sha" in first  # a PR restores its base commit's
    assert "always()" in save["if"]
    names = [s.get("name", "") for s in steps]
    assert (
        names.index("Install harness")
        < names.index("Install the helm extra when the repo enables helm")
        < names.index("Run harness")
    )
