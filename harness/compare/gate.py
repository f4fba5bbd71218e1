"""The verdict on an analysis: `no-change`, `pure-move` or `changed`, with the reasons.

Pure function of an `Analysis`, so the rules are tested without rendering anything:

- `no-change`: no document differs in content (reformat-only and `ignore_fields`-only
  differences are notes, not changes) and no target failed to render.
- `pure-move`: every document other than a Flux Kustomization object is unchanged, or was
  removed from one target and is still rendered by another of the same scope with the same
  content (byte-identical, or differing only in the Flux owner labels), or was added to one
  target and was rendered with the same content by another before. Flux Kustomization objects
  may be added (a new owner) or removed (an owner retired), and may change in the
  orchestration fields (`ORCHESTRATION_FIELDS`, which never change what is applied); those
  changes are listed. They may also change in the fields that shape their output
  (`OUTPUT_FIELDS`: `path`, `sourceRef`, `targetNamespace`, `components`, `patches`, ...) when
  the Kustomization's own Flux target proves the output unchanged: it renders the same
  documents (reformat-only and ignored differences aside), or every document it lost or
  gained is rendered with the same content by another target of its cluster ("path moved,
  output identical"). Only a change of output breaks a pure move. No new duplicate owner.
- `changed`: anything else, including a target that failed to render on either side (it
  cannot be proven unchanged; errors also make the exit code 2). A *pre-existing* error (the
  target fails on both sides with the same message and unchanged inputs, see inputs.py) is
  no reason and no exit 2 unless asked for.
"""

from __future__ import annotations

import os.path
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from harness.compare.analyze import AddedDoc, Analysis, Move, RemovedDoc, TargetChange
from harness.core import yamlload
from harness.core.model import DocId, Document

if TYPE_CHECKING:  # a document change is docdiff's: it is loaded by the time one is judged
    from harness.compare.docdiff import DocChange, FieldChange

VerdictName = Literal["no-change", "pure-move", "changed"]
Expectation = Literal["no-change", "pure-move"]

FLUX_KS_GROUP = "kustomize.toolkit.fluxcd.io"
ORCHESTRATION_FIELDS = (
    "dependsOn",
    "prune",
    "wait",
    "interval",
    "retryInterval",
    "timeout",
    "healthChecks",
    "healthCheckExprs",
    "suspend",
)
# Spec fields that shape what the Kustomization renders and that harness's Flux build
# applies (flux/kustomize/generator.py, build.py, substitute.py; sourceRef through `sources:`): a
# change of them is judged by the output of its Flux target, not by the field. Fields whose
# effect harness does not render (`decryption`: it masks SOPS values either way; the
# deprecated `patchesStrategicMerge`/`patchesJson6902`) stay real changes.
OUTPUT_FIELDS = (
    "path",
    "sourceRef",
    "targetNamespace",
    "components",
    "ignoreMissingComponents",
    "patches",
    "images",
    "namePrefix",
    "nameSuffix",
    "commonMetadata",
    "postBuild",
)
OutputState = Literal["identical", "moved", "changed", "unknown"]


def is_flux_kustomization(doc_id: DocId) -> bool:
    return doc_id.group == FLUX_KS_GROUP and doc_id.kind == "Kustomization"


@dataclass(frozen=True)
class Reason:
    """Why the verdict is `changed`: one fact, naming the target, the document, the fields."""

    message: str
    target: str | None = None
    id: str | None = None
    counter: str = ""  # the Tally field it counts in

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class OrchestrationChange:
    """A Flux Kustomization's allowed change, e.g. `platform: prune true -> false`."""

    name: str
    id: DocId
    changes: tuple[str, ...]
    targets: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.name}: {', '.join(self.changes)}"


@dataclass(frozen=True)
class Respecified:
    """A Flux Kustomization whose output-shaping spec changed (`path ./a -> ./b`) while its
    Flux target renders the same documents: `identical`, or `moved` (what it lost or gained
    is rendered unchanged by another Kustomization of the cluster)."""

    name: str
    id: DocId
    fields: tuple[str, ...]
    changes: str
    outcome: Literal["identical", "moved"]
    targets: tuple[str, ...] = ()

    @property
    def what(self) -> str:
        if self.fields == ("path",):
            return "path moved"
        return f"{', '.join(self.fields)} changed"

    @property
    def how(self) -> str:
        return "output identical" if self.outcome == "identical" else "documents moved unchanged"

    def __str__(self) -> str:
        return f"{self.name}: {self.changes} ({self.how})"


@dataclass(frozen=True)
class MoveGroup:
    """Documents that went from one owner to another (`platform -> cilium`), for the headline."""

    source: str
    dest: str
    ids: tuple[DocId, ...]
    clusters: tuple[str, ...]
    identical: bool
    level: Literal["flux", "path"]


@dataclass(frozen=True)
class Tally:
    """Counts of real changes (those that make the verdict `changed`)."""

    changed: int = 0
    added: int = 0
    removed: int = 0
    moved_with_changes: int = 0
    flux_kustomizations: int = 0
    duplicates: int = 0
    errors: int = 0


@dataclass(frozen=True)
class Verdict:
    verdict: VerdictName
    reasons: tuple[Reason, ...] = ()
    orchestration: tuple[OrchestrationChange, ...] = ()
    groups: tuple[MoveGroup, ...] = ()
    notes: tuple[str, ...] = ()
    tally: Tally = field(default_factory=Tally)
    respecified: tuple[Respecified, ...] = ()

    def holds(self, expect: Expectation) -> bool:
        if expect == "no-change":
            return self.verdict == "no-change"
        return self.verdict in ("no-change", "pure-move")


def exit_code(
    analysis: Analysis,
    verdict: Verdict,
    expect: Expectation | None,
    fail_on_diff: bool,
    *,
    fail_on_preexisting: bool = False,
) -> int:
    """2 on render errors (pre-existing ones only when asked); 1 when the expectation fails,
    or on any change with fail_on_diff."""
    if analysis.errors or (fail_on_preexisting and analysis.preexisting):
        return 2
    if expect is not None:
        return 0 if verdict.holds(expect) else 1
    if fail_on_diff and verdict.verdict != "no-change":
        return 1
    return 0


class _Judge:
    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.reasons: list[Reason] = []
        self.notes: list[str] = []
        self.orch: dict[tuple[DocId, tuple[str, ...]], list[str]] = defaultdict(list)
        self.respec: dict[tuple[DocId, str], tuple[tuple[str, ...], str, list[str]]] = {}
        self.by_name = {t.name: t for t in analysis.targets}
        self.moving = False
        self.tally: dict[str, int] = defaultdict(int)
        self.reported: set[tuple[str, DocId]] = set()
        self.moved_from: set[tuple[str | None, str, DocId]] = set()
        self.moved_to: set[tuple[str | None, str, DocId]] = set()
        self.reformatted = 0
        self.ignored = 0

    def real(self, counter: str, message: str, target: str | None, doc_id: DocId | None) -> None:
        self.tally[counter] += 1
        self.reasons.append(Reason(message, target, str(doc_id) if doc_id else None, counter))

    def run(self) -> Verdict:
        a = self.analysis
        self.moved_from = {(m.cluster, m.source, m.id) for m in a.moves}
        self.moved_to = {(m.cluster, m.dest, m.id) for m in a.moves}
        for err in a.errors:
            self.real(
                "errors",
                f"{err.target}: render failed on {err.side}: {err.message}",
                err.target,
                None,
            )
        differing = [t for t in a.targets if t.differs]
        repaired = {r.target for r in a.repairs}  # arrives because it works now: no move
        self.moving = any(
            t.status in ("added", "removed") and t.name not in repaired for t in differing
        )
        # a path target a Flux target deploys is judged through that target's copy
        judged = [t for t in differing if t.kind != "path" or t.name not in a.deployed]
        for t in judged:
            for r in t.removed:
                self._removed(t, r)
        for t in judged:
            for ad in t.added:
                self._added(t, ad)
        for t in judged:
            for c in t.changed:
                self._changed(t, c)
        for m in a.moves:
            self._move(m)
        for d in a.duplicates:
            if not d.in_base:
                where = f"{d.where}: " if d.where else ""
                self.real(
                    "duplicates",
                    f"{where}{d.id} is rendered by {len(d.targets)} Flux Kustomizations "
                    f"({', '.join(_short(n) for n in d.targets)}): two owners fight over it",
                    d.targets[0],
                    d.id,
                )
        if self.reformatted:
            self.notes.append(
                f"{_plural(self.reformatted, 'document')} reformatted only "
                "(bytes differ, parsed content equal)"
            )
        if self.ignored:
            self.notes.append(f"{_plural(self.ignored, 'document')} differ only in ignore_fields")
        if a.preexisting:
            self.notes.append(preexisting_note(len(a.preexisting)))
        if a.repairs:
            self.notes.append(repaired_note(a))
        verdict: VerdictName = (
            "changed"
            if self.reasons
            else ("pure-move" if self.moving or self.orch or self.respec else "no-change")
        )
        return Verdict(
            verdict=verdict,
            reasons=tuple(self.reasons),
            orchestration=self._orchestration(),
            groups=move_groups(a),
            notes=tuple(self.notes),
            tally=Tally(**self.tally),
            respecified=self._respecified(),
        )

    def _removed(self, t: TargetChange, r: RemovedDoc) -> None:
        if r.accounted:
            self.moving = True
        elif t.kind == "flux" and (t.cluster, t.name, r.doc.id) in self.moved_from:
            return  # judged once, as a move
        elif is_flux_kustomization(r.doc.id):
            if r.relocations:
                self._flux_ks_changed(r.relocations[0].change, t.name)
            else:
                self._flux_ks_gone(r.doc, t.name)
        else:
            where = _with_changes(r.relocations, "renders it", r.still_rendered_by)
            counter = "moved_with_changes" if r.relocations else "removed"
            self.real(counter, f"{t.name}: {r.doc.id} removed{where}", t.name, r.doc.id)
            self.reported.add((t.name, r.doc.id))

    def _added(self, t: TargetChange, ad: AddedDoc) -> None:
        if ad.accounted:
            self.moving = True
        elif t.kind == "flux" and (t.cluster, t.name, ad.doc.id) in self.moved_to:
            return
        elif any((loc.target, ad.doc.id) in self.reported for loc in ad.relocations):
            return  # the removal side already named this relocation and its fields
        elif is_flux_kustomization(ad.doc.id):
            self._flux_ks_new(ad.doc, t.name)
        else:
            where = _with_changes(ad.relocations, "rendered it", ad.previously_rendered_by)
            counter = "moved_with_changes" if ad.relocations else "added"
            self.real(counter, f"{t.name}: {ad.doc.id} added{where}", t.name, ad.doc.id)

    def _changed(self, t: TargetChange, c: DocChange) -> None:
        from harness.compare.docdiff import show_fields

        if c.reformat_only:
            self.reformatted += 1
        elif c.ignored_only:
            self.ignored += 1
        elif is_flux_kustomization(c.id):
            self._flux_ks_changed(c, t.name)
        else:
            self.real("changed", f"{t.name}: {c.id}: {show_fields(c.fields)}", t.name, c.id)

    def _orchestration(self) -> tuple[OrchestrationChange, ...]:
        out = [
            OrchestrationChange(_ks_name(doc_id), doc_id, changes, tuple(sorted(set(targets))))
            for (doc_id, changes), targets in self.orch.items()
        ]
        return tuple(sorted(out, key=lambda o: (o.name, o.changes)))

    def _flux_ks_new(self, doc: Document, target: str) -> None:
        spec = _spec(doc)
        path = spec.get("path")
        self.orch[(doc.id, (f"added (path {path})" if path else "added",))].append(target)

    def _flux_ks_gone(self, doc: Document, target: str) -> None:
        spec = _spec(doc)
        note = (
            " (prune: true, its objects are garbage-collected unless relabelled first)"
            if (spec.get("prune") is True)
            else ""
        )
        self.orch[(doc.id, (f"removed{note}",))].append(target)

    def _respecified(self) -> tuple[Respecified, ...]:
        out = [
            Respecified(
                _ks_name(doc_id),
                doc_id,
                fields,
                changes,
                "identical" if outcome == "identical" else "moved",
                tuple(sorted(set(targets))),
            )
            for (doc_id, changes), (fields, outcome, targets) in self.respec.items()
        ]
        return tuple(sorted(out, key=lambda r: (r.name, r.changes)))

    def _flux_ks_changed(self, change: DocChange, target: str, *, move: bool = False) -> None:
        from harness.compare.docdiff import show_fields

        real = [f for f in change.fields if not _orchestration_field(f, allow_owner=move)]
        shaping = [f for f in real if _output_field(f)]
        other = [f for f in real if not _output_field(f)]
        if other:
            self.real(
                "flux_kustomizations",
                f"{target}: Flux Kustomization {_ks_name(change.id)}: {show_fields(other)} "
                "(not an orchestration field)",
                target,
                change.id,
            )
            return
        if shaping:
            state, where = self._output_state(change.id, target)
            if state in ("changed", "unknown"):
                why = (
                    f"its output changes (see {where})"
                    if state == "changed"
                    else f"its output is not verified ({where})"
                )
                self.real(
                    "flux_kustomizations",
                    f"{target}: Flux Kustomization {_ks_name(change.id)}: "
                    f"{show_fields(shaping)}; {why}",
                    target,
                    change.id,
                )
                return
            fields = tuple(dict.fromkeys(str(f.segments[1]) for f in shaping))
            key = (change.id, show_fields(shaping, limit=len(shaping)))
            entry = self.respec.setdefault(key, (fields, state, []))
            entry[2].append(target)
            if state == "moved" and entry[1] == "identical":
                self.respec[key] = (fields, state, entry[2])
        if change.before is None or change.after is None:
            return
        listed = tuple(orchestration_changes(_spec(change.before), _spec(change.after)))
        if listed:
            self.orch[(change.id, listed)].append(target)

    def _output_state(self, doc_id: DocId, target: str) -> tuple[OutputState, str]:
        """What the Kustomization's own Flux target(s) show: same output, moved, or not."""
        suffix = f"/{doc_id.namespace or 'flux-system'}/{doc_id.name}"
        declaring = self.by_name.get(target)
        if declaring is not None and declaring.kind == "flux":
            names = [f"{declaring.cluster}{suffix}"]
        else:
            names = [n for n, t in self.by_name.items() if t.kind == "flux" and n.endswith(suffix)]
        found = [self.by_name[n] for n in names if n in self.by_name]
        if not found:
            return "unknown", "no Flux target renders it"
        states = [(_target_output(t), t.name) for t in found]
        for wanted in ("unknown", "changed"):
            for state, name in states:
                if state == wanted:
                    return state, (f"{name} failed to render" if state == "unknown" else name)
        if any(state == "moved" for state, _n in states):
            return "moved", found[0].name
        return "identical", found[0].name

    def _move(self, m: Move) -> None:
        from harness.compare.docdiff import show_fields, without_owner_labels

        self.moving = True
        if is_flux_kustomization(m.id):
            self._flux_ks_changed(m.change, m.dest, move=True)
        elif not m.change.same_content:
            where = f"{m.where}: " if m.where else ""
            self.real(
                "moved_with_changes",
                f"{where}{m.id} moved {_short(m.source)} -> {_short(m.dest)} with changes: "
                f"{show_fields(without_owner_labels(m.change.fields))}",
                m.dest,
                m.id,
            )


def judge(analysis: Analysis) -> Verdict:
    """The verdict and everything that explains it."""
    return _Judge(analysis).run()


def _with_changes(locations: Sequence[Any], verb: str, copies: Sequence[Any] = ()) -> str:
    """Where a removed (`renders it`) or added (`rendered it`) document went or came from;
    `copies` are the targets rendering it on both sides, which make it no move."""
    from harness.compare.docdiff import show_fields

    if not locations:
        if copies:
            also = ", ".join(sorted(loc.target for loc in copies))
            return f" (also rendered by {also}, on both sides)"
        if verb == "renders it":
            return " (rendered by no other target)"
        return " (new: no target rendered it before)"
    loc = min(locations, key=lambda loc: len(loc.change.fields))  # the closest version
    return f"; {loc.target} {verb} with changes: {show_fields(loc.change.fields)}"


def _target_output(t: TargetChange) -> OutputState:
    """`identical` when a target renders the same documents (Kustomization objects aside:
    they are judged on their own), `moved` when all it lost or gained is rendered with the
    same content by another target of its scope, `changed` otherwise."""
    if t.status == "error":
        return "unknown"
    if t.status == "match":
        return "identical"
    if t.status != "changed":
        return "changed"
    for c in t.changed:
        if not (c.reformat_only or c.ignored_only or is_flux_kustomization(c.id)):
            return "changed"
    moved = False
    entries: list[RemovedDoc | AddedDoc] = [*t.removed, *t.added]
    for entry in entries:
        if is_flux_kustomization(entry.doc.id):
            continue
        if not entry.accounted:
            return "changed"
        moved = True
    return "moved" if moved else "identical"


def _output_field(f: FieldChange) -> bool:
    segs = f.segments
    return len(segs) >= 2 and segs[0] == "spec" and segs[1] in OUTPUT_FIELDS


def repaired_note(analysis: Analysis) -> str:
    """`2 targets repaired: they failed on the base; 1 renders now, 1 is gone`."""
    fixed = sum(1 for r in analysis.repairs if r.outcome == "fixed")
    gone = len(analysis.repairs) - fixed
    parts = [f"{fixed} renders now"] if fixed else []
    if gone:
        parts.append(f"{gone} {'is' if gone == 1 else 'are'} gone")
    return f"{_plural(len(analysis.repairs), 'target')} repaired: failed on the base; " + ", ".join(
        parts
    )


def preexisting_note(n: int) -> str:
    return (
        f"{_plural(n, 'pre-existing render error')}: failing the same way on both sides, "
        "inputs unchanged, not judged"
    )


def _orchestration_field(f: FieldChange, *, allow_owner: bool) -> bool:
    from harness.compare.docdiff import is_owner_label

    segs = f.segments
    if len(segs) >= 2 and segs[0] == "spec" and segs[1] in ORCHESTRATION_FIELDS:
        return True
    if len(segs) == 1 and segs[0] == "spec" and _only_orchestration(f):
        return True
    return allow_owner and is_owner_label(f)


def _only_orchestration(f: FieldChange) -> bool:
    keys = set()
    for value in (f.before, f.after):
        if isinstance(value, dict):
            keys |= set(value)
    return keys <= set(ORCHESTRATION_FIELDS)


def _spec(doc: Document) -> dict[str, Any]:
    try:
        obj = yamlload.load(doc.text)
    except yamlload.YAMLError:
        return {}
    spec = obj.get("spec") if isinstance(obj, dict) else None
    return spec if isinstance(spec, dict) else {}


def orchestration_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """`prune true -> false`, `interval 10m -> 1h`, `dependsOn +cilium`: scalars, then lists."""
    from harness.compare.docdiff import show_value

    out: list[str] = []
    for key in sorted(ORCHESTRATION_FIELDS, key=lambda k: k in ("dependsOn", "healthChecks")):
        old, new = before.get(key), after.get(key)
        if old == new and type(old) is type(new):
            continue
        if key in ("dependsOn", "healthChecks"):
            out.append(f"{key} {_list_change(key, old, new)}")
        else:
            out.append(f"{key} {show_value(old, key in before)} -> {show_value(new, key in after)}")
    return out


def _ref(key: str, item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    parts = [str(item["kind"])] if key == "healthChecks" and item.get("kind") else []
    if item.get("namespace"):
        parts.append(str(item["namespace"]))
    parts.append(str(item.get("name", "?")))
    return "/".join(parts)


def _list_change(key: str, old: Any, new: Any) -> str:
    olds = [_ref(key, i) for i in old] if isinstance(old, list) else []
    news = [_ref(key, i) for i in new] if isinstance(new, list) else []
    tokens = [f"+{n}" for n in news if n not in olds] + [f"-{o}" for o in olds if o not in news]
    if tokens:
        return " ".join(tokens)
    return "reordered" if olds != news else "changed"


def _ks_name(doc_id: DocId) -> str:
    return (
        doc_id.name
        if doc_id.namespace in ("", "flux-system")
        else (f"{doc_id.namespace}/{doc_id.name}")
    )


def _short(target: str) -> str:
    """`dev/flux-system/platform` -> `platform` (Flux targets are `<cluster>/<ns>/<name>`)."""
    return target.rsplit("/", 1)[-1]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def move_groups(analysis: Analysis) -> tuple[MoveGroup, ...]:
    """`platform -> cilium: 3 documents`, from Flux moves, else from path relocations."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}

    def add(src: str, dst: str, doc_id: DocId, cluster: str | None, ident: bool) -> None:
        g = groups.setdefault((src, dst), {"ids": set(), "clusters": set(), "identical": True})
        g["ids"].add(doc_id)
        if cluster:
            g["clusters"].add(cluster)
        g["identical"] = g["identical"] and ident

    flux_moves = [m for m in analysis.moves if not is_flux_kustomization(m.id)]
    for m in flux_moves:
        add(_short(m.source), _short(m.dest), m.id, m.where, m.identical)
    level: Literal["flux", "path"] = "flux"
    if not flux_moves:
        level = "path"
        for t in analysis.targets:
            if t.kind != "path":
                continue
            for r in t.removed:
                best = _closest(t.name, [loc for loc in r.still_rendered_by if loc.same_content])
                if best is not None and not is_flux_kustomization(r.doc.id):
                    add(t.name, best.target, r.doc.id, None, best.identical)
    return tuple(
        MoveGroup(
            src, dst, tuple(sorted(g["ids"])), tuple(sorted(g["clusters"])), g["identical"], level
        )
        for (src, dst), g in sorted(groups.items())
    )


def _closest(name: str, locations: Sequence[Any]) -> Any:
    """Where a document went: a target it arrived in (not one that rendered it all along,
    like an aggregating parent), the nearest in the tree (`platform` -> `platform/cilium`)."""
    if not locations:
        return None
    locations = [loc for loc in locations if loc.paired] or list(locations)

    def key(loc: Any) -> tuple[int, int, str]:
        common = os.path.commonpath([name, loc.target]) if name != "." else ""
        return (-len(common), len(loc.target), loc.target)

    return min(locations, key=key)
