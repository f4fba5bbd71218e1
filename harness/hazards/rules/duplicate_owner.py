"""duplicate-owner (lint): one identity rendered by two flux targets of one cluster.

Both Kustomizations apply their copy on every reconcile (server-side apply, field managers
fighting), and when either one stops rendering it, its prune deletes the object the other
still wants. "One cluster" is the applied-to cluster (ksgraph): a hub's Kustomizations with
`spec.kubeConfig` for two spokes render the same Namespace into two clusters, no duplicate.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.core.model import DocId, Document
from harness.flux.ksgraph import Key, display
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding, and_list
from harness.hazards.k8s import doc_order


class DuplicateOwner:
    id = "duplicate-owner"
    summary = "one object rendered by two Flux Kustomizations of one cluster"
    modes: tuple[str, ...] = ("lint",)
    scope = "cluster"  # a cluster's findings come from its graph alone (engine.diff)

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        out: list[Finding] = []
        for cluster, graph in ctx.graphs.items():
            for where in graph.applied_clusters():
                out.extend(self._within(cluster, where, graph.within(where)))
        return out

    def _within(
        self, cluster: str, where: str, index: Mapping[DocId, tuple[tuple[Key, Document], ...]]
    ) -> list[Finding]:
        out: list[Finding] = []
        # the few objects with two owners, then sorted (sorting every object by DocId's
        # generated comparison was most of the rule's time)
        shared = [(i, o) for i, o in index.items() if len(o) > 1 and len({k for k, _d in o}) > 1]
        for doc_id, owners in sorted(shared, key=lambda item: doc_order(item[0])):
            keys = sorted({key for key, _doc in owners})
            names = [display(k) for k in keys]
            same = len({doc.sha256 for _k, doc in owners}) == 1
            versions = "identical copies" if same else "different content"
            out.append(
                Finding(
                    id=f"{self.id}:{where}:{doc_id}",
                    rule=self.id,
                    severity="warning",
                    cluster=cluster,
                    kustomizations=tuple(names),
                    documents=(str(doc_id),),
                    message=(
                        f"{doc_id} is rendered by {and_list(names)} in {where} ({versions}): "
                        "they overwrite each other on every reconcile and whichever stops "
                        "rendering it prunes it from under the other; keep it in exactly "
                        "one Kustomization."
                    ),
                )
            )
        return out

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        return []


RULE = DuplicateOwner()
