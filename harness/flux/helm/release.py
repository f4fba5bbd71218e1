"""A `helm.toolkit.fluxcd.io` HelmRelease as plain frozen data, named as helm-controller names it.

helm-controller (api/v2 `GetReleaseName`, `GetReleaseNamespace`, `GetStorageNamespace`;
internal/release `ShortenName`): the release name is `spec.releaseName`, else
`<targetNamespace>-<name>` when `spec.targetNamespace` is set, else the object name; a name
longer than 53 characters becomes its first 40 characters, `-` and the first 12 hex digits of
its sha256. The release namespace is `spec.targetNamespace`, else the object's namespace;
storage lives in `spec.storageNamespace`, else the object's namespace. A malformed spec is a
`SpecError` naming the field, so it fails its own target with one line.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.flux import spec as spec_
from harness.flux.api import ObjectRef
from harness.flux.spec import SpecError

HELM_GROUP = "helm.toolkit.fluxcd.io"
MAX_RELEASE_NAME = 53
SHORT_HASH = 12
CRD_POLICIES = ("Skip", "Create", "CreateReplace")
CHART_REF_KINDS = ("OCIRepository", "HelmChart", "ExternalArtifact")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_RELEASE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def is_helm_release(obj: Mapping[str, Any]) -> bool:
    api = str(obj.get("apiVersion") or "")
    return api.rpartition("/")[0] == HELM_GROUP and obj.get("kind") == "HelmRelease"


@dataclass(frozen=True)
class ChartSpec:
    """`spec.chart.spec` (or a HelmChart's spec): which chart, from which source."""

    chart: str
    version: str
    source: ObjectRef
    values_files: tuple[str, ...] = ()
    ignore_missing_values_files: bool = False


@dataclass(frozen=True)
class ValuesReference:
    """One `spec.valuesFrom` entry (fluxcd/pkg meta.ValuesReference)."""

    kind: str
    name: str
    values_key: str = "values.yaml"
    target_path: str = ""
    optional: bool = False

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class HelmRelease:
    name: str
    namespace: str
    release_name: str
    release_namespace: str
    storage_namespace: str
    chart: ChartSpec | None = None
    chart_ref: ObjectRef | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    values_from: tuple[ValuesReference, ...] = ()
    install_crds: str = "Create"
    upgrade_crds: str = "Skip"
    disable_hooks: bool = False
    test_enable: bool = False
    post_renderers: tuple[Mapping[str, Any], ...] = ()
    common_labels: Mapping[str, str] = field(default_factory=dict)
    common_annotations: Mapping[str, str] = field(default_factory=dict)
    suspend: bool = False

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def include_crds(self) -> bool:
        """crds/ are applied unless install.crds is Skip (the first install decides)."""
        return self.install_crds != "Skip"


def shorten_name(name: str) -> str:
    """helm-controller's ShortenName: names over 53 characters get a hash suffix."""
    if len(name) <= MAX_RELEASE_NAME:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
    return name[: MAX_RELEASE_NAME - (SHORT_HASH + 1)] + "-" + digest[:SHORT_HASH]


def parse_helm_release(obj: Mapping[str, Any], default_namespace: str = "default") -> HelmRelease:
    """The HelmRelease fields that change what it renders; SpecError names a bad field."""
    meta = spec_.mapping(obj, "metadata", "metadata")
    name = spec_.string(meta, "name", "metadata.name", required=True)
    namespace = spec_.string(meta, "namespace", "metadata.namespace") or default_namespace
    spec = spec_.mapping(obj, "spec", "spec")
    target_ns = spec_.string(spec, "targetNamespace", "spec.targetNamespace")
    storage_ns = spec_.string(spec, "storageNamespace", "spec.storageNamespace")
    for value, where in (
        (target_ns, "spec.targetNamespace"),
        (storage_ns, "spec.storageNamespace"),
    ):
        if value and (len(value) > 63 or not _DNS_LABEL.match(value)):
            raise SpecError(f"{where} {value!r} is not a valid namespace name")
    release = spec_.string(spec, "releaseName", "spec.releaseName")
    if release is None:
        release = f"{target_ns}-{name}" if target_ns else name
    release = shorten_name(release)
    if not _RELEASE_NAME.match(release):
        raise SpecError(f"release name {release!r} is not a valid Helm release name")
    chart, chart_ref = _chart(spec, namespace)
    values = spec.get("values") or {}
    if not isinstance(values, dict):
        raise SpecError("spec.values must be a mapping")
    install = spec_.mapping(spec, "install", "spec.install")
    upgrade = spec_.mapping(spec, "upgrade", "spec.upgrade")
    common = spec_.mapping(spec, "commonMetadata", "spec.commonMetadata")
    return HelmRelease(
        name=name,
        namespace=namespace,
        release_name=release,
        release_namespace=target_ns or namespace,
        storage_namespace=storage_ns or namespace,
        chart=chart,
        chart_ref=chart_ref,
        values=values,
        values_from=tuple(
            _values_ref(v, i) for i, v in enumerate(spec_.list_of(spec, "valuesFrom"))
        ),
        install_crds=_crds(install, "spec.install.crds", "Create"),
        upgrade_crds=_crds(upgrade, "spec.upgrade.crds", "Skip"),
        disable_hooks=bool(install.get("disableHooks")),
        test_enable=bool(spec_.mapping(spec, "test", "spec.test").get("enable")),
        post_renderers=tuple(
            _post_renderer(v, i) for i, v in enumerate(spec_.list_of(spec, "postRenderers"))
        ),
        common_labels=spec_.string_map(common.get("labels"), "spec.commonMetadata.labels"),
        common_annotations=spec_.string_map(
            common.get("annotations"), "spec.commonMetadata.annotations"
        ),
        suspend=bool(spec.get("suspend")),
    )


def parse_chart_spec(spec: Mapping[str, Any], namespace: str, where: str) -> ChartSpec:
    """A chart template spec (HelmRelease spec.chart.spec, or a HelmChart's spec)."""
    chart = spec_.string(spec, "chart", f"{where}.chart", required=True)
    version = spec_.string(spec, "version", f"{where}.version") or "*"
    source = spec_.mapping(spec, "sourceRef", f"{where}.sourceRef")
    kind = spec_.string(source, "kind", f"{where}.sourceRef.kind", required=True)
    if kind not in ("HelmRepository", "GitRepository", "Bucket"):
        raise SpecError(
            f"{where}.sourceRef.kind {kind!r} is not HelmRepository/GitRepository/Bucket"
        )
    ref = ObjectRef(
        kind,
        spec_.string(source, "namespace", f"{where}.sourceRef.namespace") or namespace,
        spec_.string(source, "name", f"{where}.sourceRef.name", required=True),
    )
    files = tuple(
        spec_.item(v, f"{where}.valuesFiles", non_empty=True)
        for v in spec_.list_of(spec, "valuesFiles")
    )
    if not files and spec.get("valuesFile"):
        files = (spec_.item(spec.get("valuesFile"), f"{where}.valuesFile", non_empty=True),)
    return ChartSpec(
        chart=chart,
        version=version,
        source=ref,
        values_files=files,
        ignore_missing_values_files=bool(spec.get("ignoreMissingValuesFiles")),
    )


def _chart(spec: Mapping[str, Any], namespace: str) -> tuple[ChartSpec | None, ObjectRef | None]:
    chart_ref = spec.get("chartRef")
    chart = spec.get("chart")
    if chart_ref and chart:
        raise SpecError("spec.chart and spec.chartRef are mutually exclusive")
    if chart_ref:
        if not isinstance(chart_ref, dict):
            raise SpecError("spec.chartRef must be a mapping")
        kind = spec_.string(chart_ref, "kind", "spec.chartRef.kind", required=True)
        if kind not in CHART_REF_KINDS:
            raise SpecError(
                f"spec.chartRef.kind {kind!r} is not OCIRepository, HelmChart or ExternalArtifact"
            )
        return None, ObjectRef(
            kind,
            spec_.string(chart_ref, "namespace", "spec.chartRef.namespace") or namespace,
            spec_.string(chart_ref, "name", "spec.chartRef.name", required=True),
        )
    if not chart:
        raise SpecError("spec.chart or spec.chartRef is required")
    if not isinstance(chart, dict):
        raise SpecError("spec.chart must be a mapping")
    inner = spec_.mapping(chart, "spec", "spec.chart.spec")
    return parse_chart_spec(inner, namespace, "spec.chart.spec"), None


def _values_ref(value: Any, index: int) -> ValuesReference:
    where = f"spec.valuesFrom[{index}]"
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a mapping")
    kind = spec_.string(value, "kind", f"{where}.kind", required=True)
    if kind not in ("ConfigMap", "Secret"):
        raise SpecError(f"{where}.kind must be ConfigMap or Secret")
    return ValuesReference(
        kind=kind,
        name=spec_.string(value, "name", f"{where}.name", required=True),
        values_key=spec_.string(value, "valuesKey", f"{where}.valuesKey") or "values.yaml",
        target_path=spec_.string(value, "targetPath", f"{where}.targetPath") or "",
        optional=bool(value.get("optional")),
    )


def _post_renderer(value: Any, index: int) -> Mapping[str, Any]:
    """A `postRenderers[].kustomize` block: its patches and images, kept as written."""
    where = f"spec.postRenderers[{index}]"
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a mapping")
    kustomize = value.get("kustomize") or {}
    if not isinstance(kustomize, dict):
        raise SpecError(f"{where}.kustomize must be a mapping")
    out: dict[str, Any] = {}
    for key in ("patches", "images"):
        items = kustomize.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            raise SpecError(f"{where}.kustomize.{key} must be a list")
        out[key] = items
    return out


def _crds(parent: Mapping[str, Any], where: str, default: str) -> str:
    value = parent.get("crds")
    if value is None:
        return default
    if value not in CRD_POLICIES:
        raise SpecError(f"{where} must be one of {', '.join(CRD_POLICIES)}")
    return str(value)
