"""Shortening values for one-line summaries, never silently and never inside a hash.

A reviewer comparing image digests must not be shown part of one as if it were all of it: a
shortened value always ends in `…` (with how much is left out), and a digest, a commit sha or
any long hex run is kept whole or left out whole. The full value is one click away: the
comment's details, the HTML report's expanded document, or `--output json`.
"""

from __future__ import annotations

import difflib
import re

from harness.compare.docdiff import FieldChange, show_change, show_pair

ELLIPSIS = "…"
# Tokens a cut must not split: `sha256:<hex>`, `@sha256:<hex>`, and hex runs of 12 or more
# (short shas, git commits, content hashes).
_ATOMIC = re.compile(r"(?:[a-z0-9]+:)?[0-9a-fA-F]{12,}")


def shorten(text: str, limit: int) -> str:
    """`text` within about `limit` characters: cut at a word or token boundary, never inside
    a hash, with `…(+N chars)` saying what is missing; unchanged when it fits."""
    if len(text) <= limit:
        return text
    cut = limit
    for m in _ATOMIC.finditer(text):
        if m.start() < cut < m.end():
            # keep the whole hash when it ends soon after the limit, else stop before it
            cut = m.end() if m.end() - limit <= 72 else m.start()
            break
    if cut == limit:  # prefer a boundary a little earlier than the raw limit
        space = max(text.rfind(" ", 0, cut), text.rfind(",", 0, cut))
        if space > limit * 2 // 3:
            cut = space
    if cut >= len(text):
        return text
    return f"{text[:cut].rstrip()}{ELLIPSIS}(+{len(text) - cut} chars)"


def short_change(change: FieldChange, limit: int = 120) -> str:
    """`path: before -> after` with each value shortened to `limit` (see `shorten`); a
    multi-line string by its first changed line: `path: cpu: 20m -> cpu: 25m (line 3 of 5)`."""
    if change.op == "reordered":
        return shorten(show_change(change), 2 * limit)
    old, new = change.before, change.after
    if (
        change.op == "changed"
        and isinstance(old, str)
        and isinstance(new, str)
        and ("\n" in old or "\n" in new)
    ):
        return f"{change.path}: {_first_changed_line(old, new, limit)}"
    before, after = show_pair(change)
    return f"{change.path}: {shorten(before, limit)} -> {shorten(after, limit)}"


def _first_changed_line(old: str, new: str, limit: int) -> str:
    a, b = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not changed:
        return "whitespace changed (multi-line)"
    _tag, i1, i2, j1, j2 = changed[0]
    before = a[i1].strip() if i1 < i2 else "(absent)"
    after = b[j1].strip() if j1 < j2 else "(absent)"
    lines = sum(max(i2_ - i1_, j2_ - j1_) for _t, i1_, i2_, j1_, j2_ in changed)
    where = f"line {j1 + 1} of {len(b)}"
    more = f"; {lines - 1} more changed line{'s' if lines > 2 else ''}" if lines > 1 else ""
    return f"{shorten(before, limit)} -> {shorten(after, limit)} ({where}{more})"


def short_fields(fields: tuple[FieldChange, ...] | list[FieldChange], shown: int = 3) -> str:
    """`a: 1 -> 2; b: x -> y; +2 more fields`, each value shortened."""
    parts = [short_change(f) for f in fields[:shown]]
    if len(fields) > shown:
        more = len(fields) - shown
        parts.append(f"+{more} more field{'' if more == 1 else 's'}")
    return "; ".join(parts)
