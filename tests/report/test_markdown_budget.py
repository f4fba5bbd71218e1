"""The budget engine: whole renderings only, largest first, never over budget, split by part."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.report import markdown_budget as mb
from tests.report import mdcheck


def section(name: str, entries: int, body: int = 50, cont: bool = True) -> mb.Section:
    items = tuple(
        mb.Entry(
            (
                f"\n**`{name}-{i}`**\n\n" + mb.fence("+x\n" * body, "diff") + "\n",
                f"\n**`{name}-{i}`**\n\n_diff omitted_\n\n",
                f"- `{name}-{i}`\n",
            )
        )
        for i in range(entries)
    )
    return mb.Section(
        key=name,
        open=mb.details_open(f"{name}: {entries} changed"),
        entries=(*items, mb.Entry(("\n",))),
        close=mb.DETAILS_CLOSE,
        collapsed=f"- `{name}`: {entries} changed\n\n",
        open_continued=mb.details_open(f"{name} (continued)") if cont else "",
    )


def layout(*sections: mb.Section, head: tuple[str, ...] = ("### verdict\n\n",)) -> mb.Layout:
    return mb.Layout(head=head, sections=sections)


def test_fence_outgrows_backticks_inside() -> None:
    body = "a ``` b\n````\nc\n"
    block = mb.fence(body, "diff")
    assert block.startswith("`````diff\n")
    tokens = mdcheck.PARSER.parse(block + "after\n")
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content == body


def test_code_span_survives_backticks_and_pipes() -> None:
    span = mb.code("a`b|c")
    assert span == "``a`b\\|c``"
    table = f"| x |\n| --- |\n| {span} |\n"
    tokens = mdcheck.PARSER.parse(table)
    assert [t.type for t in tokens].count("td_open") == 1


def test_escape_text_keeps_structure_out() -> None:
    text = mb.escape_text("<details> *x* | #1")
    tokens = mdcheck.PARSER.parse(text)
    assert all(t.type != "html_block" for t in tokens)
    assert "&lt;details" in text and "\\*x\\*" in text and "\\|" in text


def test_marker_round_trip_and_validation() -> None:
    assert mb.marker() == "<!-- harness:comment -->"
    assert mb.find_marker("x\n<!-- harness:comment -->\n") == ("harness:comment", 1, 1)
    assert mb.find_marker(mb.marker("team/prod:x", 2, 3)) == ("team/prod:x", 2, 3)
    assert mb.find_marker("no marker") is None
    for bad in ("", "a--b", "a>b", "a b", "-x"):
        assert not mb.valid_marker_id(bad)
        with pytest.raises(ValueError):
            mb.marker(bad)


def test_truncate_lines_counts_what_it_drops() -> None:
    text, omitted = mb.truncate_lines("1\n2\n3\n" + "x" * 500 + "\n", 4, max_line=10)
    assert omitted == 0 and text.endswith("x" * 10 + " [... line cut]\n")
    text, omitted = mb.truncate_lines("1\n2\n3\n", 2)
    assert (text, omitted) == ("1\n2\n", 1)


def test_small_comment_is_untouched() -> None:
    fitted = mb.fit(layout(section("a", 2)))
    (body,) = fitted.bodies
    assert (fitted.degraded_entries, fitted.collapsed_sections, fitted.omitted_sections) == (
        0,
        0,
        0,
    )
    parsed = mdcheck.check(body)
    assert parsed.details == 1 and len(parsed.fences) == 2
    assert body.startswith("### verdict\n")
    assert body.endswith("\n<!-- harness:comment -->\n")


def test_largest_entry_degrades_first() -> None:
    big = section("big", 1, body=30000)
    small = section("small", 20, body=20)
    fitted = mb.fit(layout(big, small), budget=20000)
    (body,) = fitted.bodies
    mdcheck.check(body, 20000)
    assert fitted.degraded_entries == 1
    assert body.count("```diff") == 20  # every small diff kept in full
    assert "`big-0`**\n\n_diff omitted_" in body


def test_collapse_then_partial_then_drop() -> None:
    sections = [section(f"t{k}", 30, body=40) for k in range(10)]
    fitted = mb.fit(layout(*sections), budget=2000)
    (body,) = fitted.bodies
    parsed = mdcheck.check(body, 2000)
    assert fitted.degraded_entries == 300
    assert fitted.collapsed_sections >= 1 and fitted.partial_sections == 1
    assert fitted.omitted_sections == 0
    assert "- `t9`: 30 changed" in body  # the last sections collapse to counts first
    assert "- `t0-29`" in body  # the first keep every id
    assert parsed.details == 10 - fitted.collapsed_sections
    assert "more not shown: the comment size limit" in body


def test_omitted_note_when_even_counts_do_not_fit() -> None:
    sections = [section(f"target-{k:04d}", 1) for k in range(400)]
    fitted = mb.fit(layout(*sections), budget=2000)
    (body,) = fitted.bodies
    mdcheck.check(body, 2000)
    assert fitted.omitted_sections > 0
    assert f"and {fitted.omitted_sections} more targets not shown" in body


def test_head_degrades_when_it_alone_is_too_big() -> None:
    big_head = "### verdict\n\n" + "| a |\n| --- |\n" + "| row |\n" * 2000 + "\n"
    fitted = mb.fit(layout(section("a", 1), head=(big_head, "### verdict\n\n")), budget=4000)
    (body,) = fitted.bodies
    mdcheck.check(body, 4000)
    assert "| row |" not in body


def test_last_resort_keeps_first_line_and_marker() -> None:
    huge = "### " + "verdict " * 400 + "\n\n" + "x" * 5000
    (body,) = mb.fit(layout(head=(huge,)), budget=mb.MIN_BUDGET).bodies
    assert mb.size(body) <= mb.MIN_BUDGET
    assert body.startswith("\\#\\#\\# verdict verdict")
    assert body.endswith("<!-- harness:comment -->\n")


def test_budget_below_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="minimum"):
        mb.fit(layout(), budget=100)
    with pytest.raises(ValueError, match="minimum"):
        mb.split(layout(), budget=100)


def test_split_single_part_is_plain_comment() -> None:
    fitted = mb.split(layout(section("a", 3)))
    assert len(fitted.bodies) == 1
    mdcheck.check(fitted.bodies[0])
    assert "part=" not in fitted.bodies[0]


def test_split_packs_whole_sections_and_lists_everything() -> None:
    sections = [section(f"t{k}", 20, body=30) for k in range(12)]
    budget = 8000
    fitted = mb.split(layout(*sections), budget=budget, max_parts=30)
    parts = len(fitted.bodies)
    assert parts > 1
    for n, body in enumerate(fitted.bodies, start=1):
        mdcheck.check(body, budget, part=(n, parts))
        assert f"<!-- harness:comment part={n}/{parts} -->" in body
        if n > 1:
            assert body.startswith(f"**harness**: part {n}/{parts} (continued)")
    joined = "".join(fitted.bodies)
    for k in range(12):
        for i in range(20):
            assert f"`t{k}-{i}`" in joined
        # whole targets per part: each target's <details> opens exactly once
        assert joined.count(f"<summary>t{k}: 20 changed</summary>") == 1
    assert "(continued)</summary>" not in joined


def test_split_cuts_an_oversized_section_between_entries() -> None:
    budget = 3000
    fitted = mb.split(layout(section("huge", 800, body=5)), budget=budget, max_parts=3)
    parts = len(fitted.bodies)
    assert parts > 3  # ids win over the part cap
    for n, body in enumerate(fitted.bodies, start=1):
        mdcheck.check(body, budget, part=(n, parts))
    joined = "".join(fitted.bodies)
    assert all(f"`huge-{i}`" in joined for i in range(800))
    assert joined.count("<summary>huge (continued)</summary>") == parts - 1


def test_split_respects_max_parts_by_degrading() -> None:
    sections = [section(f"t{k}", 10, body=200) for k in range(10)]
    fitted = mb.split(layout(*sections), budget=20000, max_parts=3)
    assert len(fitted.bodies) <= 3
    assert fitted.degraded_entries > 0
    for n, body in enumerate(fitted.bodies, start=1):
        mdcheck.check(body, 20000, part=(n, len(fitted.bodies)))


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.lists(st.integers(0, 400), max_size=12), max_size=12),
    budget=st.integers(mb.MIN_BUDGET, 12000),
    do_split=st.booleans(),
)
def test_any_shape_fits_and_stays_balanced(
    sizes: list[list[int]], budget: int, do_split: bool
) -> None:
    sections = [
        mb.Section(
            key=f"s{k}",
            open=mb.details_open(f"s{k}"),
            entries=(
                *(
                    mb.Entry((f"\n**e{k}-{i}**\n\n" + mb.fence("y\n" * n) + "\n", f"- e{k}-{i}\n"))
                    for i, n in enumerate(row)
                ),
                mb.Entry(("\n",)),
            ),
            close=mb.DETAILS_CLOSE,
            collapsed=f"- s{k}: {len(row)}\n\n",
            open_continued=mb.details_open(f"s{k} (continued)"),
        )
        for k, row in enumerate(sizes)
    ]
    spec = layout(*sections)
    fitted = mb.split(spec, budget, max_parts=4) if do_split else mb.fit(spec, budget)
    for n, body in enumerate(fitted.bodies, start=1):
        part = (n, len(fitted.bodies)) if len(fitted.bodies) > 1 else None
        mdcheck.check(body, budget, part=part)
    if do_split:
        joined = "".join(fitted.bodies)
        for k, row in enumerate(sizes):
            for i in range(len(row)):
                assert f"e{k}-{i}" in joined
