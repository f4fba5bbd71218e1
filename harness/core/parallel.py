"""One thread pool shape for every parallel stage: Ctrl-C cancels what has not started."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from harness.core import process


@contextmanager
def pool(jobs: int) -> Iterator[ThreadPoolExecutor]:
    """A ThreadPoolExecutor whose queued work is dropped when the caller is interrupted.

    Renders in flight are killed with their process groups (process.kill_all) and the rest
    of the queue is cancelled, so an interrupt (Ctrl-C, SIGTERM) propagates at once.
    """
    executor = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        yield executor
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C or SIGTERM: stop every tool now
            process.kill_all()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
