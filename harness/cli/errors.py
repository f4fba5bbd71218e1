"""How a verb ends: its exit code, or what it raised as one line and the exit code shells expect.

Every verb's typer function runs its work through `run` (as pre-commit's error_handler does):
a `HarnessError` is one `error:` line and exit 2, Ctrl-C 130, SIGTERM 143, and a bug one
`internal error:` line and exit 2 (its traceback with --debug or HARNESS_DEBUG=1).
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

    from harness.cache import replay
    from harness.cli.context import EXIT_ERROR
    from harness.core import process, scratch
    from harness.core.errors import HarnessError
    from harness.core.run import Run
    from harness.report.visible import visible

    debug = debug or os.environ.get(ENV_DEBUG, "") not in ("", "0")
    scratch.sweep()  # temp dirs a killed (SIGKILLed) run left behind
    try:
        # a run starts: its own memos, nothing of the last run's (one process, many runs);
        # every verb cleans up on SIGTERM as on Ctrl-C
        with Run().entered(), process.sigterm_as_interrupt():
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

    sys.stderr.write("".join(traceback.format_exception(exc)))
