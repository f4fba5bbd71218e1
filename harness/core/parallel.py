"""One thread pool shape for every parallel stage: Ctrl-C cancels what has not started."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager


@contextmanager
def pool(jobs: int) -> Iterator[ThreadPoolExecutor]:
    """A ThreadPoolExecutor whose queued work is dropped when the caller is interrupted.

    Renders in flight finish (they are short, and in their own process groups); the rest of
    the queue is cancelled instead of being run before the interrupt can propagate.
    """
    executor = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        yield executor
    except BaseException:
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
