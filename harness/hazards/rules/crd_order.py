"""crd-order (lint): a custom resource applied before its CRD can exist.

Flux applies one Kustomization in one server-side apply (CRDs and Namespaces first), so a
plain CRD object in the same Kustomization is fine, and so is one in a Kustomization this
one (transitively) dependsOn or that declares this one (its apply creates the CRD before the
Kustomization object). Severity follows what happens on a cluster without the CRD:

- error: the CRD only comes from a HelmRelease in the *same* Kustomization: the whole apply
  fails with `no matches for kind`, so the HelmRelease never installs the CRD (the deadlock
  that split platform into platform and platform-config);
- warning: the CRD comes from another Kustomization that cannot apply until this one is
  ready (it dependsOn this one, or this one declares it): no retry path, a deadlock too;
- info: the CRD comes from another Kustomization this one does not dependsOn: the first
  applies fail and Flux retries until the CRD exists (a slow first bootstrap), or the
  same-Kustomization case works only because the CRD is preinstalled (a latent deadlock);
  also when the provider is only guessed (a HelmRelease by name) while this Kustomization
  dependsOn one harness did not render (external or undeclared source, failed): the
  author's dependsOn is trusted as saying where the CRDs come from.

A CRD that exists before Flux starts (preinstalled.py: bootstrap helmfiles, bootstrap
kustomize directories, Talos/k3s manifests, the config's `preinstalled:`) makes the
cross-Kustomization cases no hazard at all; findings say how it was judged preinstalled.
Built-in API groups and Flux's own are known; a group with neither a CRD object nor a likely
installer is left alone. One finding per (consumer, provider) pair lists its documents.

CRDs are looked for in the consumer's applied-to cluster (ksgraph): a plain CRD applied by
a Kustomization of the same one, or a HelmRelease whose chart lands there (its own
`spec.kubeConfig`, else its Kustomization's); a hub's CRDs never serve a spoke's objects.

In a diff, a Kustomization that failed to render in head is unknown, not empty: a finding
that only its missing CRDs (or HelmReleases) cause is not introduced (`unjudged`: it goes
away once the failed targets stand in with their base render).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.core.model import DocId, Document, Snapshot, TargetResult
from harness.flux.ksgraph import ClusterGraph, Key, display, parse
from harness.hazards import k8s
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding, Severity, and_list
from harness.hazards.installers import Installers, installs
from harness.hazards.rules.prune_delete import hidden_by_failure

if TYPE_CHECKING:
    from harness.hazards.preinstalled import Inventory, Provision

HELMRELEASE = ("helm.toolkit.fluxcd.io", "HelmRelease")
# Values that switch a chart's CRD templates off (cert-manager, external-secrets, ...).
_CRDS_OFF = (("installCRDs",), ("crds", "enabled"), ("crds", "install"), ("crds", "create"))


def _get(values: Any, path: tuple[str, ...]) -> Any:
    for step in path:
        if not isinstance(values, dict) or step not in values:
            return None
        values = values[step]
    return values


class HelmRelease:
    """Name, chart and release of one HelmRelease: what a custom resource's group is matched
    against, and whether it installs CRDs at all (`install.crds: Skip`, `crds.enabled: false`)."""

    def __init__(self, key: Key, doc: Document) -> None:
        self.key = key
        self.id = doc.id
        spec = parse(doc).get("spec") or {}
        chart = ""
        self.installs_crds = True
        namespace = doc.id.namespace or "default"
        release_ns, release_name = namespace, doc.id.name
        if isinstance(spec, dict):
            chart_spec = (spec.get("chart") or {}).get("spec") or {}
            chart_ref = spec.get("chartRef") or {}
            chart = str(chart_spec.get("chart") or chart_ref.get("name") or "")
            install = spec.get("install") if isinstance(spec.get("install"), dict) else {}
            assert isinstance(install, dict)
            if str(install.get("crds") or "").lower() == "skip":
                self.installs_crds = False
            values = spec.get("values")
            if any(_get(values, path) is False for path in _CRDS_OFF):
                self.installs_crds = False
            target = spec.get("targetNamespace")
            if isinstance(target, str) and target:
                release_ns, release_name = target, f"{target}-{doc.id.name}"
            if isinstance(spec.get("releaseName"), str) and spec["releaseName"]:
                release_name = spec["releaseName"]
        self.names = {doc.id.name, chart} - {""}
        # How an out-of-band install of the same release would be named.
        self.releases = {
            (namespace, doc.id.name),
            (release_ns, release_name),
            (release_ns, doc.id.name),
        }

    def installs(self, group: str) -> bool:
        """Likely installer of `group` (installers.py), unless it is told not to install CRDs."""
        return self.installs_crds and installs(self.names, group)


@dataclass
class _Pair:
    """What one consumer Kustomization needs from one provider."""

    severity: Severity
    relation: str  # "same", "deadlock", "unordered", "preinstalled"
    provider: tuple[Key, ...]
    via: str  # who provides the CRDs, for the message
    documents: set[DocId] = field(default_factory=set)
    kinds: set[str] = field(default_factory=set)
    why: str = ""  # deadlock reason or preinstalled `how`
    guessed: bool = False  # the provider is a HelmRelease judged by name


class CrdOrder:
    id = "crd-order"
    summary = "a custom resource applied before its CRD can exist"
    modes: tuple[str, ...] = ("lint",)
    scope = "cluster"  # a cluster's findings come from its graph alone (engine.diff)

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        out: list[Finding] = []
        inventory = ctx.preinstalled
        for cluster, graph in ctx.graphs.items():
            indexes = {w: _Index(w, graph, inventory) for w in graph.applied_clusters()}
            for key, result in graph.ok_results():
                index = indexes[graph.applied_to(key)]
                pairs: dict[tuple[str, tuple[Key, ...]], _Pair] = {}
                seen: dict[tuple[str, str], _Pair | None] = {}
                for doc in result.documents:
                    group, kind = doc.id.group, doc.id.kind
                    if (group, kind) not in seen:  # one verdict per kind this key applies
                        skip = k8s.is_builtin(group) or k8s.is_crd(doc.id)
                        seen[(group, kind)] = (
                            None if skip else self._classify(index, key, group, kind)
                        )
                    pair = seen[(group, kind)]
                    if pair is None:
                        continue
                    slot = pairs.setdefault((pair.relation, pair.provider), pair)
                    slot.documents.add(doc.id)
                    slot.kinds.add(doc.id.kind)
                out.extend(self._finding(cluster, key, p) for p in pairs.values())
        return out

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        return []

    def view(self, ctx: LintContext, result: TargetResult) -> object:
        """What the rule reads of one target beyond its documents' identities and what the
        graph reads (engine.same_views): the (group, kind) each CRD defines, and of each
        HelmRelease the names, releases and CRD switch `HelmRelease` takes."""
        out: list[object] = []
        for doc in result.documents:
            if k8s.is_crd(doc.id):
                out.append(k8s.crd_target(doc))
            elif (doc.id.group, doc.id.kind) == HELMRELEASE:
                release = HelmRelease(("", ""), doc)
                out.append((sorted(release.names), sorted(release.releases), release.installs_crds))
        return out

    def unjudged(self, ctx: DiffContext) -> set[str]:
        """Ids of head findings a failed head render makes unknown: those that go away when
        every Kustomization failing in head (and each one missing because its declarer
        failed) renders what it rendered in base. A failed provider is unknown, not gone: its
        CRDs may still come first, so a consumer is not judged against a weaker one."""
        stand_ins = _stand_ins(ctx)
        if not stand_ins:
            return set()
        lint = ctx.head_lint
        seen = {f.id for f in self.check_snapshot(lint)}
        patched = Snapshot(ctx.head.renderer, {**ctx.head.results, **stand_ins})
        known = LintContext(patched, sources=lint.sources, inventory=lint.preinstalled)
        return seen - {f.id for f in self.check_snapshot(known)}

    def _classify(self, index: _Index, key: Key, group: str, kind: str) -> _Pair | None:
        """A fresh pair (its document sets are filled by the caller) or None."""
        graph = index.graph
        deps = index.deps(key)
        holders = index.crds.get((group, kind))
        if holders:
            # A plain CRD in a Kustomization that declares this one is applied (first stage)
            # before this Kustomization object even exists.
            if key in holders or holders & deps or holders & index.declarers(key):
                return None
            if index.preinstalled(group, kind, ()) is not None:
                return None
            provider = tuple(sorted(holders))
            via = f"CustomResourceDefinition objects in {and_list([display(k) for k in provider])}"
            return self._across(index, key, provider, via, guessed=False)
        likely = index.likely(group)
        if not likely or any(r.key in deps for r in likely):
            return None
        releases = frozenset(rel for r in likely for rel in r.releases)
        found = index.preinstalled(group, kind, releases)
        same = [r for r in likely if r.key == key]
        unseen = tuple(sorted(d for d in deps if not _rendered(graph, d)))
        if same:
            via = and_list(sorted({str(r.id) for r in same}))
            if found is not None:
                return _Pair("info", "preinstalled", (key,), via, why=found.how)
            if unseen:  # the guess is weaker than the author's dependsOn
                return _Pair("info", "unseen", unseen, via)
            return _Pair("error", "same", (key,), via)
        if found is not None:
            return None
        provider = tuple(sorted({r.key for r in likely}))
        via = and_list(sorted({str(r.id) for r in likely}))
        if unseen:
            return _Pair("info", "unseen", unseen, via, guessed=True)
        return self._across(index, key, provider, via, guessed=True)

    def _across(
        self, index: _Index, key: Key, provider: tuple[Key, ...], via: str, guessed: bool
    ) -> _Pair:
        """A provider in other Kustomizations: a deadlock when none can apply before `key`."""
        reasons = [index.blocked(p, key) for p in provider]
        if all(reasons):
            why = "; ".join(r for r in reasons if r)
            return _Pair("warning", "deadlock", provider, via, why=why, guessed=guessed)
        return _Pair("info", "unordered", provider, via, guessed=guessed)

    def _finding(self, cluster: str, key: Key, pair: _Pair) -> Finding:
        ks = display(key)
        docs = sorted(pair.documents)
        kinds = and_list(sorted(pair.kinds))
        first = sorted(pair.kinds)[0]
        listed = and_list([str(d) for d in docs], 4)
        providers = [display(k) for k in pair.provider]
        where = and_list(providers)
        come = "most likely come" if pair.guessed else "come"
        cause = ""
        if pair.relation == "same":
            message = (
                f"{ks} applies {listed} ({kinds}) whose CRDs are most likely installed by "
                f"{pair.via} in the same Kustomization: on a cluster without these CRDs Flux "
                f"applies both in one pass, the apply fails with `no matches for kind {first}` "
                "and the HelmRelease never gets to install them; move the custom resources to "
                f"a Kustomization that dependsOn {ks}, or install the CRDs before Flux and "
                "declare them under `preinstalled:` in harness.yaml."
            )
        elif pair.relation == "unseen":
            message = (
                f"{ks} applies {listed} ({kinds}), whose CRDs harness would guess come from "
                f"{pair.via}; but {ks} dependsOn {where}, which harness did not render (its "
                "source is external or undeclared, or it failed): the dependsOn says that is "
                f"where they come from, so this is trusted; if {where} does not install them, "
                f"a fresh cluster fails with `no matches for kind {first}`."
            )
        elif pair.relation == "preinstalled":
            cause = (
                f"custom resources next to {pair.via}, which installs their CRDs; fine only "
                f"because the CRDs exist before Flux starts ({pair.why})"
            )
            message = (
                f"{ks} applies {listed} ({kinds}) next to {pair.via}, which installs their "
                f"CRDs; that works only because the CRDs exist before Flux starts ({pair.why}): "
                f"a cluster bootstrapped without that step fails with `no matches for kind "
                f"{first}`."
            )
        elif pair.relation == "deadlock":
            cause = (
                f"move the custom resources to a Kustomization that dependsOn {where} (their "
                f"CRDs {come} from {pair.via}, which cannot apply first)"
            )
            message = (
                f"{ks} applies {listed} ({kinds}) whose CRDs {come} from {pair.via}, but "
                f"{pair.why}: on a cluster without these CRDs neither ever becomes ready (no "
                f"retry gets past `no matches for kind {first}`); move the custom resources to a "
                f"Kustomization that dependsOn {where}."
            )
        else:
            cause = (
                f"add dependsOn {where} (their custom resources' CRDs {come} from {pair.via}; "
                "until it has installed them the first applies fail and Flux retries)"
            )
            message = (
                f"{ks} applies {listed} ({kinds}) whose CRDs {come} from {pair.via} in {where}, "
                f"which {ks} does not dependsOn: on a fresh cluster its first applies fail with "
                f"`no matches for kind {first}` until {where} has installed them (Flux retries, "
                f"a slow first bootstrap); add dependsOn {where} for a clean bootstrap."
            )
        provider_id = "+".join(providers)
        suffix = "" if pair.relation in ("same", "preinstalled") else f":{provider_id}"
        if pair.relation == "unseen":
            suffix = f":unseen:{provider_id}"
        return Finding(
            id=f"{self.id}:{cluster}:{ks}{suffix}",
            rule=self.id,
            severity=pair.severity,
            cluster=cluster,
            kustomizations=tuple(dict.fromkeys([ks, *providers])),
            documents=tuple(str(d) for d in docs),
            message=message,
            cause=cause,
        )


def _stand_ins(ctx: DiffContext) -> dict[str, TargetResult]:
    """Base renders standing in for the flux targets a failed head render hides: those
    failing in head, and those gone from head because their declarer failed there."""
    out: dict[str, TargetResult] = {}
    for cluster, base in ctx.base_graphs.items():
        head = ctx.head_graphs.get(cluster)
        if head is None or not head.failed():
            continue
        for key, old in base.ok_results():
            if hidden_by_failure(base, head, key) is not None:
                out[old.name] = old
    return out


def _rendered(graph: ClusterGraph, key: Key) -> bool:
    """Whether harness saw what `key` applies (a rendered flux target)."""
    result = graph.result(key)
    return result is not None and result.ok


class _Index:
    """One cluster's CRDs by (group, kind) and HelmReleases, indexed once: each lookup a
    rule makes per document is then a dict hit, so the rule is linear in documents (it was
    documents x releases, 168k `installs` calls on a 250-Kustomization repo)."""

    def __init__(self, where: str, graph: ClusterGraph, inventory: Inventory) -> None:
        self.cluster = where  # the applied-to cluster: preinstalled CRDs are looked up there
        self.graph = graph
        self.inventory = inventory
        self.crds: dict[tuple[str, str], set[Key]] = {}
        self.releases: list[HelmRelease] = []
        for doc_id, owners in graph.within(where).items():
            for key, doc in owners:
                if k8s.is_crd(doc_id):
                    target = k8s.crd_target(doc)
                    if target is not None:
                        self.crds.setdefault(target, set()).add(key)
        for doc_id, owners in graph.index.items():
            if (doc_id.group, doc_id.kind) != HELMRELEASE:
                continue
            for key, doc in owners:
                if graph.chart_applied_to(key, doc) == where:
                    self.releases.append(HelmRelease(key, doc))
        self._installers = Installers([r.names if r.installs_crds else () for r in self.releases])
        self._likely: dict[str, list[HelmRelease]] = {}
        self._deps: dict[Key, set[Key]] = {}
        self._declarers: dict[Key, set[Key]] = {}
        self._by_target = {n.target: k for k, n in graph.nodes.items()}
        self._preinstalled: dict[tuple[str, str, frozenset[tuple[str, str]]], object] = {}
        self._blocked: dict[tuple[Key, Key], str] = {}

    def likely(self, group: str) -> list[HelmRelease]:
        """The releases that likely install `group` (installers.py), once per group."""
        found = self._likely.get(group)
        if found is None:
            matching = self._installers.matching(group)  # `r.installs(group)`, indexed
            found = self._likely[group] = [self.releases[i] for i in matching]
        return found

    def deps(self, key: Key) -> set[Key]:
        found = self._deps.get(key)
        if found is None:
            found = self._deps[key] = self.graph.deps(key)
        return found

    def declarers(self, key: Key) -> set[Key]:
        found = self._declarers.get(key)
        if found is None:
            found = self._declarers[key] = set(_declarers(self.graph, key, self._by_target))
        return found

    def blocked(self, provider: Key, consumer: Key) -> str:
        """`_blocked` in this cluster, once per pair, from the indexed deps and declarers."""
        found = self._blocked.get((provider, consumer))
        if found is None:
            found = self._blocked[(provider, consumer)] = _blocked(
                self.graph, provider, consumer, self
            )
        return found

    def preinstalled(
        self, group: str, kind: str, releases: frozenset[tuple[str, str]] | tuple[()]
    ) -> Provision | None:
        memo_key = (group, kind, frozenset(releases))
        if memo_key not in self._preinstalled:
            self._preinstalled[memo_key] = self.inventory.crd(self.cluster, group, kind, releases)
        return self._preinstalled[memo_key]  # type: ignore[return-value]


def _declarers(graph: ClusterGraph, key: Key, by_target: dict[str, Key] | None = None) -> list[Key]:
    """The Kustomizations whose render declares `key`, innermost first."""
    if by_target is None:
        by_target = {n.target: k for k, n in graph.nodes.items()}
    out: list[Key] = []
    node = graph.nodes.get(key)
    while node is not None and node.declared_by in by_target:
        parent = by_target[node.declared_by or ""]
        if parent in out or parent == key:
            break
        out.append(parent)
        node = graph.nodes.get(parent)
    return out


def _blocked(graph: ClusterGraph, provider: Key, consumer: Key, index: _Index | None = None) -> str:
    """Why `provider` cannot apply before `consumer` is ready, or "" when it can (`index`:
    the cluster's, whose deps and declarers are the graph's, each found once)."""
    p, c = display(provider), display(consumer)
    deps = index.deps(provider) if index is not None else graph.deps(provider)
    if consumer in deps:  # graph.depends(provider, consumer)
        return f"{p} dependsOn {c} (transitively)"

    def declares(key: Key) -> bool:
        if index is not None:
            return consumer in index.declarers(key)
        return consumer in _declarers(graph, key)

    if declares(provider):
        return f"{c} declares {p}, so a failed apply of {c} never creates it"
    for dep in sorted(deps):
        if declares(dep):
            return f"{p} dependsOn {display(dep)}, which {c} declares"
    return ""


RULE = CrdOrder()
