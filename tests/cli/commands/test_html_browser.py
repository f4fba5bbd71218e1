"""The HTML report in a real browser: Debian's headless Chromium driven by Playwright.

Every page is loaded from a file with all network requests blocked (and counted): the report
must need none. Screenshots are saved under the test's tmp dir and their paths printed
(`pytest -s` shows them). Outside CI the tests skip when Chromium or Playwright is missing;
in CI (`CI=true`, where .ci/run installs both) that is a failure instead.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.compare import gate
from harness.compare.analyze import analyze
from harness.report.formats import html
from tests import bigrepo
from tests.cli.commands.conftest import SECRET
from tests.conftest import Result, run_harness
from tests.gitkit import commit_all, init
from tests.homelab import edit, split_cilium
from tests.report.large_change import sides

CHROMIUM = os.environ.get("HARNESS_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

Cli = Callable[..., Result]
# Playwright waits end on the page; this bound only stops a hung one (a loaded machine is slow)
HANG_MS = 300_000


def _unavailable() -> str | None:
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not installed (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright not installed (pip install playwright; never `playwright install`)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _unavailable()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests need Chromium and Playwright in CI: {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Page:
    """A loaded report, with what the page logged and what it tried to fetch."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(HANG_MS)
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)
        started = time.monotonic()
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("#targets tbody tr")
        self.load_seconds = time.monotonic() - started

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith("file:"):
            route.continue_()
        else:
            self.requests.append(url)
            route.abort()

    def shot(self, path: Path, full: bool = True) -> None:
        self.page.screenshot(path=str(path), full_page=full)
        print(f"screenshot: {path}")

    def visible_rows(self) -> list[str]:
        return self.page.eval_on_selector_all(
            "#targets tbody tr:not([hidden]) td:nth-child(2)", "els => els.map(e => e.textContent)"
        )


@pytest.mark.slow
def test_cilium_split_report(browser: Any, homelab: Path, cli: Cli, tmp_path: Path) -> None:
    secret = homelab / "platform/secret.yaml"
    secret.write_text(SECRET.format(pw="hunter2-base"))
    edit(homelab / "platform/kustomization.yaml", "resources:\n", "resources:\n  - secret.yaml\n")
    commit_all(homelab.parent.parent, "base")
    split_cilium(homelab)
    secret.write_text(SECRET.format(pw="hunter2-head"))
    report = tmp_path / "report.html"
    res = cli("diff", "--repo", homelab, "-q", "--base", "HEAD", "--html", report)
    assert res.code == 0, res.stderr
    assert res.stdout.startswith(
        "changed: 1 object changes in 2 clusters (2 targets): 1 changed, 0 added, 0 removed\n"
    )
    text = report.read_text()
    assert "hunter2" not in text
    page = Page(browser, report)
    p = page.page
    verdict = p.locator("#verdict-line")
    assert verdict.is_visible() and "1 object changes" in verdict.inner_text()
    assert p.locator(".hazard-line").is_visible()

    # the first screen says what changed: the Secret once, its field, where, then the moves
    changes = p.locator("#changes > li")
    first = changes.first
    assert first.is_visible() and first.bounding_box()["y"] < 1000  # type: ignore[index]
    assert "Secret/default/db" in first.inner_text()
    assert "stringData.password" in first.inner_text()
    assert "in: platform; dev, prod: flux-system/platform" in first.inner_text()
    assert changes.count() == 7  # the Secret, then 3 moves of the path target and 3 of Flux
    first.locator("button.link").click()  # its diff, without opening a target
    first.locator("pre.diff").wait_for(state="visible", timeout=HANG_MS)

    # the graph is drawn: boxes with a size, the hazard edge on the move
    graph = p.locator("svg.harness-graph")
    assert graph.is_visible()
    box = graph.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 200
    assert "dev, prod" in (graph.text_content() or "")  # the clusters change alike: drawn once
    assert p.locator("svg.harness-graph g.node").count() >= 11
    hazard = p.locator('svg.harness-graph g.edge[data-hazard="1"][data-kind="move"]')
    assert hazard.count() == 1  # platform -> cilium
    assert "ownership-race" in (hazard.text_content() or "")
    page.shot(tmp_path / "cilium-split.png")

    # the filter hides what does not match
    assert len(page.visible_rows()) == 10
    p.fill("#filter", "cluster:prod")
    rows = page.visible_rows()
    assert rows and all(r.startswith("prod/") for r in rows)
    assert p.locator("details.target:not([hidden])").count() == len(rows)
    p.fill("#filter", "kind:Secret")
    assert page.visible_rows() == [
        "platform",
        "dev/flux-system/platform",
        "prod/flux-system/platform",
    ]
    p.fill("#filter", "")
    assert len(page.visible_rows()) == 10

    # a section expands (keyboard), a document shows its masked diff, side-by-side works
    p.keyboard.press("/")
    assert p.evaluate("document.activeElement.id") == "filter"
    p.fill("#filter", "target:dev/flux-system/platform")
    p.keyboard.press("Enter")
    p.keyboard.press("o")
    section = p.locator("details.target[open]")
    assert section.count() == 1 and "dev/flux-system/platform" in section.inner_text()
    doc = section.locator("details.doc").first
    doc.locator("summary").click()
    doc.locator("pre").first.wait_for(state="visible", timeout=HANG_MS)
    p.fill("#filter", "target:clusters/base")
    p.locator("details.target:not([hidden]) > summary").first.click()
    p.keyboard.press("Escape")
    p.fill("#filter", "kind:Secret target:platform")
    p.locator("details.target:not([hidden]) > summary").first.click()
    masked = p.locator("details.target[open] details.doc", has_text="Secret/default/db").first
    if not masked.evaluate("e => e.open"):  # it may be the document opened above
        masked.locator("summary").click()
    masked.locator("pre.fields").wait_for(state="visible", timeout=HANG_MS)
    assert "stringData.password: *** (before) -> *** (after)" in masked.inner_text()
    p.check("#sbs")
    p.locator("details.target[open] table.sbs").first.wait_for(state="visible", timeout=HANG_MS)
    page.shot(tmp_path / "cilium-split-expanded.png")
    assert page.errors == []
    assert page.requests == []


@pytest.mark.slow
def test_image_changes_are_on_the_first_screen(browser: Any, tmp_path: Path) -> None:
    from tests.compare.test_images import deploy
    from tests.diffkit import snapshot

    names = [f"app{i}" for i in range(3)]
    base = snapshot({"c/flux-system/apps": [deploy(n, f"ghcr.io/o/{n}:1.0") for n in names]})
    head = snapshot({"c/flux-system/apps": [deploy(n, f"ghcr.io/o/{n}:1.1") for n in names]})
    analysis = analyze(base, head)
    report = tmp_path / "images.html"
    report.write_text(html.diff_page(analysis, gate.judge(analysis), 1, "HEAD", "work", None))
    p = Page(browser, report).page
    box = p.locator("#images-box")
    assert box.is_visible() and box.bounding_box()["y"] < 1000  # type: ignore[index]
    assert p.locator("#images-box h2").inner_text() == "images: 3 changes in 3 containers"
    assert p.locator("#images li").all_inner_texts() == [
        f"ghcr.io/o/{n}: 1.0 -> 1.1 (apps/Deployment/apps/{n} in c)" for n in names
    ]


def test_large_change_stays_usable(browser: Any, tmp_path: Path) -> None:
    base, head = sides(documents=5000)
    analysis = analyze(base, head, unified=3)
    assert sum(len(t.changed) for t in analysis.targets) >= 5000
    page_text = html.diff_page(analysis, gate.judge(analysis), 1, "HEAD~1", "work", None)
    assert "s3cr3t" not in page_text
    report = tmp_path / "large.html"
    report.write_text(page_text)
    page = Page(browser, report)
    p = page.page
    print(f"large report: {len(page_text) / 1e6:.1f} MB, loaded in {page.load_seconds:.2f}s")
    assert p.locator("#verdict-line").is_visible()
    assert (
        "2501 objects change in 2 clusters (50 targets)" in p.locator("#verdict-line").inner_text()
    )
    assert p.locator("#changes > li").count() == 20  # the first of 2501, each said once
    assert "show all 2501" in p.locator("#changes-box button.more").inner_text()
    assert len(page.visible_rows()) == 50
    assert p.locator("details.doc").count() == 0  # nothing rendered before it is opened
    first = p.locator("details.target").first
    first.locator("summary").click()
    first.locator("details.doc").first.wait_for(timeout=HANG_MS)
    assert first.locator("details.doc").count() == 100  # one page of a 101-document target
    more = first.locator("button.more")
    assert more.is_visible() and "show 1 more" in more.inner_text()
    more.click()
    assert first.locator("details.doc").count() == 101
    first.locator("details.doc summary").nth(3).click()
    first.locator("details.doc[open] pre.diff").wait_for(state="visible", timeout=HANG_MS)
    p.fill("#filter", "name:cm-0042 cluster:prod")
    rows = page.visible_rows()
    assert len(rows) == 25 and all(r.startswith("prod/") for r in rows)
    p.fill("#filter", "name:no-such-thing")
    assert page.visible_rows() == []
    assert "0 of 50 targets" in p.locator("#shown").inner_text()
    p.fill("#filter", "")
    assert p.locator("svg.harness-graph g.node").count() > 0
    page.shot(tmp_path / "large-change.png")
    assert page.errors == []
    assert page.requests == []


# -- pictures that scale: a generated 250-Kustomization homelab -------------------------------


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """tests/bigrepo.py's repo in git, drawn as `harness graph` draws it, linted to HTML, and
    diffed to HTML after one app's image changes (the renders share one cache)."""
    root = tmp_path_factory.mktemp("big")
    repo = bigrepo.generate(init(root / "git"))
    commit_all(repo, "base")
    env = {"HARNESS_CACHE_DIR": str(root / "cache")}
    out = {"repo": repo, "svg": root / "graph.svg", "lint": root / "lint.html"}
    res = run_harness(
        "graph", "--repo", repo, "-q", "-f", "svg", "--layout", "builtin", "-O", out["svg"], env=env
    )
    assert res.code == 0, res.stderr
    res = run_harness("lint", "--repo", repo, "-q", "--html", out["lint"], env=env)
    assert res.code in (0, 1), res.stderr
    deployment = repo / "apps/team-03/app-003/app/deployment.yaml"
    edit(deployment, "app-003:1.0.0", "app-003:1.1.0")
    out["diff"] = root / "diff.html"
    res = run_harness("diff", "--repo", repo, "-q", "--html", out["diff"], env=env)
    assert res.code == 0, res.stderr
    return out


def _fits(page: Any) -> list[str]:
    """Labels drawn outside their box (none, when fitting is exact)."""
    return page.evaluate(
        """() => {
        const bad = [];
        document.querySelectorAll("svg.harness-graph g.node").forEach(g => {
          const rect = g.querySelectorAll("rect");
          const box = rect[rect.length - 1].getBBox();
          g.querySelectorAll("text").forEach(t => {
            const b = t.getBBox();
            if (b.x < box.x || b.x + b.width > box.x + box.width + 0.5) bad.push(t.textContent);
          });
        });
        return bad;
      }"""
    )


@pytest.mark.slow
def test_big_repo_graph_fits_a_page(browser: Any, big: dict[str, Path], tmp_path: Path) -> None:
    svg = big["svg"].read_text()
    wrapper = tmp_path / "graph.html"
    wrapper.write_text(f"<!doctype html><html><body style='margin:0'>{svg}</body></html>")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(wrapper.as_uri())
    graph = page.locator("svg.harness-graph")
    box = graph.bounding_box()
    assert box is not None and box["width"] <= 1600 and box["height"] <= 1200  # a page
    assert page.locator("svg.harness-graph g.edge").count() <= 60  # not 1,500
    assert page.locator("svg.harness-graph g.node[data-members]").count() >= 10  # namespaces
    legend = page.locator("svg.harness-graph g.legend").text_content() or ""
    assert "dependsOn" in legend and "not drawn: 720 CRD-provider edges" in legend
    assert "240 Kustomizations boxed by namespace" in legend
    assert _fits(page) == []
    page.screenshot(path=str(tmp_path / "big-graph.png"), full_page=True)
    print(f"screenshot: {tmp_path / 'big-graph.png'}")
    page.close()


@pytest.mark.slow
def test_big_repo_lint_report_graph_is_legible(
    browser: Any, big: dict[str, Path], tmp_path: Path
) -> None:
    page = Page(browser, big["lint"])
    p = page.page
    graph = p.locator("#graph svg.harness-graph")
    width = float(graph.get_attribute("width") or 0)
    box = graph.bounding_box()
    assert box is not None and abs(box["width"] - width) < 1  # drawn at its size, not shrunk
    assert _fits(p) == []
    crd = p.locator('#graph g.edge[data-kind="crd"]')
    assert crd.count() > 0 and not crd.first.is_visible()  # CRD edges off past a size
    p.check('.edge-toggles input[data-kind="crd"]')
    assert crd.first.is_visible()
    assert (
        "240 Kustomizations: add dependsOn kube-prometheus-stack"
        in p.locator("#findings").inner_text()
    )  # one cause, one item
    page.shot(tmp_path / "big-lint.png", full=False)  # the first screen
    assert page.errors == [] and page.requests == []


@pytest.mark.slow
def test_big_repo_diff_shows_the_neighbourhood_and_expands(
    browser: Any, big: dict[str, Path], tmp_path: Path
) -> None:
    page = Page(browser, big["diff"])
    p = page.page
    assert "1 object changes in 1 cluster" in p.locator("#verdict-line").inner_text()
    change = p.locator("#changes > li").first
    assert "apps/Deployment/team-03/app-003" in change.inner_text()
    assert p.locator("#changes .hl-add").first.inner_text() == "1"  # 1.0.0 -> 1.1.0
    near = p.locator("#graph .graph-box g.node").count()
    assert 0 < near < 20  # the change's neighbourhood, not 250 boxes
    assert _fits(p) == []
    page.shot(tmp_path / "big-diff.png")
    p.click("#whole-graph")
    whole = p.locator("#graph .graph-box").last.locator("g.node")
    assert whole.count() > near
    assert _fits(p) == []
    page.shot(tmp_path / "big-diff-whole.png")
    assert page.errors == [] and page.requests == []
