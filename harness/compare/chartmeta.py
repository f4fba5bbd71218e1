"""A chart bump said once: the chart's own metadata churn of a helm release as one line.

Bumping a chart rewrites the same few labels on every object it renders (`helm.sh/chart:
reloader-2.2.15 -> reloader-2.2.16`, `app.kubernetes.io/version`, an older chart's
`chart`) and the `checksum/*` annotations of pod templates; listed per object, they bury
the change a reviewer needs (an image, a values-driven field) under the same lines seven
times. For the changed objects of one helm release (the same targets), a label whose every
change there is alike (same before, same after) is taken out of the objects' field lists,
and so is every change of a `checksum/*`-like annotation; what remains is shown first, then
one line per release:
`chart reloader 2.2.15 -> 2.2.16: labels on 7 objects, checksum annotations on 1 object`.

The keys are a label or annotation name, or a glob of one (`checksum/*`): config
`helm.chart_metadata` (default `DEFAULT_KEYS`; `[]` shows every field). Only what people
read is folded: the JSON report keeps every field, and the verdict counts every change.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from harness.compare.groups import ChangeGroup, Place, places_text
from harness.core.config import DEFAULT_CHART_METADATA

if TYPE_CHECKING:  # a field change is docdiff's: loaded by the time one is grouped
    from harness.compare.docdiff import FieldChange

DEFAULT_KEYS = DEFAULT_CHART_METADATA
_METADATA = ("labels", "annotations")
# `<chart>-<version>`: Helm's `helm.sh/chart` convention (name may hold dashes)
_CHART_LABEL = re.compile(r"^(?P<name>.+?)-(?P<version>v?\d[^\s]*)$")
_CHART_KEYS = ("helm.sh/chart", "chart")


@dataclass(frozen=True)
class ChartChurn:
    """One release's folded metadata: which chart bump, and on how many objects."""

    places: tuple[Place, ...]
    chart: str  # `reloader 2.2.15 -> 2.2.16`, or "" when no chart label changed
    labels: int  # objects whose folded labels changed
    annotations: int  # objects whose folded annotations changed

    def line(self) -> str:
        what = []
        if self.labels:
            what.append(f"labels on {_objects(self.labels)}")
        if self.annotations:
            what.append(f"checksum annotations on {_objects(self.annotations)}")
        head = f"chart {self.chart}" if self.chart else "chart metadata"
        return f"{head}: {', '.join(what)}"

    def where(self) -> str:
        return places_text(self.places)


def _objects(n: int) -> str:
    return f"{n} object{'' if n == 1 else 's'}"


def _key(f: FieldChange) -> tuple[str, str] | None:
    """(`labels`|`annotations`, name) of a field that is one label or annotation."""
    segs = f.segments
    if len(segs) < 2 or not isinstance(segs[-1], str) or segs[-2] not in _METADATA:
        return None
    return str(segs[-2]), segs[-1]


def _matches(name: str, keys: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, k) if "*" in k else name == k for k in keys)


def _canon(f: FieldChange) -> str:
    return json.dumps([f.op, f.before, f.after], sort_keys=True, default=str)


def fold(
    groups: Sequence[ChangeGroup], keys: Sequence[str] = DEFAULT_KEYS
) -> tuple[tuple[ChangeGroup, ...], tuple[ChartChurn, ...]]:
    """The groups with each release's chart metadata taken out (a group left with no field
    is dropped: its churn line says it), and those lines, one per release."""
    if not keys:
        return tuple(groups), ()
    releases: dict[tuple[str, ...], list[ChangeGroup]] = {}
    for g in groups:
        if g.op == "changed" and g.real and g.places and all(p.kind == "helm" for p in g.places):
            releases.setdefault(g.targets, []).append(g)
    replaced: dict[int, ChangeGroup | None] = {}
    churn: list[ChartChurn] = []
    for members in releases.values():
        folded = _folded(members, keys)
        if not folded:
            continue
        labels = annotations = 0
        chart = ""
        for g in members:
            kept = tuple(f for f in g.fields if _key(f) not in folded)
            gone = [f for f in g.fields if _key(f) in folded]
            if not gone:
                continue
            kinds = {key[0] for f in gone if (key := _key(f)) is not None}
            labels += "labels" in kinds
            annotations += "annotations" in kinds
            chart = chart or _chart(gone)
            replaced[id(g)] = replace(g, fields=kept) if kept else None
        churn.append(ChartChurn(members[0].places, chart, labels, annotations))
    out = tuple(r for g in groups for r in [replaced.get(id(g), g)] if r is not None)
    return out, tuple(churn)


def _folded(members: Sequence[ChangeGroup], keys: Sequence[str]) -> set[tuple[str, str]]:
    """The (kind, name) keys of one release to fold: labels that change alike on every
    object, and every annotation change."""
    seen: dict[tuple[str, str], set[str]] = {}
    for g in members:
        for f in g.fields:
            key = _key(f)
            if key is not None and _matches(key[1], keys):
                seen.setdefault(key, set()).add(_canon(f))
    return {k for k, changes in seen.items() if k[0] == "annotations" or len(changes) == 1}


def _chart(fields: Sequence[FieldChange]) -> str:
    """`reloader 2.2.15 -> 2.2.16` from a changed `helm.sh/chart` (or `chart`) label."""
    for name in _CHART_KEYS:
        for f in fields:
            key = _key(f)
            if key != ("labels", name) or f.op != "changed":
                continue
            before = _CHART_LABEL.match(str(f.before))
            after = _CHART_LABEL.match(str(f.after))
            if before and after and before["name"] == after["name"]:
                return f"{after['name']} {before['version']} -> {after['version']}"
            return f"{f.before} -> {f.after}"
    return ""
