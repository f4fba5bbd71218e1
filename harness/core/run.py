"""One run's state: its memos' data, whether it was interrupted, the file facts it uses.

A run is one command (`cli/app.py`'s verb runner makes one per verb; the tests' CLI
runner runs many in one process) or one fresh start of `harness watch` (which keeps its
run between the answers it gives for one tree, since memos are keyed by content). Run
state lives in a `Run` and nowhere else, so two runs in one process share nothing: a new
`Run` sees none of an earlier one's memos, and an interrupted run does not stop the next.
The one thing runs share on purpose is the process's file facts (`PROCESS`), which are
checked against each file's stat on every lookup.

The current run is a context variable, not a parameter: memos are read deep in the call
graph (a kustomization file parsed in discovery and in every build's closure walk, every
hazard rule's walk of a document), and passing the run down would touch hundreds of
signatures for a value that is the same in every call of one run. Where the chain is short
the run is passed explicitly: the CLI context takes it once and hands it to the pipeline
(`RenderOptions.run`), and `harness watch` holds its own. Threads do not inherit context
variables: `parallel.pool` and `parallel.thread` start every worker in a copy of its
starter's context, so a worker sees the run that started it.

Standard library only.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from typing import Any

from harness.core.filefacts import FileFacts


class Process:
    """What outlives runs in this process, deliberately: facts about files, each valid only
    while the file's stat holds (filefacts.py), so a later run is never answered stale."""

    def __init__(self) -> None:
        self.files = FileFacts()


PROCESS = Process()


class Run:
    """One run's state. `table(owner)` is a memo's data (memo.py declares memos at module
    level, as a name and a bound; their data lives here); `stopped` is set once the run is
    interrupted (process.py starts no tool after it); `files` are the process's file facts
    unless the run was given its own (a test)."""

    def __init__(self, files: FileFacts | None = None, parent: Run | None = None) -> None:
        self.files = files if files is not None else PROCESS.files
        # a run inside a command's run (each fresh start of `harness watch`): its memos are
        # its own, what the whole command must keep (the Secret values it has seen) is the
        # command's
        self.root: Run = parent.root if parent is not None else self
        self._tables: dict[object, dict[Any, Any]] = {}
        self._stopped = threading.Event()
        self._closers: list[Callable[[], None]] = []

    def on_exit(self, closer: Callable[[], None]) -> None:
        """Call `closer` when this run is left (`entered`), last registered first: what a
        run started and must not outlive it (the Helm SDK's idle worker processes)."""
        self._closers.append(closer)

    def table(self, owner: object) -> dict[Any, Any]:
        """The dict that holds `owner`'s data in this run, made on first use (a single
        dict operation, so worker threads may race to make it safely)."""
        found = self._tables.get(owner)
        if found is None:
            found = self._tables.setdefault(owner, {})
        return found

    def existing(self, owner: object) -> dict[Any, Any] | None:
        """`owner`'s data when this run has any (a lookup never makes a table)."""
        return self._tables.get(owner)

    def stop(self) -> None:
        """The run was interrupted: it starts no tool from now on."""
        self._stopped.set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    @contextlib.contextmanager
    def entered(self) -> Iterator[Run]:
        """This run is the current one inside (this thread, and the workers it starts
        through `parallel`); the one before comes back after, even on error."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)
            closers, self._closers = self._closers, []
            for closer in reversed(closers):
                closer()


_CURRENT: contextvars.ContextVar[Run | None] = contextvars.ContextVar("harness_run", default=None)


def current() -> Run | None:
    """The run this code runs in; None outside any (a library call, a unit test): memos
    then remember nothing, which only costs recomputing."""
    return _CURRENT.get()


def required() -> Run:
    """The current run, where there must be one (the CLI's verbs run inside theirs)."""
    found = _CURRENT.get()
    if found is None:
        raise RuntimeError("no current run: enter a core.run.Run first")
    return found


def files() -> FileFacts:
    """The file facts the current run uses; outside a run, the process's."""
    found = _CURRENT.get()
    return found.files if found is not None else PROCESS.files
