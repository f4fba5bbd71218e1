"""Two snapshots -> everything `diff` reports: per-target changes with field detail, where every
removed or added document went or came from, Flux ownership moves, duplicate owners, errors.

`snapshots.py` says what differs per target by identity and sha256; this module explains it
across targets. Path targets are traced against path targets, Flux targets against the Flux
targets of the same applied-to cluster (flux/ksgraph.py: the cluster itself, or the remote a
`spec.kubeConfig` names): only those render the same thing into one cluster, so a Namespace
leaving the production spoke's Kustomization is no move into the staging one's.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.compare.snapshots import Comparison, Status, compare
from harness.core.errors import ConfigError
from harness.core.model import DocId, Document, Snapshot, Target, TargetResult
from harness.flux.ksgraph import ClusterGraph, Placement, graphs, split_target_name

if TYPE_CHECKING:  # docdiff and fieldpath load when a document differs (see `_Differ`)
    from harness.compare.docdiff import DocChange
    from harness.compare.fieldpath import FieldPattern
    from harness.core.config import Config

Side = Literal["base", "head"]
Scope = tuple[str, str | None]  # (kind, applied-to cluster): targets rendering one object


@dataclass(frozen=True)
class Location:
    """Another target rendering the same identity on the other side, and how close it is."""

    target: str
    change: DocChange
    paired: bool = False  # the identity arrived there (for a removal) / left there (an addition)
    stayed: bool = False  # that target renders these very bytes on both sides (no change there)

    @property
    def identical(self) -> bool:
        return self.change.identical

    @property
    def same_content(self) -> bool:
        return self.change.same_content


def _relocations(copies: tuple[Location, ...], strict: bool) -> tuple[Location, ...]:
    """The copies that make a removal or addition a relocation (RemovedDoc, AddedDoc)."""
    return tuple(c for c in copies if c.paired or not (strict or (c.stayed and not c.same_content)))


@dataclass(frozen=True)
class RemovedDoc:
    """A document gone from one target, with every target of its scope rendering it in head.

    `strict` (Flux targets: one cluster) makes only a copy that *arrived* (`paired`) a
    relocation: a Kustomization that rendered it all along is no place it went to. Path
    targets also take a copy that was there all along (a directory rendered through a new or
    dropped aggregating one), unless that copy is unchanged and has other content: then it
    is another variant (a second overlay), not where this one went."""

    doc: Document
    still_rendered_by: tuple[Location, ...] = ()
    strict: bool = False

    @property
    def relocations(self) -> tuple[Location, ...]:
        """Where it went: the copies that explain the removal as a move."""
        return _relocations(self.still_rendered_by, self.strict)

    @property
    def accounted(self) -> bool:
        return any(loc.same_content for loc in self.relocations)


@dataclass(frozen=True)
class AddedDoc:
    """A document new in one target, with every target of its scope that rendered it in base.

    `strict` (Flux targets): only a copy that *left* (`paired`) makes it a relocation; one
    still rendered where it was makes this an addition where it now also appears (for a
    path target: unless it has the same content, see RemovedDoc)."""

    doc: Document
    previously_rendered_by: tuple[Location, ...] = ()
    strict: bool = False

    @property
    def relocations(self) -> tuple[Location, ...]:
        """Where it came from: the copies that explain the addition as a move."""
        return _relocations(self.previously_rendered_by, self.strict)

    @property
    def accounted(self) -> bool:
        return any(loc.same_content for loc in self.relocations)


@dataclass(frozen=True)
class TargetChange:
    """One target across both sides; `status == "error"` means it was not compared."""

    name: str
    kind: str
    cluster: str | None
    status: Status
    documents_before: int | None
    documents_after: int | None
    added: tuple[AddedDoc, ...] = ()
    removed: tuple[RemovedDoc, ...] = ()
    changed: tuple[DocChange, ...] = ()
    unchanged: int = 0
    applied_to: str | None = None  # the applied-to cluster (ksgraph); None: the cluster

    @property
    def where(self) -> str | None:
        """The cluster its objects land in: the applied-to cluster, else the cluster."""
        return self.applied_to or self.cluster

    @property
    def differs(self) -> bool:
        return self.status in ("changed", "added", "removed")


@dataclass(frozen=True)
class Move:
    """An identity that left one Flux Kustomization of a cluster and appeared in another."""

    id: DocId
    cluster: str | None
    source: str
    dest: str
    change: DocChange
    applied_to: str | None = None  # the remote it moved within (ksgraph), None: the cluster

    @property
    def where(self) -> str | None:
        return self.applied_to or self.cluster

    @property
    def identical(self) -> bool:
        return self.change.identical

    @property
    def pure_ownership(self) -> bool:
        return not self.change.identical and self.change.same_content


@dataclass(frozen=True)
class Duplicate:
    """One identity rendered by several Flux Kustomizations of one cluster in head."""

    id: DocId
    cluster: str | None
    targets: tuple[str, ...]
    in_base: bool
    applied_to: str | None = None  # the remote it is rendered twice into, None: the cluster

    @property
    def where(self) -> str | None:
        return self.applied_to or self.cluster


@dataclass(frozen=True)
class RenderError:
    target: str
    side: Side
    message: str


@dataclass(frozen=True)
class PreexistingError:
    """A target failing on both sides with the same message while its inputs did not change:
    the change neither caused nor touched it, so it is shown once and not judged."""

    target: str
    message: str


@dataclass(frozen=True)
class NotJudged:
    """Helm targets whose chart cannot be fetched on either side (a private registry, an
    offline runner) while their HelmRelease, values inputs and chart reference are the same
    on both: there is nothing to compare and nothing the change did, so they are neither
    errors nor changes. One per chart source: a repository or registry URL (homelab repos
    give each app its own OCIRepository of one chart, so the objects are listed apart)."""

    url: str  # the repository or OCI artifact URL (HelmInfo.url)
    sources: tuple[str, ...]  # `OCIRepository/media/app`, ... (HelmInfo.source)
    targets: tuple[str, ...]
    message: str  # the head side's error of the first target


@dataclass(frozen=True)
class Repair:
    """A target that failed on the base and is repaired on the head: it renders there
    (`fixed`: its documents are the target's `added`) or it is gone (`removed`). Not an
    error of the change: the change is what makes it work."""

    target: str
    message: str  # the base side's error
    outcome: Literal["fixed", "removed"]
    documents_after: int = 0


@dataclass(frozen=True)
class Origin:
    """Where one side came from: a git commit, the working tree, or the goldens."""

    source: Literal["git", "worktree", "goldens"]
    label: str
    ref: str | None = None
    sha: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class Summary:
    """Counts over all targets; documents are counted once per target that renders them."""

    targets: int
    targets_changed: int
    added: int
    removed: int
    changed: int
    reformat_only: int
    ignored_only: int
    relocated: int
    moved: int
    moved_identical: int
    moved_pure_ownership: int
    duplicates: int
    errors: int
    unchanged_targets: int
    documents_before: int
    documents_after: int


@dataclass(frozen=True)
class Analysis:
    base: Snapshot
    head: Snapshot
    targets: tuple[TargetChange, ...]
    moves: tuple[Move, ...] = ()
    duplicates: tuple[Duplicate, ...] = ()
    errors: tuple[RenderError, ...] = ()
    preexisting: tuple[PreexistingError, ...] = ()
    not_judged: tuple[NotJudged, ...] = ()
    repairs: tuple[Repair, ...] = ()
    # path targets a Flux target deploys on either side (`deployed_paths`): their copies
    # are judged as those Flux targets' (path targets are a cluster only where none does)
    deployed: frozenset[str] = frozenset()

    @property
    def differing(self) -> list[TargetChange]:
        return [t for t in self.targets if t.differs]

    def is_preexisting(self, target: str) -> bool:
        return any(p.target == target for p in self.preexisting)

    def is_not_judged(self, target: str) -> bool:
        return any(target in n.targets for n in self.not_judged)


class _Differ:
    """docdiff's `Differ`, imported and made when the first document pair is compared: a
    diff in which no document changed never loads docdiff, fieldpath or masking."""

    def __init__(self, ignore: Sequence[FieldPattern] = (), unified: int | None = None) -> None:
        self.ignore = tuple(ignore)
        self.unified = unified
        self._differ: Any = None

    def compare(self, before: Document, after: Document, *, labels: tuple[str, str]) -> DocChange:
        if self._differ is None:
            from harness.compare.docdiff import Differ

            self._differ = Differ(self.ignore, self.unified)
        change: DocChange = self._differ.compare(before, after, labels=labels)
        return change


class _Index:
    """identity -> [(target, document)] per scope, for one side."""

    def __init__(self, results: Iterable[TargetResult], place: Placement) -> None:
        self.docs: dict[Scope, dict[DocId, list[tuple[str, Document]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        for result in results:
            if not result.ok:
                continue
            scope = _scope(result.target, place)
            for doc in result.documents:
                self.docs[scope][doc.id].append((result.name, doc))

    def find(self, scope: Scope, doc_id: DocId, exclude: str) -> list[tuple[str, Document]]:
        found = self.docs.get(scope, {}).get(doc_id, [])
        return [(name, doc) for name, doc in found if name != exclude]

    def holds(self, scope: Scope, target: str, doc: Document) -> bool:
        """Whether `target` renders these very bytes of `doc`'s identity on this side."""
        found = self.docs.get(scope, {}).get(doc.id, [])
        return any(name == target and d.sha256 == doc.sha256 for name, d in found)


def analyze(
    base: Snapshot,
    head: Snapshot,
    *,
    ignore: Sequence[FieldPattern] = (),
    unified: int | None = None,
    same_inputs: Collection[str] = (),
    repairs: bool = True,
) -> Analysis:
    """The whole explanation of `base -> head`; pure, never renders or prints.

    `same_inputs` names the targets whose inputs are known not to have changed (see
    inputs.py); only those can hold a pre-existing error. `repairs`: a base failure the head
    renders is a repair (False when the base is the goldens: their failures are a broken
    store)."""
    differ = _Differ(ignore, unified)
    labels = (base.label or "base", head.label or "head")
    comparison = compare(base, head, repairs=repairs)
    not_judged = unreachable_charts(base, head, same_inputs)
    set_aside = {t for n in not_judged for t in n.targets}
    preexisting = preexisting_errors(base, head, set(same_inputs) - set_aside)
    base_graphs, head_graphs = graphs(base), graphs(head)  # remembered per run for the rules
    base_place, head_place = Placement(base_graphs), Placement(head_graphs)
    # built on first use: most diffs add or remove no document, and both sides' indexes
    # cost a tenth of a second on a large repo
    indexes: dict[str, _Index] = {}

    def base_index() -> _Index:
        if "base" not in indexes:
            indexes["base"] = _Index(base.results.values(), base_place)
        return indexes["base"]

    def head_index() -> _Index:
        if "head" not in indexes:
            indexes["head"] = _Index(head.results.values(), head_place)
        return indexes["head"]

    ids: dict[str, dict[str, frozenset[DocId]]] = {}  # on first use, as the indexes

    def base_ids(name: str) -> frozenset[DocId]:
        if "base" not in ids:
            ids["base"] = _ids(base)
        return ids["base"].get(name, frozenset())

    def head_ids(name: str) -> frozenset[DocId]:
        if "head" not in ids:
            ids["head"] = _ids(head)
        return ids["head"].get(name, frozenset())

    targets: list[TargetChange] = []
    for t in comparison.targets:
        before, after = base.results.get(t.name), head.results.get(t.name)
        left = _scope(before.target, base_place) if before else (t.kind, t.cluster)
        came = _scope(after.target, head_place) if after else left
        removed = tuple(
            RemovedDoc(
                doc,
                tuple(
                    Location(
                        name,
                        differ.compare(doc, other, labels=labels),
                        doc.id not in base_ids(name),
                        base_index().holds(left, name, other),
                    )
                    for name, other in head_index().find(left, doc.id, t.name)
                ),
                strict=t.kind == "flux",
            )
            for doc in t.removed
        )
        added = tuple(
            AddedDoc(
                doc,
                tuple(
                    Location(
                        name,
                        differ.compare(other, doc, labels=labels),
                        doc.id not in head_ids(name),
                        head_index().holds(came, name, other),
                    )
                    for name, other in base_index().find(came, doc.id, t.name)
                ),
                strict=t.kind == "flux",
            )
            for doc in t.added
        )
        changed = tuple(differ.compare(old, new, labels=labels) for old, new in t.changed)
        targets.append(
            TargetChange(
                t.name,
                t.kind,
                t.cluster,
                t.status,
                t.documents_before,
                t.documents_after,
                added=added,
                removed=removed,
                changed=changed,
                unchanged=t.unchanged,
                applied_to=came[1] if came[1] != t.cluster else None,
            )
        )
    repaired = tuple(  # decided once, by compare_target
        Repair(
            t.name,
            t.repaired,
            "removed" if t.documents_after is None else "fixed",
            t.documents_after or 0,
        )
        for t in comparison.targets
        if t.repaired is not None
    )
    not_errors = {p.target for p in preexisting} | set_aside | {r.target for r in repaired}
    paths_differing = {t.name for t in targets if t.kind == "path" and t.differs}
    return Analysis(
        base=base,
        head=head,
        targets=tuple(targets),
        moves=_moves(targets, differ, labels),
        duplicates=_duplicates(base, head, base_place, head_place, base_graphs, head_graphs),
        errors=_errors(base, head, not_errors),
        preexisting=preexisting,
        not_judged=not_judged,
        repairs=repaired,
        deployed=frozenset(
            _deployed(base, paths_differing, base_graphs)
            | _deployed(head, paths_differing, head_graphs)
        ),
    )


def _below(name: str, directory: str) -> bool:
    return name.startswith(directory + "/")


def _deployed(
    snapshot: Snapshot, wanted: set[str], graphs_: Mapping[str, ClusterGraph] | None = None
) -> set[str]:
    """The `wanted` path targets a Flux target of this side deploys: a directory some
    Kustomization builds (its `spec.path`, or the directory a Flux target was built from),
    one below such a directory that has no kustomization file, or one whose every identity a
    built directory renders too (a base it includes). Decided on repo-relative names and on
    the side's own directories, so both sides of a diff (and the goldens) group alike."""
    if not wanted:
        return set()
    written = {
        node.path
        for graph in (graphs(snapshot) if graphs_ is None else graphs_).values()
        for node in graph.nodes.values()
        if node.path
    }
    built = {posixpath.normpath(p) for p in written}
    paths = {n: r for n, r in snapshot.results.items() if r.target.kind == "path" and r.ok}
    # the directories the Flux targets of this side were built from (a synthesised root has
    # no spec.path to read: its target's directory says it), on the side's own paths
    flux_dirs = {
        r.target.path for r in snapshot.results.values() if r.target.kind == "flux" and r.ok
    }
    path_dirs = {r.target.path for r in paths.values()}
    direct = {n for n, r in paths.items() if n in built or r.target.path in flux_dirs}
    # a built directory without a kustomization file (no path target): Flux's generated
    # kustomization takes the directories below it that have one
    # (never the tree's top: a build of the whole tree is no evidence about one directory)
    generated = [d for d in built if d not in snapshot.results and d != "."]
    outside = [d for d in flux_dirs if d not in path_dirs]
    below = _below_all(path_dirs) if path_dirs and outside else None
    unlisted = [d for d in outside if below is None or not below(d)]
    out = {
        n
        for n in wanted
        if n in direct
        or any(_below(n, d) for d in generated)
        or (n in paths and any(paths[n].target.path.is_relative_to(d) for d in unlisted))
    }
    rest = wanted - out
    if rest and direct:  # the identities of the built directories, read only when asked
        theirs = [frozenset(d.id for d in paths[n].documents) for n in direct]
        for name in rest:
            result = paths.get(name)
            ids = frozenset(d.id for d in result.documents) if result is not None else frozenset()
            if ids and any(ids <= built_ids for built_ids in theirs):
                out.add(name)
    return out


def _below_all(paths: Collection[Path]) -> Callable[[Path], bool]:
    """Whether every one of `paths` is a directory or below it (their common path is): the
    paths below one directory are one run in the order of their parts, so the first and the
    last of that order say it for all (no common path of every one computed)."""
    first = min(paths, key=lambda p: p.parts)
    last = max(paths, key=lambda p: p.parts)
    return lambda directory: first.is_relative_to(directory) and last.is_relative_to(directory)


def _scope(target: Target, place: Placement) -> Scope:
    """(kind, applied-to cluster) of a target; a path target's cluster is None."""
    if target.kind == "path":
        return (target.kind, target.cluster)
    return (target.kind, place.of(target))


def _ids(snapshot: Snapshot) -> dict[str, frozenset[DocId]]:
    return {
        name: frozenset(d.id for d in r.documents) for name, r in snapshot.results.items() if r.ok
    }


def preexisting_errors(
    base: Snapshot, head: Snapshot, same_inputs: Collection[str]
) -> tuple[PreexistingError, ...]:
    """Targets failing on both sides with the same message and unchanged inputs."""
    out = []
    for name in sorted(set(same_inputs)):
        before, after = base.results.get(name), head.results.get(name)
        if before is None or after is None or before.ok or after.ok:
            continue
        if before.error == after.error:
            out.append(PreexistingError(name, after.error or "render failed"))
    return tuple(out)


def unreachable_charts(
    base: Snapshot, head: Snapshot, same_inputs: Collection[str]
) -> tuple[NotJudged, ...]:
    """Helm targets failing on both sides because their chart could not be fetched, with
    unchanged inputs (compare/inputs.py), grouped by chart source."""
    groups: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for name in sorted(set(same_inputs)):
        before, after = base.results.get(name), head.results.get(name)
        if before is None or after is None or before.ok or after.ok:
            continue
        a, b = before.target.helm, after.target.helm
        if a is None or b is None or not (a.unreachable and b.unreachable):
            continue
        groups[b.url or b.source].append((name, b.source, after.error or "chart unreachable"))
    return tuple(
        NotJudged(
            url,
            tuple(sorted({s for _n, s, _m in found})),
            tuple(n for n, _s, _m in found),
            found[0][2],
        )
        for url, found in sorted(groups.items())
    )


def _moves(
    targets: Sequence[TargetChange], differ: _Differ, labels: tuple[str, str]
) -> tuple[Move, ...]:
    left: dict[tuple[str | None, DocId], list[tuple[str, Document]]] = defaultdict(list)
    arrived: dict[tuple[str | None, DocId], list[tuple[str, Document]]] = defaultdict(list)
    for t in targets:
        if t.kind != "flux" or not t.differs:
            continue
        for r in t.removed:
            left[(t.where, r.doc.id)].append((t.name, r.doc))
        for a in t.added:
            arrived[(t.where, a.doc.id)].append((t.name, a.doc))
    if not left or not arrived:
        return ()
    cluster_of = {t.name: t.cluster for t in targets}
    moves = [
        Move(
            doc_id,
            cluster_of[src],
            src,
            dst,
            differ.compare(old, new, labels=labels),
            where if where != cluster_of[src] else None,
        )
        for (where, doc_id), sources in left.items()
        for src, old in sources
        for dst, new in arrived.get((where, doc_id), [])
        if src != dst
    ]
    return tuple(sorted(moves, key=lambda m: (m.cluster or "", m.source, m.dest, m.id)))


def _owners(
    snapshot: Snapshot, place: Placement
) -> dict[tuple[str | None, str | None, DocId], set[str]]:
    """(cluster, applied-to cluster, identity) -> the flux targets rendering it."""
    owners: dict[tuple[str | None, str | None, DocId], set[str]] = defaultdict(set)
    for result in snapshot.results.values():
        if result.ok and result.target.kind == "flux":
            where = place.of(result.target)
            for doc in result.documents:
                owners[(result.target.cluster, where, doc.id)].add(result.name)
    return owners


_Owners = dict[tuple[str | None, str | None, DocId], set[str]]


class _GraphOwners:
    """`_owners` answered from the cluster graphs' per-applied-to-cluster indexes (built
    for placement and the hazard rules anyway), without a walk of every document: valid
    when every successful flux target is its cluster graph's node of its own name."""

    def __init__(self, graphs_: Mapping[str, ClusterGraph]) -> None:
        self.graphs = graphs_

    @staticmethod
    def covers(snapshot: Snapshot, graphs_: Mapping[str, ClusterGraph], place: Placement) -> bool:
        for result in snapshot.results.values():
            if not result.ok or result.target.kind != "flux":
                continue
            cluster = result.target.cluster
            graph = graphs_.get(cluster) if cluster is not None else None
            parts = split_target_name(result.name)
            if graph is None or parts is None or parts[0] != cluster:
                return False
            key = (parts[1], parts[2])
            if graph.results.get(key) is not result:
                return False
            if place.of(result.target) != graph.applied_to(key):
                return False
        return True

    def owners(self, cluster: str, where: str, doc_id: DocId) -> set[str]:
        graph = self.graphs.get(cluster)
        if graph is None:
            return set()
        return {graph.results[key].name for key, _doc in graph.within(where).get(doc_id, ())}

    def shared(self) -> _Owners:
        """Only the identities rendered by more than one flux target."""
        out: _Owners = {}
        for cluster, graph in self.graphs.items():
            for where, index in graph.indexes.items():
                for doc_id, found in index.items():
                    if len(found) > 1:
                        names = {graph.results[key].name for key, _doc in found}
                        if len(names) > 1:
                            out[(cluster, where, doc_id)] = names
        return out


def _duplicates(
    base: Snapshot,
    head: Snapshot,
    base_place: Placement,
    head_place: Placement,
    base_graphs: Mapping[str, ClusterGraph],
    head_graphs: Mapping[str, ClusterGraph],
) -> tuple[Duplicate, ...]:
    if _GraphOwners.covers(base, base_graphs, base_place) and _GraphOwners.covers(
        head, head_graphs, head_place
    ):
        before_graphs, after_graphs = _GraphOwners(base_graphs), _GraphOwners(head_graphs)
        found = [
            Duplicate(
                doc_id,
                cluster,
                tuple(sorted(names)),
                len(before_graphs.owners(cluster, where, doc_id)) > 1,
                where if where != cluster else None,
            )
            for (cluster, where, doc_id), names in after_graphs.shared().items()
            if cluster is not None and where is not None
        ]
        return tuple(sorted(found, key=lambda d: (d.cluster or "", d.applied_to or "", d.id)))
    return _walked_duplicates(base, head, base_place, head_place)


def _walked_duplicates(
    base: Snapshot, head: Snapshot, base_place: Placement, head_place: Placement
) -> tuple[Duplicate, ...]:
    """`_duplicates` by a walk of every flux document of both sides (its definition)."""
    before = _owners(base, base_place)
    out = [
        Duplicate(
            doc_id,
            cluster,
            tuple(sorted(names)),
            len(before.get((cluster, where, doc_id), ())) > 1,
            where if where != cluster else None,
        )
        for (cluster, where, doc_id), names in _owners(head, head_place).items()
        if len(names) > 1
    ]
    return tuple(sorted(out, key=lambda d: (d.cluster or "", d.applied_to or "", d.id)))


def _errors(
    base: Snapshot, head: Snapshot, set_aside: Collection[str] = ()
) -> tuple[RenderError, ...]:
    """Render errors that count: every failure except those `set_aside` (pre-existing,
    unjudged charts, repaired targets)."""
    sides: tuple[tuple[Side, Snapshot], ...] = (("base", base), ("head", head))
    out: list[RenderError] = []
    failed = {n for side in (base, head) for n, r in side.results.items() if not r.ok}
    for name in sorted(failed - set(set_aside)):
        for side, snapshot in sides:
            result = snapshot.results.get(name)
            if result is not None and not result.ok:
                out.append(RenderError(name, side, result.error or "render failed"))
    return tuple(out)


def summarize(analysis: Analysis) -> Summary:
    targets = analysis.targets
    return Summary(
        targets=len(targets),
        targets_changed=sum(1 for t in targets if t.differs),
        added=sum(len(t.added) for t in targets),
        removed=sum(len(t.removed) for t in targets),
        changed=sum(len(t.changed) for t in targets),
        reformat_only=sum(1 for t in targets for c in t.changed if c.reformat_only),
        ignored_only=sum(1 for t in targets for c in t.changed if c.ignored_only),
        relocated=sum(1 for t in targets for r in t.removed if r.accounted),
        moved=len(analysis.moves),
        moved_identical=sum(1 for m in analysis.moves if m.identical),
        moved_pure_ownership=sum(1 for m in analysis.moves if m.pure_ownership),
        duplicates=len(analysis.duplicates),
        errors=len(analysis.errors),
        unchanged_targets=sum(1 for t in targets if t.status == "match"),
        documents_before=sum(t.documents_before or 0 for t in targets),
        documents_after=sum(t.documents_after or 0 for t in targets),
    )


def ignore_patterns(cfg: Config) -> tuple[FieldPattern, ...]:
    """`ignore_fields` from the config, compiled; a bad pattern is a config error."""
    if not cfg.ignore_fields:
        return ()
    from harness.compare import fieldpath

    try:
        return fieldpath.compile_patterns(cfg.ignore_fields)
    except ValueError as exc:
        raise ConfigError(f"ignore_fields: {exc}") from None


def explain_changes(
    comparison: Comparison, ignore: Sequence[FieldPattern] = ()
) -> dict[str, tuple[DocChange, ...]]:
    """Field-level detail for every changed document of a comparison (what `check` shows)."""
    differ = _Differ(ignore)
    labels = (comparison.base.label or "base", comparison.head.label or "head")
    return {
        t.name: tuple(differ.compare(old, new, labels=labels) for old, new in t.changed)
        for t in comparison.targets
        if t.changed
    }
