"""Mermaid, DOT, JSON and the built-in SVG draw the same graph; hostile names stay inert."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from harness.core.errors import HarnessError
from harness.graph import dot, json_doc, mermaid
from harness.graph import svg as graph_svg
from harness.graph import view as graph
from harness.hazards.finding import Finding
from tests.diffkit import cilium_split

SVG_NS = "{http://www.w3.org/2000/svg}"


def _graph() -> graph.Graph:
    base, head = cilium_split()
    finding = Finding(
        id="prune-delete:dev:platform:Namespace/kube-system",
        rule="prune-delete",
        severity="error",
        cluster="dev",
        kustomizations=("platform",),
        documents=("ConfigMap/kube-system/ns",),
        message='deletes <kube-system> "now"',
    )
    return graph.with_hazards(graph.compare(base, head), [finding])


def test_mermaid_defines_every_node_styles_every_edge_and_marks_the_hazard_edge() -> None:
    text = mermaid.render(_graph())
    assert text.startswith("flowchart LR\n")
    defined = set(re.findall(r"^    (n\d+)[\[(]", text, re.M))
    used = re.findall(r"^  (n\d+) \S+ (n\d+)$", re.sub(r"\|\"[^\"]*\"\|", "", text), re.M)
    assert used and all(a in defined and b in defined for a, b in used)
    assert len(re.findall(r"^  linkStyle \d+ ", text, re.M)) == len(used)
    move = next(line for line in text.splitlines() if "moved 2" in line)
    assert '"! prune-delete moved 2"' in move and "-.->" in move
    index = [line for line in text.splitlines() if re.match(r"  n\d+ ", line)].index(move)
    assert f"linkStyle {index} stroke:#cf222e,stroke-width:3px" in text
    assert "cilium<br/>2 docs, added, moved-into +2" in text


def test_mermaid_escapes_captions() -> None:
    g = graph.Graph(
        (graph.ClusterView('a"b<c>|d', (graph.Node('a"b<c>|d', "ns", 'x"|<y>&`'),), ()),)
    )
    text = mermaid.render(g)
    assert '"' not in text.split("[", 1)[1].split("]")[0].strip('"')
    assert "#quot;" in text and "#lt;" in text and "#124;" in text and "#96;" in text


def test_dot_quotes_names_and_renders_with_graphviz_when_installed() -> None:
    text = dot.render(_graph())
    assert text.startswith("digraph harness {") and text.rstrip().endswith("}")
    assert '"dev/flux-system/platform" -> "dev/flux-system/cilium"' in text
    assert 'color="#cf222e"' in text and 'style="dotted"' in text
    assert '\\"now\\"' in text
    if shutil.which("dot") is None:
        pytest.skip("graphviz not installed")
    svg = dot.to_svg(text)
    assert "<svg" in svg and "cilium" in svg


def test_svg_without_graphviz_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert not dot.dot_available()
    with pytest.raises(HarnessError, match="needs Graphviz's `dot`"):
        dot.to_svg("digraph {}")


def test_graphviz_failure_names_the_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("dot") is None:
        pytest.skip("graphviz not installed")
    with pytest.raises(HarnessError, match="graphviz: dot exited"):
        dot.to_svg("digraph { this is not dot")
    assert subprocess.run(["dot", "-V"], capture_output=True, check=False).returncode == 0


def test_builtin_svg_is_well_formed_and_draws_every_node_and_edge() -> None:
    g = _graph()
    svg = graph_svg.render(g)
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG_NS}svg"
    nodes = root.findall(f".//{SVG_NS}g[@class='node']")
    edges = root.findall(f".//{SVG_NS}g[@class='edge']")
    assert len(nodes) == sum(1 for _ in g.nodes())
    assert len(edges) == sum(1 for _ in g.edges())
    hazard = [e for e in edges if e.get("data-hazard") == "1"]
    assert len(hazard) == 1 and hazard[0].get("data-kind") == "move"
    assert "&lt;kube-system&gt;" in svg  # tooltip text escaped
    empty = ET.fromstring(graph_svg.render(graph.Graph(())))
    assert "no Flux Kustomizations" in "".join(empty.itertext())


def test_builtin_svg_survives_cycles() -> None:
    a, b = ("flux-system", "a"), ("flux-system", "b")
    view = graph.ClusterView(
        "dev",
        (graph.Node("dev", *a), graph.Node("dev", *b)),
        (graph.Edge("dev", a, b, "dependsOn"), graph.Edge("dev", b, a, "dependsOn")),
    )
    root = ET.fromstring(graph_svg.render(graph.Graph((view,))))
    assert len(root.findall(f".//{SVG_NS}path")) >= 2


def test_json_is_versioned_and_complete() -> None:
    data = json.loads(json_doc.render(_graph()))
    assert data["schema"] == "harness.graph/v1"
    assert data["base"] == "HEAD~1" and data["head"] == "working tree"
    (cluster,) = data["clusters"]
    cilium = next(n for n in cluster["nodes"] if n["name"] == "cilium")
    assert cilium["marks"] == ["added", "moved-into"] and cilium["moved_in"] == 2
    move = next(e for e in cluster["edges"] if e["kind"] == "move")
    assert move["from"] == "dev/flux-system/platform" and move["to"] == "dev/flux-system/cilium"
    assert move["hazards"][0]["rule"] == "prune-delete"
    assert data["counts"]["hazard_edges"] == 1


@pytest.mark.parametrize("length", [14, 19, 24, 29, 38, 44])
def test_builtin_svg_fits_labels_exactly(length: int) -> None:
    """A label as long as the widest box allows is drawn whole (no clip one character
    early), in a box exactly its width in monospace characters; longer ones end in `…`."""
    name = "k" * length
    assert graph_svg._clip(name, graph_svg.box_chars([name])) == name
    longer = "k" * (graph_svg.MAX_CHARS + 5)
    clipped = graph_svg._clip(longer, graph_svg.box_chars([longer]))
    assert len(clipped) == graph_svg.MAX_CHARS and clipped.endswith("…")
    node = graph.Node("dev", "flux-system", name, documents=3)
    renamed = graph.Graph((graph.ClusterView("dev", (node,), ()),))
    svg = graph_svg.render(renamed)
    assert f">{name}</text>" in svg
    width = re.search(rf'textLength="([\d.]+)"[^>]*>{name}</text>', svg)
    assert width and float(width.group(1)) == pytest.approx(length * graph_svg.CHAR_W, abs=0.1)


def test_builtin_svg_legend_names_the_edges_drawn_and_left_out() -> None:
    g = graph.only_edges(_graph(), ["dependsOn"])
    svg = graph_svg.render(g)
    legend = ET.fromstring(svg).find("{http://www.w3.org/2000/svg}g")
    assert legend is not None and legend.get("class") == "legend"
    text = "".join(legend.itertext())
    assert "dependsOn: dependency -> dependent" in text and "documents moved" not in text
    assert "not drawn: 1 move edges (--edges to choose)" in text
    assert "legend" not in graph_svg.render(g, legend=False)
