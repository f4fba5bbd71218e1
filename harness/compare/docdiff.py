"""Two versions of one document -> what changed: field by field (deepdiff), as text, or nothing
that matters (reformat only, ignored fields only, owner labels only).

Byte identity (sha256) is the primary fact; this module explains a sha256 mismatch. Parsed
objects are cached by sha256, so a document seen in many targets is parsed once.

Keyed lists (fieldpath.key_field: containers, env, ports, ... by `name`) are matched by key,
dyff-style: before deepdiff runs, a list keyed on both sides becomes a mapping from
`fieldpath.Keyed` to item, so an inserted container is one added item, not a cascade of
`[0]`, `[1]`, ... changes, and a moved item is no change at all. A changed order of the items
present on both sides is one `reordered` field on the list itself (bytes did change).
Unkeyed lists stay positional. A pre-pass was chosen over deepdiff's `iterable_compare_func`:
that compares items pairwise (quadratic) and reports every shifted item as moved.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from harness.compare import fieldpath, masking
from harness.compare.fieldpath import FieldPattern, Keyed, Segment
from harness.core import parsed, yamlload
from harness.core.model import DocId, Document

FieldOp = Literal["changed", "added", "removed", "reordered"]
MOVED_SHOWN = 5  # moved items named in an `order changed` line
# Sort ties (an item removed where another is added) would follow deepdiff's set order, which
# varies with string hashing; a replaced item reads as removed, then added.
_OP_ORDER = {"removed": 0, "changed": 1, "reordered": 1, "added": 2}

OWNER_LABELS = (
    "kustomize.toolkit.fluxcd.io/name",
    "kustomize.toolkit.fluxcd.io/namespace",
)
_OWNER_PATTERNS = fieldpath.compile_patterns(
    "metadata.labels." + label.replace(".", "\\.") for label in OWNER_LABELS
)

_ADDED = ("dictionary_item_added", "iterable_item_added", "attribute_added", "set_item_added")
_REMOVED = (
    "dictionary_item_removed",
    "iterable_item_removed",
    "attribute_removed",
    "set_item_removed",
)
_CHANGED = ("values_changed", "type_changes")


@dataclass(frozen=True)
class FieldChange:
    """One changed field; Secret values are already masked in `before`/`after`.

    For `reordered` (a keyed list whose common items changed order) `before`/`after` are the
    items' key values in each side's order.
    """

    path: str
    op: FieldOp
    before: Any = None
    after: Any = None
    segments: tuple[Segment, ...] = ()
    masked: bool = False


@dataclass(frozen=True)
class DocChange:
    """How `after` differs from `before` (same identity, possibly different targets)."""

    id: DocId
    kind: str
    sha256_before: str
    sha256_after: str
    fields: tuple[FieldChange, ...] = ()
    reformat_only: bool = False
    ignored_only: bool = False
    pure_ownership: bool = False
    unified: str | None = None
    before: Document | None = field(default=None, compare=False, repr=False)
    after: Document | None = field(default=None, compare=False, repr=False)

    @property
    def identical(self) -> bool:
        return self.sha256_before == self.sha256_after

    @property
    def equivalent(self) -> bool:
        """Same content for a cluster: identical, reformatted, or only ignored fields differ."""
        return self.identical or self.reformat_only or self.ignored_only

    @property
    def same_content(self) -> bool:
        """Equivalent, or differing only in the Flux owner labels (what a move changes)."""
        return self.equivalent or self.pure_ownership


class Differ:
    """Compares documents under one set of `ignore_fields`; caches parses by sha256."""

    def __init__(self, ignore: Sequence[FieldPattern] = (), unified: int | None = None) -> None:
        self.ignore = tuple(ignore)
        self.unified_context = unified
        self._parsed: dict[str, Any] = {}
        self._stripped: dict[tuple[str, bool], Any] = {}

    def parse(self, doc: Document) -> Any:
        if doc.sha256 not in self._parsed:
            try:  # a private copy of the object known for the text (JSON: equal, fast)
                encoded = parsed.stored(doc.text)
                self._parsed[doc.sha256] = (
                    json.loads(encoded) if encoded is not None else yamlload.load(doc.text)
                )
            except yamlload.YAMLError:
                self._parsed[doc.sha256] = {"__unparsable__": doc.sha256}
        return self._parsed[doc.sha256]

    def _content(self, doc: Document, *, owners: bool = False) -> Any:
        key = (doc.sha256, owners)
        if key not in self._stripped:
            patterns = (*self.ignore, *_OWNER_PATTERNS) if owners else self.ignore
            self._stripped[key] = fieldpath.strip(self.parse(doc), doc.id.kind, patterns)
        return self._stripped[key]

    def compare(
        self, before: Document, after: Document, *, labels: tuple[str, str] = ("", "")
    ) -> DocChange:
        """Explain the difference; `labels` name the sides in a unified diff header."""
        kind = after.id.kind
        base = DocChange(before.id, kind, before.sha256, after.sha256, before=before, after=after)
        if before.sha256 == after.sha256:
            return base
        old, new = self.parse(before), self.parse(after)
        reformat_only = same(old, new)
        ignored_only = not reformat_only and same(self._content(before), self._content(after))
        fields: tuple[FieldChange, ...] = ()
        pure_ownership = False
        if not reformat_only and not ignored_only:
            fields = field_changes(self._content(before), self._content(after), kind)
            pure_ownership = same(
                self._content(before, owners=True), self._content(after, owners=True)
            )
        unified = None
        if self.unified_context is not None:
            unified = unified_diff(before, after, self.unified_context, labels)
        return DocChange(
            before.id,
            kind,
            before.sha256,
            after.sha256,
            fields=fields,
            reformat_only=reformat_only,
            ignored_only=ignored_only,
            pure_ownership=pure_ownership,
            unified=unified,
            before=before,
            after=after,
        )


def is_owner_label(change: FieldChange) -> bool:
    segs = change.segments
    return len(segs) == 3 and segs[:2] == ("metadata", "labels") and segs[2] in OWNER_LABELS


def without_owner_labels(fields: Sequence[FieldChange]) -> list[FieldChange]:
    """The fields a move changed beyond the owner labels (which every move changes)."""
    return [f for f in fields if not is_owner_label(f)]


def show_value(value: Any, present: bool = True) -> str:
    """One value on one line, YAML-flavoured: `true`, `10m`, `{name: cilium}`, `(absent)`."""
    if not present:
        return "(absent)"
    if isinstance(value, str):
        return value if "\n" not in value else f"({value.count(chr(10)) + 1} lines)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    try:
        text = yaml.safe_dump(value, default_flow_style=True, width=1 << 20, sort_keys=False)
    except yaml.YAMLError:
        return str(value)
    return text.strip().removesuffix("...").strip()


def show_pair(change: FieldChange) -> tuple[str, str]:
    """(before, after) for display; strings are quoted when the type changed (`1 -> "1"`)."""
    before, after = change.before, change.after
    quote = change.op == "changed" and type(before) is not type(after)
    return (
        _quoted(before) if quote else show_value(before, change.op != "added"),
        _quoted(after) if quote else show_value(after, change.op != "removed"),
    )


def _quoted(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else show_value(value)


def show_change(change: FieldChange) -> str:
    """`spec.values.a: 1 -> 2`, or `spec.containers: order changed (moved: b)`: the one
    formatter every output uses for a field on one line."""
    if change.op == "reordered":
        return f"{change.path}: {show_order(change)}"
    return f"{change.path}: {' -> '.join(show_pair(change))}"


def show_order(change: FieldChange) -> str:
    """`order changed (moved: b, c)`: the fewest items whose moving explains the new order."""
    if change.masked or not isinstance(change.before, list) or not isinstance(change.after, list):
        return "order changed"
    moved = [fieldpath.show_key(str(v)) for v in moved_items(change.before, change.after)]
    more = f", +{len(moved) - MOVED_SHOWN} more" if len(moved) > MOVED_SHOWN else ""
    return f"order changed (moved: {', '.join(moved[:MOVED_SHOWN])}{more})"


def moved_items(before: Sequence[Any], after: Sequence[Any]) -> list[Any]:
    """Items of `after` outside a longest run kept in `before`'s order (distinct items).

    Longest increasing subsequence of before-positions (patience sorting), O(n log n), so a
    2,000-item list is cheap; among equally long runs the choice is fixed by the input order.
    """
    where = {v: i for i, v in enumerate(before)}
    seq = [where[v] for v in after if v in where]
    tails: list[int] = []  # tails[k]: index into seq ending the best run of length k + 1
    prev = [-1] * len(seq)
    for i, pos in enumerate(seq):
        lo, hi = 0, len(tails)
        while lo < hi:
            mid = (lo + hi) // 2
            if seq[tails[mid]] < pos:
                lo = mid + 1
            else:
                hi = mid
        prev[i] = tails[lo - 1] if lo else -1
        if lo == len(tails):
            tails.append(i)
        else:
            tails[lo] = i
    kept: set[int] = set()
    i = tails[-1] if tails else -1
    while i >= 0:
        kept.add(i)
        i = prev[i]
    common = [v for v in after if v in where]
    return [v for i, v in enumerate(common) if i not in kept]


def show_fields(fields: Sequence[FieldChange], limit: int = 3) -> str:
    """`spec.values.a: 1 -> 2; spec.b: (absent) -> x; +2 more`, for one-line summaries."""
    shown = [show_change(f) for f in fields[:limit]]
    if len(fields) > limit:
        shown.append(f"+{len(fields) - limit} more")
    return "; ".join(shown) or "no field changes"


def same(a: Any, b: Any) -> bool:
    """Structural equality that, unlike `==`, tells `1` from `true` and `1` from `1.0`."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def field_changes(before: Any, after: Any, kind: str) -> tuple[FieldChange, ...]:
    """deepdiff of two parsed documents as dyff-style paths, in document order, masked.

    Where no list or set differs (a value, label or keyed item edited: most changes), the
    walk of `plain_changes` answers what deepdiff would, without importing it (~70 ms).
    """
    reorders: list[tuple[tuple[Any, ...], list[str], list[str]]] = []
    before, after = _match_items(before, after, (), kind, reorders)
    raw_changes = plain_changes(before, after)
    if raw_changes is None:
        raw_changes = deep_changes(before, after)
    where = fieldpath.Positions(before, after)
    out: list[tuple[tuple[int, ...], FieldChange]] = []
    for op, raw, old, new in raw_changes:
        segs = fieldpath.segments(raw, before, after)
        old, new, masked = masking.mask_change(kind, segs, old, new, changed=op == "changed")
        change = FieldChange(fieldpath.show(segs), op, old, new, segs, masked)
        out.append((where(raw), change))
    for raw_path, old_order, new_order in reorders:
        segs = fieldpath.segments(raw_path, before, after)
        old, new, masked = masking.mask_change(kind, segs, old_order, new_order, changed=True)
        change = FieldChange(fieldpath.show(segs), "reordered", old, new, segs, masked)
        out.append((where(raw_path), change))
    out.sort(key=lambda pair: (pair[0], _OP_ORDER[pair[1].op]))
    return tuple(change for _, change in out)


RawChange = tuple[FieldOp, list[Any], Any, Any]  # op, deepdiff's path as a list, old, new


def deep_changes(before: Any, after: Any) -> list[RawChange]:
    """deepdiff's report of two parsed documents: every change, in its tree's order."""
    tree = _deepdiff()(
        before,
        after,
        view="tree",
        verbose_level=2,
        threshold_to_diff_deeper=0,
    )
    out: list[RawChange] = []
    for report, levels in tree.items():
        if report in _ADDED:
            op: FieldOp = "added"
        elif report in _REMOVED:
            op = "removed"
        elif report in _CHANGED:
            op = "changed"
        else:  # pragma: no cover - reports that need options harness does not pass
            continue
        for level in levels:
            old = None if op == "added" else level.t1
            new = None if op == "removed" else level.t2
            out.append((op, level.path(output_format="list"), old, new))
    return out


def plain_changes(before: Any, after: Any) -> list[RawChange] | None:
    """`deep_changes` when no list or set differs between the two; None when one does (how
    deepdiff aligns list items is its own, so it decides those).

    The walk is deepdiff's: a type change (`1` -> `1.0`, a mapping -> a list) is reported,
    not descended; mapping keys are added (new side's order), removed (old side's order),
    then descended into; keys starting with `__` are skipped (its ignore_private_variables,
    which also leaves two unparsable documents undiffed). Within one kind of change the
    order is deepdiff's too (ties of equal position keep it when field_changes sorts).
    """
    out: list[RawChange] = []
    return out if _plain_walk(before, after, [], out) else None


def _plain_walk(a: Any, b: Any, raw: list[Any], out: list[RawChange]) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        out.append(("changed", raw, a, b))
        return True
    if isinstance(a, dict):
        a_keys = [k for k in a if not (isinstance(k, str) and k.startswith("__"))]
        b_keys = [k for k in b if not (isinstance(k, str) and k.startswith("__"))]
        a_set, b_set = set(a_keys), set(b_keys)
        out.extend(("added", [*raw, k], None, b[k]) for k in b_keys if k not in a_set)
        out.extend(("removed", [*raw, k], a[k], None) for k in a_keys if k not in b_set)
        return all(_plain_walk(a[k], b[k], [*raw, k], out) for k in b_keys if k in a_set)
    if isinstance(a, (list, tuple, set, frozenset)):
        return _identical(a, b)
    if a != b:
        out.append(("changed", raw, a, b))
    return True


def _identical(a: Any, b: Any) -> bool:
    """Whether deepdiff surely finds nothing between two values: the same types all the way
    down (`same`, also inside tuples) and no set (deepdiff hashes set items by type)."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, (set, frozenset)):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_identical(v, b[k]) for k, v in a.items())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(_identical, a, b))
    return bool(a == b)


def _deepdiff() -> Any:
    """deepdiff's `DeepDiff`, imported when a list first differs (~0.1 s)."""
    from deepdiff import DeepDiff

    return DeepDiff


def _match_items(
    a: Any,
    b: Any,
    raw: tuple[Any, ...],
    kind: str,
    reorders: list[tuple[tuple[Any, ...], list[str], list[str]]],
) -> tuple[Any, Any]:
    """Copies of `a`, `b` in which every list keyed on both sides is a `{Keyed: item}` mapping.

    Only subtrees present on both sides are rewritten: an added or removed value is shown as
    written. A keyed list's common items in a different order are recorded in `reorders`.
    Lists under a Secret's `data`/`stringData` stay positional (a key value would be shown).
    """
    if isinstance(a, dict) and isinstance(b, dict):
        a2, b2 = dict(a), dict(b)
        for k in a:
            if k in b:
                a2[k], b2[k] = _match_items(a[k], b[k], (*raw, k), kind, reorders)
        return a2, b2
    if not isinstance(a, list) or not isinstance(b, list):
        return a, b
    attr = None if masking.is_secret_path(kind, raw[:1]) else fieldpath.key_field(a, b)
    if attr is None:
        n = min(len(a), len(b))
        pairs = [_match_items(a[i], b[i], (*raw, i), kind, reorders) for i in range(n)]
        return [p[0] for p in pairs] + a[n:], [p[1] for p in pairs] + b[n:]
    ka: dict[Keyed, Any] = {Keyed(attr, x[attr]): x for x in a}
    kb: dict[Keyed, Any] = {Keyed(attr, y[attr]): y for y in b}
    for key in ka:
        if key in kb:
            ka[key], kb[key] = _match_items(ka[key], kb[key], (*raw, key), kind, reorders)
    old_order = [k.value for k in ka if k in kb]
    new_order = [k.value for k in kb if k in ka]
    if old_order != new_order:
        reorders.append((raw, old_order, new_order))
    return ka, kb


def unified_diff(
    before: Document, after: Document, context: int, labels: tuple[str, str] = ("", "")
) -> str:
    """`diff -u` of the two texts, Secret values masked on every line."""
    a, b = before.text.splitlines(), after.text.splitlines()
    a_mask = masking.secret_lines(before.text, before.id.kind)
    b_mask = masking.secret_lines(after.text, after.id.kind)
    name = str(after.id)
    out = [f"--- {labels[0] or 'base'}: {name}", f"+++ {labels[1] or 'head'}: {name}"]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(max(0, context)):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                out.extend(" " + _show(a, a_mask, i, masking.MASK) for i in range(x1, x2))
                continue
            old_keys = {a_mask[i].key for i in range(x1, x2) if i in a_mask}
            new_keys = {b_mask[j].key for j in range(y1, y2) if j in b_mask}
            both = old_keys & new_keys
            for i in range(x1, x2):
                mark = masking.MASK_BEFORE if i in a_mask and a_mask[i].key in both else None
                out.append("-" + _show(a, a_mask, i, mark or masking.MASK))
            for j in range(y1, y2):
                mark = masking.MASK_AFTER if j in b_mask and b_mask[j].key in both else None
                out.append("+" + _show(b, b_mask, j, mark or masking.MASK))
    return "\n".join(out) + "\n" if len(out) > 2 else ""


def _show(lines: list[str], masks: dict[int, masking.MaskedLine], index: int, mask: str) -> str:
    masked = masks.get(index)
    return lines[index] if masked is None else masked.prefix + mask


def _range(start: int, stop: int) -> str:
    length = stop - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"
