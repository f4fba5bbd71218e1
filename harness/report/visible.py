"""Control characters shown, never obeyed: every text output goes through `visible`.

A target name is a directory name and a value is whatever a manifest holds: either can
carry ESC (colour, cursor, hyperlink and title sequences a terminal or CI log obeys), BEL,
a bidi override that reorders what a reviewer reads, or a line break that starts what a CI
log reads as a workflow command. The same pass is where text meets the run's Secret scrub
(core/redaction.py `known()`): any Secret value the run knows, whatever route carried it into
the text, leaves as its marker. Standard library only (and core), so the Markdown and
workflow-command writers use it without loading rich.
"""

from __future__ import annotations

import re

from harness.core import redaction

# C0 and C1 control characters but tab: a terminal obeys them (ESC starts colour, cursor and
# hyperlink sequences, a newline starts what a CI log reads as a workflow command)
# and the invisible format characters that reorder or hide what a reader sees: bidi
# embeddings, overrides and isolates (U+202A-202E, U+2066-2069, U+061C), zero-width
# characters and marks (U+200B-200F, U+2060-2064, U+FEFF, U+180E), soft hyphen, and the
# line/paragraph separators (U+2028/2029) some viewers break lines on
_INVISIBLE = "\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_CONTROL = re.compile(f"[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f{_INVISIBLE}]")
_CONTROL_BUT_NEWLINE = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_INVISIBLE}]")


def visible(text: str, *, newlines: bool = False) -> str:
    """`text` with each Secret value the run knows as its marker (core/redaction.py's
    scrub) and each control character shown as its escape (`\\x1b`, `\\n`), never obeyed;
    `newlines` keeps line breaks (a document's text)."""
    pattern = _CONTROL_BUT_NEWLINE if newlines else _CONTROL
    return pattern.sub(_shown, redaction.known().scrub(text))


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    if code > 0xFF:
        return f"\\u{code:04x}"
    return {"\n": "\\n", "\r": "\\r"}.get(char, f"\\x{code:02x}")
