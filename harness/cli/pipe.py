"""A closed stdout (`harness render | head -1`: its reader went away) ends every verb the way
other command-line tools end: quietly, exit 141 (128 + SIGPIPE, what a shell reports of a
command the signal killed), never exit 1 (harness's "difference") or a traceback.

The console script (cli/entry.py), a verb's runner (cli/errors.py) and the output printed
outside a verb (--help, --version: cli/shared.py) end so. Nothing imported: entry.py loads
this before the replay.
"""

from __future__ import annotations

import os

EXIT_CLOSED = 141  # 128 + SIGPIPE


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
