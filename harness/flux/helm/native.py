"""The helm-c library's render call, bound here through ctypes: the one way to give the
in-process SDK a cluster's `.Capabilities`.

helm-python-sdk 0.2.2 ships Helm's Go SDK as a C shared library (`helm_python/lib/
libhelm_c.so.0.2.2`, helm-c-sdk 0.2.2 built on Helm v4.2.3). Its exported
`int32_t helm_render(helm_handle_t chart, const char *values_json, const char *opts_json,
char **out, char **error_out)` takes `kube_version` and `api_versions` in `opts_json`; the
wheel's Python `Chart.render` never passes them. So this module binds the public C ABI
itself, as helm-c's header documents it: `helm_chart_load` (path -> handle),
`helm_render`, `helm_chart_crds`, `helm_chart_metadata` (JSON out-strings),
`helm_chart_free`; every library-owned string is copied, then released with
`helm_free_string`; status 0 is success, any other code comes with `error_out`.

The library is the one the wheel itself loads (`$HELM_C_LIB`, a file or a directory, else
the wheel's own `lib/`), by absolute path, so one process never holds two Go runtimes. Its
version must be `PINNED` (pyproject pins the wheel to it), and `probe()` renders a one-file
chart that branches on both capabilities: a library that ignores them fails every helm
target with one line (`ProbeFailed`), never a silent render with Helm's defaults.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PINNED = "0.2.2"  # helm-c-sdk, as in helm-python-sdk 0.2.2: the ABI verified here
_HANDLE = ctypes.c_uint64
_STR_OUT = ctypes.POINTER(ctypes.c_void_p)  # char**: a void pointer, so it can be freed
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "helm_c_version": (ctypes.c_void_p, []),
    "helm_free_string": (None, [ctypes.c_void_p]),
    "helm_chart_load": (ctypes.c_int32, [ctypes.c_char_p, ctypes.POINTER(_HANDLE), _STR_OUT]),
    "helm_chart_free": (ctypes.c_int32, [_HANDLE, _STR_OUT]),
    "helm_chart_crds": (ctypes.c_int32, [_HANDLE, _STR_OUT, _STR_OUT]),
    "helm_chart_metadata": (ctypes.c_int32, [_HANDLE, _STR_OUT, _STR_OUT]),
    "helm_render": (
        ctypes.c_int32,
        [_HANDLE, ctypes.c_char_p, ctypes.c_char_p, _STR_OUT, _STR_OUT],
    ),
}
PROBE_KUBE = "v1.97.3"
PROBE_API = "probe.harness.dev/v1/Probe"
_PROBE_TEMPLATE = (
    "{{ .Capabilities.KubeVersion.Version }} "
    f'{{{{ if .Capabilities.APIVersions.Has "{PROBE_API}" }}}}has{{{{ else }}}}lacks{{{{ end }}}}'
)


class NativeError(Exception):
    """A helm-c call failed; the message is the library's."""


class NativeMissing(NativeError):
    """No helm-c library of the pinned version to load."""


class ProbeFailed(NativeError):
    """The library rendered the probe chart without the capabilities it was given."""


@dataclass(frozen=True)
class NativeRender:
    """One render: template path -> text, the chart's `crds/` files, its Chart.yaml."""

    files: dict[str, str]
    crds: list[dict[str, str]]
    metadata: dict[str, Any]


def library_path() -> Path:
    """The helm-c library the wheel loads: `$HELM_C_LIB` (a file, or a directory holding
    it), else the wheel's `lib/`; NativeMissing when neither holds one."""
    names = _names()
    candidates: list[Path] = []
    override = os.environ.get("HELM_C_LIB")
    if override:
        chosen = Path(override).expanduser().resolve()
        candidates += [chosen / n for n in names] if chosen.is_dir() else [chosen]
    spec = importlib.util.find_spec("helm_python")  # finds, never imports, the package
    if spec is not None and spec.origin:
        candidates += [Path(spec.origin).resolve().parent / "lib" / n for n in names]
    for path in candidates:
        if path.is_file():
            return path
    raise NativeMissing("the helm-c library of helm-python-sdk is not installed")


def _names() -> list[str]:
    if sys.platform == "darwin":
        return [f"libhelm_c.{PINNED}.dylib", "libhelm_c.0.dylib", "libhelm_c.dylib"]
    if sys.platform == "win32":
        return [f"libhelm_c-{PINNED}.dll", "libhelm_c.dll", "helm_c.dll"]
    return [f"libhelm_c.so.{PINNED}", "libhelm_c.so.0", "libhelm_c.so"]


# process-wide: the loaded library, which no run changes ($HELM_C_LIB decides the path)
@functools.cache
def _library(path: str) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise NativeMissing(f"cannot load the helm-c library {path}: {exc}") from None
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            func = getattr(lib, name)
        except AttributeError:
            raise NativeMissing(f"{path} does not export {name}: not a helm-c library") from None
        func.restype = restype
        func.argtypes = argtypes
    version = _take(lib, lib.helm_c_version()) or "unknown"
    if version != PINNED:
        raise NativeMissing(
            f"helm-c library {version} at {path}: harness binds the C ABI of {PINNED} "
            f"(install helm-python-sdk=={PINNED}, or use --helm-binary)"
        )
    return lib


def library() -> ctypes.CDLL:
    return _library(str(library_path()))


def _take(lib: ctypes.CDLL, pointer: int | None) -> str | None:
    """Copy a library-owned string, then free it (exactly once)."""
    if not pointer:
        return None
    try:
        return ctypes.string_at(pointer).decode("utf-8", "replace")
    finally:
        lib.helm_free_string(ctypes.c_void_p(pointer))


def _call(lib: ctypes.CDLL, name: str, *args: Any) -> str:
    """One call with trailing (out, error_out) strings; its `out`, or NativeError."""
    out, err = ctypes.c_void_p(), ctypes.c_void_p()
    code = getattr(lib, name)(*args, ctypes.byref(out), ctypes.byref(err))
    detail, result = _take(lib, err.value), _take(lib, out.value)
    if code != 0:
        raise NativeError((detail or "").strip() or f"{name} failed with code {code}")
    return result or ""


def render(chart: Path, values: dict[str, Any], options: dict[str, Any]) -> NativeRender:
    """Load the chart (a directory or an archive), render it with `options` (helm_render's
    opts_json: name, namespace, revision, is_install, kube_version, api_versions), read
    its crds and metadata after the render, free the handle."""
    lib = library()
    handle, err = _HANDLE(), ctypes.c_void_p()
    code = lib.helm_chart_load(os.fsencode(chart), ctypes.byref(handle), ctypes.byref(err))
    detail = _take(lib, err.value)
    if code != 0:
        raise NativeError((detail or "").strip() or f"cannot load chart {chart}")
    try:
        text = _call(
            lib,
            "helm_render",
            handle,
            json.dumps(values).encode(),
            json.dumps(options).encode(),
        )
        files: dict[str, str] = json.loads(text or "{}")
        crds: list[dict[str, str]] = json.loads(_call(lib, "helm_chart_crds", handle) or "[]")
        metadata: dict[str, Any] = json.loads(_call(lib, "helm_chart_metadata", handle) or "{}")
    finally:
        free_err = ctypes.c_void_p()
        lib.helm_chart_free(handle, ctypes.byref(free_err))
        _take(lib, free_err.value)
    return NativeRender(files, crds or [], metadata or {})


PROBE_FAILED = (
    "the Helm SDK's C ABI changed: its render ignored the kube_version/api_versions it was "
    "given (start-up probe); pin helm-python-sdk==" + PINNED + " or use --helm-binary"
)


def probe() -> None:
    """Render a one-template chart that prints the KubeVersion it sees and whether one API
    version is served, given both: ProbeFailed unless the output follows them."""
    with tempfile.TemporaryDirectory(prefix="harness-helm-probe-") as tmp:
        chart = Path(tmp) / "probe"
        (chart / "templates").mkdir(parents=True)
        (chart / "Chart.yaml").write_text("apiVersion: v2\nname: probe\nversion: 0.0.0\n")
        (chart / "templates" / "caps.txt").write_text(_PROBE_TEMPLATE)
        options = {"kube_version": PROBE_KUBE, "api_versions": [PROBE_API]}
        try:
            given = render(chart, {}, options).files.get("probe/templates/caps.txt")
            bare = render(chart, {}, {}).files.get("probe/templates/caps.txt")
        except NativeError as exc:
            raise ProbeFailed(f"{PROBE_FAILED} ({exc})") from None
    if given != f"{PROBE_KUBE} has" or bare is None or bare.endswith(" has"):
        raise ProbeFailed(PROBE_FAILED)
