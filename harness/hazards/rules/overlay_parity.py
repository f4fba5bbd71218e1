"""overlay-parity (lint): clusters built from one base differ only in substituted values.

For each Kustomization present in several clusters with the same path and source, the
rendered documents may differ only where the source has a `${...}`; any other difference is
reported with its field (a warning). Where no source is known, a difference is accepted when
replacing each cluster's variable values by their names makes the values equal.

Two errors catch one cluster's values reaching another: a cluster rendering a distinctive
value (an address, a domain, a path: it has `.`, `:`, `/` or `@`) that is another cluster's
value of a variable this cluster sets otherwise, e.g. the dev LAN address pasted into a base
manifest (a value equal to a variable only the other clusters have is a coincidence);
and two clusters setting the same IP-address variable to the same value (one cluster's LAN
address rendered into the other). Secret values are redacted in renders and not compared.
Which strings of a target's documents hold another cluster's value is a fact of the
documents and the values searched for (hazards/facts.py): a target a diff did not change is
not searched again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harness.core.documents import REDACTED_PREFIX
from harness.core.memo import IdentityMemo
from harness.core.model import DocId, Document
from harness.flux.ksgraph import ClusterGraph, Key, KsNode, display, parse
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.facts import content_key, fact
from harness.hazards.finding import Finding, and_list
from harness.hazards.rules.substitution import analyse

if TYPE_CHECKING:  # sources.py loads when a lint pass runs (a diff of equal renders has none)
    from harness.hazards.sources import Path_, SourceDoc

SOPS_MASK = "**SOPS**"
IPV4 = re.compile(r"(?<![0-9.])(?:\d{1,3}\.){3}\d{1,3}(?![0-9])")
_MISSING = object()


def distinctive(value: str) -> bool:
    """Worth searching other clusters for: long enough and shaped like an address."""
    return len(value) >= 7 and any(c in value for c in ".:/@") and not value.isdigit()


def _pattern(values: list[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))
    return re.compile(rf"(?<![0-9A-Za-z-])(?:{alternatives})(?![0-9A-Za-z-])")


def _cluster_values(ctx: LintContext) -> dict[str, dict[str, set[str]]]:
    """cluster -> value -> variable names having that value (plain values only)."""
    out: dict[str, dict[str, set[str]]] = {}
    for (cluster, _ns, _name), v in analyse(ctx).variables.items():
        for var, value in v.values.items():
            out.setdefault(cluster, {}).setdefault(value, set()).add(var)
    return out


class OverlayParity:
    id = "overlay-parity"
    summary = "clusters differ only in substituted values; no cluster renders another's"
    modes: tuple[str, ...] = ("lint",)

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        values = _cluster_values(ctx)
        out = self._differences(ctx, values)
        out.extend(self._foreign(ctx, values))
        out.extend(self._shared(ctx))
        return out

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        return []

    # -- differences between clusters --------------------------------------------------------

    def _differences(
        self, ctx: LintContext, values: Mapping[str, Mapping[str, set[str]]]
    ) -> list[Finding]:
        by_key: dict[Key, list[tuple[ClusterGraph, KsNode]]] = {}
        for graph in ctx.graphs.values():
            for key, node in graph.nodes.items():
                result = graph.result(key)
                if node.spec_known and result is not None and result.ok:
                    by_key.setdefault(key, []).append((graph, node))
        out: list[Finding] = []
        digests: dict[str, str] = {}  # each cluster's values, digested once (`_compare`)
        for key, members in sorted(by_key.items()):
            groups: dict[tuple[str, tuple[str, str, str] | None], list[ClusterGraph]] = {}
            for graph, node in members:
                rel = ctx.source_index.rel_path(node)
                groups.setdefault((rel or node.path, node.source), []).append(graph)
            for graphs in groups.values():
                if len(graphs) >= 2:
                    out.extend(self._compare(ctx, key, graphs, values, digests))
        return out

    def _doc_warning(self, pair: str, ks: str, doc_id: DocId, message: str) -> Finding:
        """One document of one Kustomization that differs across clusters unexplained."""
        return Finding(
            id=f"{self.id}:{pair}:{ks}:{doc_id}",
            rule=self.id,
            severity="info",
            cluster=pair,
            kustomizations=(ks,),
            documents=(str(doc_id),),
            message=message,
        )

    def _compare(
        self,
        ctx: LintContext,
        key: Key,
        graphs: list[ClusterGraph],
        values: Mapping[str, Mapping[str, set[str]]],
        digests: dict[str, str] | None = None,
    ) -> list[Finding]:
        clusters = [g.cluster for g in graphs]
        docs = {g.cluster: {d.id: d for d in g.documents(key)} for g in graphs}
        node = graphs[0].nodes[key]
        sources = _source_map(ctx.source_index.documents(node))
        pair = ",".join(clusters)
        ks = display(key)
        out: list[Finding] = []
        all_ids = sorted(set().union(*(set(d) for d in docs.values())))
        for doc_id in all_ids:
            present = [c for c in clusters if doc_id in docs[c]]
            if len(present) != len(clusters):
                if _templated_identity(sources):
                    continue
                out.append(
                    self._doc_warning(
                        pair,
                        ks,
                        doc_id,
                        f"{ks} renders {doc_id} only in {and_list(present)}, not in "
                        f"{and_list([c for c in clusters if c not in present])}: overlays "
                        "should differ only in substituted values; render it everywhere "
                        "or move the difference into the cluster's variables.",
                    )
                )
                continue
            shas = [docs[c][doc_id].sha256 for c in clusters]
            if len(set(shas)) == 1:
                continue
            source = _find_source(sources, doc_id)

            def differing(doc_id: DocId = doc_id, source: SourceDoc | None = source) -> Any:
                objs = {c: parse(docs[c][doc_id]) for c in clusters}
                return _differing(objs, source, {c: values.get(c, {}) for c in clusters})

            def by_content(shas: list[str] = shas, source: SourceDoc | None = source) -> str:
                return content_key(
                    clusters,
                    shas,
                    source.sha256 if source is not None else "",
                    [_values_digest(c, values, digests) for c in clusters],
                )

            if source is not None and not source.sha256:  # a file's object: no key by content
                found = differing()
            else:
                found = fact(ctx.facts, "overlay-parity:differing", by_content, differing)
            if not isinstance(found, str):
                continue
            out.append(
                self._doc_warning(
                    pair,
                    ks,
                    doc_id,
                    f"{doc_id} of {ks} differs between {and_list(clusters)} where the source "
                    f"has no ${{...}} ({found}): overlays should differ only in "
                    "substituted values; move the difference into the clusters' variables.",
                )
            )
        return out

    # -- one cluster's values in another -----------------------------------------------------

    def _foreign(
        self, ctx: LintContext, values: Mapping[str, Mapping[str, set[str]]]
    ) -> list[Finding]:
        from harness.hazards.sources import format_path

        out: list[Finding] = []
        for cluster, graph in ctx.graphs.items():
            own = values.get(cluster, {})
            own_names = {n for names in own.values() for n in names}
            foreign: dict[str, list[tuple[str, str]]] = {}
            for other, other_values in values.items():
                if other == cluster:
                    continue
                for value, names in other_values.items():
                    # evidence of a leak: this cluster gives the same variable another value
                    # (a value equal to a variable this cluster lacks is a coincidence)
                    mine = sorted(n for n in names if n in own_names)
                    if distinctive(value) and value not in own and mine:
                        foreign.setdefault(value, []).extend((other, n) for n in mine)
            if not foreign:
                continue
            pattern = _pattern(list(foreign))
            sources = _source_objects(ctx, graph)
            for key, result in graph.ok_results():
                for index, path, value in _matches(ctx, pattern, result.documents):
                    doc = result.documents[index]
                    if doc.id in sources:
                        continue
                    owners = foreign[value]
                    whose = and_list([f"{c}'s {n}" for c, n in owners])
                    var = owners[0][1]
                    field = format_path(path)
                    out.append(
                        Finding(
                            id=f"{self.id}:{cluster}:{display(key)}:{doc.id}:{field}",
                            rule=self.id,
                            severity="warning",
                            cluster=cluster,
                            kustomizations=(display(key),),
                            documents=(str(doc.id),),
                            message=(
                                f"{cluster} renders {value} ({whose}) at {field} of "
                                f"{doc.id}: another cluster's value reached {cluster}, "
                                f"where {var} is {_own_value(own, var)}; write "
                                f"${{{var}}} in the source so each cluster gets its own."
                            ),
                        )
                    )
        return out

    def _shared(self, ctx: LintContext) -> list[Finding]:
        analysis = analyse(ctx)
        per_var: dict[str, dict[str, str]] = {}
        for (cluster, _ns, _name), v in analysis.variables.items():
            for var, value in v.values.items():
                if var in analysis.referenced.get(cluster, set()) and IPV4.search(value):
                    per_var.setdefault(var, {})[cluster] = value
        out = []
        for var, by_cluster in sorted(per_var.items()):
            same: dict[str, list[str]] = {}
            for cluster, value in sorted(by_cluster.items()):
                same.setdefault(value, []).append(cluster)
            for value, clusters in sorted(same.items()):
                if len(clusters) < 2:
                    continue
                out.append(
                    Finding(
                        id=f"{self.id}:{','.join(clusters)}:{var}:shared",
                        rule=self.id,
                        severity="warning",
                        cluster=",".join(clusters),
                        kustomizations=(),
                        documents=(),
                        message=(
                            f"{and_list(clusters)} {_all(clusters)} set {var} to {value}: one "
                            "cluster's "
                            "address renders into the other's manifests; give each cluster its "
                            "own value (suppress with a reason if they really share it)."
                        ),
                    )
                )
        return out


def _matches(
    ctx: LintContext, pattern: re.Pattern[str], documents: tuple[Document, ...]
) -> list[tuple[int, Path_, str]]:
    """Every string of a target's documents that `pattern` matches: (the document's index,
    the string's path, the value matched), a fact of the documents and the pattern alone
    (hazards/facts.py), so a target that did not change is not searched again."""
    return [
        (index, tuple(path), value)
        for index, path, value in fact(
            ctx.facts,
            "overlay-parity:foreign",
            lambda: content_key(pattern.pattern, [d.sha256 for d in documents]),
            lambda: _search(pattern, documents),
        )
    ]


def _search(pattern: re.Pattern[str], documents: tuple[Document, ...]) -> list[Any]:
    from harness.hazards.sources import strings

    out: list[Any] = []
    for index, doc in enumerate(documents):
        texts = strings(parse(doc))
        if not pattern.search(_joined(texts)):
            continue  # the usual case: no string of the document matches
        for path, text in texts:
            match = pattern.search(text)
            if match is not None:
                out.append([index, list(path), match.group(0)])
    return out


_JOINED: IdentityMemo[str] = IdentityMemo("joined strings", 32768)


def _joined(texts: tuple[tuple[Path_, str], ...]) -> str:
    """A document's strings joined by newlines, once per (shared) string tuple.

    A search that finds nothing here finds nothing in any one string: a value matched in
    a string is in the joined text too, with the same neighbours or a newline (which the
    pattern's boundaries accept like the string's own start and end).
    """
    found = _JOINED.get(texts)
    if found is None:
        found = _JOINED.put(texts, "\n".join(text for _path, text in texts))
    return found


def _all(items: list[str]) -> str:
    return "both" if len(items) == 2 else "all"


def _own_value(own: Mapping[str, set[str]], var: str) -> str:
    for value, names in own.items():
        if var in names:
            return value
    return "not set"


def _source_objects(ctx: LintContext, graph: ClusterGraph) -> set[DocId]:
    """The substituteFrom ConfigMaps/Secrets of the cluster: they hold its own values."""
    out: set[DocId] = set()
    for node in graph.nodes.values():
        if node.post_build is not None:
            for src in node.post_build.substitute_from:
                out.add(DocId("", src.kind, node.namespace, src.name))
    return out


def _source_map(docs: list[SourceDoc] | None) -> dict[Any, SourceDoc]:
    out: dict[Any, SourceDoc] = {}
    for doc in docs or []:
        if doc.id is None or doc.patch:
            continue
        out.setdefault(doc.id, doc)
        out.setdefault((doc.id.kind, doc.id.name), doc)
    return out


def _find_source(sources: Mapping[Any, SourceDoc], doc_id: DocId) -> SourceDoc | None:
    return sources.get(doc_id) or sources.get((doc_id.kind, doc_id.name))


def _templated_identity(sources: Mapping[Any, SourceDoc]) -> bool:
    """Whether some source object's name or namespace is itself substituted."""
    for doc in sources.values():
        meta = doc.obj.get("metadata") if isinstance(doc.obj, dict) else None
        if isinstance(meta, dict) and any(
            "${" in str(meta.get(k) or "") for k in ("name", "namespace")
        ):
            return True
    return False


def _differing(
    objs: Mapping[str, Any],
    source: SourceDoc | None,
    values: Mapping[str, Mapping[str, set[str]]],
) -> str | None:
    """The fields of one document that differ between clusters unexplained, as the
    finding words them (at most four, and how many more), or None: a fact of the
    documents, their source and the clusters' values (`_compare`)."""
    from harness.hazards.sources import format_path

    fields = _unexplained(objs, source, values)
    if not fields:
        return None
    shown = "; ".join(
        f"{format_path(path)}: "
        + ", ".join(f"{c}: {_show(objs_value)}" for c, objs_value in vals.items())
        for path, vals in fields[:4]
    )
    return shown + (f" (+{len(fields) - 4} more fields)" if len(fields) > 4 else "")


def _values_digest(
    cluster: str, values: Mapping[str, Mapping[str, set[str]]], digests: dict[str, str] | None
) -> str:
    """A cluster's variable values (value -> names) as a digest, made once per cluster."""
    found = digests.get(cluster) if digests is not None else None
    if found is None:
        own = values.get(cluster, {})
        found = content_key([f"{v}\0{','.join(sorted(own[v]))}" for v in sorted(own)])
        if digests is not None:
            digests[cluster] = found
    return found


def _unexplained(
    objs: Mapping[str, Any],
    source: SourceDoc | None,
    values: Mapping[str, Mapping[str, set[str]]],
) -> list[tuple[Path_, dict[str, Any]]]:
    from harness.hazards.sources import format_path, get_path, walk_leaves

    leaves = {c: dict(walk_leaves(o)) for c, o in objs.items()}
    paths = sorted(set().union(*(set(v) for v in leaves.values())), key=format_path)
    out = []
    for path in paths:
        vals = {c: leaves[c].get(path, _MISSING) for c in objs}
        if len({repr(v) for v in vals.values()}) == 1:
            continue
        if any(
            isinstance(v, str) and (REDACTED_PREFIX in v or SOPS_MASK in v) for v in vals.values()
        ):
            continue
        if source is not None:
            origin = get_path(source.obj, path)
            if isinstance(origin, str) and "${" in origin:
                continue
            if origin is None and _explained_by_values(vals, values):
                continue
        elif _explained_by_values(vals, values):
            continue
        out.append((path, {c: v for c, v in vals.items()}))
    return out


def _explained_by_values(
    vals: Mapping[str, Any], values: Mapping[str, Mapping[str, set[str]]]
) -> bool:
    """Equal once each cluster's variable values are replaced by the variables' names."""
    templated = set()
    for cluster, value in vals.items():
        if value is _MISSING:
            return False
        text = "" if value is None else str(value)
        own = values.get(cluster, {})
        for candidate in sorted(own, key=len, reverse=True):
            if len(candidate) >= 2 and candidate in text:
                text = text.replace(candidate, "${" + "|".join(sorted(own[candidate])) + "}")
        templated.add(text)
    return len(templated) == 1


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


RULE = OverlayParity()
