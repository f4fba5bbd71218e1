"""The Flux Kustomization graph of every cluster, for pictures: built once, formatted in report/.

Nodes are the Kustomizations of a cluster (what its flux targets render, via
`hazards.model.graphs`); an edge always points from what must come first to what comes after:

- `dependsOn`: B -> A when A dependsOn B (a dependency that does not exist is a `missing` node);
  also between the Kustomizations rendering two HelmReleases when one dependsOn the other,
  labelled `HelmRelease <dependency> -> <dependent>` (releases `namespace/name`);
- `substituteFrom`: the Kustomization writing a ConfigMap/Secret -> the one substituting from it;
- `crd`: the Kustomization rendering a CRD (or, failing that, a HelmRelease that most likely
  installs it) -> the one rendering custom resources of it;
- `move` (only against a base): documents that left one Kustomization for another.

`compare` marks the change against a base (added, removed, changed, moved-into, moved-out-of),
`with_hazards` puts findings on the nodes and edges they name, and `focus` keeps the
neighbourhood of some nodes so a large cluster stays readable. A picture of a big repo is
made readable by `for_picture`: past GROUP_ABOVE Kustomizations in a cluster, the ones the
change and its hazards leave alone are drawn one box per namespace (`collapse`), and past
CRD_EDGES_ABOVE the CRD-provider edges (most of a homelab's edges) are left out unless asked
for (`only_edges`); what was left out is counted, for the legend. Everything is plain data.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from harness.core.model import DocId, Snapshot
from harness.flux.ksgraph import ClusterGraph, Key, KsNode, display, graphs
from harness.hazards import k8s
from harness.hazards.finding import Finding, rank
from harness.hazards.rules.crd_order import HELMRELEASE, HelmRelease

EdgeKind = Literal["dependsOn", "substituteFrom", "crd", "move"]
Change = Literal["unchanged", "added", "removed", "changed"]
EDGE_KINDS: tuple[EdgeKind, ...] = ("dependsOn", "substituteFrom", "crd", "move")
EdgeId = tuple[EdgeKind, Key, Key, str]
CHANGED = "changed"  # the focus name that means "every node the change touches"
GROUP_ABOVE = 40  # Kustomizations in a cluster beyond which a picture groups by namespace
CRD_EDGES_ABOVE = 40  # Kustomizations in a cluster beyond which CRD edges are off by default


@dataclass(frozen=True)
class Mark:
    """A hazard finding as it sits on a node or an edge."""

    id: str
    rule: str
    severity: str
    message: str


@dataclass(frozen=True)
class Node:
    cluster: str
    namespace: str
    name: str
    documents: int | None = None  # None: not rendered (failed, missing, or removed)
    prune: bool = True
    path: str = ""
    error: str | None = None
    missing: bool = False  # only named by a dependsOn
    change: Change = "unchanged"
    moved_in: int = 0
    moved_out: int = 0
    hazards: tuple[Mark, ...] = ()
    group: str = ""  # its namespace for grouping (the object's, else its targetNamespace)
    members: tuple[str, ...] = ()  # a group box (`collapse`): the Kustomizations it stands for

    @property
    def key(self) -> Key:
        return (self.namespace, self.name)

    @property
    def display(self) -> str:
        if self.members:
            n = len(self.members)
            return f"{self.name} ({n} Kustomization{'' if n == 1 else 's'})"
        return display(self.key)

    @property
    def target(self) -> str:
        return f"{self.cluster}/{self.namespace}/{self.name}"

    @property
    def marks(self) -> tuple[str, ...]:
        """Change marks in reading order: `added`, `changed`, `moved-into`, `moved-out-of`."""
        out: list[str] = [self.change] if self.change != "unchanged" else []
        if self.moved_in:
            out.append("moved-into")
        if self.moved_out:
            out.append("moved-out-of")
        return tuple(out)

    @property
    def touched(self) -> bool:
        return bool(self.marks)

    @property
    def severity(self) -> str | None:
        return worst(self.hazards)


@dataclass(frozen=True)
class Edge:
    cluster: str
    source: Key
    target: Key
    kind: EdgeKind
    label: str = ""
    documents: tuple[str, ...] = ()  # what a move carried, or the objects behind the edge
    change: Change = "unchanged"
    hazards: tuple[Mark, ...] = ()

    @property
    def ident(self) -> EdgeId:
        return (self.kind, self.source, self.target, self.label)

    @property
    def severity(self) -> str | None:
        return worst(self.hazards)


@dataclass(frozen=True)
class ClusterView:
    cluster: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]

    def node(self, key: Key) -> Node | None:
        return next((n for n in self.nodes if n.key == key), None)

    @property
    def kustomizations(self) -> int:
        """How many Kustomizations it draws, a namespace box counting its members."""
        return sum(len(n.members) or 1 for n in self.nodes)


@dataclass(frozen=True)
class Graph:
    clusters: tuple[ClusterView, ...]
    base_label: str | None = None
    head_label: str = ""
    focus: tuple[str, ...] = ()
    depth: int = 0
    hidden_nodes: int = 0  # left out by `focus`
    hidden_edges: tuple[tuple[str, int], ...] = ()  # (kind, count) left out by `only_edges`
    grouped: int = 0  # Kustomizations drawn inside namespace boxes by `collapse`

    @property
    def compared(self) -> bool:
        return self.base_label is not None

    def nodes(self) -> Iterable[Node]:
        for view in self.clusters:
            yield from view.nodes

    def edges(self) -> Iterable[Edge]:
        for view in self.clusters:
            yield from view.edges

    def counts(self) -> dict[str, int]:
        nodes = list(self.nodes())
        edges = list(self.edges())
        return {
            "clusters": len(self.clusters),
            "nodes": len(nodes),
            "edges": len(edges),
            "touched": sum(1 for n in nodes if n.touched),
            "hazard_nodes": sum(1 for n in nodes if _loud(n.hazards)),
            "hazard_edges": sum(1 for e in edges if _loud(e.hazards)),
        }


def _loud(marks: Sequence[Mark]) -> bool:
    """Errors and warnings; informational notes are data, not hazards to draw or count."""
    return any(m.severity in ("error", "warning") for m in marks)


def worst(marks: Sequence[Mark]) -> str | None:
    return min((m.severity for m in marks), key=rank, default=None)


# -- one side ----------------------------------------------------------------------------------


def build(snapshot: Snapshot) -> Graph:
    """Every cluster's graph of one render, unmarked."""
    return Graph(
        clusters=tuple(_view(cg) for cg in graphs(snapshot).values()),
        head_label=snapshot.label,
    )


def _view(cg: ClusterGraph) -> ClusterView:
    nodes = {key: _node(cg, key, ks) for key, ks in cg.nodes.items()}
    edges = _edges(cg)
    for edge in edges:
        if edge.source not in nodes:
            nodes[edge.source] = Node(cg.cluster, *edge.source, prune=False, missing=True)
    return ClusterView(cg.cluster, tuple(nodes[k] for k in sorted(nodes)), tuple(edges))


def _node(cg: ClusterGraph, key: Key, ks: KsNode) -> Node:
    result = cg.result(key)
    error = result.error if result is not None and not result.ok else None
    documents = len(result.documents) if result is not None and result.ok else None
    return Node(
        cluster=cg.cluster,
        namespace=key[0],
        name=key[1],
        documents=documents,
        prune=ks.prune,
        path=ks.path,
        error=error or ks.spec_error,
        group=group_of(ks),
    )


def group_of(ks: KsNode) -> str:
    """The namespace a Kustomization is about: its own, unless it sits in flux-system with
    everything else (then its targetNamespace, else flux-system)."""
    if ks.namespace != "flux-system" or not ks.target_namespace:
        return ks.namespace
    return ks.target_namespace


def _edges(cg: ClusterGraph) -> list[Edge]:
    """dependsOn, substituteFrom and CRD edges of one cluster, sorted, without duplicates."""
    edges: dict[EdgeId, Edge] = {}

    def add(edge: Edge) -> None:
        if edge.source != edge.target:
            edges.setdefault(edge.ident, edge)

    for key, ks in cg.nodes.items():
        for dep in ks.depends_on:
            add(Edge(cg.cluster, dep, key, "dependsOn"))
        if ks.post_build is not None:
            for src in ks.post_build.substitute_from:
                doc_id = DocId("", src.kind, ks.namespace, src.name)
                for writer in sorted({k for k, _d in cg.find(doc_id)}):
                    add(Edge(cg.cluster, writer, key, "substituteFrom", f"{src.kind}/{src.name}"))
    for edge in _crd_edges(cg):
        add(edge)
    for edge in _release_edges(cg):
        add(edge)
    return sorted(edges.values(), key=lambda e: (e.source, e.target, EDGE_KINDS.index(e.kind)))


def _release_edges(cg: ClusterGraph) -> list[Edge]:
    """HelmRelease dependsOn between Kustomizations: one edge per pair of Kustomizations,
    labelled with every release pair it stands for."""
    pairs: dict[tuple[Key, Key], set[str]] = defaultdict(set)
    for release in cg.releases.values():
        for dep_key in release.depends_on:
            dep = cg.releases.get(dep_key)
            if dep is None:
                continue  # a missing dependency: the depends-on finding says so
            for src in dep.owners:
                for dst in release.owners:
                    pairs[(src, dst)].add(f"{dep.display} -> {release.display}")
    return [
        Edge(cg.cluster, src, dst, "dependsOn", "HelmRelease " + ", ".join(sorted(labels)))
        for (src, dst), labels in pairs.items()
    ]


def _crd_edges(cg: ClusterGraph) -> list[Edge]:
    """CRD holder -> custom-resource user, one edge per pair labelled with the API groups;
    within each applied-to cluster (a hub's CRDs serve no spoke's custom resources)."""
    pairs: dict[tuple[Key, Key], set[str]] = defaultdict(set)
    likely: dict[tuple[Key, Key], set[str]] = defaultdict(set)
    for where in cg.applied_clusters():
        _crd_pairs(cg, where, pairs, likely)
    out = [
        Edge(cg.cluster, src, dst, "crd", ", ".join(sorted(groups)))
        for (src, dst), groups in pairs.items()
    ]
    out.extend(
        Edge(cg.cluster, src, dst, "crd", ", ".join(sorted(groups)) + " (HelmRelease)")
        for (src, dst), groups in likely.items()
        if (src, dst) not in pairs
    )
    return out


def _crd_pairs(
    cg: ClusterGraph,
    where: str,
    pairs: dict[tuple[Key, Key], set[str]],
    likely: dict[tuple[Key, Key], set[str]],
) -> None:
    """The CRD edges of one applied-to cluster, added to `pairs` (CRD objects) and `likely`
    (HelmReleases whose chart lands there, judged by name)."""
    crds: dict[tuple[str, str], set[Key]] = defaultdict(set)
    releases: list[HelmRelease] = []
    users: dict[tuple[str, str], set[Key]] = defaultdict(set)
    for doc_id, owners in cg.within(where).items():
        for key, doc in owners:
            if k8s.is_crd(doc_id):
                target = k8s.crd_target(doc)
                if target is not None:
                    crds[target].add(key)
            elif (doc_id.group, doc_id.kind) != HELMRELEASE and not k8s.is_builtin(doc_id.group):
                users[(doc_id.group, doc_id.kind)].add(key)
    for doc_id, owners in cg.index.items():
        if (doc_id.group, doc_id.kind) == HELMRELEASE:
            releases.extend(
                HelmRelease(k, d) for k, d in owners if cg.chart_applied_to(k, d) == where
            )
    installers: dict[str, list[Key]] = {}
    for (group, kind), keys in users.items():
        holders = crds.get((group, kind))
        if holders is None:
            if group not in installers:
                installers[group] = sorted({r.key for r in releases if r.installs(group)})
            for holder in installers[group]:
                for key in keys:
                    likely[(holder, key)].add(group)
            continue
        for holder in holders:
            for key in keys:
                pairs[(holder, key)].add(group)


# -- against a base ---------------------------------------------------------------------------


def compare(base: Snapshot, head: Snapshot) -> Graph:
    """The head's graph with the change from `base` marked; removed nodes and edges stay in."""
    base_graphs, head_graphs = graphs(base), graphs(head)
    views = []
    for cluster in sorted(set(base_graphs) | set(head_graphs)):
        old, new = base_graphs.get(cluster), head_graphs.get(cluster)
        views.append(_compare_cluster(cluster, old, new))
    return Graph(tuple(views), base_label=base.label or "base", head_label=head.label or "head")


def _compare_cluster(
    cluster: str, old: ClusterGraph | None, new: ClusterGraph | None
) -> ClusterView:
    before = _view(old) if old is not None else ClusterView(cluster, (), ())
    after = _view(new) if new is not None else ClusterView(cluster, (), ())
    old_nodes = {n.key: n for n in before.nodes}
    new_nodes = {n.key: n for n in after.nodes}
    moves = _moves(old, new) if old is not None and new is not None else {}
    moved_in: dict[Key, int] = defaultdict(int)
    moved_out: dict[Key, int] = defaultdict(int)
    for (src, dst), ids in moves.items():
        moved_out[src] += len(ids)
        moved_in[dst] += len(ids)
    nodes: list[Node] = []
    for key in sorted(set(old_nodes) | set(new_nodes)):
        o, n = old_nodes.get(key), new_nodes.get(key)
        change: Change
        if n is None:
            assert o is not None
            node, change = o, "removed"
        elif o is None or o.missing != n.missing:
            node, change = n, "unchanged" if n.missing else "added"
        else:
            node, change = n, _node_change(old, new, key)
        nodes.append(replace(node, change=change, moved_in=moved_in[key], moved_out=moved_out[key]))
    old_edges = {e.ident: e for e in before.edges}
    new_edges = {e.ident: e for e in after.edges}
    edges = [
        replace(new_edges.get(i) or old_edges[i], change=_edge_change(i, old_edges, new_edges))
        for i in sorted(set(old_edges) | set(new_edges), key=_edge_order)
    ]
    edges.extend(
        Edge(cluster, src, dst, "move", f"{len(ids)} moved", tuple(sorted(ids)), change="added")
        for (src, dst), ids in sorted(moves.items())
    )
    return ClusterView(cluster, tuple(nodes), tuple(edges))


def _edge_order(ident: EdgeId) -> tuple[Key, Key, int, str]:
    kind, src, dst, label = ident
    return (src, dst, EDGE_KINDS.index(kind), label)


def _edge_change(ident: EdgeId, old: dict[EdgeId, Edge], new: dict[EdgeId, Edge]) -> Change:
    if ident not in old:
        return "added"
    if ident not in new:
        return "removed"
    return "unchanged"


def _node_change(old: ClusterGraph | None, new: ClusterGraph | None, key: Key) -> Change:
    """Changed when its documents or its own spec differ (a render error counts as a change)."""
    if old is None or new is None:
        return "changed"
    a, b = old.result(key), new.result(key)
    if (a is None) != (b is None):
        return "changed"
    if a is not None and b is not None and (a.sha256 != b.sha256 or a.error != b.error):
        return "changed"
    ka, kb = old.nodes.get(key), new.nodes.get(key)
    if (
        ka is not None
        and kb is not None
        and replace(ka, declared_by=None) != replace(kb, declared_by=None)
    ):
        return "changed"
    return "unchanged"


def _moves(old: ClusterGraph, new: ClusterGraph) -> dict[tuple[Key, Key], list[str]]:
    """(from, to) -> ids of documents that left `from` and are rendered by `to` instead."""
    out: dict[tuple[Key, Key], list[str]] = defaultdict(list)
    for where in old.applied_clusters():  # a move stays inside one applied-to cluster
        for doc_id, owners in old.within(where).items():
            before = {k for k, _d in owners}
            after = {k for k, _d in new.find(doc_id, where)}
            if not after:
                continue
            for src in sorted(before - after):
                for dst in sorted(after - before):
                    out[(src, dst)].append(str(doc_id))
    return dict(out)


# -- hazards and focus --------------------------------------------------------------------------


def with_hazards(graph: Graph, findings: Iterable[Finding]) -> Graph:
    """Each finding on the nodes it names, and on the edges between them (a move edge when it
    carried one of the finding's documents)."""
    by_cluster: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        if f.cluster is not None:
            by_cluster[f.cluster].append(f)
    views = []
    for view in graph.clusters:
        found = by_cluster.get(view.cluster, [])
        if not found:
            views.append(view)
            continue
        names = {n.display: n.key for n in view.nodes}
        node_marks: dict[Key, list[Mark]] = defaultdict(list)
        edge_marks: dict[int, list[Mark]] = defaultdict(list)
        for f in found:
            mark = Mark(f.id, f.rule, f.severity, f.message)
            keys = {names[k] for k in f.kustomizations if k in names}
            for key in keys:
                node_marks[key].append(mark)
            docs = set(f.documents)
            for i, edge in enumerate(view.edges):
                ends = {edge.source, edge.target}
                between = len(keys) > 1 and ends <= keys
                carried = edge.kind == "move" and ends & keys and docs & set(edge.documents)
                if between or carried:
                    edge_marks[i].append(mark)
        nodes = tuple(replace(n, hazards=(*n.hazards, *node_marks[n.key])) for n in view.nodes)
        edges = tuple(
            replace(e, hazards=(*e.hazards, *edge_marks[i])) for i, e in enumerate(view.edges)
        )
        views.append(ClusterView(view.cluster, nodes, edges))
    return replace(graph, clusters=tuple(views))


def resolve_focus(graph: Graph, names: Sequence[str]) -> set[tuple[str, Key]]:
    """The nodes `names` pick: `changed`, or a Kustomization as `name`, `ns/name`,
    `cluster/ns/name` (its flux target) or `cluster:name`. Unknown names are an error."""
    picked: set[tuple[str, Key]] = set()
    unknown = []
    for name in names:
        hits = {
            (n.cluster, n.key)
            for n in graph.nodes()
            if (name == CHANGED and (n.touched or _loud(n.hazards)))
            or name in (n.name, f"{n.namespace}/{n.name}", n.target, f"{n.cluster}:{n.display}")
        }
        if not hits and name != CHANGED:
            unknown.append(name)
        picked |= hits
    if unknown:
        raise KeyError(", ".join(unknown))
    return picked


def focus(graph: Graph, names: Sequence[str], depth: int = 1) -> Graph:
    """Only the picked nodes and those within `depth` edges of them (either direction)."""
    keep = resolve_focus(graph, names)
    frontier = set(keep)
    for _ in range(depth):
        nxt = set()
        for edge in graph.edges():
            a, b = (edge.cluster, edge.source), (edge.cluster, edge.target)
            if a in frontier and b not in keep:
                nxt.add(b)
            if b in frontier and a not in keep:
                nxt.add(a)
        keep |= nxt
        frontier = nxt
    views = []
    total = sum(1 for _ in graph.nodes())
    for view in graph.clusters:
        nodes = tuple(n for n in view.nodes if (view.cluster, n.key) in keep)
        if not nodes:
            continue
        kept = {n.key for n in nodes}
        edges = tuple(e for e in view.edges if e.source in kept and e.target in kept)
        views.append(ClusterView(view.cluster, nodes, edges))
    shown = sum(len(v.nodes) for v in views)
    return replace(
        graph, clusters=tuple(views), focus=tuple(names), depth=depth, hidden_nodes=total - shown
    )


def merge_alike(graph: Graph) -> Graph:
    """Clusters whose views are identical but for the cluster name (and paths) drawn once,
    titled `dev, prod`: overlays usually change alike, and a comment should not repeat itself."""
    groups: dict[tuple[object, ...], list[ClusterView]] = {}
    for view in graph.clusters:
        shape = (
            tuple(
                (replace(n, cluster="", path="", hazards=()), _bare(n.hazards)) for n in view.nodes
            ),
            tuple((replace(e, cluster="", hazards=()), _bare(e.hazards)) for e in view.edges),
        )
        groups.setdefault(shape, []).append(view)
    views = []
    for members in groups.values():
        first = members[0]
        name = ", ".join(v.cluster for v in members)
        views.append(
            ClusterView(
                name,
                tuple(replace(n, cluster=name) for n in first.nodes),
                tuple(replace(e, cluster=name) for e in first.edges),
            )
        )
    return replace(graph, clusters=tuple(views))


def _bare(marks: tuple[Mark, ...]) -> tuple[tuple[str, str], ...]:
    """Hazard marks without their cluster-specific ids and messages."""
    return tuple(sorted({(m.rule, m.severity) for m in marks}))


# -- pictures of big graphs --------------------------------------------------------------------


def only_edges(graph: Graph, kinds: Iterable[str]) -> Graph:
    """The graph with edges of `kinds` only; the others are counted in `hidden_edges`."""
    keep = set(kinds)
    hidden: dict[str, int] = dict(graph.hidden_edges)
    views = []
    for view in graph.clusters:
        for e in view.edges:
            if e.kind not in keep:
                hidden[e.kind] = hidden.get(e.kind, 0) + 1
        views.append(replace(view, edges=tuple(e for e in view.edges if e.kind in keep)))
    order: dict[str, int] = {k: i for i, k in enumerate(EDGE_KINDS)}
    counted = tuple(sorted(hidden.items(), key=lambda kv: order.get(kv[0], 99)))
    return replace(graph, clusters=tuple(views), hidden_edges=counted)


def collapse(graph: Graph, above: int = GROUP_ABOVE) -> Graph:
    """In each cluster with more than `above` Kustomizations, those the change leaves alone
    are drawn one box per namespace (`Node.members` lists them; the box carries their
    hazards, so a red box says which namespace to open); edges between boxes are merged per
    kind (label: how many). Touched and missing Kustomizations stay boxes of their own, so
    the change reads as before (unless they alone are more than `above`)."""
    views = []
    grouped = graph.grouped
    for view in graph.clusters:
        if len(view.nodes) <= above:
            views.append(view)
            continue
        keep = {n.key for n in view.nodes if n.touched or n.missing}
        if len(keep) > above:
            keep = {n.key for n in view.nodes if n.missing}
        groups: dict[str, list[Node]] = defaultdict(list)
        for n in view.nodes:
            if n.key not in keep:
                groups[n.group or n.namespace].append(n)
        # as much detail as fits: the smallest namespaces stay open while the boxes drawn
        # stay within `above`
        boxes = len(keep) + len(groups)
        opened: set[str] = set()
        for name, members in sorted(groups.items(), key=lambda kv: (len(kv[1]), kv[0])):
            if boxes + len(members) - 1 > max(above, 1) and len(members) > 1:
                break
            opened.add(name)
            boxes += len(members) - 1
        where: dict[Key, Key] = {}
        nodes: list[Node] = [n for n in view.nodes if n.key in keep]
        for name, members in sorted(groups.items()):
            if name in opened:
                nodes.extend(members)
                continue
            box = Node(
                cluster=view.cluster,
                namespace="",
                name=name,
                documents=sum(m.documents or 0 for m in members),
                prune=all(m.prune for m in members),
                error=next((m.error for m in members if m.error), None),
                group=name,
                members=tuple(sorted(m.display for m in members)),
                hazards=tuple(h for m in members for h in m.hazards),
            )
            nodes.append(box)
            grouped += len(members)
            for m in members:
                where[m.key] = box.key
        merged: dict[tuple[EdgeKind, Key, Key], list[Edge]] = defaultdict(list)
        for e in view.edges:
            src, dst = where.get(e.source, e.source), where.get(e.target, e.target)
            if src != dst:
                merged[(e.kind, src, dst)].append(e)
        edges = []
        for (kind, src, dst), members_ in merged.items():
            first = members_[0]
            if len(members_) == 1 and (src, dst) == (first.source, first.target):
                edges.append(first)
                continue
            changes = {e.change for e in members_}
            edges.append(
                Edge(
                    view.cluster,
                    src,
                    dst,
                    kind,
                    label=f"{len(members_)} {kind}" if len(members_) > 1 else first.label,
                    documents=tuple(d for e in members_ for d in e.documents),
                    change=first.change if len(changes) == 1 else "changed",
                    hazards=tuple(h for e in members_ for h in e.hazards),
                )
            )
        nodes.sort(key=lambda n: (n.namespace == "", n.key))
        views.append(
            ClusterView(
                view.cluster,
                tuple(nodes),
                tuple(sorted(edges, key=lambda e: (e.source, e.target, EDGE_KINDS.index(e.kind)))),
            )
        )
    return replace(graph, clusters=tuple(views), grouped=grouped)


def for_picture(graph: Graph, edges: Sequence[str] | None = None, group: str = "auto") -> Graph:
    """A graph as a picture should draw it: `edges` (edge kinds; default all, except CRD
    edges in a cluster of more than CRD_EDGES_ABOVE Kustomizations) and `group` (`auto`:
    namespaces boxed past GROUP_ABOVE Kustomizations a cluster; `namespace`: always; `none`)."""
    largest = max((v.kustomizations for v in graph.clusters), default=0)
    if edges is None:
        kinds: list[str] = list(EDGE_KINDS)
        if largest > CRD_EDGES_ABOVE:
            kinds.remove("crd")
    else:
        kinds = list(edges)
    if set(kinds) != set(EDGE_KINDS):
        graph = only_edges(graph, kinds)
    if group == "namespace":
        return collapse(graph, 0)
    if group == "auto":
        return collapse(graph, GROUP_ABOVE)
    return graph
