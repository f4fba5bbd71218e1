"""Field paths as people read them (`spec.template.spec.containers[name=cilium-agent].image`)
and the `ignore_fields` patterns matched against them.

A path is a tuple of segments: `str` for a mapping key, `int` for a list index, `Keyed` for an
item of a keyed list. It is shown dyff-style: keys joined by `.`, indexes as `[N]`, keyed
items as `[name=cilium-agent]`. Keys may themselves contain dots
(`metadata.labels.helm.sh/chart`), so a shown path can be ambiguous; matching is therefore
done on the segments, never on the shown string.

A list is *keyed* when every item is a mapping holding a string under one identifying field,
unique within the list; the field is the first of `KEY_FIELDS` (`name`, `key`, `id`) that
works. Kubernetes names containers, env vars, ports, volumes and mounts this way, and their
order rarely matters, so a keyed item is found by that field, not by its position. A value is
shown bare unless it is empty or holds `[`, `]`, `"`, `\\`, `*` or surrounding blanks; then it
is JSON-quoted (`[name="a]b"]`), so a shown path always reads back unambiguously.

Pattern syntax (`ignore_fields` in harness.yaml), one pattern per entry:

- A path written as it is shown: `metadata.labels.helm.sh/chart`. A `.` in a pattern matches a
  segment boundary or a literal dot inside a key, so keys with dots need no quoting; write
  `\\.` to match only a literal dot.
- `*` matches any run of characters inside one key (`metadata.annotations.checksum/*`);
  `**` matches anything, across segments (`spec.**.checksum/config`).
- `[N]` matches list index N (a keyed item by its position in that document), `[*]` any item,
  keyed or not (`spec.containers[*].env`); `[name=x]` the keyed item whose `name` is `x`, with
  `*` as a glob inside the value (`[name=istio-*]`) and `"..."` for a JSON-quoted value.
- An optional `Kind:` prefix (capitalised, as kinds are; a glob) limits the pattern to
  documents of that kind: `Deployment:spec.template.metadata.annotations.checksum/*`.
- A pattern that matches a field removes the field and everything under it, on both sides,
  before documents are compared.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

KEY_FIELDS = ("name", "key", "id")


@dataclass(frozen=True)
class Keyed:
    """An item of a keyed list, found by `attr == value` so that inserting or moving other
    items does not change its path. `index` (its position in one document) only serves `[N]`
    patterns and is not part of its identity."""

    attr: str
    value: str
    index: int | None = field(default=None, compare=False)


Segment = str | int | Keyed
FieldPath = tuple[Segment, ...]

# Encoded paths (what patterns match): keys joined by _SEP, items as _ITEM index [_ATTR a=v] _END.
_SEP = "\x00"
_ITEM, _ATTR, _END = "\x01", "\x02", "\x03"
_KIND_PREFIX = re.compile(r"^([A-Z*?][A-Za-z0-9*?]*):(.+)$")
_INDEX_PATTERN = re.compile(r"\[(\d+|\*)\]")
_KEYED_PATTERN = re.compile(r"\[([A-Za-z_][A-Za-z0-9_-]*)=")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NEEDS_QUOTES = re.compile(r'^$|^\s|\s$|[\[\]"\\*]')


def show(path: Sequence[Segment]) -> str:
    """`('spec', 'containers', Keyed('name', 'a'), 'image')` -> `spec.containers[name=a].image`."""
    out = ""
    for seg in path:
        if isinstance(seg, Keyed):
            out += f"[{seg.attr}={show_key(seg.value)}]"
        elif isinstance(seg, int):
            out += f"[{seg}]"
        else:
            out += ("." if out else "") + seg
    return out or "(document)"


def show_key(value: str) -> str:
    """A keyed item's value, bare when that reads back unambiguously, else JSON-quoted."""
    return json.dumps(value, ensure_ascii=False) if _NEEDS_QUOTES.search(value) else value


def key_field(*lists: Sequence[Any]) -> str | None:
    """The first of `KEY_FIELDS` that identifies every item of every list, or None (positional).

    Each item must be a mapping with a string under the field, unique within its list; the
    string may hold no control characters (they delimit encoded paths).
    """
    if not any(lists):
        return None
    for attr in KEY_FIELDS:
        if all(_keys_by(items, attr) for items in lists):
            return attr
    return None


def _keys_by(items: Sequence[Any], attr: str) -> bool:
    seen: set[str] = set()
    for item in items:
        value = item.get(attr) if isinstance(item, dict) else None
        if not isinstance(value, str) or value in seen or _CONTROL.search(value):
            return False
        seen.add(value)
    return True


def _encode(path: Sequence[Segment]) -> str:
    out = ""
    for seg in path:
        if isinstance(seg, Keyed):
            index = "" if seg.index is None else str(seg.index)
            out += f"{_ITEM}{index}{_ATTR}{seg.attr}={seg.value}{_END}"
        elif isinstance(seg, int):
            out += f"{_ITEM}{seg}{_END}"
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
        elif c == "[" and (item := _item_regex(pattern, i)) is not None:
            regex, i = item
            parts.append(regex)
        else:
            parts.append(re.escape(c))
            i += 1
    return re.compile("".join(parts), re.DOTALL)


def _item_regex(pattern: str, start: int) -> tuple[str, int] | None:
    """`[N]`, `[*]` or `[attr=value]` at `start` -> (regex, end); None: a literal `[`."""
    index = _INDEX_PATTERN.match(pattern, start)
    if index:
        number = r"\d*" if index.group(1) == "*" else index.group(1)
        return f"{_ITEM}{number}(?:{_ATTR}[^{_END}]*)?{_END}", index.end()
    keyed = _KEYED_PATTERN.match(pattern, start)
    if not keyed:
        return None
    attr, i = keyed.group(1), keyed.end()
    if pattern.startswith('"', i):
        try:
            value, i = json.JSONDecoder().raw_decode(pattern, i)
        except ValueError:
            value = None
        if not isinstance(value, str) or not pattern.startswith("]", i):
            raise ValueError(f"bad quoted value in {pattern[start:]!r}")
        value_regex = re.escape(value)
    else:
        chunks: list[str] = []
        while i < len(pattern) and pattern[i] != "]":
            if pattern[i] == "\\" and i + 1 < len(pattern):
                chunks.append(re.escape(pattern[i + 1]))
                i += 2
            else:
                chunks.append(f"[^{_END}]*" if pattern[i] == "*" else re.escape(pattern[i]))
                i += 1
        if i >= len(pattern):
            raise ValueError(f"unclosed {pattern[start:]!r}")
        value_regex = "".join(chunks)
    regex = f"{_ITEM}\\d*{_ATTR}{re.escape(attr)}={value_regex}{_END}"
    return regex, i + 1


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
    """Raises ValueError for an empty pattern or an unreadable `[attr=...]`."""
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
        attr = key_field(obj)
        for index, value in enumerate(obj):
            sub = (*path, Keyed(attr, value[attr], index) if attr else index)
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
        out.append(key if is_index or isinstance(key, Keyed) else str(key))
        nodes = [_child(n, key) for n in nodes]
    return tuple(out)


def _child(node: Any, key: Any) -> Any:
    if isinstance(node, dict):
        return node.get(key)
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return None


class Positions:
    """Where fields sit in their documents (keys in written order), to sort changes stably.

    A mapping key sits at its smaller position of the two sides. A keyed item sits where the
    last root (the new side) has it, else where the first has it: with min(), the fields of
    two swapped items would interleave. Positions are indexed once per mapping: a keyed list
    of 2,000 items is a 2,000-key mapping, and `list(node).index` per change is quadratic.
    """

    def __init__(self, *roots: Any) -> None:
        self.roots = roots
        self._index: dict[int, dict[Any, int]] = {}

    def __call__(self, raw: Sequence[Any]) -> tuple[int, ...]:
        out: list[int] = []
        nodes = list(self.roots)
        for key in raw:
            best = 1 << 30
            for node in nodes:
                if isinstance(node, dict) and key in node:
                    at = self._key_index(node)[key]
                    best = at if isinstance(key, Keyed) else min(best, at)
                elif isinstance(node, list) and isinstance(key, int):
                    best = min(best, key)
            out.append(best)
            nodes = [_child(n, key) for n in nodes]
        return tuple(out)

    def _key_index(self, node: dict[Any, Any]) -> dict[Any, int]:
        found = self._index.get(id(node))
        if found is None:
            found = self._index[id(node)] = {k: i for i, k in enumerate(node)}
        return found
