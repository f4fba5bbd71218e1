"""The only module that imports `helm_python` (the helm-python-sdk wheel, Helm's Go SDK
in-process). It is an optional extra (`pip install 'harness[helm]'`): without it, helm
targets fail with one line saying how to get it, and `--helm-binary` still works for
rendering (charts are still fetched through the SDK).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.errors import HarnessError

NO_CLUSTER = "https://127.0.0.1:1"
INSTALL_HINT = "install it with `pip install 'harness[helm]'` (the helm-python-sdk wheel)"


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


def template(
    chart_path: Path,
    *,
    release: str,
    namespace: str,
    values: dict[str, Any],
) -> tuple[str, list[dict[str, str]], dict[str, str]]:
    """(manifest, crds, templates): `helm template`'s three parts, in-process.

    The manifest is Helm's own client-only dry-run install (what `helm template` runs:
    ordered by kind, `# Source:` headers, hooks left out); crds are the chart's `crds/`
    files; templates are every rendered template, which is where hooks are found.
    """
    helm = module()
    with _call(helm.Chart.load, str(chart_path)) as chart:
        # never the user's cluster: a dead endpoint; a client-only dry run contacts nothing
        config = helm.Config(
            storage_driver="memory", namespace=namespace, kube_apiserver=NO_CLUSTER
        )
        try:
            rel: dict[str, Any] = _call(
                config.install, chart, release, values, namespace=namespace, dry_run="client"
            )
            rendered: dict[str, str] = _call(
                chart.render,
                values,
                name=release,
                namespace=namespace,
                revision=1,
                is_install=True,
            )
            crds: list[dict[str, str]] = _call(lambda: chart.crds)
        finally:
            config.close()
    return str(rel.get("manifest") or ""), crds, rendered


def scratch_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="harness-helm-")
