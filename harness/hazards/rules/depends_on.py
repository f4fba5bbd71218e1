"""depends-on (lint and diff): the dependsOn graph of each cluster.

Lint: a dependsOn naming a Kustomization missing in that cluster (Flux keeps the dependent
not ready forever), cycles (nothing in them ever reconciles), and the substitution race: a
Kustomization substituting from a ConfigMap/Secret that another Kustomization writes must
(transitively) dependsOn it, because dependsOn is revision-gated: without the edge, a commit
that adds a variable can be built before the new ConfigMap is applied. Under strict
substitution that build fails and Flux retries it (self-healing: a warning); without strict
substitution the variable renders empty and is applied (an error). Diff: a dependsOn left
pointing at a Kustomization this change removes (same id as the lint finding, with a
message saying so). A dependency missing in head only because the target that rendered or
declared it failed there is unknown, not removed: it is skipped, and one
`depends-on:unjudged:<cluster>` warning per cluster lists what was skipped and why.

HelmReleases alike: a `spec.dependsOn` naming a HelmRelease the cluster does not have (or
that this change removes), and dependsOn cycles among HelmReleases, leave helm-controller
waiting forever: the release is never installed or upgraded. Their ids say `helmrelease`
and name the releases `namespace/name`; `kustomizations` holds the Kustomizations that
render them (what the graph marks).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from harness.core.model import DocId, Document
from harness.flux.ksgraph import (
    RSET_SUFFIX,
    ClusterGraph,
    Key,
    KsNode,
    ReleaseNode,
    display,
    parse,
)
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding, and_list
from harness.hazards.rules.prune_delete import hidden_by_failure


class DependsOn:
    id = "depends-on"
    summary = "dependsOn names a missing Kustomization, loops, or misses a writer it reads"
    modes: tuple[str, ...] = ("lint", "diff")
    scope = "cluster"  # a cluster's findings come from its graph alone (engine.diff)

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        out: list[Finding] = []
        for cluster, graph in ctx.graphs.items():
            out.extend(self._missing(cluster, graph, None))
            out.extend(self._cycles(cluster, graph))
            out.extend(self._races(cluster, graph, ctx.strict))
            out.extend(self._missing_releases(cluster, graph, None))
            out.extend(self._release_cycles(cluster, graph))
        return out

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        out: list[Finding] = []
        for cluster, head in ctx.head_graphs.items():
            base = ctx.base_graphs.get(cluster)
            if base is not None:
                skipped: list[tuple[str, str, str]] = []
                out.extend(self._missing(cluster, head, base, skipped))
                out.extend(self._missing_releases(cluster, head, base, skipped))
                if skipped:
                    out.append(self._unjudged(cluster, skipped))
        return out

    def unjudged(self, ctx: DiffContext) -> set[str]:
        """Ids of the lint findings a failed head render makes unknown (a dependency it
        hides), which a diff must not report as introduced (engine.diff)."""
        ids: set[str] = set()
        for cluster, head in ctx.head_graphs.items():
            base = ctx.base_graphs.get(cluster)
            if base is not None:
                skipped: list[tuple[str, str, str]] = []
                self._missing(cluster, head, base, skipped)
                self._missing_releases(cluster, head, base, skipped)
                ids |= {finding_id for finding_id, _edge, _why in skipped}
        return ids

    def _unjudged(self, cluster: str, skipped: list[tuple[str, str, str]]) -> Finding:
        """The one note saying which dependsOn entries a failed render left unjudged."""
        edges = sorted({edge for _id, edge, _why in skipped})
        whys = sorted({why for _id, _edge, why in skipped})
        return Finding(
            id=f"{self.id}:unjudged:{cluster}",
            rule=self.id,
            severity="warning",
            cluster=cluster,
            kustomizations=(),
            documents=(),
            message=(
                f"depends-on could not judge {len(edges)} dependsOn entr"
                f"{'y' if len(edges) == 1 else 'ies'} in {cluster} ({and_list(edges, 4)}): "
                f"{'; '.join(whys)}; what it renders in head is unknown, not removed; fix the "
                "render error and run the diff again."
            ),
        )

    def _missing(
        self,
        cluster: str,
        graph: ClusterGraph,
        base: ClusterGraph | None,
        skipped: list[tuple[str, str, str]] | None = None,
    ) -> list[Finding]:
        out = []
        edges = {key: node.depends_on for key, node in graph.nodes.items()}
        for key, dep, what in _dangling(cluster, edges, graph.nodes, base.nodes if base else None):
            finding_id = f"{self.id}:{cluster}:{display(key)}:missing:{display(dep)}"
            why = hidden_by_failure(base, graph, dep) if base is not None else None
            if why is not None and skipped is not None:
                skipped.append((finding_id, f"{display(key)} -> {display(dep)}", why))
                continue
            out.append(
                Finding(
                    id=finding_id,
                    rule=self.id,
                    severity="error",
                    cluster=cluster,
                    kustomizations=(display(key), display(dep)),
                    documents=(),
                    message=(
                        f"{display(key)} dependsOn {display(dep)}, {what}: Flux keeps "
                        f"{display(key)} not ready ('dependency not found') and applies "
                        "nothing of it; fix or drop the dependsOn entry."
                    ),
                )
            )
        return out

    def _cycles(self, cluster: str, graph: ClusterGraph) -> list[Finding]:
        out = []
        for cycle in cycles(graph):
            names = [display(k) for k in cycle]
            ring = " -> ".join([*names, names[0]])
            out.append(
                Finding(
                    id=f"{self.id}:{cluster}:cycle:{','.join(sorted(names))}",
                    rule=self.id,
                    severity="error",
                    cluster=cluster,
                    kustomizations=tuple(sorted(names)),
                    documents=(),
                    message=(
                        f"dependsOn cycle in {cluster}: {ring}; none of them ever becomes "
                        "ready, so nothing in them is applied; break the cycle."
                    ),
                )
            )
        return out

    def _missing_releases(
        self,
        cluster: str,
        graph: ClusterGraph,
        base: ClusterGraph | None,
        skipped: list[tuple[str, str, str]] | None = None,
    ) -> list[Finding]:
        out = []
        edges = {key: r.depends_on for key, r in graph.releases.items()}
        for key, dep, what in _dangling(
            cluster, edges, graph.releases, base.releases if base else None
        ):
            release = graph.releases[key]
            name = f"{dep[0]}/{dep[1]}"
            finding_id = f"{self.id}:{cluster}:helmrelease:{release.display}:missing:{name}"
            why = _release_hidden(base, graph, dep) if base is not None else None
            if why is not None and skipped is not None:
                skipped.append((finding_id, f"HelmRelease {release.display} -> {name}", why))
                continue
            out.append(
                Finding(
                    id=finding_id,
                    rule=self.id,
                    severity="error",
                    cluster=cluster,
                    kustomizations=_owners([release], base.releases.get(dep) if base else None),
                    documents=(f"helm.toolkit.fluxcd.io/HelmRelease/{release.display}",),
                    message=(
                        f"HelmRelease {release.display} dependsOn HelmRelease {name}, "
                        f"{what}: helm-controller keeps {release.display} not ready "
                        "('dependency not found') and never installs or upgrades it; fix "
                        "or drop the dependsOn entry."
                    ),
                )
            )
        return out

    def _release_cycles(self, cluster: str, graph: ClusterGraph) -> list[Finding]:
        out = []
        edges = {k: r.depends_on for k, r in graph.releases.items()}
        for cycle in strongly_connected(edges):
            names = [f"{k[0]}/{k[1]}" for k in cycle]
            ring = " -> ".join([*names, names[0]])
            out.append(
                Finding(
                    id=f"{self.id}:{cluster}:helmrelease-cycle:{','.join(sorted(names))}",
                    rule=self.id,
                    severity="error",
                    cluster=cluster,
                    kustomizations=_owners([graph.releases[k] for k in cycle]),
                    documents=tuple(f"helm.toolkit.fluxcd.io/HelmRelease/{n}" for n in names),
                    message=(
                        f"HelmRelease dependsOn cycle in {cluster}: {ring}; helm-controller "
                        "installs none of them (each waits for the next); break the cycle."
                    ),
                )
            )
        return out

    def _races(self, cluster: str, graph: ClusterGraph, strict: bool) -> list[Finding]:
        out = []
        for key, node in graph.nodes.items():
            if node.post_build is None:
                continue
            for src in node.post_build.substitute_from:
                doc_id = DocId("", src.kind, node.namespace, src.name)
                found = graph.find(doc_id)
                watched = any(_watched(doc) for _k, doc in found)
                for writer in sorted({k for k, _d in found} - {key}):
                    if graph.depends(key, writer) or writer[1].endswith(RSET_SUFFIX):
                        # a Kustomization cannot dependsOn a ResourceSet: nothing to advise
                        continue
                    out.append(self._race(cluster, node, writer, doc_id, strict, watched))
        return out

    def _race(
        self, cluster: str, node: KsNode, writer: Key, doc_id: DocId, strict: bool, watched: bool
    ) -> Finding:
        """Strict substitution makes the race a failed build that Flux retries (it heals by
        itself: a warning); without it an empty value ships until the next reconcile."""
        w = display(writer)
        if strict:
            what = (
                f"strict substitution fails that build and Flux retries it until {w} has "
                "applied the variable (it heals by itself, after a failed reconcile"
                + (
                    "; the watch label re-triggers it at once"
                    if watched
                    else f"; `reconcile.fluxcd.io/watch: Enabled` on {doc_id.kind}/"
                    f"{doc_id.name} re-triggers it at once"
                )
                + ")"
            )
        else:
            what = (
                "without strict substitution the variable renders empty and that empty value "
                "is applied until the next reconcile"
            )
        return Finding(
            id=f"{self.id}:{cluster}:{node.display}:race:{doc_id.kind}/{doc_id.name}",
            rule=self.id,
            severity="warning" if strict else "error",
            cluster=cluster,
            kustomizations=(node.display, w),
            documents=(str(doc_id),),
            message=(
                f"{node.display} substitutes from {doc_id.kind}/{doc_id.name}, which {w} "
                f"writes, but does not (transitively) dependsOn {w}: on a commit that adds a "
                f"variable, {node.display} can build before {w} applies it (the substitution "
                f"race): {what}; add dependsOn {w} (revision-gated) to close it."
            ),
        )


def _dangling(
    cluster: str,
    edges: Mapping[Key, Sequence[Key]],
    present: Mapping[Key, object],
    before: Mapping[Key, object] | None,
) -> Iterator[tuple[Key, Key, str]]:
    """(who, the dependency it names, why it is missing) for each dependsOn naming nothing
    in `present`; in a diff (`before`: the base's), only those this change removes."""
    for key, deps in edges.items():
        for dep in deps:
            if dep in present:
                continue
            removed = before is not None and dep in before
            if before is not None and not removed:
                continue
            if removed:
                yield key, dep, f"which this change removes from {cluster}"
            else:
                yield key, dep, f"which does not exist in {cluster}"


def _release_hidden(base: ClusterGraph, head: ClusterGraph, dep: Key) -> str | None:
    """Why a HelmRelease missing in head may only be unseen: a Kustomization that rendered
    it in base failed in head (or its declarer did)."""
    release = base.releases.get(dep)
    for owner in release.owners if release is not None else ():
        why = hidden_by_failure(base, head, owner)
        if why is not None:
            return why
    return None


def _watched(doc: Document) -> bool:
    """The object carries Flux's watch label: a change to it re-triggers its readers."""
    labels = (parse(doc).get("metadata") or {}).get("labels") or {}
    return str(labels.get("reconcile.fluxcd.io/watch", "")).lower() == "enabled"


def cycles(graph: ClusterGraph) -> list[list[Key]]:
    """Kustomization dependsOn cycles, each from its smallest key."""
    return strongly_connected({k: n.depends_on for k, n in graph.nodes.items()})


def strongly_connected(edges: Mapping[Key, Sequence[Key]]) -> list[list[Key]]:
    """Strongly connected components with a cycle (Tarjan) of a dependsOn mapping, each from
    its smallest key, following dependsOn; dependencies missing from the mapping are ignored."""
    index: dict[Key, int] = {}
    low: dict[Key, int] = {}
    stack: list[Key] = []
    on_stack: set[Key] = set()
    found: list[list[Key]] = []
    counter = 0

    def visit(start: Key) -> None:
        nonlocal counter
        work: list[tuple[Key, int]] = [(start, 0)]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            key, i = work[-1]
            deps = [d for d in edges[key] if d in edges]
            if i < len(deps):
                work[-1] = (key, i + 1)
                dep = deps[i]
                if dep not in index:
                    index[dep] = low[dep] = counter
                    counter += 1
                    stack.append(dep)
                    on_stack.add(dep)
                    work.append((dep, 0))
                elif dep in on_stack:
                    low[key] = min(low[key], index[dep])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[key])
            if low[key] == index[key]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == key:
                        break
                looped = len(component) > 1 or key in edges[key]
                if looped:
                    found.append(_ordered(edges, sorted(component)))

    for key in edges:
        if key not in index:
            visit(key)
    return sorted(found)


def _ordered(edges: Mapping[Key, Sequence[Key]], component: list[Key]) -> list[Key]:
    """The cycle's members following dependsOn from the smallest, for a readable ring."""
    members = set(component)
    ring = [component[0]]
    while True:
        nxt = [d for d in edges[ring[-1]] if d in members and d not in ring]
        if not nxt:
            break
        ring.append(sorted(nxt)[0])
    ring.extend(k for k in component if k not in ring)
    return ring


def _owners(releases: Sequence[ReleaseNode], also: ReleaseNode | None = None) -> tuple[str, ...]:
    """The Kustomizations rendering these HelmReleases, as findings name them."""
    keys = {k for r in [*releases, *([also] if also else [])] for k in r.owners}
    return tuple(sorted(display(k) for k in keys))


RULE = DependsOn()
