"""The comment's neighbourhood picture: shown when it costs nothing, dropped before anything."""

from __future__ import annotations

from harness.compare import gate
from harness.compare.analyze import analyze
from harness.hazards.engine import HazardReport
from harness.hazards.finding import Finding
from harness.report import comment_graph, markdown
from harness.report import markdown_budget as mb
from tests.diffkit import cilium_split
from tests.report import mdcheck

HAZARDS = HazardReport(
    findings=(
        Finding(
            id="prune-delete:dev:platform:ConfigMap/kube-system/ns",
            rule="prune-delete",
            severity="error",
            cluster="dev",
            kustomizations=("platform",),
            documents=("ConfigMap/kube-system/ns",),
            message="platform prunes ConfigMap/kube-system/ns",
        ),
    )
)


def _fit(budget: int, hazards: HazardReport | None = HAZARDS) -> tuple[mb.Fitted, mb.Fitted]:
    base, head = cilium_split(value="changed")
    analysis = analyze(base, head, unified=3)
    info = markdown.comment_input(
        analysis, gate.judge(analysis), "HEAD~1", "working tree", hazards=hazards
    )
    plain = markdown.comment(analysis, info, budget=budget)
    return comment_graph.comment(analysis, info, hazards, budget=budget), plain


def test_picture_is_collapsed_mermaid_with_the_hazard_edge_before_the_details() -> None:
    fitted, plain = _fit(mb.DEFAULT_BUDGET)
    (body,) = fitted.bodies
    mdcheck.check(body)
    block = body[body.index("<details>") : body.index("</details>")]
    assert "<summary>Kustomization graph: 3 touched by this change" in block
    assert "```mermaid\nflowchart LR\n" in block
    assert '"! prune-delete moved 2"' in block and "stroke:#cf222e" in block
    assert body.index("Kustomization graph") < body.index("**Details**")
    assert body.replace(block + "</details>\n\n", "") == plain.bodies[0]


def test_picture_goes_first_when_the_budget_is_tight() -> None:
    full, _ = _fit(mb.DEFAULT_BUDGET)
    plain_size = mb.size(_fit(mb.DEFAULT_BUDGET)[1].bodies[0])
    budget = (plain_size + mb.size(full.bodies[0])) // 2  # room for everything but the picture
    fitted, plain = _fit(budget)
    assert "Kustomization graph" not in fitted.bodies[0]
    assert fitted == plain
    assert not (plain.degraded_entries or plain.collapsed_sections or plain.omitted_sections)


def test_no_picture_without_a_flux_change() -> None:
    base, _head = cilium_split()
    analysis = analyze(base, base)
    assert comment_graph.neighbourhood(analysis, None) is None
    assert comment_graph.picture(None) == ""
