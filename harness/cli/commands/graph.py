"""`harness graph`: each cluster's Flux Kustomization graph as Mermaid, DOT, SVG or JSON.

Without `--base` it is the graph of one render with the lint hazards on it; with `--base` the
change against that ref is marked (added, removed, changed, moved-into, moved-out-of) and the
diff's hazard findings sit on the nodes and edges they name.
"""

from __future__ import annotations

import enum
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer

from harness.cli import errors, shared
from harness.cli.commands.diff import config_at
from harness.cli.context import (
    EXIT_ERROR,
    EXIT_OK,
    Common,
    confined,
    load_config,
    print_skipped,
    render_snapshot,
    renderer_for,
)
from harness.core import atomic, redaction
from harness.core.config import Config
from harness.core.errors import HarnessError
from harness.core.model import Snapshot
from harness.graph import dot, json_doc, mermaid, svg
from harness.graph import view as graph_mod
from harness.graph.view import Graph
from harness.hazards import engine as hazard_engine
from harness.pipeline import gitref
from harness.render.kustomize import Renderer

FORMATS = ("mermaid", "dot", "svg", "json")
GROUPS = ("auto", "namespace", "none")


@dataclass(frozen=True)
class GraphOptions:
    format: str = "mermaid"
    base: str | None = None
    head: str | None = None
    focus: tuple[str, ...] = ()
    depth: int = 1
    clusters: tuple[str, ...] = ()
    hazards: bool = True
    out: Path | None = None
    layout: str = "auto"  # svg: graphviz, builtin, or auto (graphviz when installed)
    edges: tuple[str, ...] | None = None  # edge kinds to draw (None: view.for_picture's default)
    group: str = "auto"  # auto, namespace or none (view.for_picture)


class GraphFormat(enum.StrEnum):
    mermaid = "mermaid"
    dot = "dot"
    svg = "svg"
    json = "json"


class GraphGroup(enum.StrEnum):
    auto = "auto"
    namespace = "namespace"
    none = "none"


class GraphLayout(enum.StrEnum):
    auto = "auto"
    graphviz = "graphviz"
    builtin = "builtin"


app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def graph(
    fmt: Annotated[
        GraphFormat,
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            help="mermaid (GitHub renders it), dot, svg (Graphviz's dot when installed, else "
            "the built-in layout) or json (harness.graph/v1).",
        ),
    ] = GraphFormat.mermaid,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            metavar="REF",
            help="Git ref to compare against: mark added, removed, changed, moved-into and "
            "moved-out-of Kustomizations and the change's hazards.",
        ),
    ] = None,
    head: shared.HeadOpt = None,
    focus: Annotated[
        list[str] | None,
        typer.Option(
            "--focus",
            metavar="NAME",
            help="Draw only the neighbourhood of this Kustomization (name, namespace/name or "
            "cluster/namespace/name); 'changed' means every Kustomization the change touches. "
            "Repeatable.",
        ),
    ] = None,
    depth: Annotated[
        int,
        typer.Option(
            "--depth", min=0, metavar="N", help="Edges of neighbourhood around --focus (1)."
        ),
    ] = 1,
    cluster: Annotated[
        list[str] | None,
        typer.Option("--cluster", metavar="NAME", help="Only this cluster (repeatable)."),
    ] = None,
    no_hazards: Annotated[
        bool,
        typer.Option("--no-hazards", metavar=shared.FLAG, help="Do not run the hazard rules."),
    ] = False,
    layout: Annotated[
        GraphLayout,
        typer.Option(
            "--layout", metavar="LAYOUT", help="svg: auto, graphviz (fail without it) or builtin."
        ),
    ] = GraphLayout.auto,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-O", metavar="FILE", help="Write to this file instead of stdout."),
    ] = None,
    edges: Annotated[
        list[str] | None,
        typer.Option(
            "--edges",
            metavar="KINDS",
            help="Edge kinds to draw: dependsOn, substituteFrom, crd, move or all, "
            "comma-separated (default: all, but no crd edges in a cluster of more than 40 "
            "Kustomizations). Repeatable.",
        ),
    ] = None,
    group: Annotated[
        GraphGroup,
        typer.Option(
            "--group",
            metavar="MODE",
            help="auto: past 40 Kustomizations a cluster, draw the ones the change and its "
            "hazards leave alone as one box per namespace; namespace: always; none: never.",
        ),
    ] = GraphGroup.auto,
    repo: shared.RepoOpt = None,
    config: shared.ConfigOpt = None,
    kubectl: shared.KubectlOpt = None,
    kustomize: shared.KustomizeOpt = None,
    jobs: shared.JobsOpt = 0,
    timeout: shared.TimeoutOpt = None,
    strict: shared.StrictOpt = None,
    quiet: shared.QuietOpt = False,
    verbose: shared.VerboseOpt = False,
    helm: shared.HelmOpt = None,
    helm_binary: shared.HelmBinaryOpt = None,
    offline: shared.OfflineOpt = False,
    no_cache: shared.NoCacheOpt = False,
    cache_dir: shared.CacheDirOpt = None,
    debug: shared.DebugOpt = False,
) -> None:
    """Draw each cluster's Flux Kustomization graph: dependsOn, substituteFrom and CRD edges,
    the change against --base and hazards marked (exit 0 ok, 2 error)."""
    c = shared.common(
        repo=repo,
        config=config,
        kubectl=kubectl,
        kustomize=kustomize,
        jobs=jobs,
        timeout=timeout,
        strict=strict,
        quiet=quiet,
        verbose=verbose,
        helm=helm,
        helm_binary=helm_binary,
        offline=offline,
        no_cache=no_cache,
        cache_dir=cache_dir,
    )
    options = GraphOptions(
        format=fmt.value,
        base=base,
        head=head,
        focus=tuple(focus or ()),
        depth=depth,
        clusters=tuple(cluster or ()),
        hazards=not no_hazards,
        out=out,
        layout=layout.value,
        edges=tuple(edges) if edges else None,
        group=group.value,
    )
    errors.run(lambda: run(c, options), debug)


def _side(common: Common, cfg: Config, renderer: Renderer, ref: str | None) -> Snapshot:
    if ref is None:
        return render_snapshot(common, cfg, renderer, label="working tree", skips=False)
    with gitref.checkout(cfg.repo, ref) as checkout:
        at = config_at(cfg, checkout.repo)
        return render_snapshot(common, at, renderer, label=checkout.label, skips=False)


def compute(common: Common, options: GraphOptions) -> tuple[Graph, bool]:
    """The graph as asked for, and whether any target failed to render."""
    cfg = load_config(common)
    if options.base is not None or options.head is not None:
        root = gitref.toplevel(cfg.repo)
        for ref in (options.base, options.head):
            if ref is not None:
                gitref.resolve(root, ref)
    renderer = renderer_for(common, cfg)
    head = _side(common, cfg, renderer, options.head)
    head_repo = cfg.repo if options.head is None else None
    if options.base is not None:
        base = _side(common, cfg, renderer, options.base)
        print_skipped(common, base, head)
        graph = graph_mod.compare(base, head)
        failed = bool(base.errors() or head.errors())
        report = hazard_engine.diff_for(cfg, base, head, head_repo) if options.hazards else None
    else:
        print_skipped(common, head)
        graph = graph_mod.build(head)
        failed = bool(head.errors())
        report = hazard_engine.lint_for(cfg, head, head_repo) if options.hazards else None
    if report is not None:
        graph = graph_mod.with_hazards(graph, report.findings)
    graph = select(graph, options)
    if options.format != "json":  # a picture: grouped and trimmed to stay readable
        return graph_mod.for_picture(graph, options.edges, options.group), failed
    if options.edges is not None:  # data: only what was asked for is left out
        graph = graph_mod.only_edges(graph, options.edges)
    if options.group == "namespace":
        graph = graph_mod.collapse(graph, 0)
    return graph, failed


def edge_kinds(values: tuple[str, ...]) -> tuple[str, ...]:
    """`--edges dependsOn,crd` (repeatable; `all`): the kinds, checked."""
    kinds: list[str] = []
    for value in values:
        for kind in (v.strip() for v in value.split(",")):
            if kind == "all":
                kinds.extend(graph_mod.EDGE_KINDS)
            elif kind in graph_mod.EDGE_KINDS:
                kinds.append(kind)
            elif kind:
                raise HarnessError(
                    f"--edges {kind}: use {', '.join(graph_mod.EDGE_KINDS)} or all "
                    "(comma-separated)"
                )
    return tuple(dict.fromkeys(kinds))


def select(graph: Graph, options: GraphOptions) -> Graph:
    """`--cluster` and `--focus` applied, with errors that name what was not found."""
    if options.clusters:
        known = {v.cluster for v in graph.clusters}
        unknown = [c for c in options.clusters if c not in known]
        if unknown:
            raise HarnessError(
                f"--cluster {', '.join(unknown)}: no such cluster "
                f"(known: {', '.join(sorted(known)) or 'none'})"
            )
        graph = Graph(
            tuple(v for v in graph.clusters if v.cluster in options.clusters),
            graph.base_label,
            graph.head_label,
        )
    if options.focus:
        try:
            graph = graph_mod.focus(graph, options.focus, options.depth)
        except KeyError as exc:
            raise HarnessError(
                f"--focus {exc.args[0]}: no such Kustomization (give name, namespace/name, "
                "cluster/namespace/name, or 'changed')"
            ) from None
    return graph


def format_graph(graph: Graph, fmt: str, layout: str = "auto") -> str:
    if fmt == "mermaid":
        return mermaid.render(graph)
    if fmt == "dot":
        return dot.render(graph)
    if fmt == "json":
        return json_doc.render(graph)
    if fmt == "svg":
        if layout == "builtin" or (layout == "auto" and not dot.dot_available()):
            return svg.render(graph) + "\n"
        return dot.to_svg(dot.render(graph))
    raise HarnessError(f"--format {fmt}: use one of {', '.join(FORMATS)}")


def run(common: Common, options: GraphOptions) -> int:
    if options.format not in FORMATS:
        raise HarnessError(f"--format {options.format}: use one of {', '.join(FORMATS)}")
    if options.depth < 0:
        raise HarnessError("--depth must be >= 0")
    if options.edges is not None:
        options = replace(options, edges=edge_kinds(options.edges))
    if options.group not in GROUPS:
        raise HarnessError(f"--group {options.group}: use one of {', '.join(GROUPS)}")
    if options.format == "svg" and options.layout == "graphviz" and not dot.dot_available():
        raise HarnessError(dot.MISSING_DOT)
    if options.format == "svg" and options.layout == "auto" and not dot.dot_available():
        print(
            "note: Graphviz's `dot` is not installed; drawing the SVG with harness's built-in "
            "layout (install graphviz for a tighter one)",
            file=sys.stderr,
        )
    if options.out is not None:  # a bad path fails before anything renders
        confined(common, options.out, "--out")
        try:
            options.out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HarnessError(f"{options.out}: cannot write: {exc.strerror or exc}") from None
    graph, failed = compute(common, options)
    # every form (mermaid, dot, svg, json) scrubbed as visible() scrubs text: a render
    # error on a node may quote a Secret value
    text = redaction.known().scrub(format_graph(graph, options.format, options.layout))
    if options.out is not None:
        atomic.write_text(options.out, text)
    else:
        sys.stdout.write(text)
    if failed:
        print(
            "error: some targets failed to render; their Kustomizations show as render errors",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return EXIT_OK
