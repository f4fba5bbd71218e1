"""How a verb ends: its exit code, or what it raised as one line and the exit code shells expect.

Every verb's typer function runs its work through `run` (as pre-commit's error_handler does):
a `HarnessError` is one `error:` line and exit 2, Ctrl-C 130, SIGTERM 143, a closed stdout
141 and nothing said (cli/pipe.py), and a bug one `internal error:` line and exit 2 (its
traceback with --debug or HARNESS_DEBUG=1).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import typer

ENV_DEBUG = "HARNESS_DEBUG"


def run(fn: Callable[[], int], debug: bool = False) -> None:
    """Run a verb; its errors are one line and exit 2, an interrupt or SIGTERM 130/143.

    An internal error (a bug) is one line with a hint to report it and exit 2, or with
    `--debug` / `HARNESS_DEBUG=1` its traceback (also of the bug behind a HarnessError that
    wraps one, such as a crashing hazard rule)."""
    import os

    from harness.core import scratch
    from harness.core.run import Run

    debug = debug or os.environ.get(ENV_DEBUG, "") not in ("", "0")
    scratch.sweep()  # temp dirs a killed (SIGKILLed) run left behind
    # a run starts: its own memos and Secret values, nothing of the last run's (one process,
    # many runs); its error lines are written inside it, so its scrub masks them too
    with Run().entered():
        code = _guarded(fn, debug)
    raise typer.Exit(code)


def _guarded(fn: Callable[[], int], debug: bool) -> int:
    """The verb's exit code; every verb cleans up on SIGTERM as on Ctrl-C."""
    from harness.cli import pipe
    from harness.cli.context import EXIT_ERROR
    from harness.core import process
    from harness.core.errors import HarnessError
    from harness.report.visible import visible

    try:
        with process.sigterm_as_interrupt():
            return fn()
    except HarnessError as exc:
        if debug and exc.__cause__ is not None:
            _traceback(exc)
        typer.echo(f"error: {visible(str(exc))}", err=True)
        return EXIT_ERROR
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, process.Terminated)
        typer.echo("terminated" if terminated else "interrupted", err=True)
        return 143 if terminated else 130
    except BrokenPipeError as exc:  # `| head -1`: quiet, exit 141 (cli/pipe.py)
        if pipe.stdout_closed():
            return pipe.closed_stdout()
        return _internal(exc, debug)
    except Exception as exc:  # a bug: never a bare traceback ending in exit 1 ("drift")
        return _internal(exc, debug)


def _internal(exc: Exception, debug: bool) -> int:
    """A bug: one line asking to report it (its traceback with --debug), exit 2."""
    from harness.cache import replay
    from harness.cli.context import EXIT_ERROR
    from harness.report.visible import visible

    replay.taint("an internal error")
    if debug:
        _traceback(exc)
    detail = visible(f"{type(exc).__name__}: {exc}")
    typer.echo(
        f"internal error: {detail} (a bug in harness: please report it with the "
        f"traceback --debug or {ENV_DEBUG}=1 prints)",
        err=True,
    )
    return EXIT_ERROR


def _traceback(exc: BaseException) -> None:
    import traceback

    from harness.core import redaction

    sys.stderr.write(redaction.known().scrub("".join(traceback.format_exception(exc))))
