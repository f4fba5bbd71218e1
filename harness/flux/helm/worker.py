"""The Helm SDK's renders in worker processes: where a hung render can be stopped.

The SDK is Go code called in-process; a chart that never finishes templating (a recursive
`include`, a huge `range`) cannot be interrupted inside the process that runs it. So
`template` runs in a worker: a `python -m harness.flux.helm.worker` process (its own
process group, core/process.py), kept for the run and reused by later releases, that
loads the SDK once and, before its first answer, renders a probe chart (native.probe): a
library that ignores the capabilities it is given fails every render of that worker with
one line saying the SDK's ABI changed. A render that outlives the timeout kills its worker
(the next render starts a fresh one); Ctrl-C and SIGTERM kill every worker with the other
tools.

The worker's stdout and stderr (file descriptors 1 and 2, where the Go library logs with
timestamps) go to a file it reads back after each render: those lines come back with the
result and are attributed to the release's target, never printed bare. Requests and
answers are pickled builtin values over the worker's stdin/stdout pipes, length-prefixed.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

from harness.core import limits, process

_HEADER = struct.Struct(">Q")
_LOG_BYTES = 1 << 20  # the library's log lines of one render, as much as is read back
# (every rendered file by its path, the chart's crds/ files, Chart.yaml's kubeVersion)
Rendered = tuple[dict[str, str], list[dict[str, str]], str]


class WorkerError(Exception):
    """The render failed (Helm's message), timed out, or the worker died."""


class TimedOut(WorkerError):
    pass


class _Worker:
    def __init__(self) -> None:
        argv = [sys.executable, "-m", "harness.flux.helm.worker"]
        env = {**os.environ, "PYTHONPATH": _import_path()}
        bounds = limits.current()
        self.cap = bounds.output_bytes
        self.proc = process.start(
            argv,
            env=env,
            stdin=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            memory=bounds.memory_bytes,
        )

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        _send(self.proc.stdin, request)
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise TimedOut(f"the Helm SDK did not finish within {timeout:g}s (render killed)")
        answer = _receive(self.proc.stdout, self.cap)
        if not isinstance(answer, dict):
            raise WorkerError("the Helm SDK worker exited during the render")
        return answer

    def kill(self) -> None:
        process.kill_group(self.proc)
        process.finished(self.proc)


class Pool:
    """Idle workers for one run; a busy render takes one or starts one."""

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def template(
        self,
        chart: Path,
        *,
        release: str,
        namespace: str,
        values: dict[str, Any],
        kube_version: str | None,
        api_versions: tuple[str, ...],
        timeout: float,
    ) -> tuple[Rendered, list[str]]:
        """(files, crds, kubeVersion constraint) of one `sdk.render` and the library's log
        lines; WorkerError on failure."""
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = _Worker()
        request = {
            "chart": str(chart),
            "release": release,
            "namespace": namespace,
            "values": values,
            "kube_version": kube_version,
            "api_versions": list(api_versions),
        }
        try:
            answer = worker.call(request, timeout)
        except BaseException:  # a timeout, a dead worker, Ctrl-C: never reuse it
            worker.kill()
            raise
        with self._lock:
            self._idle.append(worker)
        logs = [str(line) for line in answer.get("logs", [])]
        if "error" in answer:
            raise WorkerError(str(answer["error"]))
        files, crds, constraint = answer["result"]
        return (dict(files), list(crds), str(constraint)), logs

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


def _import_path() -> str:
    """The directory holding this harness package first, so the worker runs this code."""
    root = str(Path(__file__).resolve().parents[3])
    rest = os.environ.get("PYTHONPATH", "")
    return root + (os.pathsep + rest if rest else "")


def _send(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes], cap: int = 0) -> Any:
    """One value; past `cap` bytes (the output cap, core/limits.py) a WorkerError, and
    nothing of it read: the caller kills the worker."""
    header = _read(stream, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if cap and size > cap:
        raise WorkerError(
            f"the Helm SDK's render is over the {limits.human(cap)} output cap, killed "
            "(limits.output_bytes in harness.yaml)"
        )
    body = _read(stream, size)
    return None if body is None else pickle.loads(body)  # our own child's answer


def _read(stream: IO[bytes], size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def serve() -> None:
    """The worker's loop: one request in, one answer out, until stdin closes."""
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    with tempfile.TemporaryFile() as log:  # fds 1 and 2: the library's own output
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        _loop(requests, answers, log)


def _loop(requests: IO[bytes], answers: IO[bytes], log: IO[bytes]) -> None:
    from harness.flux.helm import sdk

    broken = sdk.probe()  # a library that ignores capabilities renders nothing here
    while True:
        request = _receive(requests)
        if request is None:
            return
        log.seek(0)
        log.truncate()
        answer: dict[str, Any] = {}
        try:
            if broken:
                raise sdk.SdkError(broken)
            rendered = sdk.render(
                Path(request["chart"]),
                release=request["release"],
                namespace=request["namespace"],
                values=request["values"],
                kube_version=request["kube_version"],
                api_versions=tuple(request["api_versions"]),
            )
            answer["result"] = (dict(rendered.files), list(rendered.crds), rendered.kube_version)
        except (sdk.SdkError, sdk.SdkMissing) as exc:
            answer["error"] = str(exc)
        except Exception as exc:  # reported as the target's error, never a dead worker
            answer["error"] = f"{type(exc).__name__}: {exc}"
        sys.stdout.flush()
        sys.stderr.flush()
        log.seek(0)
        text = log.read(_LOG_BYTES).decode("utf-8", "replace")
        answer["logs"] = [line for line in text.splitlines() if line.strip()]
        _send(answers, answer)


if __name__ == "__main__":
    serve()
