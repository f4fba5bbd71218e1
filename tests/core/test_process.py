"""process: bounded tools (an output cap per stream, an address-space limit per process);
an interrupted run starts no tool, and the next run in the process may."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from harness.core import process
from harness.core.run import Run

ENDLESS = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"]
ENDLESS_ERR = [sys.executable, "-c", "import sys\nwhile True: sys.stderr.write('y' * 65536)"]


def test_a_tool_printing_without_end_is_killed_at_the_cap() -> None:
    started = time.monotonic()
    with pytest.raises(process.OutputTooLarge) as info:
        process.run(ENDLESS, timeout=60, cap=4 * 1024 * 1024)
    assert (info.value.stream, info.value.cap) == ("stdout", 4 * 1024 * 1024)
    assert str(info.value) == "stdout over 4194304 bytes"
    assert time.monotonic() - started < 30  # stopped at the cap, not by the timeout


def test_stderr_has_its_own_cap() -> None:
    with pytest.raises(process.OutputTooLarge) as info:
        process.run(ENDLESS_ERR, timeout=60, cap=1024 * 1024)
    assert info.value.stream == "stderr"


def test_output_under_the_cap_is_all_there() -> None:
    script = "import sys\nsys.stdout.write('a' * 300000)\nsys.stderr.write('b')\nsys.exit(3)"
    done = process.run([sys.executable, "-c", script], timeout=60, cap=300000)
    assert (done.returncode, len(done.stdout), done.stderr) == (3, 300000, b"b")


def test_a_capped_run_still_times_out() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        process.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=1, cap=1024)


def test_the_memory_limit_binds_the_child() -> None:
    grab = "b = bytearray(1024 * 1024 * 1024)\nprint('allocated')"
    limited = process.run(
        [sys.executable, "-c", grab], timeout=60, cap=1 << 20, memory=512 * 1024 * 1024
    )
    assert limited.returncode == 1
    assert b"MemoryError" in limited.stderr
    free = process.run([sys.executable, "-c", grab], timeout=60, cap=1 << 20)
    assert (free.returncode, free.stdout) == (0, b"allocated\n")


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


def test_the_child_runs_under_the_memory_limit_it_was_given() -> None:
    show = (
        "import resource, time\ntime.sleep(0.2)\nprint(resource.getrlimit(resource.RLIMIT_AS)[0])"
    )
    done = process.run([sys.executable, "-c", show], timeout=60, memory=768 * 1024 * 1024)
    assert done.stdout == b"805306368\n"


def test_a_bounded_tool_that_is_not_there_is_not_found() -> None:
    with pytest.raises(FileNotFoundError):
        process.run(["/nonexistent/harness-tool"], timeout=30, memory=768 * 1024 * 1024)
