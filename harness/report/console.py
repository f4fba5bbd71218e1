"""Rich consoles and progress that respect NO_COLOR, CI and non-TTY output."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape as markup_escape

from harness.cache import replay
from harness.core.model import TargetResult
from harness.report.visible import visible


def escape(text: str) -> str:
    """Text for a rich console line: markup escaped, control characters made visible."""
    return markup_escape(visible(text))


def escape_block(text: str) -> str:
    """As `escape`, keeping line breaks."""
    return markup_escape(visible(text, newlines=True))


def _color_allowed() -> bool:
    return "NO_COLOR" not in os.environ


def stdout() -> Console:
    return Console(
        file=sys.stdout,
        no_color=not _color_allowed(),
        highlight=False,
        soft_wrap=True,
        emoji=False,
    )


def stderr() -> Console:
    return Console(
        file=sys.stderr,
        no_color=not _color_allowed(),
        highlight=False,
        soft_wrap=True,
        emoji=False,
    )


def progress_wanted(quiet: bool = False) -> bool:
    """Bars only for a person watching: a TTY on stderr, not CI, not --quiet."""
    return not quiet and sys.stderr.isatty() and not os.environ.get("CI")


@contextmanager
def render_progress(
    quiet: bool = False,
) -> Iterator[tuple[Callable[[int], None], Callable[[TargetResult], None]]]:
    """(on_plan, on_done) callbacks for the pipeline; no-ops when nobody is watching."""
    if not progress_wanted(quiet):
        yield (lambda _n: None), (lambda _r: None)
        return
    # imported here: a quiet or CI run never draws a bar (rich.progress is ~30 ms of start-up)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("rendering"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=stderr(),
        transient=True,
    )
    task = progress.add_task("", total=0)

    def on_plan(count: int) -> None:
        total = progress.tasks[0].total or 0
        progress.update(task, total=total + count)

    def on_done(result: TargetResult) -> None:
        progress.update(task, advance=1, description=result.name)

    with replay.paused(), progress:
        yield on_plan, on_done
