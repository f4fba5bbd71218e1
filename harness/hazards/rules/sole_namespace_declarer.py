"""sole-namespace-declarer (lint and diff): a Namespace declared by exactly one component
directory while other components put objects into it.

Whatever Flux Kustomization renders that directory owns the Namespace, so moving the
directory moves the Namespace's ownership, and a prune on the way deletes the other
components' objects too (the Cilium split nearly deleted kube-system this way).

Lint works on path targets, per applied-to cluster (ksgraph: the directories the
Kustomizations applying there build; another cluster's directories are another cluster's
business, and a hub's Kustomizations for a spoke apply to the spoke): the component
declaring a Namespace is the smallest path target whose render contains it (a target whose
documents include another's is a larger one); other components are path targets with objects
in that namespace that do not render the Namespace. Diff looks at flux targets: a Namespace
that changed Kustomization while others still apply objects into it, within one applied-to
cluster (not when the owner it "left" failed to render in head: what that one renders is
unknown).
"""

from __future__ import annotations

from harness.core.model import DocId, TargetResult
from harness.flux.ksgraph import ClusterGraph, display
from harness.hazards import k8s
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding, Severity, and_list
from harness.hazards.k8s import doc_order
from harness.hazards.rules.prune_delete import hidden_by_failure


def _by_cluster(
    ctx: LintContext, paths: list[TargetResult]
) -> list[tuple[str | None, list[TargetResult]]]:
    """Path targets per cluster: those at or below a directory one of the cluster's Flux
    Kustomizations builds (its `spec.path` in the repo), plus those below no cluster's
    (shared bases), which every cluster may use; a directory only another cluster builds is
    left out. Decided on repo-relative names, never on where a side was checked out, so
    both sides of a diff (and merged shards) group alike."""
    if not ctx.graphs:
        return [(None, paths)]
    index = ctx.source_index
    roots: dict[str, set[str]] = {}
    for graph in ctx.graphs.values():
        for key, node in graph.nodes.items():
            dirs = roots.setdefault(graph.applied_to(key), set())
            if rel := index.rel_path(node):
                dirs.add(rel)

    def under(name: str, dirs: set[str]) -> bool:
        # `any(d == "." or name == d or name.startswith(d + "/") for d in dirs)`, by a set
        # lookup of each of name's prefixes that ends before a "/" (and of name itself)
        if "." in dirs or name in dirs:
            return True
        at = name.find("/")
        while at != -1:
            if name[:at] in dirs:
                return True
            at = name.find("/", at + 1)
        return False

    where = {r.name: {c for c, dirs in roots.items() if under(r.name, dirs)} for r in paths}
    return [
        (c, [r for r in paths if c in where[r.name] or not where[r.name]]) for c in sorted(roots)
    ]


def _minimal(targets: list[TargetResult]) -> list[TargetResult]:
    """Targets none of the others is strictly contained in (by document identities)."""
    ids = {t.name: {d.id for d in t.documents} for t in targets}
    return [
        t
        for t in targets
        if not any(o.name != t.name and ids[o.name] < ids[t.name] for o in targets)
    ]


class SoleNamespaceDeclarer:
    id = "sole-namespace-declarer"
    summary = "a shared Namespace declared by one component: moving it moves ownership"
    modes: tuple[str, ...] = ("lint", "diff")

    def view(self, ctx: LintContext, result: TargetResult) -> object:
        """Nothing beyond the documents' identities and what the graph reads (the rule
        groups path targets by the Kustomizations' directories and compares identities):
        engine.same_views."""
        return ()

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        paths = [r for r in ctx.snapshot.results.values() if r.target.kind == "path" and r.ok]
        found: dict[str, Finding] = {}
        for applied, group in _by_cluster(ctx, paths):
            for finding in self._group(ctx, group, applied):
                found.setdefault(finding.id, finding)  # a shared base: one finding
        return [found[k] for k in sorted(found)]

    def _group(
        self, ctx: LintContext, paths: list[TargetResult], applied: str | None
    ) -> list[Finding]:
        """The rule within path targets one applied-to cluster builds (another cluster's
        directories neither declare nor use its Namespaces)."""
        # who declares and who uses each namespace, in one pass over the documents (a scan
        # of every target per namespace was quadratic on repos with hundreds of both)
        declaring_by: dict[str, list[TargetResult]] = {}
        using_by: dict[str, list[TargetResult]] = {}
        for r in paths:
            for name in dict.fromkeys(d.id.name for d in r.documents if _is_namespace(d.id)):
                declaring_by.setdefault(name, []).append(r)
            for name in dict.fromkeys(d.id.namespace for d in r.documents if d.id.namespace):
                using_by.setdefault(name, []).append(r)
        out: list[Finding] = []
        for name in sorted(declaring_by):
            ns_id = DocId("", "Namespace", "", name)
            declaring = declaring_by[name]
            minimal = _minimal(declaring)
            if len(minimal) != 1:
                continue
            declarer = minimal[0]
            declared_by = {r.name for r in declaring}
            within = {d.id for d in declarer.documents}
            users = _minimal(
                [
                    r
                    for r in using_by.get(name, [])
                    if r.name not in declared_by and not {d.id for d in r.documents} <= within
                ]
            )
            if not users:
                continue
            objects = sorted({d.id for r in users for d in r.documents if d.id.namespace == name})
            owners = sorted(
                {display(k) for g in ctx.graphs.values() for k, _d in g.find(ns_id, applied)}
            )
            system = k8s.SYSTEM_NAMESPACES.get(name)
            severity: Severity = "info"  # latent: only a later move or removal bites
            tail = f" (for {name} that takes {system})" if system else ""
            held = f" (today: {and_list(owners)})" if owners else ""
            out.append(
                Finding(
                    id=f"{self.id}:{declarer.name}:{ns_id}",
                    rule=self.id,
                    severity=severity,
                    cluster=None,
                    kustomizations=tuple(owners),
                    documents=(str(ns_id), *(str(i) for i in objects[:20])),
                    message=(
                        f"{ns_id} is declared only by {declarer.name}, while "
                        f"{and_list([u.name for u in users], 5)} put objects in it: whichever "
                        f"Flux Kustomization renders {declarer.name} owns the Namespace{held}, "
                        f"so moving {declarer.name} to another Kustomization moves it, and a "
                        f"prune on the way deletes everything in it{tail}; before such a move "
                        "declare the Namespace where it stays, or move it with prune: false "
                        "on the old owner."
                    ),
                )
            )
        return out

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        out: list[Finding] = []
        for cluster, base in ctx.base_graphs.items():
            head = ctx.head_graphs.get(cluster)
            if head is None:
                continue
            for where in base.applied_clusters():
                out.extend(self._moved(ctx, cluster, where, base, head))
        return out

    def _moved(
        self, ctx: DiffContext, cluster: str, where: str, base: ClusterGraph, head: ClusterGraph
    ) -> list[Finding]:
        """Namespaces of applied-to cluster `where` that changed owner."""
        out: list[Finding] = []
        namespaces = [(i, o) for i, o in base.within(where).items() if _is_namespace(i)]
        for ns_id, base_owners in sorted(namespaces, key=lambda item: doc_order(item[0])):
            before = {k for k, _d in base_owners}
            after = {k for k, _d in head.find(ns_id, where)}
            if not after or after == before or len(after) != 1:
                continue
            if any(hidden_by_failure(base, head, k) for k in before - after):
                continue  # an owner that failed in head: unknown, not a change of owner
            (owner,) = after
            users = sorted(
                {
                    k
                    for i, owners in head.within(where).items()
                    if i.namespace == ns_id.name
                    for k, _d in owners
                }
                - {owner}
            )
            if not users:
                continue
            # A Namespace that exists before Flux (system ones, bootstrap) needs no order.
            exists = ns_id.name in k8s.SYSTEM_NAMESPACES or (
                ctx.head_lint.preinstalled.namespace(where, ns_id.name) is not None
            )
            unordered = [] if exists else [k for k in users if not head.depends(k, owner)]
            order = ""
            if unordered:
                order = (
                    f"; {and_list([display(k) for k in unordered])} do not dependsOn "
                    f"{display(owner)}, so on a fresh cluster they apply before the "
                    "Namespace exists"
                )
            out.append(
                Finding(
                    id=f"{self.id}:{where}:{display(owner)}:{ns_id}",
                    rule=self.id,
                    severity="info",
                    cluster=cluster,
                    kustomizations=tuple(display(k) for k in [*sorted(before), owner, *users]),
                    documents=(str(ns_id),),
                    message=(
                        f"{ns_id} now belongs to {display(owner)} (was "
                        f"{and_list([display(k) for k in sorted(before)])}) while "
                        f"{and_list([display(k) for k in users])} apply objects into it: "
                        f"pruning or removing {display(owner)} deletes their objects "
                        f"too{order}; keep the Namespace with the Kustomization everything "
                        "else dependsOn."
                    ),
                )
            )
        return out


def _is_namespace(doc_id: DocId) -> bool:
    return doc_id.group == "" and doc_id.kind == "Namespace"


RULE = SoleNamespaceDeclarer()
