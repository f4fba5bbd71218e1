"""`harness graph` end to end on examples/homelab: every format, the Cilium split against a
base, and each bad input as one error line with exit 2."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli.commands import graph as cmd
from harness.cli.context import Common
from harness.graph.view import Graph
from tests.conftest import EXAMPLE, Result
from tests.gitkit import commit_all, state
from tests.homelab import split_cilium

Cli = Callable[..., Result]


@pytest.fixture(scope="module")
def example_graph() -> Graph:
    """The example's graph with its lint hazards, rendered once for the format tests."""
    graph, failed = cmd.compute(Common(repo=EXAMPLE, quiet=True), cmd.GraphOptions())
    assert not failed
    return graph


@pytest.mark.slow
def test_the_cli_writes_the_file(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "sub" / "graph.mmd"
    res = cli("graph", "--repo", EXAMPLE, "-q", "--out", out)
    assert res.code == 0, res.stderr
    assert res.stdout == "" and out.read_text().startswith("flowchart LR\n")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["mermaid", "dot", "json", "svg"])
def test_every_format_on_the_example(example_graph: Graph, fmt: str) -> None:
    text = cmd.format_graph(example_graph, fmt)
    if fmt == "mermaid":
        assert text.startswith("flowchart LR\n") and 'subgraph c1["prod"]' in text
    elif fmt == "dot":
        assert '"dev/flux-system/platform" -> "dev/flux-system/platform-config"' in text
    elif fmt == "json":
        data = json.loads(text)
        assert [c["name"] for c in data["clusters"]] == ["dev", "prod"]
        kinds = {e["kind"] for c in data["clusters"] for e in c["edges"]}
        assert kinds == {"dependsOn", "substituteFrom", "crd"}
    else:
        root = ET.fromstring(text)
        assert root.tag.endswith("svg")
        builtin = ET.fromstring(cmd.format_graph(example_graph, fmt, layout="builtin"))
        assert len(builtin.findall(".//{http://www.w3.org/2000/svg}g[@class='node']")) == 22


@pytest.mark.slow
def test_base_marks_the_cilium_split_and_its_hazard_edge(homelab: Path, cli: Cli) -> None:
    root = homelab.parent.parent
    commit_all(root, "base")
    split_cilium(homelab)
    before = state(root)
    res = cli(
        "graph", "--repo", homelab, "-q", "--base", "HEAD", "--format", "json",
        "--focus", "changed", "--depth", "0", "--cluster", "dev",
    )  # fmt: skip
    assert res.code == 0, res.stderr
    assert state(root) == before
    data = json.loads(res.stdout)
    (dev,) = data["clusters"]
    nodes = {n["name"]: n for n in dev["nodes"]}
    assert nodes["cilium"]["marks"] == ["added", "moved-into"]
    assert nodes["platform"]["marks"] == ["changed", "moved-out-of"]
    move = next(e for e in dev["edges"] if e["kind"] == "move")
    assert move["from"] == "dev/flux-system/platform" and move["to"] == "dev/flux-system/cilium"
    assert "error" in {h["severity"] for h in move["hazards"]}
    assert data["hidden_nodes"] > 0 and data["focus"] == ["changed"]
    mermaid = cli("graph", "--repo", homelab, "-q", "--base", "HEAD", "--focus", "cilium")
    assert mermaid.code == 0 and "moved 3" in mermaid.stdout and "#cf222e" in mermaid.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--focus", "nope"), "--focus nope: no such Kustomization"),
        (("--cluster", "qa"), "--cluster qa: no such cluster (known: dev, prod)"),
        (("--base", "no-such-ref"), "no-such-ref"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    homelab: Path, cli: Cli, args: tuple[str, ...], message: str
) -> None:
    commit_all(homelab.parent.parent, "base")
    res = cli("graph", "--repo", homelab, "-q", "--no-hazards", *args)
    assert res.code == 2
    assert message in res.stderr and res.stderr.startswith("error: ")
    assert len(res.stderr.strip().splitlines()) == 1


def test_graphviz_layout_without_graphviz_fails_before_rendering(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    res = cli("graph", "--repo", EXAMPLE, "--format", "svg", "--layout", "graphviz")
    assert res.code == 2 and "needs Graphviz's `dot`" in res.stderr


def test_render_error_still_draws_and_exits_2(homelab: Path, cli: Cli) -> None:
    (homelab / "platform/homepage/kustomization.yaml").write_text("resources:\n  - missing.yaml\n")
    res = cli("graph", "--repo", homelab, "-q", "--no-hazards", "--format", "json")
    assert res.code == 2
    nodes = {n["id"]: n for c in json.loads(res.stdout)["clusters"] for n in c["nodes"]}
    assert nodes["dev/flux-system/homepage"]["error"]
    assert "failed to render" in res.stderr


def test_unwritable_out_is_one_line(cli: Cli, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = cli("graph", "--repo", EXAMPLE, "-q", "--no-hazards", "--out", blocker / "g.mmd")
    assert res.code == 2 and res.stderr.startswith(f"error: {blocker / 'g.mmd'}: cannot write")


@pytest.mark.slow
def test_svg_without_graphviz_says_so_and_draws_itself(
    cli: Cli, example_graph: Graph, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cmd, "compute", lambda common, options: (example_graph, False))
    monkeypatch.setenv("PATH", str(tmp_path))
    res = cli("graph", "--repo", EXAMPLE, "--format", "svg")
    assert res.code == 0
    assert "Graphviz's `dot` is not installed" in res.stderr and "built-in layout" in res.stderr
    assert ET.fromstring(res.stdout).tag.endswith("svg")
