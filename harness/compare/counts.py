"""The one counting model behind every diff output (text, comment, JSON, JUnit, GitHub).

Stated in docs/json-schemas.md ("Counting"); every headline number is a field here:

- **Targets.** Every target of either side is exactly one of: `targets_changed` (compared
  and its documents differ: changed, new or gone), `targets_unchanged`, `targets_error` (a
  render error that counts), `targets_preexisting_error` (failing the same way on both
  sides with unchanged inputs) or `targets_not_judged` (helm targets whose chart cannot be
  fetched on either side, inputs unchanged). `targets_compared` = changed + unchanged.
  `targets_repaired` counts, among the changed, the targets that failed on the base and
  render on the head (their documents are added) or are gone.
- **Documents** are the objects one target renders, Flux Kustomization objects included,
  counted once per target that renders them (`documents_before`/`documents_after`, the
  per-target tables).
- **Changes** are what the verdict judges: documents (Flux Kustomization objects apart)
  changed, added, removed, or moved with changes, and, counted apart, Flux Kustomization
  objects whose change is real; `change_targets` are the targets those changes are in. A
  relocation or move with the same content is no change. Headlines never add documents and
  Kustomizations together.
- **Objects** are those changes said once (compare/groups.py): one identity changing in
  several targets (a shared base deployed by two clusters) is one object. `objects` counts
  distinct identities with a real document change, `objects_changed`/`_added`/`_removed`/
  `_moved_with_changes` the same per kind of change, and `clusters` the clusters whose
  targets hold them: `1 object changes in 2 clusters (5 targets)`. A path target's copy
  is the Flux copy it is deployed as (`ObjectIds`): kustomize leaves a namespaced object
  without a namespace where the directory sets none, Flux gives it one (`targetNamespace`),
  so `OCIRepository/podinfo` of `apps/src` and `OCIRepository/flux-system/podinfo` of
  `dev/flux-system/src` are one object. Where several Flux copies exist (a base deployed
  into two namespaces), a directory some Flux target builds as its `spec.path` is the copy
  of those targets only (an overlay of one cluster), any other the copy of each. `clusters`
  counts applied-to clusters (flux/ksgraph.py): a spoke a `kubeConfig` names is one. A Flux
  Kustomization object changing in every target rendering it is one Kustomization
  (`kustomizations_changed`).
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from harness.compare.analyze import Analysis, TargetChange
from harness.core.model import DocId
from harness.flux.ksgraph import graphs

if TYPE_CHECKING:  # annotations only: `check` prints without loading the diff gate
    from harness.compare.gate import Verdict

DOCUMENT_COUNTERS = ("changed", "added", "removed", "moved_with_changes")


@dataclass(frozen=True)
class Counts:
    targets: int
    targets_compared: int
    targets_changed: int
    targets_unchanged: int
    targets_error: int
    targets_preexisting_error: int
    targets_repaired: int
    documents_before: int
    documents_after: int
    changed: int
    added: int
    removed: int
    moved_with_changes: int
    kustomizations_changed: int
    duplicates: int
    change_targets: int
    targets_not_judged: int = 0
    objects: int = 0
    objects_changed: int = 0
    objects_added: int = 0
    objects_removed: int = 0
    objects_moved_with_changes: int = 0
    clusters: int = 0

    @property
    def documents_changing(self) -> int:
        return self.changed + self.added + self.removed + self.moved_with_changes

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "documents_changing": self.documents_changing}


def _change_ids(t: TargetChange) -> Iterable[DocId]:
    yield from (a.doc.id for a in t.added)
    yield from (r.doc.id for r in t.removed)
    yield from (c.id for c in t.changed)


class ObjectIds:
    """Which object a (target, document) difference is: the one identity model of counts and
    change groups. A path target's document without a namespace, where a Flux or helm
    target's difference has the same group, kind and name in a namespace, is that copy (or
    those copies: one base deployed into two namespaces is two objects); any other document
    is its own identity."""

    def __init__(self, analysis: Analysis) -> None:
        self.kind = {t.name: t.kind for t in analysis.targets}
        self.ids: dict[tuple[str, str], DocId] = {}
        self.deployed: dict[tuple[str, str, str], set[tuple[DocId, str]]] = defaultdict(set)
        for t in analysis.targets:
            for doc_id in _change_ids(t):
                self.ids[(t.name, str(doc_id))] = doc_id
                if t.kind != "path" and doc_id.namespace:
                    self.deployed[(doc_id.group, doc_id.kind, doc_id.name)].add((doc_id, t.name))
        # path target name -> the flux targets whose spec.path is that directory
        self.builds: dict[str, set[str]] = defaultdict(set)
        if any(kind == "path" for kind in self.kind.values()):
            for side in (analysis.base, analysis.head):
                for graph in graphs(side).values():
                    for node in graph.nodes.values():
                        if node.path:
                            self.builds[posixpath.normpath(node.path)].add(node.target)

    def of(self, target: str, doc_id: DocId) -> tuple[DocId, ...]:
        """The objects this target's document is (one, unless a base is deployed twice):
        the copies of the Flux targets building this very directory when some hold it (a
        cluster's overlay is its own cluster's object), else every deployed copy (a shared
        base)."""
        if self.kind.get(target) == "path" and not doc_id.namespace:
            found = self.deployed.get((doc_id.group, doc_id.kind, doc_id.name))
            if found:
                builds = self.builds.get(target, set())
                mine = {i for i, name in found if name in builds}
                return tuple(sorted(mine or {i for i, _n in found}))
        return (doc_id,)

    def named(self, target: str, doc_id: str) -> tuple[str, ...]:
        """`of` for a verdict reason's (target, id string)."""
        known = self.ids.get((target, doc_id))
        return (doc_id,) if known is None else tuple(str(i) for i in self.of(target, known))


def count(analysis: Analysis, verdict: Verdict) -> Counts:
    targets = analysis.targets
    preexisting = {p.target for p in analysis.preexisting}
    errors = {e.target for e in analysis.errors}
    tally = verdict.tally
    documents = [
        r
        for r in verdict.reasons
        if r.target is not None and r.id is not None and r.counter in DOCUMENT_COUNTERS
    ]
    document_targets = {r.target for r in documents}
    ids = ObjectIds(analysis)

    def objects(counters: Iterable[str]) -> set[str]:
        return {
            o
            for r in verdict.reasons
            if r.counter in counters and r.target is not None and r.id is not None
            for o in ids.named(r.target, r.id)
        }

    by_counter = {counter: len(objects((counter,))) for counter in DOCUMENT_COUNTERS}
    cluster_of = {t.name: t.where for t in targets}  # a remote (kubeConfig) is a cluster
    clusters = {cluster_of.get(r.target or "") for r in documents} - {None}
    changed = sum(1 for t in targets if t.differs)
    unchanged = sum(1 for t in targets if t.status == "match")
    return Counts(
        targets=len(targets),
        targets_compared=changed + unchanged,
        targets_changed=changed,
        targets_unchanged=unchanged,
        targets_error=len(errors),
        targets_preexisting_error=len(preexisting),
        targets_repaired=len(analysis.repairs),
        documents_before=sum(t.documents_before or 0 for t in targets),
        documents_after=sum(t.documents_after or 0 for t in targets),
        changed=tally.changed,
        added=tally.added,
        removed=tally.removed,
        moved_with_changes=tally.moved_with_changes,
        kustomizations_changed=len(objects(("flux_kustomizations",))),
        duplicates=tally.duplicates,
        change_targets=len(document_targets),
        targets_not_judged=sum(len(n.targets) for n in analysis.not_judged),
        objects=len(objects(DOCUMENT_COUNTERS)),
        objects_changed=by_counter["changed"],
        objects_added=by_counter["added"],
        objects_removed=by_counter["removed"],
        objects_moved_with_changes=by_counter["moved_with_changes"],
        clusters=len(clusters),
    )


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def objects_phrase(c: Counts) -> str:
    """`1 object changes in 2 clusters (5 targets)`, or `3 objects change in 3 targets`."""
    verb = "changes" if c.objects == 1 else "change"
    where = plural(c.change_targets, "target")
    if c.clusters:
        where = f"{plural(c.clusters, 'cluster')} ({where})"
    return f"{plural(c.objects, 'object')} {verb} in {where}"


def objects_breakdown(c: Counts) -> str:
    """`1 changed, 0 added, 0 removed[, 2 moved with changes]`: objects per kind of change."""
    parts = [
        f"{c.objects_changed} changed",
        f"{c.objects_added} added",
        f"{c.objects_removed} removed",
    ]
    if c.objects_moved_with_changes:
        parts.append(f"{c.objects_moved_with_changes} moved with changes")
    return ", ".join(parts)


def targets_line(c: Counts) -> str:
    """`6 targets: 1 differs, 4 unchanged, 0 render errors, 1 pre-existing error`."""
    line = (
        f"{plural(c.targets, 'target')}: {c.targets_changed} "
        f"{'differs' if c.targets_changed == 1 else 'differ'}, {c.targets_unchanged} unchanged, "
        f"{plural(c.targets_error, 'render error')}"
    )
    if c.targets_preexisting_error:
        line += f", {plural(c.targets_preexisting_error, 'pre-existing error')}"
    if c.targets_not_judged:
        line += f", {c.targets_not_judged} not judged (chart unreachable)"
    if c.targets_repaired:
        line += f", {c.targets_repaired} repaired"
    return line
