"""Which lint findings a change introduces, judged by what they are about.

A finding is about objects (its documents) in a relation (its rule), in a cluster. Its id and
its Kustomization names say where the objects are rendered, which a refactor changes without
changing the hazard: a move between Kustomizations, a directory move, a renamed namespace.
So a head finding is *introduced* only when no base finding of the same rule and cluster is
about any of the same objects, after following renames, or when it is more severe than every
base finding about them. A finding about Kustomizations alone (`dependsOn` naming a missing
one) is about that exact tuple of Kustomizations, after following renamed ones.

Renames are read from the two renders alone:
- a namespace `A` is renamed to `B` when objects gone from `A` reappear, same group, kind
  and name, in `B` (the most common target of `A` wins; Namespace `A` maps to Namespace `B`);
- a Flux Kustomization is renamed when one disappears from a cluster and a new one renders
  most of the same objects (at least half of either side).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.core.model import DocId, Snapshot
from harness.flux.ksgraph import ClusterGraph, display, graphs, is_flux_kustomization
from harness.hazards.finding import Finding, rank

Atom = tuple[str, str | None, str]  # (rule, cluster, object)


@dataclass(frozen=True)
class Renames:
    """base -> head names: document ids (as findings print them) and, per cluster,
    Kustomization display names."""

    documents: dict[str, str] = field(default_factory=dict)
    kustomizations: dict[tuple[str | None, str], str] = field(default_factory=dict)
    namespaces: dict[str, str] = field(default_factory=dict)

    def document(self, doc: str) -> str:
        return self.documents.get(doc, doc)

    def kustomization(self, cluster: str | None, name: str) -> str:
        return self.kustomizations.get((cluster, name), name)


def _ids(snapshot: Snapshot) -> set[DocId]:
    return {d.id for r in snapshot.results.values() if r.ok for d in r.documents}


def renames(
    base: Snapshot,
    head: Snapshot,
    base_graphs: Mapping[str, ClusterGraph] | None = None,
    head_graphs: Mapping[str, ClusterGraph] | None = None,
) -> Renames:
    """Namespace and Kustomization renames between two renders (see the module docstring);
    the renders' graphs when the caller has them already."""
    before, after = _ids(base), _ids(head)
    gone, new = before - after, after - before
    arrived: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for doc_id in new:
        if doc_id.namespace:
            arrived[(doc_id.group, doc_id.kind, doc_id.name)].add(doc_id.namespace)
    votes: dict[str, Counter[str]] = defaultdict(Counter)
    for doc_id in gone:
        if doc_id.namespace:
            for ns in arrived.get((doc_id.group, doc_id.kind, doc_id.name), ()):
                votes[doc_id.namespace][ns] += 1
    namespaces: dict[str, str] = {}
    for old, counter in votes.items():
        ranked = counter.most_common(2)
        if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
            namespaces[old] = ranked[0][0]
    documents: dict[str, str] = {}
    for doc_id in gone:
        if doc_id.namespace in namespaces:
            moved = DocId(doc_id.group, doc_id.kind, namespaces[doc_id.namespace], doc_id.name)
            if moved in new:
                documents[str(doc_id)] = str(moved)
        elif doc_id.group == "" and doc_id.kind == "Namespace" and doc_id.name in namespaces:
            moved = DocId("", "Namespace", "", namespaces[doc_id.name])
            if moved in new:
                documents[str(doc_id)] = str(moved)
    kustomizations = _kustomization_renames(
        graphs(base) if base_graphs is None else base_graphs,
        graphs(head) if head_graphs is None else head_graphs,
        documents,
    )
    for (_cluster, old), new_name in kustomizations.items():
        for doc_id in gone:
            if is_flux_kustomization(doc_id) and _display(doc_id) == old:
                target = DocId(doc_id.group, doc_id.kind, *_split(new_name))
                if target in new:
                    documents[str(doc_id)] = str(target)
    return Renames(documents, kustomizations, namespaces)


def _display(doc_id: DocId) -> str:
    return display((doc_id.namespace or "flux-system", doc_id.name))


def _split(name: str) -> tuple[str, str]:
    namespace, _, short = name.rpartition("/")
    return namespace or "flux-system", short


def _kustomization_renames(
    base_graphs: Mapping[str, ClusterGraph],
    head_graphs: Mapping[str, ClusterGraph],
    documents: dict[str, str],
) -> dict[tuple[str | None, str], str]:
    out: dict[tuple[str | None, str], str] = {}
    for cluster, old_graph in base_graphs.items():
        new_graph = head_graphs.get(cluster)
        if new_graph is None:
            continue
        gone = [k for k in old_graph.results if k not in new_graph.results]
        added = [k for k in new_graph.results if k not in old_graph.results]
        if not gone or not added:
            continue
        contents = {
            k: {str(d.id) for d in new_graph.documents(k) if not is_flux_kustomization(d.id)}
            for k in added
        }
        for key in gone:
            mine = {
                documents.get(str(d.id), str(d.id))
                for d in old_graph.documents(key)
                if not is_flux_kustomization(d.id)
            }
            best, score = None, 0.0
            for other, theirs in contents.items():
                shared = len(mine & theirs)
                if not shared:
                    continue
                overlap = max(shared / len(mine), shared / len(theirs))
                if overlap > score:
                    best, score = other, overlap
            if best is not None and score >= 0.5:
                out[(cluster, display(key))] = display(best)
    return out


def _atoms(f: Finding, names: Renames | None) -> set[Atom]:
    if f.documents:
        docs = (names.document(d) if names else d for d in f.documents)
        return {(f.rule, f.cluster, f"doc:{d}") for d in docs}
    if f.kustomizations:
        ks = (names.kustomization(f.cluster, k) if names else k for k in f.kustomizations)
        return {(f.rule, f.cluster, "ks:" + ",".join(ks))}
    return {(f.rule, f.cluster, f"id:{f.id}")}


def introduced(
    base: Iterable[Finding], head: Sequence[Finding], names: Renames | None = None
) -> list[Finding]:
    """The head findings the change introduces (see the module docstring), in head order."""
    known: dict[Atom, int] = {}
    for f in base:
        severity = rank(f.severity)
        for atom in _atoms(f, names):
            known[atom] = min(known.get(atom, severity), severity)
    out = []
    for f in head:
        ranks = [known[a] for a in _atoms(f, None) if a in known]
        if not ranks or rank(f.severity) < min(ranks):
            out.append(f)
    return out
