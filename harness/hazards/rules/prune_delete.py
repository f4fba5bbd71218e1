"""prune-delete (diff): a document leaves its Kustomization and no other one in the cluster
renders it, so Flux's garbage collection deletes it.

Flux prunes the stale part of a `prune: true` Kustomization's inventory, and deleting a
`prune: true` Kustomization object garbage-collects everything it applied. Objects marked
`kustomize.toolkit.fluxcd.io/prune: disabled` (or `reconcile: disabled`, `ssa: Ignore`) are
skipped, and `prune: false` leaves them orphaned.

A head target that failed to render never silences the rest of its cluster. Only documents
whose fate it hides are left unjudged: those of a Kustomization that itself failed (it applies
and prunes nothing until fixed) or whose declaring Kustomization failed (whether it still
exists is unknown). Each such owner gets one `prune-delete:unjudged:...` finding naming what
was skipped and why. A document that moved into a failed target is judged as gone: the
failing Kustomization applies nothing, so the old owner's prune does delete it.
"""

from __future__ import annotations

from harness.core.model import DocId, Document
from harness.flux.ksgraph import ClusterGraph, Key, display, parse, prune_protected
from harness.hazards import k8s
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding, Severity, and_list


class PruneDelete:
    id = "prune-delete"
    summary = "a document no Kustomization renders any more is deleted by Flux's prune"
    modes: tuple[str, ...] = ("diff",)

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        return []

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        out: list[Finding] = []
        unjudged: dict[tuple[str, Key], tuple[str, list[str]]] = {}
        for d in ctx.departures():
            if d.new_owners:
                continue
            why = hidden_by_failure(d.base, d.head, d.owner)
            if why is not None:
                unjudged.setdefault((d.cluster, d.owner), (why, []))[1].append(str(d.doc.id))
                continue
            finding = self._gone(ctx, d.cluster, d.base, d.head, d.owner, d.doc, d.applied_to)
            if finding is not None:
                out.append(finding)
        for (cluster, key), (why, docs) in sorted(unjudged.items()):
            out.append(self._unjudged(cluster, key, why, docs))
        return out

    def _unjudged(self, cluster: str, key: Key, why: str, docs: list[str]) -> Finding:
        return Finding(
            id=f"{self.id}:unjudged:{cluster}:{display(key)}",
            rule=self.id,
            severity="warning",
            cluster=cluster,
            kustomizations=(display(key),),
            documents=tuple(sorted(docs)),
            message=(
                f"prune-delete could not judge {len(docs)} document(s) {display(key)} rendered "
                f"in {cluster} before ({and_list(sorted(docs), 4)}): {why}; fix the render "
                "error and run the diff again to see what its prune would delete."
            ),
        )

    def _gone(
        self,
        ctx: DiffContext,
        cluster: str,
        base: ClusterGraph,
        head: ClusterGraph,
        key: Key,
        doc: Document,
        where: str = "",
    ) -> Finding | None:
        owner = display(key)
        where_cluster = where or cluster  # the applied-to cluster it leaves
        prune, why = prunes(base, head, key)
        protected = prune_protected(parse(doc))
        where = f"{doc.id} leaves {owner}"
        if not prune or protected:
            reason = protected or why
            return self._finding(
                cluster,
                key,
                doc.id,
                "info",
                f"{where} and nothing in {where_cluster} renders it any more, but {reason}: it "
                "stays in the cluster orphaned, running unmanaged; delete it by hand if it "
                "should go.",
            )
        lead = (
            f"{where} ({why}) and nothing in {where_cluster} renders it any more: Flux deletes it"
        )
        severity, clause = consequence([*ctx.base_graphs.values()], doc, where_cluster)
        return self._finding(
            cluster,
            key,
            doc.id,
            severity,
            f"{lead}{', and ' + clause if clause else ''}; if that is not intended keep it "
            "rendered, or mark it "
            "kustomize.toolkit.fluxcd.io/prune: disabled (or set prune: false on "
            f"{owner}) one commit before removing it.",
        )

    def _finding(
        self, cluster: str, key: Key, doc_id: DocId, severity: Severity, message: str
    ) -> Finding:
        return Finding(
            id=f"{self.id}:{cluster}:{display(key)}:{doc_id}",
            rule=self.id,
            severity=severity,
            cluster=cluster,
            kustomizations=(display(key),),
            documents=(str(doc_id),),
            message=message,
        )


def prunes(base: ClusterGraph, head: ClusterGraph, key: Key) -> tuple[bool, str]:
    """Whether the owner's garbage collection deletes what left it, and why (for messages)."""
    node = head.nodes.get(key)
    if node is not None:
        if not node.spec_known:
            return True, "prune: true (bootstrap default)"
        return node.prune, f"{display(key)} has prune: {str(node.prune).lower()}"
    old = base.nodes.get(key)
    if old is None:
        return False, "its Kustomization is unknown"
    if not old.prune:
        return False, f"{display(key)} is removed but had prune: false"
    declarer = _declarer(base, key)
    if declarer is not None and declarer not in head.nodes:
        return prunes(base, head, declarer)
    if declarer is not None:
        parent = head.nodes[declarer]
        if parent.spec_known and not parent.prune:
            return False, (
                f"{display(key)} is removed from {parent.display}, which has prune: false, "
                "so the Kustomization object itself stays"
            )
    return True, f"{display(key)} is removed and garbage-collects what it applied"


def hidden_by_failure(base: ClusterGraph, head: ClusterGraph, key: Key) -> str | None:
    """Why a failed head target hides what Kustomization `key` does with its documents, or
    None when nothing does (failures elsewhere in the cluster do not)."""
    result = head.result(key)
    if result is not None and not result.ok:
        return (
            f"{display(key)} failed to render in head (it applies and prunes nothing until fixed)"
        )
    if key in head.nodes:
        return None
    seen: set[Key] = set()
    declarer = _declarer(base, key)
    while declarer is not None and declarer not in seen:
        seen.add(declarer)
        declared = head.result(declarer)
        if declared is not None and not declared.ok:
            return (
                f"{display(declarer)}, which declares {display(key)}, failed to render in head, "
                f"so whether {display(key)} still exists is unknown"
            )
        declarer = _declarer(base, declarer)
    return None


def _declarer(graph: ClusterGraph, key: Key) -> Key | None:
    node = graph.nodes.get(key)
    if node is None or node.declared_by is None:
        return None
    for other, candidate in graph.nodes.items():
        if candidate.target == node.declared_by:
            return other
    return None


def consequence(
    graphs: list[ClusterGraph], doc: Document, where: str | None = None
) -> tuple[Severity, str]:
    """(severity, clause) saying what deleting this object takes with it ("" if nothing),
    from what is applied to applied-to cluster `where` (None: every cluster's objects)."""
    doc_id = doc.id
    if doc_id.group == "" and doc_id.kind == "Namespace":
        inside = k8s.namespace_contents(graphs, doc_id.name, where)
        text = "everything in it goes with it"
        if inside:
            text += f" ({and_list(inside, 4)})"
        system = k8s.SYSTEM_NAMESPACES.get(doc_id.name)
        if system:
            text += f"; {doc_id.name} is a system namespace: deleting it takes {system} with it"
        return "error", text
    if k8s.is_crd(doc_id):
        target = k8s.crd_target(doc)
        if target is None:
            return "error", "Kubernetes deletes every custom resource of it"
        text = f"Kubernetes deletes every {target[1]} ({target[0]}) with it"
        crs = k8s.custom_resources(graphs, *target, where=where)
        if crs:
            text += f" ({and_list(crs, 4)})"
        return "error", text
    data = k8s.DATA_KINDS.get((doc_id.group, doc_id.kind))
    if data:
        return "error", f"with it goes {data}"
    if doc_id.group == "helm.toolkit.fluxcd.io" and doc_id.kind == "HelmRelease":
        return "warning", "helm-controller uninstalls the release and everything it installed"
    return "info", ""


RULE = PruneDelete()
