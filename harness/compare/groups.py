"""One change, one entry: identical document changes across targets, grouped.

A value in a shared base changes the same object in every target that renders it: the
directory's path target, each aggregating parent, and the Flux Kustomization deploying it in
every cluster. Reports said that change once per target; a reviewer needs it once, with
where it lands ("in: platform, platform/cilium; dev, prod: flux-system/platform").

Every (target, document) difference of an `Analysis` is in exactly one `ChangeGroup`:
changed documents group by identity and field changes; added and removed documents by
identity and where their copy is (localised, so the same move in two clusters is one
entry). Each group says whether it is a change the verdict counts (`real`), and whether it
is one side of a relocation or move (`moved`). Pure: the outputs choose what to show.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harness.compare.analyze import AddedDoc, Analysis, Location, RemovedDoc, TargetChange
from harness.compare.counts import ObjectIds
from harness.core.model import DocId

if TYPE_CHECKING:  # a document change is docdiff's: it is loaded by the time one is grouped
    from harness.compare.docdiff import DocChange, FieldChange

Op = Literal["changed", "added", "removed"]
OP_SIGN = {"changed": "~", "added": "+", "removed": "-"}
KIND_ORDER = ("path", "flux", "helm")
FLUX_KS = ("kustomize.toolkit.fluxcd.io", "Kustomization")
# gate.Reason counters naming one document of one target
DOCUMENT_COUNTERS = ("changed", "added", "removed", "moved_with_changes", "flux_kustomizations")


@dataclass(frozen=True)
class Place:
    """One target a grouped change happens in."""

    target: str
    kind: str
    cluster: str | None

    @property
    def local(self) -> str:
        """`dev/flux-system/platform` -> `flux-system/platform`: one name for every cluster."""
        if self.cluster and self.target.startswith(f"{self.cluster}/"):
            return self.target[len(self.cluster) + 1 :]
        return self.target


@dataclass(frozen=True)
class ChangeGroup:
    """One object's change, said once, and every target it happens in."""

    op: Op
    id: DocId
    places: tuple[Place, ...]
    fields: tuple[FieldChange, ...] = ()
    change: DocChange | None = None  # the first member's (or its copy's) change: diffs, titles
    note: str = ""  # where an added/removed copy came from or went to (localised)
    copy: str = ""  # that copy's target (localised), `how` it compares: `identical`, ...
    how: str = ""
    real: bool = True  # counted by the verdict (not reformat-only, ignored-only, a relocation)
    moved: bool = False  # one side of a relocation or move (its copy is rendered elsewhere)
    reformat_only: bool = False
    ignored_only: bool = False

    @property
    def sign(self) -> str:
        return OP_SIGN[self.op]

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(p.target for p in self.places)

    @property
    def clusters(self) -> tuple[str, ...]:
        return tuple(sorted({p.cluster for p in self.places if p.cluster}))

    @property
    def kustomization(self) -> bool:
        return (self.id.group, self.id.kind) == FLUX_KS

    @property
    def what(self) -> str:
        """`1 field`, `reformat only`, `owner labels only`, or the add/remove note."""
        if self.reformat_only:
            return "reformat only (content equal)"
        if self.ignored_only:
            return "only ignore_fields differ"
        if self.op == "changed":
            if self.change is not None and self.change.pure_ownership:
                return "owner labels only"
            return f"{len(self.fields)} field{'' if len(self.fields) == 1 else 's'}"
        return self.note


def target_order(t: TargetChange | Place) -> tuple[int, str, str]:
    """Path targets first, then each cluster's Flux targets, then helm targets."""
    kind = t.kind if t.kind in KIND_ORDER else "helm"
    return (KIND_ORDER.index(kind), t.cluster or "", t.target if isinstance(t, Place) else t.name)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def fields_key(fields: Sequence[FieldChange]) -> tuple[tuple[str, ...], ...]:
    """What makes two documents' changes the same change."""
    return tuple((f.path, f.op, _canon(f.before), _canon(f.after), str(f.masked)) for f in fields)


def _how(change: DocChange) -> str:
    if change.identical:
        return "identical"
    if change.equivalent:
        return "same content, reformatted"
    if change.pure_ownership:
        return "pure ownership"
    return "with changes"


def _local(target: str, cluster: str | None) -> str:
    return Place(target, "", cluster).local


def _best(locations: Sequence[Location]) -> Location:
    """The copy that explains it best: same content first, then one it arrived in."""
    return sorted(locations, key=lambda loc: (not loc.same_content, not loc.paired, loc.target))[0]


class _Grouper:
    def __init__(self, analysis: Analysis, reasons: set[tuple[str, str]] | None) -> None:
        self.analysis = analysis
        self.reasons = reasons
        self.moves = {(m.cluster, m.source, m.id): m for m in analysis.moves}
        self.arrivals = {(m.cluster, m.dest, m.id): m for m in analysis.moves}
        self.groups: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.order: list[tuple[Any, ...]] = []
        self.reported: set[tuple[str, DocId]] = set()  # relocations named on the removal side
        self.ids = ObjectIds(analysis)

    def object_ids(self, t: TargetChange, doc_id: DocId) -> tuple[DocId, ...]:
        """The objects a path target's copy is deployed as (counts.ObjectIds), so that the
        path copy and each Flux copy are one entry: a base two Kustomizations deploy into
        two namespaces is listed under each of those two objects, never as a third."""
        return self.ids.of(t.name, doc_id)

    def add(self, key: tuple[Any, ...], place: Place, **entry: Any) -> None:
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = {**entry, "places": []}
            self.order.append(key)
        group["places"].append(place)

    def counted(self, t: TargetChange, doc_id: DocId, default: bool) -> bool:
        """Whether the verdict counts this document of this target (its reasons say)."""
        if self.reasons is None:
            return default
        return (t.name, str(doc_id)) in self.reasons

    def run(self) -> tuple[ChangeGroup, ...]:
        differing = sorted((t for t in self.analysis.targets if t.differs), key=target_order)
        for t in differing:
            for r in t.removed:
                self._removed(t, r)
        for t in differing:
            for c in t.changed:
                self._changed(t, c)
            for a in t.added:
                self._added(t, a)
        self._fold_path_copies()
        out = []
        for key in self.order:
            g = self.groups[key]
            places = tuple(sorted(g.pop("places"), key=target_order))
            out.append(ChangeGroup(places=places, **g))
        position = {p: i for i, p in enumerate(_all_places(out))}
        return tuple(
            sorted(
                out,
                key=lambda g: (
                    position[g.places[0]],
                    ("removed", "changed", "added").index(g.op),
                    g.id,
                ),
            )
        )

    def _fold_path_copies(self) -> None:
        """A path-only entry of an object that a Flux or helm entry of the same change also
        lists joins that entry: one object, one entry, whatever the path copy's own note
        says (`also rendered by` another overlay) where the Flux copy's says `new`. Not a
        relocation or move: that entry says where the object went."""
        deployed: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        for key in self.order:
            g = self.groups[key]
            if any(p.kind != "path" for p in g["places"]):
                deployed.setdefault((g["op"], g["id"], fields_key(g["fields"])), key)
        for key in list(self.order):
            g = self.groups[key]
            if any(p.kind != "path" for p in g["places"]):
                continue
            into = deployed.get((g["op"], g["id"], fields_key(g["fields"])))
            if into is None or g.get("moved") or self.groups[into].get("moved"):
                continue  # a relocation or move says where it went: its own entry
            self.groups[into]["places"].extend(g["places"])
            self.order.remove(key)
            del self.groups[key]

    def _place(self, t: TargetChange) -> Place:
        return Place(t.name, t.kind, t.cluster)

    def _changed(self, t: TargetChange, c: DocChange) -> None:
        # whether it counts (a Flux Kustomization's orchestration, a copy Flux deploys): the
        # verdict's reasons say
        real = not (c.reformat_only or c.ignored_only) and self.counted(t, c.id, True)
        for obj in self.object_ids(t, c.id):
            key = ("changed", obj, fields_key(c.fields), c.reformat_only, c.ignored_only, real)
            self.add(
                key,
                self._place(t),
                op="changed",
                id=obj,
                fields=c.fields,
                change=c,
                real=real,
                reformat_only=c.reformat_only,
                ignored_only=c.ignored_only,
            )

    def _removed(self, t: TargetChange, r: RemovedDoc) -> None:
        from harness.compare.docdiff import without_owner_labels

        doc_id = r.doc.id
        move = self.moves.get((t.cluster, t.name, doc_id)) if t.kind == "flux" else None
        if move is not None:
            fields = tuple(without_owner_labels(move.change.fields))
            copy, how = _local(move.dest, move.cluster), _how(move.change)
            real = not move.change.same_content
            if (doc_id.group, doc_id.kind) == FLUX_KS and self.reasons is not None:
                real = (move.dest, str(doc_id)) in self.reasons
            note = f"moved to {copy} ({how})"
            self._entry("removed", t, doc_id, note, fields, move.change, real, True, copy, how)
            return
        if not r.relocations:
            real = self.counted(t, doc_id, True)
            note = _copies_note(r.still_rendered_by, t.cluster) or "rendered by no other target"
            self._entry("removed", t, doc_id, note, (), None, real)
            return
        best = _best(r.relocations)
        where = _local(best.target, t.cluster)
        more = len(r.relocations) - 1
        where += f" and {more} more" if more > 0 else ""
        how = _how(best.change)
        note = f"still rendered by {where} ({how})"
        real = False if r.accounted else self.counted(t, doc_id, True)
        if not r.accounted:
            self.reported.add((t.name, doc_id))
        fields = () if best.change.same_content else best.change.fields
        self._entry("removed", t, doc_id, note, fields, best.change, real, True, where, how)

    def _added(self, t: TargetChange, a: AddedDoc) -> None:
        from harness.compare.docdiff import without_owner_labels

        doc_id = a.doc.id
        move = self.arrivals.get((t.cluster, t.name, doc_id)) if t.kind == "flux" else None
        if move is not None:
            fields = tuple(without_owner_labels(move.change.fields))
            copy, how = _local(move.source, move.cluster), _how(move.change)
            note = f"moved from {copy} ({how})"
            self._entry("added", t, doc_id, note, fields, move.change, False, True, copy, how)
            return
        if not a.relocations:
            real = self.counted(t, doc_id, True)
            note = _copies_note(a.previously_rendered_by, t.cluster)
            note = note or "new: no target rendered it before"
            self._entry("added", t, doc_id, note, (), None, real)
            return
        best = _best(a.relocations)
        where = _local(best.target, t.cluster)
        more = len(a.relocations) - 1
        where += f" and {more} more" if more > 0 else ""
        how = _how(best.change)
        note = f"previously rendered by {where} ({how})"
        echo = any((loc.target, doc_id) in self.reported for loc in a.relocations)
        real = not (a.accounted or echo) and self.counted(t, doc_id, True)
        fields = () if best.change.same_content else best.change.fields
        self._entry("added", t, doc_id, note, fields, best.change, real, True, where, how)

    def _entry(
        self,
        op: Op,
        t: TargetChange,
        doc_id: DocId,
        note: str,
        fields: tuple[FieldChange, ...],
        change: DocChange | None,
        real: bool,
        moved: bool = False,
        copy: str = "",
        how: str = "",
    ) -> None:
        for obj in self.object_ids(t, doc_id):
            key = (op, obj, note, fields_key(fields), real, moved)
            self.add(
                key,
                self._place(t),
                op=op,
                id=obj,
                fields=fields,
                change=change,
                note=note,
                real=real,
                moved=moved,
                copy=copy,
                how=how,
            )


def _copies_note(copies: Sequence[Location], cluster: str | None) -> str:
    """`also rendered by flux-system/apps (on both sides)`: a copy that stayed where it was,
    so this side's addition or removal is no move."""
    if not copies:
        return ""
    names = ", ".join(sorted(_local(loc.target, cluster) for loc in copies))
    return f"also rendered by {names} (on both sides)"


def _all_places(groups: Iterable[ChangeGroup]) -> list[Place]:
    return sorted({p for g in groups for p in g.places}, key=target_order)


def group(
    analysis: Analysis, reasons: Iterable[tuple[str | None, str | None]] | None = None
) -> tuple[ChangeGroup, ...]:
    """Every difference of `analysis`, grouped. `reasons` are the verdict's (target, id)
    pairs (`gate.Verdict.reasons`): with them a Flux Kustomization change is real only when
    the verdict counts it (orchestration changes are not); without, any content change is."""
    known = None
    if reasons is not None:
        known = {(t, i) for t, i in reasons if t is not None and i is not None}
    return _Grouper(analysis, known).run()


def verdict_reasons(verdict: Any) -> list[tuple[str | None, str | None]]:
    """The (target, id) of every document reason of a `gate.Verdict`."""
    return [(r.target, r.id) for r in verdict.reasons if r.counter in DOCUMENT_COUNTERS]


def places_text(
    places: Sequence[Place],
    name: Callable[[str], str] = str,
    label: Callable[[str], str] = str,
) -> str:
    """`platform, platform/cilium; dev, prod: flux-system/platform; helm dev: media/whoami`:
    path targets, then each set of clusters with the Flux (then helm) targets it shares.
    `name` formats a target name (Markdown code, say), `label` a cluster name."""
    paths = [name(p.target) for p in places if p.kind == "path"]
    parts = [", ".join(paths)] if paths else []
    for kind in ("flux", "helm"):
        by_local: dict[str, list[str]] = {}
        for p in places:
            if p.kind == kind:
                by_local.setdefault(p.local, []).append(p.cluster or "")
        by_clusters: dict[tuple[str, ...], list[str]] = {}
        for local, names in by_local.items():
            by_clusters.setdefault(tuple(sorted(set(names))), []).append(local)
        prefix = "helm " if kind == "helm" else ""
        for clusters, locals_ in by_clusters.items():
            shown = ", ".join(name(n) for n in locals_)
            parts.append(f"{prefix}{', '.join(label(c) for c in clusters if c)}: {shown}")
    return "; ".join(parts)


def by_change(groups: Iterable[ChangeGroup]) -> list[list[ChangeGroup]]:
    """Groups of one object with the same field changes, whatever happened to it where (changed
    in one target, moved with those changes in another): the change is said once, the first
    member (a plain change when there is one) leading."""
    out: dict[tuple[Any, ...], list[ChangeGroup]] = {}
    for g in groups:
        key = (g.id, fields_key(g.fields)) if g.fields else (g.id, g.op, g.note, id(g))
        out.setdefault(key, []).append(g)
    return [sorted(members, key=lambda g: g.op != "changed") for members in out.values()]


def objects(groups: Iterable[ChangeGroup]) -> int:
    """Distinct objects that really change (Flux Kustomization objects apart, as counted)."""
    return len({g.id for g in groups if g.real and not g.kustomization})
