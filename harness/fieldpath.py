"""Field paths as people read them (`spec.template.spec.containers[0].image`) and the
`ignore_fields` patterns matched against them.

A path is a tuple of segments: `str` for a mapping key, `int` for a list index. It is shown
dyff-style: keys joined by `.`, indexes as `[N]`. Keys may themselves contain dots
(`metadata.labels.helm.sh/chart`), so a shown path can be ambiguous; matching is therefore
done on the segments, never on the shown string.

Pattern syntax (`ignore_fields` in harness.yaml), one pattern per entry:

- A path written as it is shown: `metadata.labels.helm.sh/chart`. A `.` in a pattern matches a
  segment boundary or a literal dot inside a key, so keys with dots need no quoting; write
  `\\.` to match only a literal dot.
- `*` matches any run of characters inside one key (`metadata.annotations.checksum/*`);
  `**` matches anything, across segments (`spec.**.checksum/config`).
- `[N]` matches list index N, `[*]` any index (`spec.containers[*].env`).
- An optional `Kind:` prefix (capitalised, as kinds are; a glob) limits the pattern to
  documents of that kind: `Deployment:spec.template.metadata.annotations.checksum/*`.
- A pattern that matches a field removes the field and everything under it, on both sides,
  before documents are compared.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

Segment = str | int
FieldPath = tuple[Segment, ...]

_SEP = "\x00"
_KIND_PREFIX = re.compile(r"^([A-Z*?][A-Za-z0-9*?]*):(.+)$")


def show(path: Sequence[Segment]) -> str:
    """`('spec', 'containers', 0, 'image')` -> `spec.containers[0].image`."""
    out = ""
    for seg in path:
        if isinstance(seg, int):
            out += f"[{seg}]"
        else:
            out += ("." if out else "") + seg
    return out or "(document)"


def _encode(path: Sequence[Segment]) -> str:
    out = ""
    for seg in path:
        if isinstance(seg, int):
            out += f"[{seg}]"
        else:
            out += (_SEP if out else "") + seg
    return out


def _to_regex(pattern: str) -> re.Pattern[str]:
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            parts.append(".*")
            i += 2
        elif c == "*":
            parts.append(f"[^{_SEP}]*")
            i += 1
        elif c == "\\" and i + 1 < len(pattern):
            parts.append(re.escape(pattern[i + 1]))
            i += 2
        elif c == ".":
            parts.append(f"(?:{_SEP}|\\.)")
            i += 1
        elif pattern.startswith("[*]", i):
            parts.append(r"\[\d+\]")
            i += 3
        else:
            parts.append(re.escape(c))
            i += 1
    return re.compile("".join(parts), re.DOTALL)


@dataclass(frozen=True)
class FieldPattern:
    """One compiled `ignore_fields` entry."""

    text: str
    kind: str
    regex: re.Pattern[str]

    def matches(self, kind: str, path: Sequence[Segment]) -> bool:
        if self.kind and not fnmatch.fnmatchcase(kind, self.kind):
            return False
        return self.regex.fullmatch(_encode(path)) is not None


def compile_pattern(text: str) -> FieldPattern:
    """Raises ValueError for an empty pattern."""
    original = text.strip()
    if not original:
        raise ValueError("empty field pattern")
    kind, path = "", original
    match = _KIND_PREFIX.match(original)
    if match:
        kind, path = match.group(1), match.group(2)
    return FieldPattern(text=original, kind=kind, regex=_to_regex(path))


def compile_patterns(texts: Iterable[str]) -> tuple[FieldPattern, ...]:
    return tuple(compile_pattern(t) for t in texts)


def strip(obj: Any, kind: str, patterns: Sequence[FieldPattern]) -> Any:
    """A copy of `obj` without every field a pattern matches; `obj` itself when none do."""
    if not patterns:
        return obj
    return _strip(obj, (), kind, patterns)


def _strip(obj: Any, path: FieldPath, kind: str, patterns: Sequence[FieldPattern]) -> Any:
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            sub = (*path, str(key))
            if any(p.matches(kind, sub) for p in patterns):
                continue
            out[key] = _strip(value, sub, kind, patterns)
        return out
    if isinstance(obj, list):
        items = []
        for index, value in enumerate(obj):
            sub = (*path, index)
            if any(p.matches(kind, sub) for p in patterns):
                continue
            items.append(_strip(value, sub, kind, patterns))
        return items
    return obj


def segments(raw: Sequence[Any], *roots: Any) -> FieldPath:
    """A deepdiff path list -> segments, telling list indexes from integer mapping keys."""
    out: list[Segment] = []
    nodes = list(roots)
    for key in raw:
        is_index = any(isinstance(n, list) for n in nodes) and isinstance(key, int)
        out.append(key if is_index else str(key))
        nodes = [_child(n, key) for n in nodes]
    return tuple(out)


def _child(node: Any, key: Any) -> Any:
    if isinstance(node, dict):
        return node.get(key)
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return None


def position(raw: Sequence[Any], *roots: Any) -> tuple[int, ...]:
    """Where a field sits in its document (keys in written order), to sort changes stably."""
    out: list[int] = []
    nodes = list(roots)
    for key in raw:
        best = 1 << 30
        for node in nodes:
            if isinstance(node, dict) and key in node:
                best = min(best, list(node).index(key))
            elif isinstance(node, list) and isinstance(key, int):
                best = min(best, key)
        out.append(best)
        nodes = [_child(n, key) for n in nodes]
    return tuple(out)
