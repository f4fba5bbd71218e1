"""`harness comment`: the `diff` of a pull request as a sticky PR comment (or several parts).

Same inputs and exit codes as `diff`; the output is GitHub-flavoured Markdown that always
fits the comment size limit (see report/markdown_budget.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from harness.cli.commands import diff as diff_cmd
from harness.cli.context import Common, load_config
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
