"""Structural checks of a produced comment with a real CommonMark parser (markdown-it-py).

GitHub renders GFM; markdown-it with tables enabled is close enough for what matters here:
whether fences close, whether `<details>` blocks balance, and whether an HTML block swallowed
Markdown that was meant to render (a missing blank line after `</details>` does that).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

from harness.report import markdown_budget as mb

_HTML_LINE = re.compile(r"^(<details( open)?>|<summary>[^<]*</summary>|</details>|<!-- [^>]* -->)$")
PARSER = MarkdownIt("commonmark").enable("table")


@dataclass(frozen=True)
class Parsed:
    tokens: list[Token]
    fences: list[Token]
    details: int
    tables: int


def check(
    body: str,
    budget: int = mb.DEFAULT_BUDGET,
    marker_id: str = mb.DEFAULT_MARKER_ID,
    part: tuple[int, int] | None = None,
) -> Parsed:
    """Assert the invariants every comment body must hold; return what was parsed."""
    assert mb.size(body) <= budget, f"body is {mb.size(body)} bytes, budget {budget}"
    tokens = PARSER.parse(body)
    lines = body.splitlines()
    fences = [t for t in tokens if t.type == "fence"]
    for tok in fences:
        assert tok.map is not None
        start, end = tok.map
        closing = lines[end - 1].strip() if end - 1 > start else ""
        assert closing and set(closing) == {tok.markup[0]} and len(closing) >= len(tok.markup), (
            f"fence opened on line {start + 1} is not closed"
        )
    depth = opened = 0
    html_chunks = [t.content for t in tokens if t.type == "html_block"]
    for t in tokens:
        if t.type == "inline" and t.children:
            html_chunks.extend(c.content for c in t.children if c.type == "html_inline")
    for tok in (t for t in tokens if t.type == "html_block"):
        for line in tok.content.strip().splitlines():
            assert _HTML_LINE.match(line.strip()), f"HTML block swallowed text: {line[:120]!r}"
            if line.startswith("<details"):
                depth += 1
                opened += 1
            elif line.startswith("</details>"):
                depth -= 1
            assert depth >= 0, "</details> without <details>"
    assert depth == 0, f"{depth} <details> left open"
    summaries = sum(c.count("<summary>") for c in html_chunks)
    assert summaries == opened, "every <details> needs its <summary>"
    found = mb.find_marker(lines[-1] if lines else "")
    assert found is not None, "the marker must be the last line"
    assert found[0] == marker_id
    if part is not None:
        assert found[1:] == part
    assert lines[0].strip(), "the first line must be the verdict or part header"
    return Parsed(tokens, fences, opened, sum(1 for t in tokens if t.type == "table_open"))


def text_of(body: str) -> str:
    """Everything a reader sees, code included (for 'is this id listed' assertions)."""
    return "".join(t.content for t in PARSER.parse(body) if t.content)
