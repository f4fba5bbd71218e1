"""depends-on (lint and diff): the dependsOn graph of each cluster.

Lint: a dependsOn naming a Kustomization missing in that cluster (Flux keeps the dependent
not ready forever), cycles (nothing in them ever reconciles), and the substitution race: a
Kustomization substituting from a ConfigMap/Secret that another Kustomization writes must
(transitively) dependsOn it, because dependsOn is revision-gated: without the edge, a commit
that adds a variable can be built before the new ConfigMap is applied, and strict
substitution fails. Diff: a dependsOn left pointing at a Kustomization this change removes
(same id as the lint finding, with a message saying so).
"""

from __future__ import annotations

from harness.core.model import DocId
from harness.flux.ksgraph import ClusterGraph, Key, KsNode, display
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding


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
            out.extend(self._races(cluster, graph))
        return out

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        out: list[Finding] = []
        for cluster, head in ctx.head_graphs.items():
            base = ctx.base_graphs.get(cluster)
            if base is not None:
                out.extend(self._missing(cluster, head, base))
        return out

    def _missing(
        self, cluster: str, graph: ClusterGraph, base: ClusterGraph | None
    ) -> list[Finding]:
        out = []
        for key, node in graph.nodes.items():
            for dep in node.depends_on:
                if dep in graph.nodes:
                    continue
                removed = base is not None and dep in base.nodes
                if base is not None and not removed:
                    continue
                what = (
                    f"which this change removes from {cluster}"
                    if removed
                    else f"which does not exist in {cluster}"
                )
                out.append(
                    Finding(
                        id=f"{self.id}:{cluster}:{display(key)}:missing:{display(dep)}",
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

    def _races(self, cluster: str, graph: ClusterGraph) -> list[Finding]:
        out = []
        for key, node in graph.nodes.items():
            if node.post_build is None:
                continue
            for src in node.post_build.substitute_from:
                doc_id = DocId("", src.kind, node.namespace, src.name)
                writers = sorted({k for k, _d in graph.find(doc_id)} - {key})
                for writer in writers:
                    if graph.depends(key, writer):
                        continue
                    out.append(self._race(cluster, node, writer, doc_id))
        return out

    def _race(self, cluster: str, node: KsNode, writer: Key, doc_id: DocId) -> Finding:
        w = display(writer)
        return Finding(
            id=f"{self.id}:{cluster}:{node.display}:race:{doc_id.kind}/{doc_id.name}",
            rule=self.id,
            severity="error",
            cluster=cluster,
            kustomizations=(node.display, w),
            documents=(str(doc_id),),
            message=(
                f"{node.display} substitutes from {doc_id.kind}/{doc_id.name}, which {w} "
                f"writes, but does not (transitively) dependsOn {w}: on a commit that adds a "
                f"variable, {node.display} can build before {w} applies it and strict "
                f"substitution fails (the substitution race); add dependsOn {w} "
                "(revision-gated)."
            ),
        )


def cycles(graph: ClusterGraph) -> list[list[Key]]:
    """Strongly connected components with a cycle (Tarjan), each from its smallest key."""
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
            deps = [d for d in graph.nodes[key].depends_on if d in graph.nodes]
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
                looped = len(component) > 1 or key in graph.nodes[key].depends_on
                if looped:
                    found.append(_ordered(graph, sorted(component)))

    for key in graph.nodes:
        if key not in index:
            visit(key)
    return sorted(found)


def _ordered(graph: ClusterGraph, component: list[Key]) -> list[Key]:
    """The cycle's members following dependsOn from the smallest, for a readable ring."""
    members = set(component)
    ring = [component[0]]
    while True:
        nxt = [d for d in graph.nodes[ring[-1]].depends_on if d in members and d not in ring]
        if not nxt:
            break
        ring.append(sorted(nxt)[0])
    ring.extend(k for k in component if k not in ring)
    return ring


RULE = DependsOn()
