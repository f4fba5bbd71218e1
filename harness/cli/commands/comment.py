"""`harness comment`: the `diff` of a pull request as a sticky PR comment (or several parts).

Same inputs and exit codes as `diff`; the output is GitHub-flavoured Markdown that always
fits the comment size limit (see report/markdown_budget.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer

from harness.cli import errors, shared
from harness.cli.commands import diff as diff_cmd
from harness.cli.context import Common, confined, load_config
from harness.core.config import Config
from harness.core.errors import HarnessError
from harness.report import comment_graph, github, markdown
from harness.report import markdown_budget as mb

DEFAULT_UNIFIED = 3


@dataclass(frozen=True)
class CommentOptions:
    diff: diff_cmd.DiffOptions
    budget: int | None = None
    split: bool = False
    max_parts: int = mb.DEFAULT_MAX_PARTS
    output_dir: Path | None = None
    marker_id: str | None = None
    html: Path | None = None  # also write the HTML report here


app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def comment(
    base: shared.BaseOpt = None,
    head: shared.HeadOpt = None,
    use_goldens: shared.GoldensOpt = False,
    expect: Annotated[
        shared.Expect | None,
        shared.expect("As for diff: sets the exit code and a line in the comment."),
    ] = None,
    fail_on_diff: shared.FailOnDiffOpt = False,
    fail_on_hazard: shared.FailOnHazardOpt = None,
    unified: Annotated[int | None, shared.unified("Context lines of the diff blocks (3).")] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            metavar="N",
            help="Max characters per comment body (default: comment.budget, 65536).",
        ),
    ] = None,
    split: Annotated[
        bool,
        typer.Option(
            "--split",
            metavar=shared.FLAG,
            help="When one body would have to leave documents out, write part N/M bodies "
            "instead (needs --output-dir).",
        ),
    ] = False,
    max_parts: Annotated[
        int,
        typer.Option("--max-parts", min=1, metavar="N", help="Parts to aim for with --split (10)."),
    ] = 10,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            file_okay=False,
            metavar="DIR",
            help="Write comment-part-N.md files here.",
        ),
    ] = None,
    marker: Annotated[
        str | None,
        typer.Option(
            "--marker",
            metavar="ID",
            help="Hidden marker id (default: comment.id, harness:comment).",
        ),
    ] = None,
    fail_on_preexisting_error: shared.FailOnPreexistingOpt = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            dir_okay=False,
            metavar="FILE",
            help="Also write the self-contained HTML report of the same diff to this file.",
        ),
    ] = None,
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
    """Write the diff as a PR comment that fits GitHub's size limit (exit codes as diff)."""
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
    options = CommentOptions(
        diff=diff_cmd.options_from(
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
    errors.run(lambda: run(c, options), debug)


def validate(options: CommentOptions) -> None:
    """Fail on bad options before anything renders."""
    if options.budget is not None and options.budget < mb.MIN_BUDGET:
        raise HarnessError(f"--budget must be at least {mb.MIN_BUDGET} characters")
    if options.marker_id is not None and not mb.valid_marker_id(options.marker_id):
        raise HarnessError(
            f"--marker {options.marker_id!r}: use letters, digits and : . _ / - (no '--')"
        )
    if options.split and options.output_dir is None:
        raise HarnessError("--split writes several files: give --output-dir DIR")
    if options.max_parts < 1:
        raise HarnessError("--max-parts must be at least 1")


def run(common: Common, options: CommentOptions) -> int:
    validate(options)
    diff_options = options.diff
    if diff_options.unified is None:
        diff_options = replace(diff_options, unified=DEFAULT_UNIFIED)
    confined(common, options.html, "--html")
    confined(common, options.output_dir, "--output-dir")
    cfg = load_config(common)  # the comment settings are checked before anything renders
    marker_id = options.marker_id or cfg.comment_id
    if not mb.valid_marker_id(marker_id):
        raise HarnessError(f"comment.id {marker_id!r}: use letters, digits and : . _ / -")
    return publish(diff_cmd.compute(common, diff_options), diff_options, options, cfg)


def publish(
    result: diff_cmd.DiffRun,
    diff_options: diff_cmd.DiffOptions,
    options: CommentOptions,
    cfg: Config,
) -> int:
    """Lay one diff out as the comment body (or parts) and write it (shared with `merge`)."""
    budget = options.budget or cfg.comment_budget
    marker_id = options.marker_id or cfg.comment_id
    info = markdown.comment_input(
        result.analysis,
        result.verdict,
        result.base.label,
        result.head.label,
        expect=diff_options.expect,
        hazards=result.hazards,
        blind=result.blind,
        chart_metadata=cfg.helm_chart_metadata,
    )
    fitted = comment_graph.comment(
        result.analysis,
        info,
        result.hazards,
        budget=budget,
        marker_id=marker_id,
        split=options.split,
        max_parts=options.max_parts,
    )
    if options.output_dir is not None:
        markdown.write_parts(options.output_dir, fitted.bodies)
    else:
        markdown.print_comment(fitted.bodies[0])
    github.append_step_summary(fitted.bodies[0])
    if options.html is not None:
        from harness.report.formats import html as html_out

        page = html_out.diff_page(
            result.analysis,
            result.verdict,
            result.code,
            result.base.label,
            result.head.label,
            result.hazards,
        )
        html_out.emit(page, options.html, to_stdout=False)
    return result.code
