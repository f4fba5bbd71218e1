"""Hostile target names and values in every output format: nothing they hold is read as
markup, a template placeholder, a workflow command, an XML control character, a terminal
escape sequence (issue 24) or a bidi reordering of the text (issue 28). Names are real
directories, values real ConfigMap data."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.conftest import Result, kustomization, run_harness, write_tree
from tests.gitkit import commit_all, init

ESC = "\x1b"
NAMES = {
    "template": "apps/{{JS}}",
    "markup": "apps/x`|<b>*[click](https://evil.example)*</b>",
    "terminal": f"apps/esc{ESC}[31mred{ESC}]8;;https://evil.example{ESC}\\link",
    "newline": "apps/nl\n::error title=pwned::injected",
    # a right-to-left override: `apps/rlo<RLO>lmth.exe` reads as `apps/rloexe.html`
    "bidi": "apps/rlo\u202elmth.exe\u200b",
}
BIDI = "\u202e"
VALUE = f"{ESC}[2J{ESC}]0;title\x07<script>alert(1)</script> `|` [x](https://evil.example)"
SCRIPT = "<script>alert(1)</script>"


def cm(name: str, value: str) -> str:
    """A ConfigMap whose value is YAML double-quoted: JSON's escapes are YAML's."""
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n"
        f"data:\n  v: {json.dumps(value)}\n"
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "repo"
    files: dict[str, str | bytes] = {}
    for n, name in enumerate(NAMES.values()):
        files[f"{name}/kustomization.yaml"] = kustomization("cm.yaml")
        files[f"{name}/cm.yaml"] = cm(f"cm{n}", "old")
    write_tree(init(root), files)
    assert run_harness("update", "--repo", root, "-q").code == 0
    commit_all(root, "base")
    for n, name in enumerate(NAMES.values()):  # every target drifts to the hostile value
        (root / name / "cm.yaml").write_text(cm(f"cm{n}", VALUE))
    return root


def outputs(repo: Path, tmp: Path) -> dict[str, Result]:
    out: dict[str, Result] = {}
    for fmt in ("text", "json", "junit", "github", "html"):
        out[f"check-{fmt}"] = run_harness("check", "--repo", repo, "-q", "-o", fmt)
        out[f"diff-{fmt}"] = run_harness("diff", "--repo", repo, "-q", "-o", fmt)
    for fmt in ("text", "json", "html"):
        out[f"lint-{fmt}"] = run_harness("lint", "--repo", repo, "-q", "-o", fmt)
    out["comment"] = run_harness("comment", "--repo", repo, "-q")
    out["render"] = run_harness("render", "--repo", repo, "-q")
    out["render-one"] = run_harness("render", NAMES["newline"], "--repo", repo, "-q")
    out["render-none"] = run_harness("render", NAMES["terminal"] + "x", "--repo", repo, "-q")
    out["render-json"] = run_harness("render", "--repo", repo, "-q", "-o", "json")
    return out


@pytest.mark.slow
def test_hostile_names_and_values_in_every_format(repo: Path, tmp_path: Path) -> None:
    results = outputs(repo, tmp_path)
    for key, res in results.items():
        assert res.code in ((2,) if key == "render-none" else (0, 1)), (key, res.stderr)
        for stream in (res.stdout, res.stderr):
            # no terminal control sequence and no BEL reaches a terminal or a file
            assert ESC not in stream and "\x07" not in stream, key
    for key in ("check-html", "diff-html", "lint-html"):
        page = results[key].stdout
        assert page.count("<script") == 2, key  # the data block and the code, none injected
        assert SCRIPT not in page and "<b>" not in page, key
        title = re.search(r"<title>(.*?)</title>", page, re.S)
        assert title is not None and "<" not in title.group(1), key
    for key in ("check-junit", "diff-junit"):
        tree = ET.fromstring(results[key].stdout)  # parses: no raw control characters
        names = {case.get("name") for case in tree.iter("testcase")}
        assert any(n and "{{JS}}" in n for n in names), key
    for key in ("check-github", "diff-github"):
        for line in results[key].stdout.splitlines():
            # every workflow command is harness's own: a name cannot start one
            assert "pwned" not in line or not line.startswith("::error title=pwned"), line
            if line.startswith("::"):
                assert re.match(r"^::(error|warning|notice)( [^:]*)?::", line), line
    for key in ("check-json", "diff-json", "lint-json", "render-json"):
        text = json.dumps(json.loads(results[key].stdout))
        assert "{{JS}}" in text or key == "lint-json", key
    tokens = MarkdownIt("commonmark").enable("table").parse(results["comment"].stdout)
    for token in tokens:
        for child in [token, *(token.children or [])]:
            assert child.type != "link_open", child  # no name or value became a link
            if child.type in ("html_inline", "html_block"):
                assert "<b>" not in child.content and SCRIPT not in child.content, child
    for key in ("check-text", "diff-text", "render", "check-github", "diff-junit", "comment"):
        # bidi and zero-width characters are shown as escapes in every text output
        assert BIDI not in results[key].stdout + results[key].stderr, key
        assert "\u200b" not in results[key].stdout, key
    assert "apps/rlo\\u202elmth.exe\\u200b" in results["check-text"].stdout
    for key in ("check-text", "diff-text", "render", "check-github"):
        lines = results[key].stdout.splitlines()
        assert not any(line.startswith("::error title=pwned") for line in lines), key
