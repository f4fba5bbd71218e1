"""ownership-race (diff): a document moves from Kustomization A (prune: true) to B.

A prunes what left its inventory as long as the live object still carries A's owner labels;
B relabels it when B applies. Nothing orders the two unless, in head, A dependsOn B
(revision-gated when both share a source: B applies revision N before A may reconcile it),
A has prune: false, or the live object (the base document) is marked
`kustomize.toolkit.fluxcd.io/prune: disabled`. Otherwise A may delete it first, and B
recreates it later: for a Namespace that is a delete of everything inside it.

A document "leaving" A only because A (or the Kustomization declaring it) failed to render
in head is no move: what A renders there is unknown. Such documents are skipped, with one
`ownership-race:unjudged:<cluster>:<A>` note per Kustomization.
"""

from __future__ import annotations

from harness.core.model import Document
from harness.flux.ksgraph import ClusterGraph, Key, display, parse, prune_protected
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding, Severity, and_list
from harness.hazards.rules.prune_delete import consequence, hidden_by_failure, prunes

PROCEDURES = (
    "use one of Flux's two documented procedures: set prune: false on {a} for this commit "
    "and restore it once {b} owns the object, or mark the object "
    "kustomize.toolkit.fluxcd.io/prune: disabled one commit before moving it (or make {a} "
    "dependsOn {b}, which is revision-gated, so {b} relabels it first)"
)


class OwnershipRace:
    id = "ownership-race"
    summary = "a document moving between Kustomizations may be pruned before it is adopted"
    modes: tuple[str, ...] = ("diff",)

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        return []

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        out: list[Finding] = []
        unjudged: dict[tuple[str, Key], tuple[str, list[str]]] = {}
        for d in ctx.departures():
            if not d.new_owners:
                continue
            why = hidden_by_failure(d.base, d.head, d.owner)
            if why is not None:
                unjudged.setdefault((d.cluster, d.owner), (why, []))[1].append(str(d.doc.id))
                continue
            out.append(
                self._move(ctx, d.cluster, d.base, d.head, d.owner, list(d.new_owners), d.doc)
            )
        for (cluster, key), (why, docs) in sorted(unjudged.items()):
            out.append(
                Finding(
                    id=f"{self.id}:unjudged:{cluster}:{display(key)}",
                    rule=self.id,
                    severity="info",
                    cluster=cluster,
                    kustomizations=(display(key),),
                    documents=tuple(sorted(docs)),
                    message=(
                        f"ownership-race did not judge {len(docs)} document(s) that "
                        f"{display(key)} rendered in {cluster} before and another Kustomization "
                        f"renders in head ({and_list(sorted(docs), 4)}): {why}; whether they "
                        "move is unknown until it renders."
                    ),
                )
            )
        return out

    def _move(
        self,
        ctx: DiffContext,
        cluster: str,
        base: ClusterGraph,
        head: ClusterGraph,
        old: Key,
        new: list[Key],
        doc: Document,
    ) -> Finding:
        a, b = display(old), and_list([display(k) for k in new])
        move = f"{doc.id} moves from {a} to {b} in {cluster}"
        protection = _protection(base, head, old, new, doc)
        if protection is not None:
            return self._finding(cluster, old, new, doc, "info", f"{move}; safe: {protection}.")
        severity, clause = consequence([*ctx.head_graphs.values()], doc)
        # Pruned then recreated by the new owner: data, Namespaces and CRDs do not come back.
        severity = "error" if severity == "error" else "warning"
        if doc.id.group == "" and doc.id.kind == "Namespace":
            clause = f", and that is `kubectl delete namespace {doc.id.name}`: {clause}"
        elif clause:
            clause = f" (then {clause})"
        gate = ""
        node = head.nodes.get(old)
        if node is None:
            state = (
                f"{a} is removed with prune: true (its deletion garbage-collects what it applied)"
            )
            verb = "garbage-collect"
        else:
            state = f"{a} keeps prune: true and does not dependsOn {new_names(new)}"
            verb = "prune"
        if node is not None and all(head.depends(old, k) for k in new):
            gate = (
                f" ({a} dependsOn {new_names(new)}, but they use different sources, so the "
                "dependency is not revision-gated)"
            )
        note = ""
        head_only = prune_protected(parse(head.find(doc.id)[0][1]))
        if head_only:
            note = (
                f" ({head_only} on the moved copy does not protect it: the live object "
                "carries the old labels until the new owner applies)"
            )
        return self._finding(
            cluster,
            old,
            new,
            doc,
            severity,
            f"{move} while {state}: "
            f"{a} may {verb} it before {b} adopts it{gate}{note}{clause}; "
            + PROCEDURES.format(a=a, b=new_names(new))
            + ".",
        )

    def _finding(
        self,
        cluster: str,
        old: Key,
        new: list[Key],
        doc: Document,
        severity: Severity,
        message: str,
    ) -> Finding:
        names = [display(old), *(display(k) for k in new)]
        return Finding(
            id=f"{self.id}:{cluster}:{display(old)}:{'+'.join(display(k) for k in new)}:{doc.id}",
            rule=self.id,
            severity=severity,
            cluster=cluster,
            kustomizations=tuple(names),
            documents=(str(doc.id),),
            message=message,
        )


def new_names(keys: list[Key]) -> str:
    return and_list([display(k) for k in keys])


def _protection(
    base: ClusterGraph, head: ClusterGraph, old: Key, new: list[Key], doc: Document
) -> str | None:
    """Why the old owner cannot delete the object before the new one adopts it, or None."""
    live = prune_protected(parse(doc))
    if live:
        return f"the live object carries {live}, so {display(old)} will not prune it"
    prune, why = prunes(base, head, old)
    if not prune:
        return why
    node = head.nodes.get(old)
    if node is None:
        return None
    gated = [k for k in new if head.depends(old, k)]
    if len(gated) == len(new):
        same = all(head.nodes[k].source == node.source for k in new)
        if same:
            return (
                f"{display(old)} dependsOn {new_names(new)} (revision-gated: "
                f"{new_names(new)} relabels it before {display(old)} prunes)"
            )
    return None


RULE = OwnershipRace()
