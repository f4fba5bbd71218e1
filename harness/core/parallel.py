"""One thread pool shape for every parallel stage: Ctrl-C cancels what has not started.

Every thread harness starts (a pool's workers, `thread`) runs in a copy of its starter's
context: a new thread would otherwise see no context variable, and so not the run
(core/run.py) whose memos and interrupt flag it works for.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from harness.core import process


@contextmanager
def pool(jobs: int) -> Iterator[ThreadPoolExecutor]:
    """A ThreadPoolExecutor whose queued work is dropped when the caller is interrupted.

    Renders in flight are killed with their process groups (process.kill_all) and the rest
    of the queue is cancelled, so an interrupt (Ctrl-C, SIGTERM) propagates at once. Each
    worker enters a copy of the caller's context (its run) before its first task.
    """
    executor = ThreadPoolExecutor(
        max_workers=max(1, jobs), initializer=_adopt, initargs=(contextvars.copy_context(),)
    )
    try:
        yield executor
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C or SIGTERM: stop every tool now
            process.kill_all()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


def _adopt(context: contextvars.Context) -> None:
    """A new worker thread takes the starter's context variables (the pool's initializer)."""
    for var, value in context.items():
        var.set(value)


def thread(target: Callable[[], object], *, name: str, daemon: bool = False) -> threading.Thread:
    """A thread (not started) that runs `target` in a copy of the caller's context."""
    context = contextvars.copy_context()
    return threading.Thread(target=context.run, args=(target,), name=name, daemon=daemon)
