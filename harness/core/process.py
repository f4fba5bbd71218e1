"""Every external tool runs here: in its own process group, killed as a group.

Why one module: a timeout, Ctrl-C or SIGTERM must stop a tool and everything it started
(helm's plugins, kustomize's exec plugins and `helm` runs), not only the process harness
started, and an interrupted run must not wait for renders still in flight. Each child
starts a new session (its own process group); a timeout or an exception while waiting
kills that group, and `kill_all` kills every group still running (the interrupt path) and
stops the current run (core/run.py) from starting more. The live groups are process state
(they are this process's children, whichever run started them); "interrupted" is the
run's, so the next run in the process starts tools again.
Standard library only (and core/run.py, which is too).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from harness.core import run as run_state

_live: set[subprocess.Popen[bytes]] = set()  # this process's tool groups still running
_lock = threading.Lock()


class Stopped(RuntimeError):
    """The run was interrupted: a tool a worker thread was about to start is not started."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, delivered like Ctrl-C so cleanup runs, but exiting 143 as shells expect."""


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: bytes
    stderr: bytes


def start(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stdin: int | None = subprocess.DEVNULL,
    stderr: int = subprocess.PIPE,
) -> subprocess.Popen[bytes]:
    """Start a tool in a new process group, registered until `finished`; `Stopped` once
    the run was interrupted (a worker thread must not start a render after kill_all)."""
    owner = run_state.current()
    with _lock:
        if owner is not None and owner.stopped:
            raise Stopped("interrupted")
        proc = subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
        _live.add(proc)
    return proc


def finished(proc: subprocess.Popen[bytes]) -> None:
    with _lock:
        _live.discard(proc)


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    input: bytes | None = None,
) -> Completed:
    """Run a tool to completion; `subprocess.TimeoutExpired` (its group killed) after
    `timeout` seconds. OSError when it cannot start."""
    proc = start(argv, env=env, cwd=cwd, stdin=subprocess.PIPE if input is not None else None)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except BaseException:  # a timeout, Ctrl-C or SIGTERM: never leave the tool running
        kill_group(proc)
        raise
    finally:
        finished(proc)
    return Completed(proc.returncode, out, err)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill a tool and everything it spawned; never our own process group."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if proc.pid > 1 and os.getpgid(proc.pid) == proc.pid != os.getpgrp():
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
        proc.communicate(timeout=5)


def kill_all() -> int:
    """Kill every tool still running, and the current run starts no more (it was
    interrupted); how many."""
    owner = run_state.current()
    with _lock:
        if owner is not None:
            owner.stop()
        running = list(_live)
    for proc in running:
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            if proc.poll() is None and os.getpgid(proc.pid) == proc.pid != os.getpgrp():
                os.killpg(proc.pid, signal.SIGKILL)
    return len(running)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises `Terminated` (a KeyboardInterrupt) in the main thread, so every verb's
    `finally` blocks run on it as on Ctrl-C; the previous handler comes back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(_signum: int, _frame: object) -> None:
        raise Terminated("terminated")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
