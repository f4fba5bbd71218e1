"""helm-crd-upgrade (diff): a chart bump changes or adds a CRD in the chart's `crds/`
directory that the HelmRelease's `upgrade.crds` policy does not apply: `Skip`
(helm-controller's default) applies none, `Create` only creates new ones. The cluster keeps
the old CRD (or never gets the new one) and custom resources using the new schema fail;
`upgrade.crds: CreateReplace` applies both.
"""

from __future__ import annotations

from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding


class HelmCrdUpgrade:
    id = "helm-crd-upgrade"
    summary = "a chart's crds/ CRD changes but upgrade.crds leaves the old one in place"

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        return []

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        out: list[Finding] = []
        for name, head in ctx.head.results.items():
            info = head.target.helm
            base = ctx.base.results.get(name)
            if head.target.kind != "helm" or not head.ok or info is None or base is None:
                continue
            if not base.ok or info.upgrade_crds == "CreateReplace":
                continue
            before = {d.id: d for d in base.documents}
            release = name.split("/", 1)[-1].removesuffix("@helm")
            cluster = head.target.cluster or ""
            for doc in head.documents:
                old = before.get(doc.id)
                if str(doc.id) not in info.crds or (old is not None and old.sha256 == doc.sha256):
                    continue
                if old is None and info.upgrade_crds == "Create":
                    continue  # Create installs new CRDs on upgrade
                what = "is new in" if old is None else "changes in"
                effect = "never installs it" if old is None else "keeps the old one"
                out.append(
                    Finding(
                        id=f"{self.id}:{cluster}:{release}:{doc.id}",
                        rule=self.id,
                        severity="warning",
                        cluster=cluster,
                        kustomizations=(release,),
                        documents=(str(doc.id),),
                        message=(
                            f"{doc.id} {what} the chart's crds/ of HelmRelease {release}, but "
                            f"it upgrades with upgrade.crds: {info.upgrade_crds}"
                            f"{' (the default)' if info.upgrade_crds == 'Skip' else ''}, so a "
                            f"cluster that already runs the release {effect}; set upgrade.crds: "
                            "CreateReplace on the HelmRelease, or apply the CRD another way."
                        ),
                    )
                )
        return out


RULE = HelmCrdUpgrade()
