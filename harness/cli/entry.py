"""The `harness` console script: replay an unchanged run, else import and run the CLI.

Kept apart from app.py so that a replayed `check`, `lint` or `diff` imports no more than
replay.py needs, and flags.py: the options of the verbs it replays, as plain data (no typer).

A closed stdout (`harness render | head -1`: the reader went away) ends every verb here the
way other command-line tools end: quietly, exit 141 (128 + SIGPIPE, what a shell reports of
a command the signal killed), never exit 1 (harness's "difference") or a traceback.
"""

from __future__ import annotations

import os
import sys

EXIT_CLOSED = 141  # 128 + SIGPIPE


def main() -> None:
    try:
        _main()
    except BrokenPipeError:
        if not stdout_closed():
            raise
        raise SystemExit(closed_stdout()) from None


def _main() -> None:
    from harness.cache import replay
    from harness.cli import flags

    run = replay.plan(sys.argv[1:], flags.REPLAYED)
    if run is not None:
        code = replay.replay(run)
        if code is not None:
            raise SystemExit(code)
    from harness.cli.app import main as cli_main

    if run is None:
        cli_main()
        return
    with replay.recording(run):
        cli_main()


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader went away (poll says POLLERR/POLLHUP of fd 1):
    a BrokenPipeError from anything else (a child's pipe) is not a closed stdout."""
    import select

    try:
        poller = select.poll()
        poller.register(1, select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll(), or no fd 1
        return False


def closed_stdout() -> int:
    """End a run whose stdout's reader went away: EXIT_CLOSED, with fd 1 pointed at /dev/null
    first (Python's docs, "Note on SIGPIPE"), so the flush at exit cannot raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
    finally:
        os.close(devnull)
    return EXIT_CLOSED
