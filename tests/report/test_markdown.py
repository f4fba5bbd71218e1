"""The PR comment on synthetic and hand-built diffs: verdict first, balanced, within budget."""

from __future__ import annotations

import dataclasses
import re

import pytest

from harness.compare import gate
from harness.compare.analyze import PreexistingError, analyze
from harness.core import documents
from harness.report import markdown as md
from harness.report import markdown_budget as mb
from tests.compare.test_analyze import cilium_split
from tests.diffkit import cm, secret, snapshot
from tests.report import mdcheck, synthetic

INFO = md.CommentInput("7 documents change in 3 targets", "HEAD~1", "working tree")
ID_RE = re.compile(r"apps/Deployment/apps/app-\d{5}")


def _comment(analysis, **kw):  # type: ignore[no-untyped-def]
    return md.comment(analysis, INFO, **kw)


SLOW = pytest.mark.slow  # 5000 documents: seconds each, the integration tier


def _ids(bodies: tuple[str, ...]) -> set[str]:
    return {m for body in bodies for m in ID_RE.findall(body)}


@pytest.mark.parametrize(
    ("changed", "targets"),
    [(1, 1), (50, 5), pytest.param(5000, 40, marks=SLOW), pytest.param(5000, 1, marks=SLOW)],
)
def test_sizes_fit_and_parse(changed: int, targets: int) -> None:
    analysis = synthetic.analysis(changed, targets=targets)
    fitted = _comment(analysis)
    (body,) = fitted.bodies
    parsed = mdcheck.check(body)
    assert body.startswith("### 7 documents change in 3 targets\n")
    assert parsed.tables == 1  # the summary table always fits
    assert "| paths | `apps/t0000` |" in body
    if changed <= 50:
        assert (fitted.degraded_entries, fitted.collapsed_sections) == (0, 0)
        assert len(parsed.fences) == 2 * changed  # fields + diff per document
        assert _ids(fitted.bodies) == {str(synthetic.doc_id(i)) for i in range(changed)}
    else:
        assert fitted.degraded_entries == changed
        assert "Some details were left out to fit the comment size limit" in body


def test_two_mib_document_is_truncated_with_a_note() -> None:
    big = synthetic.unified(0, lines=25000, width=40)
    assert len(big) > 2 * 1024 * 1024
    fitted = _comment(synthetic.analysis(1, diff=big))
    (body,) = fitted.bodies
    parsed = mdcheck.check(body)
    assert 20000 < mb.size(body) <= mb.DEFAULT_BUDGET
    assert len(parsed.fences) == 2
    assert re.search(r"_Diff truncated: \d+ more lines not shown\._", body)
    assert fitted.degraded_entries == 1


def test_two_mib_document_alongside_small_ones_keeps_the_small_diffs() -> None:
    analysis = synthetic.analysis(30, targets=3)
    big = synthetic.change(99999, diff=synthetic.unified(99999, lines=25000))
    first = analysis.targets[0]
    grown = type(first)(**{**first.__dict__, "changed": (big, *first.changed)})
    analysis = type(analysis)(analysis.base, analysis.head, (grown, *analysis.targets[1:]))
    (body,) = _comment(analysis).bodies
    mdcheck.check(body)
    assert body.count("```diff") == 31
    assert body.count("_Diff truncated:") == 1


@SLOW
def test_split_of_5000_lists_every_changed_document() -> None:
    analysis = synthetic.analysis(5000, targets=40)
    fitted = _comment(analysis, split=True)
    parts = len(fitted.bodies)
    assert 1 < parts <= mb.DEFAULT_MAX_PARTS
    for n, body in enumerate(fitted.bodies, start=1):
        mdcheck.check(body, part=(n, parts))
        assert len(body) <= 65536
    assert fitted.bodies[0].startswith("### 7 documents change in 3 targets")
    assert fitted.bodies[1].startswith(f"**harness** part 2/{parts}, continued: 7 documents")
    assert _ids(fitted.bodies) == {str(synthetic.doc_id(i)) for i in range(5000)}
    joined = "".join(fitted.bodies)
    for k in range(40):  # whole targets per part
        assert joined.count(f"<summary>apps/t{k:04d}: ") == 1


@SLOW
def test_split_of_one_huge_target_continues_it() -> None:
    fitted = _comment(synthetic.analysis(5000, targets=1), split=True)
    parts = len(fitted.bodies)
    for n, body in enumerate(fitted.bodies, start=1):
        mdcheck.check(body, part=(n, parts))
    assert _ids(fitted.bodies) == {str(synthetic.doc_id(i)) for i in range(5000)}
    assert "".join(fitted.bodies).count("<summary>apps/t0000 (continued)</summary>") == parts - 1


def test_small_budget_and_custom_marker() -> None:
    analysis = synthetic.analysis(50, targets=5)
    fitted = _comment(analysis, budget=4000, marker_id="infra/prod:diff")
    (body,) = fitted.bodies
    mdcheck.check(body, 4000, marker_id="infra/prod:diff")
    assert body.rstrip().endswith("<!-- infra/prod:diff -->")


def test_render_errors_lead_and_are_not_deletions() -> None:
    analysis = synthetic.analysis(2, errors=2)
    (body,) = _comment(analysis).bodies
    mdcheck.check(body)
    first_block = body.split("\n\n")[2]
    assert first_block.startswith("> [!CAUTION]\n> **2 render errors**")
    assert "`broken/0` (head): `kustomize: accumulating resources: missing-0.yaml`" in body


def test_cilium_split_headline_and_moves() -> None:
    base, head = cilium_split()
    analysis = analyze(base, head, unified=3)
    verdict = gate.judge(analysis)
    info = md.comment_input(analysis, verdict, "HEAD~1", "working tree", expect="pure-move")
    (body,) = md.comment(analysis, info).bodies
    mdcheck.check(body)
    lines = body.splitlines()
    assert lines[0] == (
        "### Pure ownership move: 2 documents platform -> cilium "
        "(byte-identical modulo owner labels), 0 changed, 0 added, 0 removed"
    )
    assert "**expected pure-move: holds**" in body
    assert "- `ConfigMap/kube-system/ns`: `platform` -> `platform/cilium`, byte-identical" in body
    assert (
        "- `ConfigMap/kube-system/ns`: dev: `flux-system/platform` -> `flux-system/cilium`, "
        "pure ownership (owner labels only)"
    ) in body
    assert "- platform: prune true -&gt; false" not in body
    assert "- platform: prune true -> false, dependsOn +cilium" in body


def test_changed_headline_names_counts_and_fields() -> None:
    base, head = cilium_split(value="2")
    analysis = analyze(base, head, unified=3)
    verdict = gate.judge(analysis)
    info = md.comment_input(analysis, verdict, "HEAD~1", "working tree", expect="pure-move")
    (body,) = md.comment(analysis, info).bodies
    mdcheck.check(body)
    assert body.startswith(
        "### 1 object changes in 1 cluster (3 targets): 1 changed, 0 added, 0 removed, "
        "1 moved with changes\n"
    )
    assert "**expected pure-move: FAILED**" in body
    assert "**What changes** (1)" in body  # one object, its change said once
    assert (
        "- `~ ConfigMap/kube-system/hr`: `data.k: v -> 2` in: `platform/cilium`; and in: "
        "`platform`, still rendered by platform/cilium (with changes); and in: dev: "
        "`flux-system/platform`, moved to flux-system/cilium (with changes)\n"
    ) in body
    assert "data.k: v -&gt; 2" not in body


def test_no_change_headline() -> None:
    base, _ = cilium_split()
    analysis = analyze(base, base)
    verdict = gate.judge(analysis)
    info = md.comment_input(analysis, verdict, "a", "b")
    (body,) = md.comment(analysis, info).bodies
    mdcheck.check(body)
    assert body.startswith("### No change: 5 targets, 10 documents unchanged\n")
    assert "<details>" not in body


def test_secret_values_never_reach_the_comment() -> None:
    base = snapshot({"app": [secret("db", password="hunter2"), cm("c", k="1")]})
    head = snapshot({"app": [secret("db", password="correct-horse"), cm("c", k="2")]})
    analysis = analyze(base, head, unified=3)
    verdict = gate.judge(analysis)
    (body,) = md.comment(analysis, md.comment_input(analysis, verdict, "a", "b")).bodies
    mdcheck.check(body)
    assert "hunter2" not in body and "correct-horse" not in body
    assert documents.REDACTED_PREFIX not in body
    assert "*** (before)" in body and "*** (after)" in body


def test_backticks_and_html_in_values_stay_inside_their_blocks() -> None:
    base = snapshot({"app": [cm("c", k="```\n</details>\n<details>")]})
    head = snapshot({"app": [cm("c", k="`x` </details> | <b>")]})
    analysis = analyze(base, head, unified=3)
    verdict = gate.judge(analysis)
    (body,) = md.comment(analysis, md.comment_input(analysis, verdict, "a", "b")).bodies
    parsed = mdcheck.check(body)
    assert parsed.details == 1


def test_a_long_value_is_shortened_with_a_mark_and_whole_in_the_details() -> None:
    """The bullet shortens a long value with `…(+N chars)`, keeps a digest whole, and the
    details below hold the value whole."""
    digest = "sha256:" + "a1b2c3d4" * 8
    long_before = "x" * 400
    base = snapshot({"app": [cm("c", img=f"ghcr.io/a/b@{digest}", blob=long_before)]})
    head = snapshot(
        {"app": [cm("c", img=f"ghcr.io/a/b@sha256:{'f' * 64}", blob=long_before + "y")]}
    )
    analysis = analyze(base, head, unified=3)
    verdict = gate.judge(analysis)
    (body,) = md.comment(analysis, md.comment_input(analysis, verdict, "a", "b")).bodies
    mdcheck.check(body)
    bullet = next(ln for ln in body.splitlines() if ln.startswith("- `~ ConfigMap/default/c`"))
    assert "…(+" in bullet and long_before not in bullet
    assert digest in bullet and f"sha256:{'f' * 64}" in bullet  # whole, not cut inside
    details = body[body.index("<details>") :]
    assert f"data.blob: {long_before} -> {long_before}y" in details


def test_what_was_not_judged_is_one_box() -> None:
    """Blind spots (a changed file no target reads, a chart not fetched) and what was there
    before the change (a pre-existing render error) are all 'not judged': one box says
    them, never two boxes with the same title."""
    analysis = dataclasses.replace(
        synthetic.analysis(1),
        preexisting=(PreexistingError("broken/old", "kustomize: missing.yaml"),),
    )
    info = dataclasses.replace(
        INFO, not_judged=("not judged: 1 changed file not covered by any rendered target",)
    )
    (body,) = md.comment(analysis, info).bodies
    mdcheck.check(body)
    head = body.split("**Details**")[0]
    assert head.count("**Not judged**") == 1, head
    box = head[head.index("> [!WARNING]\n> **Not judged**") :].split("\n\n")[0]
    assert "> - 1 changed file not covered by any rendered target\n" in box
    assert "> - 1 pre-existing render error (not caused or touched by this change" in box
    # alone, the pre-existing facts keep their one-line form
    (alone,) = md.comment(analysis, INFO).bodies
    assert "> [!WARNING]\n> **Not judged**: 1 pre-existing render error (" in alone


def test_image_changes_come_first_and_shrink_with_the_comment() -> None:
    """Every image change in a full comment, 10 then 3 as it shrinks, each bullet whole."""
    from tests.compare.test_images import deploy

    names = [f"app{i:02d}" for i in range(12)]
    base = snapshot({"c/flux-system/apps": [deploy(n, f"ghcr.io/o/{n}:1.0") for n in names]})
    head = snapshot({"c/flux-system/apps": [deploy(n, f"ghcr.io/o/{n}:1.1") for n in names]})
    analysis = analyze(base, head)
    verdict = gate.judge(analysis)
    info = md.comment_input(analysis, verdict, "HEAD", "working tree")
    assert info.images[0] == (
        "- `ghcr.io/o/app00`: `1.0` -> `1.1` (apps/Deployment/apps/app00 in c)"
    )
    full, short, minimal = md.head_variants(analysis, info)
    for body, shown in ((full, 12), (short, 10), (minimal, 3)):
        block = body.split("**Images** (12)\n\n")[1].split("\n\n")[0].splitlines()
        assert len([line for line in block if "`ghcr.io/o/" in line]) == shown
    assert short.split("**Images** (12)\n\n")[1].splitlines()[10] == "- ... and 2 more"
    assert full.index("**Images**") < full.index("**What changes**")  # first of the blocks
