"""process: an interrupted run starts no tool; the next run in the process may."""

from __future__ import annotations

import sys

import pytest

from harness.core import process
from harness.core.run import Run

QUICK = [sys.executable, "-c", "print('ran')"]


def test_an_interrupted_run_starts_no_tool_and_the_next_run_does() -> None:
    interrupted = Run()
    with interrupted.entered():
        assert process.run(QUICK, timeout=30).stdout == b"ran\n"
        assert process.kill_all() == 0
        with pytest.raises(process.Stopped):
            process.run(QUICK, timeout=30)
    assert interrupted.stopped
    with Run().entered():
        assert process.run(QUICK, timeout=30).stdout == b"ran\n"
    assert process.run(QUICK, timeout=30).returncode == 0  # outside any run: never stopped
