"""api-reject (lint): an object the API server would refuse in its Kustomization's dry-run.

kustomize-controller applies a Kustomization's whole render as one server-side apply,
dry-run first: one object the API server refuses fails the entire Kustomization, and
everything that dependsOn it stalls. Each object a Flux target renders is checked offline
(hazards/schemas.py): a built-in kind against the OpenAPI schema of the cluster's Kubernetes
version (`helm.kube_version`, per cluster when it maps clusters; the Helm capabilities use
it too), a custom resource against its CRD version's `openAPIV3Schema` from the CRDs the
same cluster renders (Flux targets and Helm targets, Flux's own CRDs when the repo renders
gotk-components.yaml).
Errors: an unknown field, a wrong type, a missing required field, a value its CRD's schema
refuses, an API version the cluster no longer serves (with the replacement), a CRD version
that is not served or not defined. Warnings: a deprecated version. A SOPS-encrypted Secret
or ConfigMap applied by a Kustomization without `spec.decryption` reaches the API server
with its `sops:` field: an error with the fix; with decryption its shape is checked, not
its ciphertext.

A kind whose schema is unknown is not judged: one note per cluster counts them (the
report's `not_judged`, not a finding: no schema is not a hazard). Flux's own kinds are
judged when the cluster renders Flux's CRDs; else they have a note of their own per cluster
(a Flux Operator install renders no Flux CRDs), naming the Flux version its FluxInstance
would install when the cluster renders one.
One finding per cause: the same problem at the same place, from the same file (a typo in a
shared component), lists every Kustomization and object it fails. Results are kept per
target, keyed by its documents' sha256s and the schemas' digests: in the render cache for
`lint`, as the side's facts for a diff (hazards/facts.py: the head reads the base's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.cache import store as cache_mod
from harness.core.documents import is_sops_encrypted
from harness.core.memo import Memo
from harness.core.model import DocId, Document, Snapshot, TargetResult
from harness.flux.helm import capabilities
from harness.flux.ksgraph import ClusterGraph, Key, display, parse, split_target_name
from harness.hazards import k8s, schemas
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding, Severity, and_list
from harness.hazards.schemas import BuiltinSchemas, Crd, Problem

if TYPE_CHECKING:
    from harness.hazards.preinstalled import Inventory

KUSTOMIZATION = ("kustomize.toolkit.fluxcd.io", "Kustomization")
FLUX_INSTANCE = ("fluxcd.controlplane.io", "FluxInstance")
SOPS_PATH = "sops"

NOT_JUDGED = "api-reject:not-judged"  # LintContext.memo: one line per cluster (engine)
_VERDICTS: Memo[tuple[str, str, bool], Verdict] = Memo("accept.verdicts", 65536)


@dataclass(frozen=True)
class Verdict:
    """What the API server would say about one document: its problems, or that it has no
    schema to judge by (`unjudged`: `group/Kind`)."""

    problems: tuple[Problem, ...] = ()
    unjudged: str = ""


@dataclass
class _Cause:
    severity: Severity
    problem: Problem
    file: str | None
    kustomizations: set[Key] = field(default_factory=set)
    documents: set[DocId] = field(default_factory=set)


def _split(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def _builtin_verdict(
    obj: Mapping[str, Any], group: str, version: str, kind: str, builtin: BuiltinSchemas
) -> Verdict:
    api = f"{group}/{version}" if group else version
    served = capabilities.builtin(builtin.kube_version)
    root = builtin.root(group, version, kind)
    rows = [row for row in capabilities.BUILTIN if kind in row[1]]  # the kind, any group
    known = [row for row in rows if _split(row[0])[0] == group]
    at = capabilities.minor(builtin.kube_version)
    # where a kind went when its version was removed (Ingress: to networking.k8s.io)
    instead = sorted({row[0] for row in rows if row[0] != api and f"{row[0]}/{kind}" in served})
    fix = f": use {and_list(instead)}" if instead else ""
    if known and f"{api}/{kind}" not in served and root is None:
        mine = [row for row in known if row[0] == api]
        gone = mine[0][3] if mine and mine[0][3] < capabilities.STILL_SERVED else 0
        when = f" (removed in 1.{gone})" if gone else ""
        message = f"{api} {kind} is not served by Kubernetes 1.{at}{when}{fix}"
        return Verdict((Problem("apiVersion", message),))
    if root is None:
        return Verdict(unjudged=f"{api}/{kind}")
    problems = schemas.validate_builtin(obj, root, builtin)
    for row in known:
        if row[0] == api and at < row[3] < capabilities.STILL_SERVED:
            message = f"{api} {kind} is deprecated: Kubernetes 1.{row[3]} removes it{fix}"
            problems.append(Problem("apiVersion", message, "warning"))
    return Verdict(tuple(problems))


def _crd_verdict(
    obj: Mapping[str, Any], version: str, candidates: list[Crd], builtin: BuiltinSchemas
) -> Verdict:
    """The first CRD (of those defining the kind) that accepts the object wins; else the
    first one's problems."""
    first: list[Problem] | None = None
    for crd in candidates:
        found = crd.versions.get(version)
        problems: list[Problem]
        if found is None:
            defined = and_list(sorted(crd.versions))
            message = f"{crd.group}/{version} is not a version of its CRD (defined: {defined})"
            problems = [Problem("apiVersion", message)]
        elif not found.served:
            problems = [Problem("apiVersion", f"{crd.group}/{version} is not served by its CRD")]
        else:
            problems = schemas.validate_custom(obj, found.schema, builtin.object_meta, builtin.defs)
            if found.deprecated:
                why = found.warning or f"{crd.group}/{version} {crd.kind} is deprecated"
                problems.append(Problem("apiVersion", why, "warning"))
        if not any(p.severity == "error" for p in problems):
            return Verdict(tuple(problems))
        if first is None:
            first = problems
    return Verdict(tuple(first or ()))


def judge(
    doc: Document,
    builtin: BuiltinSchemas,
    crds: Mapping[tuple[str, str], list[Crd]],
    decrypts: bool | None,
) -> Verdict:
    """One document's verdict. `decrypts` is its Kustomization's `spec.decryption` (None:
    unknown): a SOPS-encrypted object is refused without it, its shape checked with it."""
    obj = parse(doc)
    if not obj:
        return Verdict()
    group, version = _split(doc.api_version)
    kind = doc.id.kind
    sops: list[Problem] = []
    if is_sops_encrypted(obj):
        if decrypts is False:
            sops.append(
                Problem(SOPS_PATH, "SOPS-encrypted, but the Kustomization does not decrypt")
            )
        obj = {k: v for k, v in obj.items() if k != SOPS_PATH}
    if group in capabilities.BUILTIN_GROUPS or not group:
        verdict = _builtin_verdict(obj, group, version, kind, builtin)
    else:
        candidates = crds.get((group, kind))
        if not candidates:
            return Verdict(tuple(sops), unjudged=f"{group}/{kind}")
        verdict = _crd_verdict(obj, version, candidates, builtin)
    return Verdict((*sops, *verdict.problems), verdict.unjudged)


def crd_index(
    snapshot: Snapshot, cluster: str, graph: ClusterGraph
) -> dict[tuple[str, str], list[Crd]]:
    """Every CRD the cluster renders, by (group, kind): its Flux targets' and its Helm
    targets' (a chart's crds/ and templates); distinct definitions all kept, in order."""
    docs: list[Document] = [
        doc for doc_id, owners in graph.index.items() if k8s.is_crd(doc_id) for _k, doc in owners
    ]
    for name in sorted(snapshot.results):
        result = snapshot.results[name]
        if result.ok and result.target.kind == "helm" and result.target.cluster == cluster:
            docs.extend(d for d in result.documents if k8s.is_crd(d.id))
    out: dict[tuple[str, str], list[Crd]] = {}
    seen: set[str] = set()
    for doc in docs:
        if doc.sha256 in seen:
            continue
        seen.add(doc.sha256)
        crd = schemas.crd_from(parse(doc), doc.sha256)
        if crd is not None:
            out.setdefault((crd.group, crd.kind), []).append(crd)
    return out


def decrypts(graph: ClusterGraph, key: Key) -> bool | None:
    """Whether Kustomization `key` sets `spec.decryption` (None: its spec is unknown)."""
    doc_id = DocId(*KUSTOMIZATION, key[0], key[1])
    owners = graph.index.get(doc_id)
    if not owners:
        return None
    spec = parse(owners[0][1]).get("spec")
    if not isinstance(spec, dict):
        return None
    decryption = spec.get("decryption")
    return isinstance(decryption, dict) and bool(decryption.get("provider"))


class ApiReject:
    id = "api-reject"
    summary = "an object the API server would refuse in its Kustomization's dry-run"
    modes: tuple[str, ...] = ("lint",)
    scope = "cluster"  # a cluster's findings come from its graph alone (engine.diff)

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        out: list[Finding] = []
        notes: list[str] = []
        for cluster, graph in ctx.graphs.items():
            builtin = schemas.builtin(ctx.kube_version_of(cluster))
            crds = crd_index(ctx.snapshot, cluster, graph)
            causes: dict[tuple[str, ...], _Cause] = {}
            unjudged: dict[str, set[DocId]] = {}
            flux_kinds: set[DocId] = set()
            digests: dict[tuple[str, str], str] = {}  # schema digest by (apiVersion, kind)
            for key, result in graph.ok_results():
                dec = decrypts(graph, key)
                verdicts = _verdicts(ctx, result.documents, builtin, crds, dec, digests)
                for doc, verdict in zip(result.documents, verdicts, strict=True):
                    if verdict.unjudged and _flux(verdict.unjudged):
                        flux_kinds.add(doc.id)
                    elif verdict.unjudged:
                        unjudged.setdefault(verdict.unjudged, set()).add(doc.id)
                    for problem in verdict.problems:
                        file = _file(ctx, graph, key, doc)
                        where = file or str(doc.id)
                        kind = doc.id.kind
                        cause = (problem.severity, kind, problem.path, problem.message, where)
                        slot = causes.setdefault(cause, _Cause(problem.severity, problem, file))
                        slot.kustomizations.add(key)
                        slot.documents.add(doc.id)
            out.extend(self._finding(cluster, c) for c in causes.values())
            if flux_kinds:
                notes.append(_flux_unjudged(cluster, len(flux_kinds), ctx.snapshot, graph))
            if unjudged:
                notes.append(_unjudged(cluster, unjudged, ctx.preinstalled))
        ctx.memo[NOT_JUDGED] = tuple(notes)
        return out

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        return []

    def view(self, ctx: LintContext, result: TargetResult) -> object:
        """What the rule reads of one target beyond its documents' identities and what the
        graph reads (engine.same_views): the bytes of the documents that give schemas or
        Flux versions (CRDs, FluxInstances) and, where it judges the target (a Flux target
        that rendered), each document's verdict under `ctx`'s schemas. Equal views of a
        target on both sides of a diff, with those bytes equal everywhere, are equal
        contributions to the findings."""
        special = tuple(
            d.sha256
            for d in result.documents
            if k8s.is_crd(d.id) or (d.id.group, d.id.kind) == FLUX_INSTANCE
        )
        cluster = result.target.cluster
        parts = split_target_name(result.name)
        graph = ctx.graphs.get(cluster) if cluster is not None else None
        if result.target.kind != "flux" or not result.ok or parts is None or graph is None:
            return special
        key = (parts[1], parts[2])
        assert cluster is not None
        memo_key = f"{NOT_JUDGED}:view:{cluster}"
        schemas_of = ctx.memo.get(memo_key)
        if schemas_of is None:
            builtin = schemas.builtin(ctx.kube_version_of(cluster))
            schemas_of = ctx.memo[memo_key] = (builtin, crd_index(ctx.snapshot, cluster, graph))
        builtin, crds = schemas_of
        verdicts = _verdicts(ctx, result.documents, builtin, crds, decrypts(graph, key))
        return special, tuple((v.unjudged, v.problems) for v in verdicts)

    def _finding(self, cluster: str, cause: _Cause) -> Finding:
        keys = sorted(cause.kustomizations)
        names = [display(k) for k in keys]
        docs = sorted(cause.documents)
        p = cause.problem
        first = docs[0]
        objects = and_list([_object(d) for d in docs], 3)
        where = f" ({cause.file})" if cause.file else ""
        who = (
            f"Kustomization {names[0]}"
            if len(names) == 1
            else f"Kustomizations {and_list(names, 4)}"
        )
        their = "its" if len(names) == 1 else "their"
        if p.path == SOPS_PATH:
            message = (
                f"{who} would fail {their} dry-run: {objects}{where} is SOPS-encrypted and "
                f"reaches the API server as ciphertext with its `sops:` field; add "
                "`spec.decryption: {provider: sops, secretRef: {name: <the key Secret>}}` to "
                f"{and_list(names, 4)}."
            )
        elif p.severity == "error":
            message = f"{who} would fail {their} dry-run: {objects} {p}{where}"
        else:
            message = f"{who} applies {objects}: {p}{where}"
        return Finding(
            id=f"{self.id}:{cluster}:{first}:{p.path or '.'}",
            rule=self.id,
            severity=p.severity,
            cluster=cluster,
            kustomizations=tuple(names),
            documents=tuple(str(d) for d in docs),
            message=message,
            cause=f"{first.kind} {p}{where}",
        )


def _unjudged(cluster: str, unjudged: dict[str, set[DocId]], inventory: Inventory) -> str:
    """The cluster's note: every kind without a schema, then those whose CRDs exist before
    Flux (`preinstalled:`, a bootstrap helmfile, Talos manifests), which give none."""
    kinds = sorted(unjudged)
    count = sum(len(v) for v in unjudged.values())
    line = (
        f"api-reject did not judge {count} object(s) of {len(kinds)} kind(s) in cluster "
        f"{cluster} (no schema: the cluster renders no CRD for them): {and_list(kinds, 6)}"
    )
    before = [k for k in kinds if inventory.crd(cluster, *k.rpartition("/")[::2]) is not None]
    if before:
        objects = sum(len(unjudged[k]) for k in before)
        line += (
            f"; {objects} object(s) of {len(before)} kind(s) have CRDs installed before Flux, "
            f"which carry no schema harness reads: {and_list(before, 6)}"
        )
    return line


def _flux_unjudged(cluster: str, count: int, snapshot: Snapshot, graph: ClusterGraph) -> str:
    """The note for Flux's own kinds in a cluster that renders no Flux CRDs."""
    line = (
        f"api-reject did not judge Flux's own kinds ({count} object(s)) in cluster {cluster}: "
        "no Flux CRDs rendered in this cluster (gotk-components.yaml)"
    )
    versions = flux_versions(snapshot, cluster, graph)
    if versions:
        line += (
            f"; its FluxInstance installs Flux {and_list(versions)}, "
            "whose CRDs harness does not ship"
        )
    return line


def flux_versions(snapshot: Snapshot, cluster: str, graph: ClusterGraph) -> list[str]:
    """`spec.distribution.version` of each FluxInstance the cluster renders (its Flux
    targets' and its Helm targets', a flux-instance chart's): the Flux it would install."""
    docs: list[Document] = [
        doc
        for doc_id, owners in graph.index.items()
        if (doc_id.group, doc_id.kind) == FLUX_INSTANCE
        for _k, doc in owners
    ]
    for name in sorted(snapshot.results):
        result = snapshot.results[name]
        if result.ok and result.target.kind == "helm" and result.target.cluster == cluster:
            docs.extend(d for d in result.documents if (d.id.group, d.id.kind) == FLUX_INSTANCE)
    found: set[str] = set()
    for doc in docs:
        spec = parse(doc).get("spec")
        dist = spec.get("distribution") if isinstance(spec, dict) else None
        version = dist.get("version") if isinstance(dist, dict) else None
        found.add(str(version) if isinstance(version, str | int | float) else "(no version)")
    return sorted(found)


def _flux(group_kind: str) -> bool:
    return group_kind.rpartition("/")[0].endswith(k8s.FLUX_GROUP_SUFFIX)


def _object(doc_id: DocId) -> str:
    parts = (
        [doc_id.kind, doc_id.namespace, doc_id.name]
        if doc_id.namespace
        else [doc_id.kind, doc_id.name]
    )
    return "/".join(parts)


def _file(ctx: LintContext, graph: ClusterGraph, key: Key, doc: Document) -> str | None:
    """The repo file that declares the object, when the render is of a checkout."""
    if ctx.repo is None:
        return None
    node = graph.nodes.get(key)
    index = ctx.source_index
    under = (index.rel_path(node) or "") if node is not None else ""
    return index.file_for(doc.id, under=under)


def _verdicts(
    ctx: LintContext,
    documents: tuple[Document, ...],
    builtin: BuiltinSchemas,
    crds: Mapping[tuple[str, str], list[Crd]],
    dec: bool | None,
    known: dict[tuple[str, str], str] | None = None,
) -> list[Verdict]:
    """Each document's verdict: from this run's memo, the side's facts (a diff's:
    hazards/facts.py) or the render cache (one entry per target, keyed by its documents'
    sha256s and their schemas' digests), or judged. `known`: schema digests already
    made for these schemas, by (apiVersion, kind)."""
    known = {} if known is None else known
    digests = []
    for d in documents:
        schema = known.get((d.api_version, d.id.kind))
        if schema is None:
            schema = known[(d.api_version, d.id.kind)] = _digest(d, builtin, crds)
        digests.append(schema)
    out: list[Verdict | None] = [
        _VERDICTS.get((d.sha256, g, dec is not False))
        for d, g in zip(documents, digests, strict=True)
    ]
    if all(v is not None for v in out):
        return [v for v in out if v is not None]
    cache = ctx.cache
    entry_key = cache_mod.key(
        "api-reject",
        str(dec),
        *(f"{d.sha256}:{g}" for d, g in zip(documents, digests, strict=True)),
    )
    found: dict[str, Any] | None = None
    if ctx.facts is not None:  # a side of a diff: its table holds the other side's verdicts
        found = {
            "verdicts": ctx.facts.get(
                "api-reject",
                entry_key,
                lambda: [_dump(judge(d, builtin, crds, dec)) for d in documents],
            )
        }
    elif cache is not None:
        found = cache.get(entry_key)
    if found is not None:
        try:
            out = [_load(v) for v in found["verdicts"]]
        except (KeyError, TypeError, ValueError):
            out = [None] * len(documents)
    if len(out) != len(documents) or any(v is None for v in out):
        out = [judge(d, builtin, crds, dec) for d in documents]
        if cache is not None:
            cache.put(entry_key, {"verdicts": [_dump(v) for v in out if v is not None]})
    final = [v for v in out if v is not None]
    for d, g, v in zip(documents, digests, final, strict=True):
        _VERDICTS.put((d.sha256, g, dec is not False), v)
    return final


def _digest(
    doc: Document, builtin: BuiltinSchemas, crds: Mapping[tuple[str, str], list[Crd]]
) -> str:
    group, _version = _split(doc.api_version)
    if group in capabilities.BUILTIN_GROUPS or not group:
        return builtin.digest
    found = crds.get((group, doc.id.kind))
    return schemas.digest_of([builtin.digest, *(c.digest for c in found or ())])


def _dump(v: Verdict) -> dict[str, Any]:
    return {"u": v.unjudged, "p": [[p.path, p.message, p.severity] for p in v.problems]}


def _load(raw: Any) -> Verdict:
    severities: dict[str, Severity] = {"error": "error", "warning": "warning", "info": "info"}
    problems = tuple(Problem(str(a), str(b), severities[str(c)]) for a, b, c in raw["p"])
    return Verdict(problems, str(raw["u"]))


RULE = ApiReject()
