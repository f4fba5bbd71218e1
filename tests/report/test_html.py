"""The HTML page as text: self-contained, escaped, masked; and the verbs that write it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.compare import gate
from harness.compare.analyze import analyze
from harness.hazards import engine
from harness.report import html
from harness.report.formats import html as html_out
from tests.conftest import EXAMPLE, Result
from tests.diffkit import cilium_split, secret, snapshot

Cli = Callable[..., Result]
HOSTILE = "</script><script>alert(1)</script>"


def _data(page: str) -> dict[str, object]:
    match = re.search(r'<script type="application/json" id="harness-data">(.*?)</script>', page)
    assert match is not None
    data = json.loads(match.group(1))
    assert isinstance(data, dict)
    return data


def _page(base_spec: dict[str, list[str]], head_spec: dict[str, list[str]]) -> str:
    base, head = snapshot(base_spec, "base"), snapshot(head_spec, "head")
    analysis = analyze(base, head)
    return html_out.diff_page(analysis, gate.judge(analysis), 1, "base", "head", None)


def test_page_is_self_contained() -> None:
    base, head = cilium_split(value="x")
    analysis = analyze(base, head)
    page = html_out.diff_page(analysis, gate.judge(analysis), 0, "HEAD~1", "work", None)
    assert page.startswith("<!doctype html>")
    assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=", page)
    urls = set(re.findall(r"https?://[^\s\"')]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}  # the SVG namespace, never fetched
    assert "default-src 'none'" in page  # and the CSP forbids fetching anyway
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="harness-graph"' in page
    data = _data(page)
    assert data["schema"] == "harness.html/v1"
    names = {t["name"] for t in data["targets"]}  # type: ignore[attr-defined]
    assert names == {
        "platform",
        "platform/cilium",
        "clusters/base",
        "dev/flux-system/flux-system",
        "dev/flux-system/platform",
        "dev/flux-system/cilium",
    }


def test_hostile_names_cannot_escape_the_data_or_the_markup() -> None:
    doc = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\n"
        f"data:\n  k: '{HOSTILE}'\n"
    )
    page = _page({"a": [doc.replace(HOSTILE, "old")]}, {"a": [doc]})
    assert HOSTILE not in page
    assert page.count("<script") == 2  # the data block and the code, nothing injected
    data = _data(page)
    (target,) = data["targets"]  # type: ignore[misc]
    assert HOSTILE in json.dumps(target["docs"][0]["diff"])


def test_image_changes_come_first_on_the_page_and_stay_text() -> None:
    from tests.compare.test_images import deploy

    base = {"c/flux-system/apps": [deploy("web", "ghcr.io/o/web:1.0")]}
    head = {"c/flux-system/apps": [deploy("web", "ghcr.io/o/web:1.1")]}
    analysis = analyze(snapshot(base, "b"), snapshot(head, "h"))
    page = html_out.diff_page(analysis, gate.judge(analysis), 1, "base", "head", None)
    section = page.split('<section id="images-box">')[1].split("</section>")[0]
    assert section == (
        '<h2>images: 1 change in 1 container</h2><ul id="images">'
        "<li>ghcr.io/o/web: 1.0 -&gt; 1.1 (apps/Deployment/apps/web in c)</li></ul>"
    )
    assert page.index('id="images-box"') < page.index('id="changes-box"')
    head = {"c/flux-system/apps": [deploy("web", f"ghcr.io/o/web:{HOSTILE}")]}
    assert HOSTILE not in _page(base, head)  # a hostile image is text, escaped
    assert 'id="images-box"' not in _page({"a": []}, {"a": []})  # no change, no section


def test_secret_values_are_masked_in_diffs_and_full_texts() -> None:
    page = _page(
        {"a": [secret("s", token="base-s3cr3t")]},
        {"a": [secret("s", token="head-s3cr3t")], "b": [secret("t", token="new-s3cr3t")]},
    )
    assert "s3cr3t" not in page
    data = json.dumps(_data(page))
    assert "*** (before)" in data and "*** (after)" in data and "token: ***" in data


def test_report_counts_and_lint_page() -> None:
    _base, head = cilium_split()

    report = engine.lint(head)
    page = html_out.lint_page(head, report, "error", 0)
    data = _data(page)
    assert data["command"] == "harness lint" and str(data["verdict"]).startswith("lint: ")
    rows = {t["name"]: t for t in data["targets"]}  # type: ignore[attr-defined]
    assert rows["dev/flux-system/cilium"]["after"] == 2


def test_placeholders_in_values_stay_text() -> None:
    """One pass: a value holding `{{JS}}` (a target named `apps/{{JS}}` in the verdict) is
    never expanded, so the script is not copied into the title and the page keeps its code."""
    assert html.fill("<t>{{A}}</t>{{B}}", {"A": "{{B}}", "B": "x"}) == "<t>{{B}}</t>x"
    with pytest.raises(ValueError, match="placeholders"):
        html.fill("{{A}}", {"A": "1", "B": "2"})
    page = html.render(html.Report("harness diff", "moved: apps/{{JS}} -> apps/{{CSS}}", "ok"))
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    assert (
        title is not None
        and title.group(1) == "harness diff: moved: apps/{{JS}} -&gt; apps/{{CSS}}"
    )
    script = page.rsplit("<script>", 1)[1]
    assert "{{JS}}" not in script and len(script) > 1000  # the report's code, in its place


@pytest.mark.slow
def test_check_and_lint_write_html_beside_their_output(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "check.html"
    res = cli("check", "--repo", EXAMPLE, "-q", "--html", out)
    assert res.code == 0, res.stderr
    assert res.stdout and not res.stdout.startswith("<!doctype")  # text output as ever
    data = _data(out.read_text())
    assert str(data["verdict"]).startswith("No change") and data["command"] == "harness check"
    lint = cli("lint", "--repo", EXAMPLE, "-q", "--output", "html")
    assert lint.code == 0, lint.stderr
    assert lint.stdout.startswith("<!doctype html>") and "svg" in lint.stdout
