"""parallel: every thread harness starts sees the run that started it."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from harness.core import parallel, run
from harness.core.memo import Memo
from harness.core.run import Run

PACKAGE = Path(__file__).resolve().parents[2] / "harness"


def test_pool_workers_and_threads_see_their_starters_run() -> None:
    declared: Memo[str, str] = Memo("test", 8)
    mine = Run()
    with mine.entered():
        declared.put("k", "the run's")
        with parallel.pool(2) as pool:
            seen = list(pool.map(lambda _i: (run.current(), declared.get("k")), range(4)))
            pool.submit(declared.put, "from a worker", "kept").result()
        found: list[object] = []
        thread = parallel.thread(lambda: found.append(declared.get("k")), name="test")
        thread.start()
        thread.join()
    assert seen == [(mine, "the run's")] * 4 and found == ["the run's"]
    assert mine.existing(declared) == {"k": "the run's", "from a worker": "kept"}


def test_a_bare_thread_would_see_no_run() -> None:
    """Why `parallel.thread` exists: a new thread starts with an empty context."""
    found: list[object] = []
    with Run().entered():
        bare = threading.Thread(target=lambda: found.append(run.current()))
        bare.start()
        bare.join()
    assert found == [None]


def test_harness_starts_threads_only_through_parallel() -> None:
    starts = re.compile(r"threading\.Thread\(|ThreadPoolExecutor\(")
    offenders = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "parallel.py" and starts.search(path.read_text(encoding="utf-8"))
    )
    assert offenders == []
