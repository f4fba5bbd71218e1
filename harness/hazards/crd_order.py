"""crd-order (lint): a custom resource applied before its CRD can exist.

Flux applies one Kustomization in one server-side apply (CRDs and Namespaces first), so a
plain CRD object in the same Kustomization is fine, and so is one in a Kustomization this
one (transitively) dependsOn. A CRD that only a HelmRelease installs is not there yet when
the Kustomization that holds both the HelmRelease and a custom resource applies: the whole
apply fails with `no matches for kind` and the HelmRelease never installs it (the deadlock
that split platform into platform and platform-config). Built-in API groups and Flux's own
are known; a group with neither a CRD object nor a likely installer (CRDs from bootstrap) is
left alone.
"""

from __future__ import annotations

from harness.hazards import k8s
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding, Severity, and_list
from harness.hazards.model import ClusterGraph, Key, display, parse
from harness.model import DocId, Document

HELMRELEASE = ("helm.toolkit.fluxcd.io", "HelmRelease")
# Groups whose installer's name shares no word with the group.
KNOWN_INSTALLERS = {
    "monitoring.coreos.com": ("kube-prometheus-stack", "prometheus-operator"),
    "snapshot.storage.k8s.io": ("snapshot-controller",),
    "upgrade.cattle.io": ("system-upgrade-controller", "system-upgrade"),
    "kubevirt.io": ("kubevirt", "kubevirt-operator"),
    "cdi.kubevirt.io": ("cdi", "cdi-operator"),
    "postgresql.cnpg.io": ("cloudnative-pg", "cnpg"),
}
_GENERIC = {"io", "com", "org", "net", "dev", "k8s", "x-k8s", "api", "apis", "app", "apps"}


class HelmRelease:
    """Name and chart of one HelmRelease: what a custom resource's group is matched against."""

    def __init__(self, key: Key, doc: Document) -> None:
        self.key = key
        self.id = doc.id
        spec = parse(doc).get("spec") or {}
        chart = ""
        if isinstance(spec, dict):
            chart_spec = (spec.get("chart") or {}).get("spec") or {}
            chart_ref = spec.get("chartRef") or {}
            chart = str(chart_spec.get("chart") or chart_ref.get("name") or "")
        self.names = {doc.id.name, chart} - {""}

    def installs(self, group: str) -> bool:
        """Likely installer of `group`: its name or chart matches a word of the group
        (`cert-manager.io` -> cert-manager), or it is a known installer of that group."""
        known = KNOWN_INSTALLERS.get(group, ())
        if any(n in known for n in self.names):
            return True
        labels = [p for p in group.split(".") if p not in _GENERIC]
        for name in self.names:
            if any(label == name or label in name.split("-") for label in labels):
                return True
            if any(label.replace("-", "") == name.replace("-", "") for label in labels):
                return True
        return False


class CrdOrder:
    id = "crd-order"
    summary = "a custom resource applied together with (or before) what installs its CRD"

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        out: list[Finding] = []
        for cluster, graph in ctx.graphs.items():
            crds: dict[tuple[str, str], set[Key]] = {}
            releases: list[HelmRelease] = []
            for doc_id, owners in graph.index.items():
                for key, doc in owners:
                    if k8s.is_crd(doc_id):
                        target = k8s.crd_target(doc)
                        if target is not None:
                            crds.setdefault(target, set()).add(key)
                    elif (doc_id.group, doc_id.kind) == HELMRELEASE:
                        releases.append(HelmRelease(key, doc))
            for key, result in graph.ok_results():
                deps = graph.deps(key)
                for doc in result.documents:
                    if k8s.is_builtin(doc.id.group) or k8s.is_crd(doc.id):
                        continue
                    finding = self._check(cluster, graph, key, deps, doc.id, crds, releases)
                    if finding is not None:
                        out.append(finding)
        return out

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        return []

    def _check(
        self,
        cluster: str,
        graph: ClusterGraph,
        key: Key,
        deps: set[Key],
        doc_id: DocId,
        crds: dict[tuple[str, str], set[Key]],
        releases: list[HelmRelease],
    ) -> Finding | None:
        ks = display(key)
        holders = crds.get((doc_id.group, doc_id.kind))
        if holders:
            if key in holders or holders & deps:
                return None
            where = and_list(sorted(display(k) for k in holders))
            return self._finding(
                cluster,
                key,
                doc_id,
                "warning",
                f"{doc_id} is a {doc_id.kind} ({doc_id.group}) whose CRD is applied by {where}, "
                f"which {ks} does not dependsOn: on a fresh cluster {ks} can apply first and "
                f"fail with `no matches for kind {doc_id.kind}`; add dependsOn {where}.",
                extra=sorted(holders),
            )
        likely = [r for r in releases if r.installs(doc_id.group)]
        same = [r for r in likely if r.key == key]
        if same:
            names = and_list([str(r.id) for r in same])
            return self._finding(
                cluster,
                key,
                doc_id,
                "error",
                f"{doc_id} is a {doc_id.kind} ({doc_id.group}) whose CRD is most likely "
                f"installed by {names} in the same Kustomization {ks}: Flux applies both in one "
                f"pass, the apply fails with `no matches for kind {doc_id.kind}` and the "
                "HelmRelease never gets to install the CRD; move the custom resources to a "
                f"Kustomization that dependsOn {ks}.",
            )
        elsewhere = [r for r in likely if r.key not in deps]
        if likely and len(elsewhere) == len(likely):
            owners = sorted({r.key for r in elsewhere})
            where = and_list([display(k) for k in owners])
            return self._finding(
                cluster,
                key,
                doc_id,
                "warning",
                f"{doc_id} is a {doc_id.kind} ({doc_id.group}) whose CRD is most likely "
                f"installed by {and_list([str(r.id) for r in elsewhere])} in {where}, which "
                f"{ks} does not dependsOn: on a fresh cluster {ks} can apply first and fail "
                f"with `no matches for kind {doc_id.kind}`; add dependsOn {where}.",
                extra=owners,
            )
        return None

    def _finding(
        self,
        cluster: str,
        key: Key,
        doc_id: DocId,
        severity: Severity,
        message: str,
        extra: list[Key] | None = None,
    ) -> Finding:
        names = [display(key), *(display(k) for k in extra or [])]
        return Finding(
            id=f"{self.id}:{cluster}:{display(key)}:{doc_id}",
            rule=self.id,
            severity=severity,
            cluster=cluster,
            kustomizations=tuple(dict.fromkeys(names)),
            documents=(str(doc_id),),
            message=message,
        )


RULE = CrdOrder()
