"""Secret values never reach an output: `***`, or `*** (before)` / `*** (after)` for a change.

Documents already carry Secret-derived values as `<redacted sha256:...>` markers
(core/redaction.py); the markers differ when a value changes, which is what lets a diff say
*that* it changed. They are still not for display, so every value under a Secret's
`data`/`stringData`, and every marker string anywhere, is replaced here before anything is
formatted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.compare.fieldpath import Segment
from harness.core import redaction
from harness.core.documents import REDACTED_PREFIX

MASK = "***"
MASK_BEFORE = "*** (before)"
MASK_AFTER = "*** (after)"
SECRET_FIELDS = ("data", "stringData")

_MARKER = redaction.MARKER
_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:")
_ENTRY = re.compile(r"^(\s+)(\"[^\"]*\"|'[^']*'|[^\s:#][^:]*?)\s*:(?:\s|$)")


def is_secret_path(kind: str, path: Sequence[Segment]) -> bool:
    """Under a Secret's `data`/`stringData`: lists there are never keyed (docdiff), so no
    secret value can become a `[name=...]` path segment."""
    return kind == "Secret" and bool(path) and path[0] in SECRET_FIELDS


def has_marker(value: Any) -> bool:
    if isinstance(value, str):
        return REDACTED_PREFIX in value
    if isinstance(value, dict):
        return any(has_marker(v) for v in value.values())
    if isinstance(value, list):
        return any(has_marker(v) for v in value)
    return False


def mask_all(value: Any) -> Any:
    """Every leaf replaced by `***`, the shape kept (keys are not secret, values are)."""
    if isinstance(value, dict):
        return {k: mask_all(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_all(v) for v in value]
    return MASK


def mask_markers(value: Any) -> Any:
    """Marker strings replaced by `***` wherever they sit."""
    if isinstance(value, str):
        return _MARKER.sub(MASK, value)
    if isinstance(value, dict):
        return {k: mask_markers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_markers(v) for v in value]
    return value


def mask_change(
    kind: str, path: Sequence[Segment], before: Any, after: Any, *, changed: bool
) -> tuple[Any, Any, bool]:
    """(before, after, masked) for one field change; a changed secret shows which side."""
    if is_secret_path(kind, path) or has_marker(before) or has_marker(after):
        if changed and not isinstance(before, dict | list) and not isinstance(after, dict | list):
            return MASK_BEFORE, MASK_AFTER, True
        return _mask_side(before), _mask_side(after), True
    return before, after, False


def _mask_side(value: Any) -> Any:
    return None if value is None else mask_all(value)


@dataclass(frozen=True)
class MaskedLine:
    """A line of document text whose value part is secret: `prefix` + mask, keyed for pairing."""

    prefix: str
    key: str


def secret_lines(text: str, kind: str) -> dict[int, MaskedLine]:
    """Line numbers (0-based) of `text` that carry a secret value, and how to show them.

    For a Secret: every line inside its top-level `data`/`stringData` blocks (kustomize
    prints block style). For any document: lines holding a redaction marker.
    """
    out: dict[int, MaskedLine] = {}
    block = False
    entry_indent: int | None = None
    current = ""
    for number, line in enumerate(text.splitlines()):
        top = _TOP_KEY.match(line)
        if top:
            block = kind == "Secret" and top.group(1) in SECRET_FIELDS
            entry_indent = None
            if block and line.split(":", 1)[1].strip() not in ("", "{}"):
                out[number] = MaskedLine(line.split(":", 1)[0] + ": ", top.group(1))
            continue
        if block and line.strip():
            indent = len(line) - len(line.lstrip())
            entry = _ENTRY.match(line)
            if entry and (entry_indent is None or indent <= entry_indent):
                entry_indent = indent
                current = entry.group(2).strip("\"'")
                out[number] = MaskedLine(line[: entry.end()].rstrip() + " ", current)
            else:
                out[number] = MaskedLine(" " * indent, current)
            continue
        if REDACTED_PREFIX in line:
            key = line.split(":", 1)[0].strip()
            out[number] = MaskedLine(_MARKER.split(line, maxsplit=1)[0], key)
    return out
