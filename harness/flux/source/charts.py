"""Which chart a HelmRelease installs: a directory of a mapped source, an HTTP chart
repository, or an OCI reference.

`spec.chart.spec.sourceRef` names a HelmRepository (HTTP, or `type: oci`), a GitRepository
or a Bucket (a chart directory; the source maps to a directory through harness.yaml
`sources:`, the cluster's bootstrap GitRepository is the repo itself); `spec.chartRef` names
an OCIRepository (the chart is the artifact), a HelmChart (whose spec is a chart spec) or
an ExternalArtifact (source-watcher's, built by the Flux render like a Kustomization's).
Source objects come from the same cluster's rendered Flux output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.flux.api import ObjectRef, secure_join
from harness.flux.helm.release import ChartSpec, HelmRelease, parse_chart_spec
from harness.flux.spec import SpecError

SOURCE_KINDS = ("HelmRepository", "GitRepository", "Bucket", "OCIRepository", "HelmChart")
SourceRoot = Callable[[ObjectRef], Path | None]


class SourceError(Exception):
    """The chart cannot be located; the message is the target's one-line error."""


@dataclass(frozen=True)
class LocalChart:
    """A chart directory inside a mapped source; valuesFiles resolve against the source root."""

    path: Path
    root: Path
    source: str


@dataclass(frozen=True)
class RepoChart:
    """A chart of an HTTP(S) repository; `version` may be a semver constraint."""

    url: str
    chart: str
    version: str
    source: str


@dataclass(frozen=True)
class OciChart:
    """`oci://host/path/chart` at a tag (or semver constraint) or a digest."""

    url: str
    version: str
    digest: str
    plain_http: bool
    source: str

    @property
    def chart(self) -> str:
        return self.url.rstrip("/").rpartition("/")[2]


ChartLocation = LocalChart | RepoChart | OciChart


@dataclass(frozen=True)
class ChartRequest:
    location: ChartLocation
    values_files: tuple[str, ...] = ()
    ignore_missing_values_files: bool = False


def locate(
    release: HelmRelease,
    objects: Mapping[ObjectRef, Mapping[str, Any]],
    source_root: SourceRoot,
) -> ChartRequest:
    """Where the release's chart comes from; SourceError names the missing piece."""
    if release.chart_ref is not None:
        ref = release.chart_ref
        if ref.kind == "ExternalArtifact":  # source-watcher's object, no Kustomization's
            return ChartRequest(_external_artifact(ref, source_root))
        obj = _get(objects, ref, "spec.chartRef")
        spec = _spec(obj, ref)
        if ref.kind == "OCIRepository":
            return ChartRequest(_oci_repository(ref, spec))
        try:
            chart = parse_chart_spec(spec, ref.namespace, f"{ref} spec")
        except SpecError as exc:
            raise SourceError(str(exc)) from None
        return _from_chart_spec(chart, objects, source_root)
    assert release.chart is not None
    return _from_chart_spec(release.chart, objects, source_root)


def _from_chart_spec(
    chart: ChartSpec, objects: Mapping[ObjectRef, Mapping[str, Any]], source_root: SourceRoot
) -> ChartRequest:
    ref = chart.source
    files = chart.values_files
    ignore = chart.ignore_missing_values_files
    if ref.kind in ("GitRepository", "Bucket"):
        root = source_root(ref)
        if root is None:
            raise SourceError(f"unmapped source {ref} (map it in harness.yaml `sources:`)")
        path = secure_join(root, chart.chart)
        if not (path / "Chart.yaml").is_file():
            raise SourceError(f"chart {chart.chart!r} of {ref}: no Chart.yaml in {path}")
        return ChartRequest(LocalChart(path, root, f"{ref} {chart.chart}"), files, ignore)
    obj = _get(objects, ref, "spec.chart.spec.sourceRef")
    spec = _spec(obj, ref)
    url = spec.get("url")
    if not isinstance(url, str) or not url:
        raise SourceError(f"{ref}: spec.url is required")
    if spec.get("type") == "oci" or url.startswith("oci://"):
        if not url.startswith("oci://"):
            raise SourceError(f"{ref}: type oci needs an oci:// url, not {url!r}")
        base = url.rstrip("/")
        location: ChartLocation = OciChart(
            f"{base}/{chart.chart}", chart.version, "", bool(spec.get("insecure")), str(ref)
        )
        return ChartRequest(location, files, ignore)
    if not url.startswith(("http://", "https://")):
        raise SourceError(f"{ref}: spec.url {url!r} is neither http(s):// nor oci://")
    return ChartRequest(
        RepoChart(url.rstrip("/"), chart.chart, chart.version, str(ref)), files, ignore
    )


def _external_artifact(ref: ObjectRef, source_root: SourceRoot) -> LocalChart:
    """The chart of an ExternalArtifact (source-watcher's): helm-controller loads the
    artifact as a chart archive, whose one top directory is the chart (Helm's loader drops
    each entry's first path segment); an artifact with Chart.yaml at its root is taken as
    the chart itself."""
    root = source_root(ref)
    if root is None:
        raise SourceError(f"spec.chartRef {ref}: no ArtifactGenerator of this cluster declares it")
    if (root / "Chart.yaml").is_file():
        return LocalChart(root, root, str(ref))
    tops = sorted(p for p in root.iterdir()) if root.is_dir() else []
    charts = [p for p in tops if p.is_dir() and (p / "Chart.yaml").is_file()]
    if len(charts) != 1 or len(tops) != 1:
        found = ", ".join(p.name for p in tops) or "nothing"
        raise SourceError(
            f"spec.chartRef {ref}: not a chart archive (one top directory holding Chart.yaml),"
            f" the artifact holds {found}"
        )
    return LocalChart(charts[0], root, f"{ref} {charts[0].name}")


def _oci_repository(ref: ObjectRef, spec: Mapping[str, Any]) -> OciChart:
    url = spec.get("url")
    if not isinstance(url, str) or not url.startswith("oci://"):
        raise SourceError(f"{ref}: spec.url must be an oci:// url")
    pin = spec.get("ref") or {}
    if not isinstance(pin, dict):
        raise SourceError(f"{ref}: spec.ref must be a mapping")
    digest = str(pin.get("digest") or "")
    version = str(pin.get("semver") or pin.get("tag") or ("" if digest else "latest"))
    return OciChart(url.rstrip("/"), version, digest, bool(spec.get("insecure")), str(ref))


def _get(
    objects: Mapping[ObjectRef, Mapping[str, Any]], ref: ObjectRef, where: str
) -> Mapping[str, Any]:
    obj = objects.get(ref)
    if obj is None:
        raise SourceError(f"{where} {ref}: not rendered by any Kustomization of this cluster")
    return obj


def _spec(obj: Mapping[str, Any], ref: ObjectRef) -> Mapping[str, Any]:
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        raise SourceError(f"{ref}: spec must be a mapping")
    return spec
