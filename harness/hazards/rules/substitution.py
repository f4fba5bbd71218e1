"""substitution (lint, a gate): every `${VAR}` every flux target would substitute.

Checked on the pre-substitution source (sources.py), so a Kustomization that fails strict
substitution is still analysed. Its variables include the substituteFrom objects harness.yaml
declares outside git (placeholders); a Kustomization built from a source marked external is
not rendered and not judged. Hazards:
- `unset`: a variable neither defined by the Kustomization's substitute/substituteFrom nor
  given a default: strict mode fails the whole Kustomization. When the same Kustomization
  gets it in another cluster, the message says which cluster's values lack it.
- `script`: the same, for a `${...}` inside a script (cloud-init, a command, a lowercase
  shell-style name): it was meant for the shell and must be escaped `$${...}`.
- `default`: a script's `${x:-y}` that Flux silently replaces by its default.
- `literal`: `${...}` in a Kustomization without postBuild ships as literal text (Flux never
  touches it, so `$${...}` would ship as `$${...}`: the advice is postBuild, never escaping):
  an error when a whole field value names a variable the cluster's substitution sources
  define (clearly meant to be substituted; nothing expands it), a warning when such a name
  sits in a multi-line value (a config file the application may expand itself), else info
  (latent: it must be escaped once substitution is added). A script's own variables
  (positional `${1}`, locals the cluster does not define) are the shell's: no finding.
- `escaped`: `$${...}` in a Kustomization without postBuild (or whose variables are all
  empty) ships as `$${...}`: nothing turns `$$` into `$`, so a script reads the shell's pid
  (an error) and an object the escape itself (a warning). The advice is `${...}`, or
  postBuild where the name is a cluster variable in a plain field (unescaped, that would
  be a `literal` error); with postBuild the escape is right and no finding.
- A `${x:=default}` outside a script is Flux's default syntax, not a shell expansion.
- `inherited`: a cluster whose value is the shared base default while another cluster
  overrides it (the overlay forgot the knob).
An assertion is one (cluster, Kustomization, variable) checked, plus one per variable whose
overlay values are compared; the gate line reads `substitution gate: N assertions, M hazards`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.core.model import DocId, TargetResult
from harness.flux.api import substitution_disabled
from harness.flux.ksgraph import ClusterGraph, KsNode, parse
from harness.hazards.context import DiffContext, LintContext
from harness.hazards.finding import Finding, Severity, and_list

if TYPE_CHECKING:  # sources.py loads when a lint pass runs (a diff of equal renders has none)
    from harness.hazards.sources import Reference, SourceDoc, SourceIndex, Variables

MEMO_KEY = "substitution"


@dataclass
class Analysis:
    assertions: set[tuple[str, ...]] = field(default_factory=set)
    findings: list[Finding] = field(default_factory=list)
    variables: dict[tuple[str, str, str], Variables] = field(default_factory=dict)
    referenced: dict[str, set[str]] = field(default_factory=dict)
    unchecked: list[str] = field(default_factory=list)


def analyse(ctx: LintContext) -> Analysis:
    """The whole substitution analysis of one render, computed once per context."""
    cached = ctx.memo.get(MEMO_KEY)
    if isinstance(cached, Analysis):
        return cached
    result = _Analyser(ctx).run()
    ctx.memo[MEMO_KEY] = result
    return result


def variables_of(ctx: LintContext, graph: ClusterGraph, node: KsNode) -> Variables:
    from harness.hazards.sources import Variables

    return analyse(ctx).variables.get((graph.cluster, *node.key)) or Variables()


class _Analyser:
    def __init__(self, ctx: LintContext) -> None:
        self.ctx = ctx
        self.index: SourceIndex = ctx.source_index
        self.out = Analysis()

    def run(self) -> Analysis:
        from harness.hazards.sources import variables

        for cluster, graph in self.ctx.graphs.items():
            declared = self.index.cluster(cluster).declared.objects
            for node in graph.nodes.values():
                if node.spec_known and node.spec_error is None:
                    self.out.variables[(cluster, *node.key)] = variables(graph, node, declared)
        known = {name for v in self.out.variables.values() for name in (*v.values, *v.hidden)}
        for cluster, graph in self.ctx.graphs.items():
            for node in graph.nodes.values():
                v = self.out.variables.get((cluster, *node.key))
                if v is None or self.index.external(node):
                    continue  # an external source is not rendered: nothing to judge
                if v.active:
                    self._substituting(graph, node, v)
                else:
                    self._literal(graph, node, known)
        self._inherited()
        self.out.findings.sort(key=lambda f: f.id)
        return self.out

    # -- a Kustomization that substitutes --------------------------------------------------

    def _substituting(self, graph: ClusterGraph, node: KsNode, v: Variables) -> None:
        from harness.hazards.sources import references

        docs = self.index.documents(node)
        if docs is None:
            self.out.unchecked.append(node.target)
            return
        groups: dict[tuple[str, str], list[Reference]] = {}
        for doc in docs:
            refs, errors = references(doc, self.ctx.facts)
            if not refs and not errors:
                continue  # nothing to judge (asked first: the answer needs no parse)
            if not doc.patch and _disabled(self.ctx, doc):
                continue
            for error in errors:
                self._parse_error(graph, node, doc, error)
            for ref in refs:
                self.out.assertions.add((graph.cluster, node.display, ref.name))
                self.out.referenced.setdefault(graph.cluster, set()).add(ref.name)
                shell = ref.script or ref.name != ref.name.upper()
                if v.defines(ref.name):
                    continue
                if not ref.has_default:
                    if not v.complete:
                        continue  # a missing source fails the target; reported there
                    check = "script" if shell else "unset"
                elif ref.script:  # a default outside a script is Flux's own `${x:=1}`
                    check = "default"
                else:
                    continue
                groups.setdefault((ref.name, check), []).append(ref)
        for (name, check), refs in sorted(groups.items()):
            self._report(graph, node, v, name, check, refs)

    def _report(
        self,
        graph: ClusterGraph,
        node: KsNode,
        v: Variables,
        name: str,
        check: str,
        refs: list[Reference],
    ) -> None:
        first = refs[0]
        where = self._where(node, first)
        ks, cluster = node.display, graph.cluster
        severity: Severity = "error"
        in_file = f" in {first.source.file}" if first.source.file else ""
        if check == "unset":
            sources = _sources(node)
            elsewhere = self._defined_elsewhere(node, name)
            cross = ""
            if elsewhere:
                cross = (
                    f" ({and_list(elsewhere)} define it for {ks} but {cluster}'s "
                    f"{sources or 'values'} do not)"
                )
            effect = "strict substitution fails the whole Kustomization"
            if not self.ctx.strict:
                severity = "warning"
                effect = "without strict substitution Flux renders it as an empty string"
            fix = (
                f"add {name} to {sources or 'postBuild.substitute'} or write a default "
                f"(${{{name}:=value}})"
            )
            message = (
                f"${{{name}}} {where} is not defined for {ks} in {cluster}{cross}: {effect}; {fix}."
            )
            cause = f"${{{name}}}{in_file} is not defined ({effect}): {fix}"
        elif check == "script":
            effect = f'strict mode fails the Kustomization (variable not set: "{name}")'
            if not self.ctx.strict:
                severity = "warning"
                effect = "the script gets an empty string instead (strict mode is off)"
            cause = f"shell variable ${{{name}}}{in_file} is not escaped: write $${{{name}}}"
            message = (
                f"shell variable ${{{name}}} {where} is not escaped: {ks} substitutes, so "
                f"Flux evaluates it before the script ever runs and {effect}; write "
                f"$${{{name}}}."
            )
        else:
            severity = "warning"
            cause = ""
            message = (
                f"{first.expression} {where} looks like a shell expansion, but {ks} "
                "substitutes, so Flux replaces it by its default before the script runs; "
                f"escape it as ${first.expression}."
            )
        self._add(
            f"{cluster}:{ks}:{name}:{check}", severity, graph, node, refs, message, cause=cause
        )

    def _parse_error(self, graph: ClusterGraph, node: KsNode, doc: SourceDoc, error: str) -> None:
        where = _doc_label(doc)
        self._add(
            f"{graph.cluster}:{node.display}:{where}:parse",
            "error",
            graph,
            node,
            [],
            f"{where}: {error}: Flux cannot parse this for substitution and fails "
            f"{node.display}; escape a literal `$` as `$$`.",
            documents=[str(doc.id)] if doc.id else [],
        )

    # -- a Kustomization that does not substitute ------------------------------------------

    def _literal(self, graph: ClusterGraph, node: KsNode, known: set[str]) -> None:
        from harness.hazards.sources import Reference, SourceDoc, escapes, references

        result = graph.result(node.key)
        docs: list[SourceDoc] | None
        if result is not None and result.ok:
            docs = [SourceDoc.rendered(d, None) for d in result.documents]
        else:
            docs = self.index.documents(node)
        if docs is None:
            self.out.unchecked.append(node.target)
            return
        groups: dict[str, list[Reference]] = {}
        escaped: dict[str, list[Reference]] = {}
        for doc in docs:
            try:
                refs, _errors = references(doc, self.ctx.facts)
            except RecursionError:  # pragma: no cover - absurd nesting
                continue
            for ref in refs:
                self.out.assertions.add((graph.cluster, node.display, ref.name))
                groups.setdefault(ref.name, []).append(ref)
            for esc in escapes(doc, self.ctx.facts):
                self.out.assertions.add((graph.cluster, node.display, esc.expression))
                as_ref = Reference(
                    esc.name, esc.expression, False, esc.field, esc.multiline, esc.script, doc
                )
                escaped.setdefault(esc.expression, []).append(as_ref)
        why = (
            "has no postBuild"
            if node.post_build is None
            else "has a postBuild whose variables are all empty (substitution is skipped)"
        )
        for expression, refs in sorted(escaped.items()):
            self._escaped(graph, node, expression, refs, why, known)
        for name, refs in sorted(groups.items()):
            if name not in known and all(r.script for r in refs):
                continue  # a script's own variable (`${1}`, `${tmp}`): the shell's, not Flux's
            where = self._where(node, refs[0])
            fields = [r for r in refs if not r.multiline]
            in_file = f" in {refs[0].source.file}" if refs[0].source.file else ""
            severity: Severity
            intended = (
                f"if {name} was meant to be substituted, add postBuild.substituteFrom (e.g. "
                f"the ConfigMap that defines it) to {node.display}"
            )
            if name in known and fields:
                # A whole field value no application expands: the object gets the placeholder.
                where = self._where(node, fields[0])
                severity = "error"
                cause = (
                    f"${{{name}}}{in_file} ships literally although {name} is a cluster "
                    "variable: add postBuild.substituteFrom"
                )
                message = (
                    f"${{{name}}} {where} ships literally: {node.display} {why}, so Flux "
                    f"leaves the text as written although {name} is one of the cluster's "
                    f"variables; {intended} (then escape what the application must expand "
                    "itself as $${...})."
                )
            elif name in known:
                severity = "warning"
                cause = (
                    f"${{{name}}}{in_file} ships literally and {name} is a cluster variable: "
                    f"add postBuild.substituteFrom, or escape it as $${{{name}}}"
                )
                message = (
                    f"${{{name}}} {where} ships literally: {node.display} {why}, so Flux "
                    f"leaves it as written, and {name} is one of the cluster's variables; "
                    f"{intended}; if the application expands it itself, it is right as it is."
                )
            else:
                severity = "info"
                cause = (
                    f"${{{name}}}{in_file} ships literally (no substitution): escape it as "
                    f"$${{{name}}} to say it is literal"
                )
                message = (
                    f"${{{name}}} {where} ships literally: {node.display} {why}, so Flux "
                    "leaves it as written (the application presumably expands it itself): "
                    "right today; if substitution is ever added to "
                    f"{node.display}, it must become $${{{name}}} then."
                )
            self._add(
                f"{graph.cluster}:{node.display}:{name}:literal",
                severity,
                graph,
                node,
                refs,
                message,
                cause=cause,
            )

    def _escaped(
        self,
        graph: ClusterGraph,
        node: KsNode,
        expression: str,
        refs: list[Reference],
        why: str,
        known: set[str],
    ) -> None:
        """`$${...}` where Flux does not substitute: nothing turns `$$` into `$`, so the
        escape itself ships. The advice is what is right once followed: the unescaped
        `${...}` here, or postBuild where the name is a cluster variable in a plain field
        (written unescaped, that would ship a cluster variable literally)."""
        first = refs[0]
        plain = expression[1:]
        where = self._where(node, first)
        in_file = f" in {first.source.file}" if first.source.file else ""
        script = any(r.script for r in refs)
        reader = "the script" if script else "the object"
        shell = " (in a shell `$$` is its process id)" if script else ""
        if first.name in known and not all(r.multiline for r in refs):
            fix = (
                f"if {first.name} should come from the cluster's variables, add "
                f"postBuild.substituteFrom to {node.display} (the escape is then right and "
                f"ships {plain})"
            )
        else:
            fix = f"write {plain}: without substitution Flux leaves it as written"
        message = (
            f"{expression} {where} ships as written: {node.display} {why}, so Flux never "
            f"turns $$ into $ and {reader} gets {expression}{shell}; {fix}."
        )
        cause = f"{expression}{in_file} ships literally (no substitution): {fix}"
        self._add(
            f"{graph.cluster}:{node.display}:{expression}:escaped",
            "error" if script else "warning",
            graph,
            node,
            refs,
            message,
            cause=cause,
        )

    # -- overlays ----------------------------------------------------------------------------

    def _inherited(self) -> None:
        """A cluster still on the base default of a value another cluster overrides."""
        ks_paths = {
            self.index.rel_path(n)
            for g in self.ctx.graphs.values()
            for n in g.nodes.values()
            if n.spec_known
        }
        per_var: dict[tuple[str, str], dict[str, tuple[str, DocId, KsNode]]] = {}
        for (cluster, ns, name), v in self.out.variables.items():
            graph = self.ctx.graphs[cluster]
            node = graph.nodes[(ns, name)]
            if not v.active or node.post_build is None:
                continue
            for var in self.out.referenced.get(cluster, set()):
                origin = v.origin.get(var, "")
                if var not in v.values or not origin.startswith("ConfigMap/"):
                    continue
                doc_id = DocId("", "ConfigMap", node.namespace, origin.split("/", 1)[1])
                per_var.setdefault((origin, var), {})[cluster] = (v.values[var], doc_id, node)
        for (origin, var), by_cluster in sorted(per_var.items()):
            if len(by_cluster) < 2:
                continue
            doc_id = next(iter(by_cluster.values()))[1]
            defaults = self._base_values(doc_id, var, ks_paths)
            if not defaults:
                continue
            for cluster, (value, _id, _node) in sorted(by_cluster.items()):
                self.out.assertions.add((cluster, origin, var, "inherited"))
                where = [p for p, d in defaults if d == value]
                others = sorted(c for c, (val, _i, _n) in by_cluster.items() if val != value)
                if not where or not others:
                    continue
                self.out.findings.append(
                    Finding(
                        id=f"substitution:{cluster}:{var}:inherited",
                        rule="substitution",
                        severity="warning",
                        cluster=cluster,
                        kustomizations=(),
                        documents=(str(doc_id),),
                        message=(
                            f"{cluster} does not set {var}: it renders the base default "
                            f"{value!r} of {origin} from {where[0]}, while {and_list(others)} "
                            f"{'sets its' if len(others) == 1 else 'set their'} own; set "
                            f"{var} explicitly in {cluster}'s {origin} so "
                            "a placeholder never reaches the cluster."
                        ),
                    )
                )

    def _base_values(
        self, doc_id: DocId, var: str, ks_paths: set[str | None]
    ) -> list[tuple[str, str]]:
        out = []
        for result in self.ctx.snapshot.results.values():
            if result.target.kind != "path" or not result.ok or result.name in ks_paths:
                continue
            for doc in result.documents:
                if doc.id == doc_id:
                    data = parse(doc).get("data") or {}
                    if var in data:
                        out.append((result.name, str(data[var]).replace("\n", "")))
        return out

    # -- helpers -----------------------------------------------------------------------------

    def _defined_elsewhere(self, node: KsNode, name: str) -> list[str]:
        return sorted(
            cluster
            for (cluster, ns, ks), v in self.out.variables.items()
            if (ns, ks) == node.key and cluster != node.cluster and v.defines(name)
        )

    def _where(self, node: KsNode, ref: Reference) -> str:
        doc = ref.source
        file = doc.file
        if doc.id is not None:
            rel = self.index.rel_path(node) or ""
            file = (
                self.index.file_for(doc.id, rel, ref.name)
                or file
                or self.index.file_containing(ref.expression, rel, _data_key(doc, ref.field))
            )
            label = f"{doc.id} {ref.field}"
            return f"in {file} ({label})" if file else f"in {label}"
        return f"in {file}" if file else ""

    def _add(
        self,
        suffix: str,
        severity: Severity,
        graph: ClusterGraph,
        node: KsNode,
        refs: list[Reference],
        message: str,
        documents: list[str] | None = None,
        cause: str = "",
    ) -> None:
        docs = documents or sorted({str(r.source.id) for r in refs if r.source.id is not None})
        self.out.findings.append(
            Finding(
                id=f"substitution:{suffix}",
                rule="substitution",
                severity=severity,
                cluster=graph.cluster,
                kustomizations=(node.display,),
                documents=tuple(docs),
                message=message,
                cause=cause,
            )
        )


def _disabled(ctx: LintContext, doc: SourceDoc) -> bool:
    """Whether the object opts out of substitution: a rendered document's answer is a
    fact of its sha256 (hazards/facts.py), read without parsing it."""
    if ctx.facts is None or not doc.sha256:
        return substitution_disabled(_obj(doc))
    return bool(
        ctx.facts.get("substitution:disabled", doc.sha256, lambda: substitution_disabled(_obj(doc)))
    )


def _obj(doc: SourceDoc) -> dict[str, object]:
    return doc.obj if isinstance(doc.obj, dict) else {}


def _data_key(doc: SourceDoc, field: str) -> str:
    """For a generated ConfigMap/Secret value, its key: usually the source file's name."""
    if doc.id is None or doc.id.kind not in ("ConfigMap", "Secret"):
        return ""
    for prefix in ("data.", "stringData.", "binaryData."):
        if field.startswith(prefix):
            return field[len(prefix) :]
    return ""


def _sources(node: KsNode) -> str:
    if node.post_build is None or not node.post_build.substitute_from:
        return ""
    return and_list([str(s) for s in node.post_build.substitute_from])


def _doc_label(doc: SourceDoc) -> str:
    if doc.id is not None and doc.file:
        return f"{doc.file} ({doc.id})"
    return doc.file or str(doc.id or "a document")


class Substitution:
    id = "substitution"
    summary = "every ${VAR} defined, defaulted or escaped; none shipped literally"
    modes: tuple[str, ...] = ("lint",)

    def check_snapshot(self, ctx: LintContext) -> list[Finding]:
        return list(analyse(ctx).findings)

    def check_diff(self, ctx: DiffContext) -> list[Finding]:
        return []

    def view(self, ctx: LintContext, result: TargetResult) -> object:
        """What the analysis reads of one target beyond its documents' identities and what
        the graph reads (engine.same_views): the bytes of its ConfigMaps and Secrets (the
        variables' sources, a base's values), and of every other document its `${...}`
        and `$${...}` (with where they sit) and whether it opts out of substitution."""
        from harness.hazards.sources import SourceDoc, escapes, references

        out: list[object] = []
        for doc in result.documents:
            if doc.id.group == "" and doc.id.kind in ("ConfigMap", "Secret"):
                out.append(doc.sha256)
                continue
            source = SourceDoc.rendered(doc, None)
            refs, errors = references(source, ctx.facts)
            out.append(
                (
                    [
                        (r.name, r.expression, r.has_default, r.field, r.multiline, r.script)
                        for r in refs
                    ],
                    errors,
                    [
                        (e.expression, e.field, e.multiline, e.script)
                        for e in escapes(source, ctx.facts)
                    ],
                    _disabled(ctx, source),
                )
            )
        return out


def assertions(ctx: LintContext) -> int:
    return len(analyse(ctx).assertions)


RULE = Substitution()
