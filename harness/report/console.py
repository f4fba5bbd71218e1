"""Rich consoles and progress that respect NO_COLOR, CI and non-TTY output."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape as markup_escape
from rich.segment import Segment

from harness.cache import replay
from harness.core import parallel
from harness.core.model import TargetResult
from harness.report.visible import visible


def escape(text: str) -> str:
    """Text for a rich console line: markup escaped, control characters made visible."""
    return markup_escape(visible(text))


def escape_block(text: str) -> str:
    """As `escape`, keeping line breaks."""
    return markup_escape(visible(text, newlines=True))


class Exact:
    """Text printed as it is: a document's bytes, a line of a diff of them.

    Console markup cannot carry every text (rich reads `\\[` as an escaped bracket even
    where no tag follows: `b: \\[(x)\\]` printed as `b: [(x)\\]`), and rich's own text
    expands tabs; one segment is written untouched. Only control characters are made
    visible, as everywhere (kustomize's YAML holds none but tab and newline)."""

    def __init__(self, text: str, style: str = "", end: str = "\n", block: bool = False) -> None:
        self.text = visible(text, newlines=block)  # only a document keeps its line breaks
        self.style = style
        self.end = end  # rich ends only text with `print(end=...)`, never a renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Segment(self.text, console.get_style(self.style) if self.style else None)
        if self.end:
            yield Segment(self.end)


def _color_allowed() -> bool:
    return "NO_COLOR" not in os.environ


class _Console(Console):
    """rich's console, except that a closed pipe is the CLI's to end (cli/pipe.py: quiet,
    exit 141) rather than rich's exit 1, which is harness's "difference"."""

    def on_broken_pipe(self) -> None:
        """rich's documented hook: raise, as a plain write to the closed pipe would."""
        self.quiet = True  # nothing more is written to it
        raise BrokenPipeError(32, "the output's reader went away")


def stdout() -> Console:
    return _Console(
        file=sys.stdout,
        no_color=not _color_allowed(),
        highlight=False,
        soft_wrap=True,
        emoji=False,
    )


def stderr() -> Console:
    return _Console(
        file=sys.stderr,
        no_color=not _color_allowed(),
        highlight=False,
        soft_wrap=True,
        emoji=False,
    )


def progress_wanted(quiet: bool = False) -> bool:
    """Bars only for a person watching: a TTY on stderr, not CI, not --quiet."""
    return not quiet and sys.stderr.isatty() and not os.environ.get("CI")


PROGRESS_FIRST = 10.0  # seconds before a log gets its first progress line
PROGRESS_EVERY = 30.0  # seconds between progress lines after that
ENV_EVERY = "HARNESS_PROGRESS_EVERY"  # seconds, for both (a CI that wants more or fewer)


def _every() -> tuple[float, float]:
    try:
        every = float(os.environ.get(ENV_EVERY, ""))
    except ValueError:
        return PROGRESS_FIRST, PROGRESS_EVERY
    return (min(PROGRESS_FIRST, every), every) if every > 0 else (PROGRESS_FIRST, PROGRESS_EVERY)


class ProgressLines:
    """Progress for a log (CI, a pipe): `rendering: 120/510 targets, 0:34 elapsed` on stderr
    every PROGRESS_EVERY seconds once a render has run PROGRESS_FIRST, and a last line when
    it printed any; nothing for a quick run. A ticker thread prints, so a long render that
    finishes nothing for a while still says it is alive."""

    def __init__(self, what: str = "rendering") -> None:
        self.what = what
        self.first, self.every = _every()
        self.total = 0
        self.planned = False  # no count before the pipeline says one (`round 1: 0/0` misleads)
        self.done = 0
        self.lines = 0
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = parallel.thread(self._tick, name="harness-progress", daemon=True)

    def on_plan(self, count: int) -> None:
        with self.lock:
            self.total += count
            self.planned = True

    def on_done(self, _result: TargetResult) -> None:
        with self.lock:
            self.done += 1

    def line(self, final: bool = False) -> str:
        with self.lock:
            done, total, planned = self.done, self.total, self.planned
        elapsed = int(time.monotonic() - self.started)
        clock = f"{elapsed // 60}:{elapsed % 60:02d}"
        if not planned:  # the count is not known yet (a Flux fixed point still running)
            return f"{self.what}: done in {clock}" if final else f"{self.what}: {clock} elapsed"
        if final:
            return f"{self.what}: {done}/{total} targets done in {clock}"
        return f"{self.what}: {done}/{total} targets, {clock} elapsed"

    def _print(self, text: str) -> None:
        with replay.paused():  # time-dependent: never part of a replayed answer
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        self.lines += 1

    def _tick(self) -> None:
        wait = self.first
        while not self.stop.wait(wait):
            self._print(self.line())
            wait = self.every

    def __enter__(self) -> ProgressLines:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        if self.lines:
            self._print(self.line(final=True))


@contextmanager
def render_progress(
    quiet: bool = False, what: str = "rendering"
) -> Iterator[tuple[Callable[[int], None], Callable[[TargetResult], None]]]:
    """(on_plan, on_done) callbacks for the pipeline: a bar for a person at a terminal,
    periodic lines for a log (CI, a pipe), nothing with --quiet."""
    if quiet:
        yield (lambda _n: None), (lambda _r: None)
        return
    if not progress_wanted(quiet):
        with ProgressLines(what) as lines:
            yield lines.on_plan, lines.on_done
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
    task = progress.add_task("", total=None)  # `0/?` until the pipeline plans a count

    def on_plan(count: int) -> None:
        total = progress.tasks[0].total or 0
        progress.update(task, total=total + count)

    def on_done(result: TargetResult) -> None:
        progress.update(task, advance=1, description=result.name)

    with replay.paused(), progress:
        yield on_plan, on_done
