"""helm-delete (diff; the prune-delete class for helm targets): a document leaves a
HelmRelease's rendered output, so the next `helm upgrade` deletes it; also when another
target of the cluster now renders it (moving an object out of a release is not a handover:
Helm deletes it, and the new owner re-creates it only on its own next apply, or cannot
adopt it at all when it is another release).

Helm deletes what the new release manifest no longer holds, unless the object is annotated
`helm.sh/resource-policy: keep`. CRDs from a chart's `crds/` directory are never deleted by
Helm (nor upgraded, under helm-controller's default `upgrade.crds: Skip`). A removed CRD
takes every custom resource of its kind with it, so that is an error. A head target that
failed to render is skipped: what it would render is unknown, and a failure is never read as
a mass deletion. A HelmRelease that disappears is prune-delete's finding (the uninstall).
"""

from __future__ import annotations

from harness.core.model import DocId, Document, TargetResult
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding, Severity
from harness.hazards.rules.prune_delete import consequence

KEEP = "helm.sh/resource-policy"


class HelmDelete:
    id = "helm-delete"
    summary = "a document a HelmRelease no longer renders is deleted by the next helm upgrade"

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        return []

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        out: list[Finding] = []
        for name, base in ctx.base.results.items():
            head = ctx.head.results.get(name)
            if base.target.kind != "helm" or not base.ok or head is None or not head.ok:
                continue
            cluster = base.target.cluster or ""
            kept = {d.id for d in head.documents}
            for doc in base.documents:
                if doc.id in kept:
                    continue
                out.append(self._finding(ctx, base, doc, _rendered_by(ctx, cluster, name, doc.id)))
        return out

    def _finding(
        self, ctx: DiffContext, base: TargetResult, doc: Document, others: list[str]
    ) -> Finding:
        cluster = base.target.cluster or ""
        info = base.target.helm
        release = base.name.split("/", 1)[-1].removesuffix("@helm")
        where = f"{doc.id} leaves HelmRelease {release}"
        severity: Severity
        if info is not None and str(doc.id) in info.crds:
            severity = "info"
            message = (
                f"{where}, but it came from the chart's crds/ directory, which Helm never "
                "deletes: it stays in the cluster, no longer updated; delete it by hand if it "
                "should go."
            )
        elif f"{KEEP}: keep" in doc.text:
            severity = "info"
            message = (
                f"{where}, but it is annotated {KEEP}: keep: Helm leaves it in the cluster, "
                "orphaned; delete it by hand if it should go."
            )
        elif others:
            severity, clause = consequence([*ctx.base_graphs.values()], doc)
            message = (
                f"{where} for {', '.join(others)}: the next helm upgrade deletes it"
                f"{', and ' + clause if clause else ''}, before the new owner re-creates it "
                "(another release cannot adopt it at all); annotate it "
                f"{KEEP}: keep in the chart one release before moving it."
            )
        else:
            severity, clause = consequence([*ctx.base_graphs.values()], doc)
            message = (
                f"{where} and nothing in {cluster} renders it any more: the next helm upgrade "
                f"deletes it{', and ' + clause if clause else ''}; if that is not intended keep "
                f"it in the chart, or annotate it {KEEP}: keep one release before removing it."
            )
        return Finding(
            id=f"{self.id}:{cluster}:{release}:{doc.id}",
            rule=self.id,
            severity=severity,
            cluster=cluster,
            kustomizations=(release,),
            documents=(str(doc.id),),
            message=message,
        )


def _rendered_by(ctx: DiffContext, cluster: str, name: str, doc_id: DocId) -> list[str]:
    """Other head targets of the cluster rendering the identity, by name."""
    return [
        other.name
        for other in ctx.head.results.values()
        if other.name != name
        and other.target.cluster == cluster
        and other.ok
        and any(d.id == doc_id for d in other.documents)
    ]


RULE = HelmDelete()
