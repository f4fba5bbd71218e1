"""Engines that template a chart, behind one interface: the Helm SDK in-process (default) or a
`helm` binary (`--helm-binary PATH` / `$HARNESS_HELM`), which runs `helm template`.

Both produce what `helm template --include-crds` prints, as parts: the chart's `crds/` files,
the release manifest in Helm's install order, then the hooks (test hooks only when the
HelmRelease enables tests). Neither contacts a cluster (`lookup` returns nothing); both are
given the cluster's `.Capabilities` (capabilities.py), the same on both: a binary as
`--kube-version` and `--api-versions`, the SDK as helm_render's `kube_version` and
`api_versions` options (native.py; helm-python-sdk's Python `Chart.render` cannot pass
them), which its workers check with a probe chart at start (worker.py).

The SDK renders each release once (`Chart.render`: every template's text, values validated
against the chart's schema once) and the manifest rules of Helm's install are applied here,
as Helm 4.2 (the SDK's) applies them (pkg/action/action.go renderResources, pkg/release/v1/
util SortManifests): files ending in `NOTES.txt` (any depth, subcharts too) are never
manifests; partials (a base name starting with `_`) and whitespace-only output are skipped;
each file is split into documents on `---`; a document with a `helm.sh/hook` annotation is
a hook, unless one of its events is unknown, when Helm drops it entirely; manifests and
hooks are each ordered by kind (`INSTALL_ORDER`, unknown kinds after, alphabetically),
stably, files visited in path order.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from harness.cache import replay
from harness.core import limits, process, scratch, yamlload
from harness.core import run as run_state
from harness.core.errors import RendererError
from harness.flux.helm import sdk, worker
from harness.flux.helm.capabilities import Capabilities, ConstraintError, satisfies

PartKind = Literal["crd", "manifest", "hook"]
HOOK = "helm.sh/hook"
MAX_ERROR = 600
_SOURCE = re.compile(r"^# Source: (.+)$", re.MULTILINE)
_STREAM_SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)
# Helm <= 4.2 (and 3.x) split a rendered file here: `---` after a newline, and the blank
# space around it (pkg/release/v1/util SplitManifests; 4.3 splits on `^---[ \t]*` lines)
_SPLIT = re.compile(r"(?:^|\s*\n)---\s*")
# a `crds/` file of the chart or of a (nested) subchart: `<chart>(/charts/<sub>)*/crds/...`
_DEBUG_HINT = "Use --debug flag to render out invalid YAML"  # `helm template`'s, not ours
_CRD_SOURCE = re.compile(r"^[^/]+(?:/charts/[^/]+)*/crds/")
# Helm 4's InstallOrder (pkg/release/v1/util/kind_sorter.go); the webhook kinds are Helm 4's
INSTALL_ORDER = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)
_RANK = {kind: i for i, kind in enumerate(INSTALL_ORDER)}
HOOK_EVENTS = frozenset(
    {
        "pre-install",
        "post-install",
        "pre-delete",
        "post-delete",
        "pre-upgrade",
        "post-upgrade",
        "pre-rollback",
        "post-rollback",
        "test",
        "test-success",
    }
)
TEST_EVENTS = frozenset({"test", "test-success"})


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
    capabilities: Capabilities = field(default_factory=Capabilities)


@dataclass(frozen=True)
class Part:
    kind: PartKind
    source: str
    obj: dict[str, Any]
    events: tuple[str, ...] = ()  # a hook's events, lower-cased

    @property
    def test(self) -> bool:
        return any(e in TEST_EVENTS for e in self.events)


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
    worker process per concurrent render (worker.py), where a hung chart can be stopped.
    One render per release (`sdk.render`), then Helm's manifest rules (`sort_manifests`)."""

    name = "helm-sdk"

    def __init__(self, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._pool = worker.Pool()
        owner = run_state.current()
        if owner is not None:  # idle workers end with the run that started them
            owner.on_exit(self._pool.close)

    def version(self) -> str:
        return sdk.version()

    def identity(self) -> str:
        return f"{self.name}\0{sdk.identity()}"

    def render(
        self, chart: Path, request: RenderRequest, logs: list[str] | None = None
    ) -> list[Part]:
        """The chart's parts; the library's log lines (timestamps dropped) go to `logs`."""
        caps = request.capabilities
        try:
            (files, crds, constraint), lines = self._pool.template(
                chart,
                release=request.release,
                namespace=request.namespace,
                values=request.values,
                kube_version=caps.kube_version,
                api_versions=caps.api_versions,
                timeout=self.timeout,
            )
        except worker.TimedOut as exc:
            replay.taint("a render timed out")
            raise EngineError(f"helm: {exc}") from None
        except worker.WorkerError as exc:
            raise EngineError(f"helm: {_line(str(exc))}") from None
        if logs is not None:
            logs.extend(_log_line(line) for line in lines)
        if constraint and not _compatible(caps.kube_version, constraint):
            raise EngineError(
                f"helm: chart requires kubeVersion: {constraint} which is incompatible with "
                f"Kubernetes {caps.kube_version}"
            )
        manifests, hooks = sort_manifests(files)
        parts: list[Part] = []
        if request.include_crds:
            for crd in crds:
                parts.extend(_parts("crd", crd["filename"], crd["data"]))
        parts.extend(manifests)
        if request.hooks:
            parts.extend(h for h in hooks if request.tests or not h.test)
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
        """Its version (not its path: CI runners share entries), `$HARNESS_HELM_ARGS` (appended
        to every `helm template`) and the `HELM_*` environment it reads."""
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
        caps = request.capabilities
        argv += ["--kube-version", caps.kube_version]
        if caps.api_versions:  # a string slice: comma-separated, appended to Helm's defaults
            argv += ["--api-versions", ",".join(caps.api_versions)]
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
            if _CRD_SOURCE.match(part.source):
                parts.append(Part("crd", part.source, part.obj))
            elif HOOK in _annotations(part.obj):
                parts.append(Part("hook", part.source, part.obj, _events(part.obj)))
            else:
                parts.append(part)
        return parts

    def _run(self, argv: list[str], chart: Path | None) -> str:
        try:  # its own process group: a timeout kills helm and the plugins it started
            bounds = limits.current()
            proc = process.run(
                argv, timeout=self.timeout, cap=bounds.output_bytes, memory=bounds.memory_bytes
            )
        except process.OutputTooLarge as exc:
            replay.taint("a renderer was killed")
            raise EngineError(
                f"helm template: {exc.stream} over the {limits.human(exc.cap)} output cap, "
                "killed (limits.output_bytes in harness.yaml)"
            ) from None
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
            if bounds.memory_bytes and b"fatal error: out of memory" in proc.stderr:
                replay.taint("a renderer ran out of memory")
                raise EngineError(  # Go's own line names bytes that vary between runs
                    f"helm template: out of memory under the {limits.human(bounds.memory_bytes)}"
                    " limit, killed (limits.memory_bytes in harness.yaml)"
                )
            err = proc.stderr.decode("utf-8", "replace").replace(_DEBUG_HINT, "").strip()
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
    for program in process.runs_through():
        replay.note_tool(program)
    return BinaryEngine(Path(found), timeout, extra)


def _compatible(kube_version: str, constraint: str) -> bool:
    """Helm's check of Chart.yaml `kubeVersion` (a constraint that does not parse fails it)."""
    try:
        return satisfies(kube_version, constraint)
    except ConstraintError:
        return False


def sort_manifests(files: Mapping[str, str]) -> tuple[list[Part], list[Part]]:
    """(manifests, hooks) of one render's files, by Helm's rules (module docstring)."""
    manifests: list[Part] = []
    hooks: list[Part] = []
    for source in sorted(files):
        text = files[source]
        if source.endswith("NOTES.txt") or source.rpartition("/")[2].startswith("_"):
            continue
        if not text.strip():
            continue
        for document in split_manifests(text):
            for obj in _documents(source, document):
                ann = _annotations(obj)
                if HOOK not in ann:
                    manifests.append(Part("manifest", source, obj))
                    continue
                events = _events(obj)
                if all(e in HOOK_EVENTS for e in events):
                    hooks.append(Part("hook", source, obj, events))
    return sorted(manifests, key=_kind_order), sorted(hooks, key=_kind_order)


def split_manifests(text: str) -> list[str]:
    """The documents of one rendered file, as Helm 4.2 splits them (empty ones dropped)."""
    return [d.lstrip() for d in _SPLIT.split(text.lstrip()) if d.strip()]


def _kind_order(part: Part) -> tuple[int, int, str]:
    kind = str(part.obj.get("kind") or "")
    rank = _RANK.get(kind)
    return (0, rank, "") if rank is not None else (1, 0, kind)


def _documents(source: str, text: str) -> list[dict[str, Any]]:
    """The object of one document (none for a comment-only one); Helm fails the render on
    a document that does not decode to an object."""
    try:
        loaded = yamlload.load_all(text)
    except yamlload.YAMLError as exc:
        raise EngineError(f"helm: YAML parse error on {source}: {_line(str(exc))}") from None
    out = []
    for obj in loaded:
        if obj is None:
            continue
        if not isinstance(obj, dict):
            raise EngineError(
                f"helm: YAML parse error on {source}: a {type(obj).__name__} where an object "
                "(apiVersion, kind, metadata) belongs"
            )
        if obj:
            out.append(obj)
    return out


def _events(obj: dict[str, Any]) -> tuple[str, ...]:
    return tuple(e.strip().lower() for e in str(_annotations(obj).get(HOOK, "")).split(","))


def _sourced_parts(stream: str, kind: PartKind) -> list[Part]:
    """Split a `helm template` stream; each document keeps its `# Source:` path, also one
    that starts with its own `---` (printed after the `# Source:` line, on its own)."""
    out: list[Part] = []
    source = ""
    for chunk in _STREAM_SEPARATOR.split(stream):
        match = _SOURCE.search(chunk)
        if match:
            source = match.group(1).strip()
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


_LOG_STAMP = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(\.\d+)? ")


def _log_line(line: str) -> str:
    """A library log line without Go's timestamp (which would make every run differ)."""
    return _LOG_STAMP.sub("", line.strip())


def _line(text: str) -> str:
    """Helm's multi-line errors (`file:line:col` / `executing ...` / cause) as one line."""
    joined = " ".join(part.strip() for part in text.strip().splitlines() if part.strip())
    return joined if len(joined) <= MAX_ERROR else joined[: MAX_ERROR - 3] + "..."
