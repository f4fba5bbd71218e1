"""Every external tool runs here: in its own process group, killed as a group.

Why one module: a timeout, Ctrl-C or SIGTERM must stop a tool and everything it started
(helm's plugins, kustomize's exec plugins and `helm` runs), not only the process harness
started, and an interrupted run must not wait for renders still in flight. Each child
starts a new session (its own process group); a timeout or an exception while waiting
kills that group, and `kill_all` kills every group still running (the interrupt path) and
stops the current run (core/run.py) from starting more. The live groups are process state
(they are this process's children, whichever run started them); "interrupted" is the
run's, so the next run in the process starts tools again.

A renderer is bounded too (core/limits.py): `memory` sets its address space
(RLIMIT_AS, set by /bin/sh before it executes the tool: `_bounded`) and `cap` the bytes
read from each of its stdout and stderr; one that prints past the cap is killed and
`OutputTooLarge` names the stream, so a kustomize printing without end fails its target
instead of filling harness's memory. Standard library only (and core/run.py, which is too).
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from harness.core import run as run_state

_live: set[subprocess.Popen[bytes]] = set()  # this process's tool groups still running
_lock = threading.Lock()


class Stopped(RuntimeError):
    """The run was interrupted: a tool a worker thread was about to start is not started."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, delivered like Ctrl-C so cleanup runs, but exiting 143 as shells expect."""


class OutputTooLarge(Exception):
    """A tool printed more than the cap on one stream; it was killed (its group too)."""

    def __init__(self, stream: str, cap: int) -> None:
        super().__init__(f"{stream} over {cap} bytes")
        self.stream = stream
        self.cap = cap


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
    memory: int = 0,
) -> subprocess.Popen[bytes]:
    """Start a tool in a new process group, registered until `finished`; `Stopped` once
    the run was interrupted (a worker thread must not start a render after kill_all).
    `memory`: its address-space limit in bytes (0: none)."""
    owner = run_state.current()
    with _lock:
        if owner is not None and owner.stopped:
            raise Stopped("interrupted")
        shell = memory > 0 and _SHELL and _executable(argv[0])
        proc = subprocess.Popen(
            _bounded(argv, memory) if shell else list(argv),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            preexec_fn=None if shell else _address_space(memory),
        )
        _live.add(proc)
    return proc


# The address-space limit is set by a POSIX shell that then executes the tool in its place
# (same pid, same group), not by a `preexec_fn`: that makes subprocess fork the whole
# harness process instead of vfork and run Python in the child, ~17 ms of CPU per renderer
# on a 300 MiB harness, a third of a kustomize run's own CPU (scripts/bench.py --floor); the
# shell costs ~1 ms. Set before the tool executes, so a Go runtime sizes itself to it.
SHELL = "/bin/sh"
_SHELL = os.access(SHELL, os.X_OK)
_BOUND = 'ulimit -S -v "$1" && shift && exec "$@"'


def _executable(tool: str) -> bool:
    """An absolute path to an executable file: the shell runs it; anything else (a name
    PATH finds, a tool that is not there) goes the `preexec_fn` way, so Popen's own
    FileNotFoundError still says a tool is missing."""
    return os.path.isabs(tool) and os.path.isfile(tool) and os.access(tool, os.X_OK)


def _bounded(argv: Sequence[str], memory: int) -> list[str]:
    """`argv` run by /bin/sh under `ulimit -S -v` (KiB), which then executes it."""
    return [SHELL, "-c", _BOUND, "harness-bound", str(_limit(memory)[0] // 1024), *argv]


def runs_through() -> tuple[str, ...]:
    """The programs `start` runs a bounded tool through (the shell), which a whole-run
    replay must fingerprint beside the tool itself (cache/replay.py `note_tool`)."""
    return (SHELL,) if _SHELL else ()


def _limit(memory: int) -> tuple[int, int]:
    """RLIMIT_AS (soft, hard) for a child: `memory`, never above a limit already lower (a
    limit harness runs under already binds its tools), the hard limit kept."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    for bound in (soft, hard):
        if bound != resource.RLIM_INFINITY:
            memory = min(memory, bound)
    return memory, hard


def _address_space(memory: int) -> Callable[[], None] | None:
    """What the child runs before exec where there is no /bin/sh: RLIMIT_AS set to `memory`.
    A prepared call of C code: nothing in it takes a lock the fork may have copied held,
    and no allocation happens between fork and exec for it."""
    if memory <= 0:
        return None
    return functools.partial(resource.setrlimit, resource.RLIMIT_AS, _limit(memory))


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
    cap: int = 0,
    memory: int = 0,
) -> Completed:
    """Run a tool to completion; `subprocess.TimeoutExpired` (its group killed) after
    `timeout` seconds, `OutputTooLarge` past `cap` bytes on a stream (0: no cap; a capped
    run takes no `input`). `memory`: see `start`. OSError when it cannot start."""
    stdin = subprocess.PIPE if input is not None else None
    proc = start(argv, env=env, cwd=cwd, stdin=stdin, memory=memory)
    try:
        if cap:
            out, err = communicate(proc, timeout=timeout, cap=cap)
        else:
            out, err = proc.communicate(input, timeout=timeout)
    except BaseException:  # a timeout, Ctrl-C or SIGTERM: never leave the tool running
        kill_group(proc)
        raise
    finally:
        finished(proc)
    return Completed(proc.returncode, out, err)


def communicate(proc: subprocess.Popen[bytes], *, timeout: float, cap: int) -> tuple[bytes, bytes]:
    """`proc.communicate(timeout=...)` reading at most `cap` bytes of each of stdout and
    stderr (the ones that are pipes): past it the tool's group is killed and
    `OutputTooLarge` raised; `subprocess.TimeoutExpired` after `timeout` seconds (the
    caller kills the group, as after `communicate`)."""
    deadline = time.monotonic() + timeout
    streams = {"stdout": proc.stdout, "stderr": proc.stderr}
    if not all(_has_fd(stream) for stream in streams.values() if stream is not None):
        out, err = proc.communicate(timeout=timeout)  # not pipes to poll: checked after
        for name, data in (("stdout", out), ("stderr", err)):
            if data is not None and len(data) > cap:
                raise OutputTooLarge(name, cap)
        return out or b"", err or b""
    chunks: dict[str, list[bytes]] = {name: [] for name in streams}
    sizes = dict.fromkeys(streams, 0)
    with selectors.DefaultSelector() as selector:
        for name, stream in streams.items():
            if stream is not None:
                selector.register(stream, selectors.EVENT_READ, name)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout)
            for key, _events in selector.select(left):
                name = key.data
                data = os.read(key.fd, 1 << 16)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                sizes[name] += len(data)
                if sizes[name] > cap:
                    kill_group(proc)
                    raise OutputTooLarge(name, cap)
                chunks[name].append(data)
    for stream in streams.values():
        if stream is not None:
            stream.close()
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise subprocess.TimeoutExpired(proc.args, timeout) from None
    return b"".join(chunks["stdout"]), b"".join(chunks["stderr"])


def _has_fd(stream: object) -> bool:
    try:
        return isinstance(stream.fileno(), int)  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


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
