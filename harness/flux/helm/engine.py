"""Engines that template a chart, behind one interface: the Helm SDK in-process (default) or a
`helm` binary (`--helm-binary PATH` / `$HARNESS_HELM`), which runs `helm template`.

Both produce what `helm template --include-crds` prints, as parts: the chart's `crds/` files,
the release manifest in Helm's install order, then the hooks (test hooks only when the
HelmRelease enables tests). Neither contacts a cluster: `.Capabilities` are Helm's
client-only defaults and `lookup` returns nothing. The SDK cannot set `--kube-version` or
`--api-versions`; a binary gets them through `$HARNESS_HELM_ARGS`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from harness.cache import replay
from harness.core import documents, process, scratch, yamlload
from harness.core.errors import RendererError
from harness.flux.helm import sdk, worker

PartKind = Literal["crd", "manifest", "hook"]
HOOK = "helm.sh/hook"
MAX_ERROR = 600
_SOURCE = re.compile(r"^# Source: (.+)$", re.MULTILINE)


class EngineError(Exception):
    """The chart did not render; the message is the target's one-line error."""


@dataclass(frozen=True)
class RenderRequest:
    release: str
    namespace: str
    values: dict[str, Any]
    include_crds: bool = True
    hooks: bool = True
    tests: bool = False


@dataclass(frozen=True)
class Part:
    kind: PartKind
    source: str
    obj: dict[str, Any]


class Engine(Protocol):
    name: str

    def version(self) -> str: ...

    def identity(self) -> str:
        """What decides its output, for the render cache's key; loads no library."""
        ...

    def render(
        self, chart: Path, request: RenderRequest, logs: list[str] | None = None
    ) -> list[Part]: ...


class SdkEngine:
    """Helm's Go SDK through the helm-python-sdk wheel: no process per release, but a
    worker process per concurrent render (worker.py), where a hung chart can be stopped."""

    name = "helm-sdk"

    def __init__(self, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._pool = worker.Pool()

    def version(self) -> str:
        return sdk.version()

    def identity(self) -> str:
        return f"{self.name}\0{sdk.identity()}"

    def render(
        self, chart: Path, request: RenderRequest, logs: list[str] | None = None
    ) -> list[Part]:
        """The chart's parts; the library's log lines (timestamps dropped) go to `logs`."""
        try:
            (manifest, crds, templates), lines = self._pool.template(
                chart,
                release=request.release,
                namespace=request.namespace,
                values=request.values,
                timeout=self.timeout,
            )
        except worker.TimedOut as exc:
            replay.taint("a render timed out")
            raise EngineError(f"helm: {exc}") from None
        except worker.WorkerError as exc:
            raise EngineError(f"helm: {_line(str(exc))}") from None
        if logs is not None:
            logs.extend(_log_line(line) for line in lines)
        parts: list[Part] = []
        if request.include_crds:
            for crd in crds:
                parts.extend(_parts("crd", crd["filename"], crd["data"]))
        parts.extend(_sourced_parts(manifest, "manifest"))
        if request.hooks:
            for source in sorted(templates):
                for part in _parts("manifest", source, templates[source]):
                    if _is_hook(part.obj) and (request.tests or not _is_test(part.obj)):
                        parts.append(Part("hook", part.source, part.obj))
        return parts


class BinaryEngine:
    """A real `helm` binary: one `helm template` process per release."""

    name = "helm-binary"

    def __init__(self, binary: Path, timeout: float, extra: tuple[str, ...] = ()) -> None:
        self.binary = binary
        self.timeout = timeout
        self.extra = extra
        self._version: str | None = None

    def version(self) -> str:
        if self._version is None:
            out = self._run([str(self.binary), "version", "--short"], None)
            self._version = f"helm {out.strip()}"
        return self._version

    def assume_version(self, version: str) -> None:
        """A version an earlier run asked this very binary (flux/helm/cached.py)."""
        self._version = version

    def identity(self) -> str:
        """Its version (not its path: CI runners share entries), `$HARNESS_HELM_ARGS` (e.g.
        `--kube-version`, `--api-versions`) and the `HELM_*` environment it reads."""
        env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("HELM_"))
        return "\0".join([self.name, self.version(), shlex.join(self.extra), *env])

    def argv(self, chart: Path, request: RenderRequest, values_file: Path) -> list[str]:
        argv = [str(self.binary), "template", request.release, str(chart)]
        argv += ["--namespace", request.namespace, "--values", str(values_file)]
        argv.append("--include-crds" if request.include_crds else "--skip-crds")
        if not request.hooks:
            argv.append("--no-hooks")
        if not request.tests:
            argv.append("--skip-tests")
        return [*argv, *self.extra]

    def render(
        self, chart: Path, request: RenderRequest, logs: list[str] | None = None
    ) -> list[Part]:
        with tempfile.TemporaryDirectory(prefix=scratch.prefix("helm")) as tmp:
            values_file = Path(tmp) / "values.json"
            values_file.write_text(json.dumps(request.values), encoding="utf-8")
            out = self._run(self.argv(chart, request, values_file), chart)
        parts = []
        for part in _sourced_parts(out, "manifest"):
            if "/crds/" in f"/{part.source}":
                parts.append(Part("crd", part.source, part.obj))
            elif _is_hook(part.obj):
                parts.append(Part("hook", part.source, part.obj))
            else:
                parts.append(part)
        return parts

    def _run(self, argv: list[str], chart: Path | None) -> str:
        try:  # its own process group: a timeout kills helm and the plugins it started
            proc = process.run(argv, timeout=self.timeout)
        except FileNotFoundError:
            raise RendererError(f"helm binary not found: {self.binary}") from None
        except subprocess.TimeoutExpired:
            replay.taint("a render timed out")
            raise EngineError(f"helm template timed out after {self.timeout:g}s") from None
        except OSError as exc:
            replay.taint("a renderer could not start")
            raise RendererError(f"cannot run helm binary {self.binary}: {exc.strerror}") from None
        if proc.returncode != 0:
            if proc.returncode < 0:
                replay.taint("a renderer was killed")
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise EngineError(f"helm: {_line(err) or f'exited with code {proc.returncode}'}")
        return proc.stdout.decode("utf-8", "replace")


def resolve(binary: str | None, timeout: float) -> Engine:
    """`--helm-binary`, else `$HARNESS_HELM`, else the in-process SDK."""
    chosen = binary or os.environ.get("HARNESS_HELM") or None
    if chosen is None:
        if not sdk.installed():  # fails now, with the install hint; the library itself is
            sdk.module()  # loaded by the first render, never when the cache answers them all
        return SdkEngine(timeout)
    found = shutil.which(chosen) if os.sep not in chosen else chosen
    if found is None or not Path(found).is_file():
        origin = "--helm-binary" if binary else "$HARNESS_HELM"
        raise RendererError(f"{origin} {chosen}: no such executable")
    extra = tuple(shlex.split(os.environ.get("HARNESS_HELM_ARGS", "")))
    replay.note_tool(found)
    return BinaryEngine(Path(found), timeout, extra)


def _sourced_parts(stream: str, kind: PartKind) -> list[Part]:
    """Split a `helm template` stream; each document keeps its `# Source:` path."""
    out: list[Part] = []
    for chunk in documents.split_stream(stream):
        match = _SOURCE.search(chunk)
        source = match.group(1).strip() if match else ""
        out.extend(_parts(kind, source, chunk))
    return out


def _parts(kind: PartKind, source: str, text: str) -> list[Part]:
    try:
        loaded = yamlload.load_all(text)
    except yamlload.YAMLError as exc:
        raise EngineError(
            f"helm: {source}: rendered YAML does not parse: {_line(str(exc))}"
        ) from None
    return [Part(kind, source, obj) for obj in loaded if isinstance(obj, dict) and obj]


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    return ann if isinstance(ann, dict) else {}


def _is_hook(obj: dict[str, Any]) -> bool:
    return HOOK in _annotations(obj)


def _is_test(obj: dict[str, Any]) -> bool:
    hooks = str(_annotations(obj).get(HOOK, ""))
    return any(h.strip() in ("test", "test-success", "test-failure") for h in hooks.split(","))


_LOG_STAMP = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(\.\d+)? ")


def _log_line(line: str) -> str:
    """A library log line without Go's timestamp (which would make every run differ)."""
    return _LOG_STAMP.sub("", line.strip())


def _line(text: str) -> str:
    """Helm's multi-line errors (`file:line:col` / `executing ...` / cause) as one line."""
    joined = " ".join(part.strip() for part in text.strip().splitlines() if part.strip())
    return joined if len(joined) <= MAX_ERROR else joined[: MAX_ERROR - 3] + "..."
