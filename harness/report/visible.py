"""Control characters shown, never obeyed: every text output goes through `visible`.

A target name is a directory name and a value is whatever a manifest holds: either can
carry ESC (colour, cursor, hyperlink and title sequences a terminal or CI log obeys), BEL,
or a line break that starts what a CI log reads as a workflow command. Standard library
only, so the Markdown and workflow-command writers use it without loading rich.
"""

from __future__ import annotations

import re

# C0 and C1 control characters but tab: a terminal obeys them (ESC starts colour, cursor and
# hyperlink sequences, a newline starts what a CI log reads as a workflow command)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str, *, newlines: bool = False) -> str:
    """`text` with each control character shown as its escape (`\\x1b`, `\\n`), never obeyed;
    `newlines` keeps line breaks (a document's text)."""
    pattern = _CONTROL_BUT_NEWLINE if newlines else _CONTROL
    return pattern.sub(_shown, text)


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    return {"\n": "\\n", "\r": "\\r"}.get(char, f"\\x{ord(char):02x}")
