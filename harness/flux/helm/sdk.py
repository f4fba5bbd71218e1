"""The only module that imports `helm_python` (the helm-python-sdk wheel, Helm's Go SDK
in-process); renders go through the wheel's library by its C ABI (native.py), which takes
the capabilities the wheel's Python API drops. It is an optional extra (`pip install
'flux-harness[helm]'`): without it, helm targets fail with one line saying how to get it, and
`--helm-binary` still works for rendering (charts are still fetched through the SDK).
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.core import scratch
from harness.core.errors import HarnessError
from harness.flux.helm import native

INSTALL_HINT = "install it with `pip install 'flux-harness[helm]'` (the helm-python-sdk wheel)"


class SdkError(Exception):
    """A Helm SDK call failed; the message is Helm's."""


class SdkMissing(HarnessError):
    """helm-python-sdk is not installed."""


def module() -> ModuleType:
    try:
        import helm_python
    except ImportError:
        raise SdkMissing(f"helm targets need the Helm SDK: {INSTALL_HINT}") from None
    except OSError as exc:  # the shared library failed to load
        raise SdkMissing(f"the Helm SDK cannot load its library: {exc}") from None
    return helm_python


def installed() -> bool:
    """Whether the wheel is there, without importing it (which loads the Go library)."""
    if "helm_python" in sys.modules:
        return sys.modules["helm_python"] is not None
    return _package_dir() is not None


def identity() -> str:
    """What decides the SDK's output, without loading its library: the distribution's name
    and version and the sha256 of every file of the package its RECORD lists (the library
    included; no machine-specific path or time, so CI runners share cache entries), else,
    with no RECORD, each file's size and mtime; `$HELM_C_LIB` (a library the user points
    the wheel at) adds that file's path, size and times. "" when the wheel is missing; a
    package found only by an import hook is loaded and asked."""
    return _identity(os.environ.get("HELM_C_LIB", ""))


# process-wide: the installed SDK (by $HELM_C_LIB), which no repo or run changes
@functools.cache
def _identity(override: str) -> str:
    package = _package_dir()
    if package is None:  # not a plain directory on sys.path: ask the loaded library itself
        try:
            return f"{version()} loaded from {module().__file__}"
        except SdkMissing:
            return ""
    parts = [_record(package) or _stat_listing(package)]
    if override:
        chosen = Path(override).expanduser().resolve()
        libs = sorted(chosen.iterdir()) if chosen.is_dir() else [chosen]
        parts.append(f"HELM_C_LIB {chosen}\n" + _stat_listing_of(libs, chosen.parent))
    return "\n".join(parts)


def _package_dir() -> Path | None:
    loaded = sys.modules.get("helm_python")
    if loaded is not None and getattr(loaded, "__file__", None):
        return Path(str(loaded.__file__)).parent
    for entry in sys.path:
        candidate = Path(entry or ".") / "helm_python"
        if (candidate / "__init__.py").is_file():
            return candidate
    return None


def _record(package: Path) -> str | None:
    """`helm-python-sdk <version>` and the package's lines of its dist-info RECORD."""
    try:
        infos = sorted(package.parent.glob("helm_python_sdk-*.dist-info"))
    except OSError:
        return None
    for info in infos:
        try:
            lines = (info / "RECORD").read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        hashed = sorted(r for r in lines if r.startswith("helm_python/") and ",sha256=" in r)
        if hashed:
            version = info.name.removeprefix("helm_python_sdk-").removesuffix(".dist-info")
            return "\n".join([f"helm-python-sdk {version}", *hashed])
    return None


def _stat_listing(package: Path) -> str:
    files = [p for p in sorted(package.rglob("*")) if "__pycache__" not in p.parts]
    return "helm-python-sdk (no RECORD)\n" + _stat_listing_of(files, package)


def _stat_listing_of(files: list[Path], base: Path) -> str:
    rows = []
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        if path.is_file():
            rows.append(f"{path.relative_to(base)}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")
    return "\n".join(rows)


def available() -> bool:
    try:
        module()
    except SdkMissing:
        return False
    return True


def version() -> str:
    helm = module()
    return f"helm-python-sdk {helm.__version__} (Helm {helm.helm_sdk_version()})"


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    helm = module()
    try:
        return fn(*args, **kwargs)
    except helm.HelmError as exc:
        raise SdkError(str(exc).strip() or type(exc).__name__) from None


def repo_index(url: str) -> dict[str, Any]:
    helm = module()
    index: dict[str, Any] = _call(helm.repo_index, url)
    return index


def pull(
    reference: str,
    into: Path,
    *,
    version: str | None = None,
    repo_url: str | None = None,
    plain_http: bool = False,
) -> Path:
    """Download one chart archive into the empty directory `into`; returns its path."""
    helm = module()
    into.mkdir(parents=True, exist_ok=True)
    before = set(into.glob("*.tgz"))
    _call(
        helm.pull,
        reference,
        destination=str(into),
        version=version,
        repo_url=repo_url,
        plain_http=plain_http,
    )
    after = sorted(set(into.glob("*.tgz")) - before)
    if len(after) != 1:
        raise SdkError(f"{reference}: the pull produced no chart archive")
    return after[0]


def oci_digest(reference: str, *, plain_http: bool) -> str:
    helm = module()
    with helm.RegistryClient(plain_http=plain_http) as client:
        described: dict[str, Any] = _call(client.resolve, reference)
    return str(described["digest"])


def digest(archive: Path) -> str:
    helm = module()
    return str(_call(helm.digest, str(archive)))


def archive_version(archive: Path) -> str:
    helm = module()
    with _call(helm.Chart.load, str(archive)) as chart:
        return str(chart.version)


def parse_set(expression: str, as_string: bool) -> dict[str, Any]:
    """Helm's `--set` parser (`--set-string` when `as_string`)."""
    helm = module()
    fn = helm.parse_set_string_values if as_string else helm.parse_set_string
    parsed: dict[str, Any] = _call(fn, expression)
    return parsed


def expand(archive: Path, into: Path) -> Path:
    """Unpack a chart archive; returns the chart directory."""
    helm = module()
    _call(helm.expand, str(into), str(archive))
    dirs = [p for p in into.iterdir() if p.is_dir()]
    if len(dirs) != 1:
        raise SdkError(f"{archive.name}: not a single chart directory")
    return dirs[0]


def package(chart_dir: Path, into: Path) -> Path:
    helm = module()
    return Path(_call(helm.package, str(chart_dir), destination=str(into)))


@dataclass(frozen=True)
class Rendered:
    """A chart's rendered files (template path -> text), its `crds/` files (`name`,
    `filename`, `data`) and its Chart.yaml `kubeVersion` constraint ("" when none)."""

    files: dict[str, str]
    crds: list[dict[str, str]]
    kube_version: str = ""


def render(
    chart_path: Path,
    *,
    release: str,
    namespace: str,
    values: dict[str, Any],
    kube_version: str | None = None,
    api_versions: tuple[str, ...] = (),
) -> Rendered:
    """One render of every template of the chart (each file's text, NOTES and partials'
    neighbours included, values validated against the chart's schema once) with the
    cluster's capabilities, and its `crds/` files, read after the render (which drops the
    CRDs of subcharts a condition disables). Through the library's C ABI (native.py): the
    wheel's `Chart.render` drops `kube_version` and `api_versions`. A fresh chart handle
    per call: a render processes the chart's dependencies on the handle itself."""
    options: dict[str, Any] = {
        "name": release,
        "namespace": namespace,
        "revision": 1,
        "is_install": True,
    }
    if kube_version:
        options["kube_version"] = kube_version
    if api_versions:
        options["api_versions"] = list(api_versions)
    try:
        out = native.render(chart_path, values, options)
    except native.NativeMissing as exc:
        raise SdkMissing(f"helm targets need the Helm SDK: {exc}; {INSTALL_HINT}") from None
    except native.NativeError as exc:
        raise SdkError(str(exc)) from None
    return Rendered(out.files, out.crds, str(out.metadata.get("kubeVersion") or ""))


def probe() -> str:
    """ "" when the library renders with the capabilities it is given (native.probe), else
    the one line every helm target fails with."""
    try:
        native.probe()
    except native.NativeMissing as exc:
        return f"helm targets need the Helm SDK: {exc}; {INSTALL_HINT}"
    except native.NativeError as exc:
        return str(exc)
    return ""


def scratch_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix=scratch.prefix("helm"))
