"""Flux objects as plain frozen data, parsed from rendered Kubernetes objects.

Only the fields harness acts on are kept; the rest of a Kustomization's spec (interval,
wait, timeout, ...) does not change what it renders. A malformed spec is a `SpecError`
whose message names the field, so it can fail its own target with one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.model import ObjectRef as ObjectRef
from harness.flux import spec as spec_
from harness.flux.spec import SpecError

KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
SOURCE_GROUP = "source.toolkit.fluxcd.io"
# the versions kustomize-controller serves for Kustomization (v1; the deprecated betas)
KUSTOMIZATION_VERSIONS = ("v1", "v1beta2", "v1beta1")
SOURCE_KINDS = ("GitRepository", "OCIRepository", "Bucket")
SUBSTITUTE_KEY = f"{KUSTOMIZE_GROUP}/substitute"
DISABLED = "disabled"
# spec.buildMetadata: the CRD's enum; the API server rejects anything else
BUILD_METADATA_OPTIONS = ("originAnnotations", "transformerAnnotations")


@dataclass(frozen=True)
class SubstituteFrom:
    kind: str
    name: str
    optional: bool = False

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class PostBuild:
    """`spec.postBuild`: inline variables win over every `substituteFrom` source."""

    substitute: Mapping[str, str] = field(default_factory=dict)
    substitute_from: tuple[SubstituteFrom, ...] = ()
    always: bool = False


@dataclass(frozen=True)
class Patch:
    patch: str
    target: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Image:
    name: str
    new_name: str = ""
    new_tag: str = ""
    digest: str = ""


@dataclass(frozen=True)
class CommonMetadata:
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FluxKustomization:
    """A `kustomize.toolkit.fluxcd.io` Kustomization, as far as rendering is concerned."""

    name: str
    namespace: str
    path: str
    source: ObjectRef
    target_namespace: str | None = None
    name_prefix: str | None = None
    name_suffix: str | None = None
    patches: tuple[Patch, ...] = ()
    images: tuple[Image, ...] = ()
    components: tuple[str, ...] = ()
    ignore_missing_components: bool = False
    post_build: PostBuild | None = None
    depends_on: tuple[tuple[str, str], ...] = ()
    common_metadata: CommonMetadata | None = None
    prune: bool = False
    suspend: bool = False
    build_metadata: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def has_overrides(self) -> bool:
        """Whether Flux's generator edits the kustomization file before building."""
        return bool(
            self.target_namespace is not None
            or self.name_prefix is not None
            or self.name_suffix is not None
            or self.patches
            or self.images
            or self.components
            or self.build_metadata
        )


def api_group(obj: Mapping[str, Any]) -> str:
    return str(obj.get("apiVersion") or "").rpartition("/")[0]


def is_flux_kustomization(obj: Mapping[str, Any]) -> bool:
    return api_group(obj) == KUSTOMIZE_GROUP and obj.get("kind") == "Kustomization"


def is_source(obj: Mapping[str, Any]) -> bool:
    return api_group(obj) == SOURCE_GROUP and obj.get("kind") in SOURCE_KINDS


def object_ref(obj: Mapping[str, Any], default_namespace: str = "") -> ObjectRef:
    meta = obj.get("metadata") or {}
    return ObjectRef(
        kind=str(obj.get("kind") or ""),
        namespace=str(meta.get("namespace") or default_namespace),
        name=str(meta.get("name") or ""),
    )


def substitution_disabled(obj: Mapping[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return DISABLED in (labels.get(SUBSTITUTE_KEY), annotations.get(SUBSTITUTE_KEY))


def parse_kustomization(
    obj: Mapping[str, Any], default_namespace: str = "default"
) -> FluxKustomization:
    """The render-relevant spec of a Flux Kustomization object; SpecError names a bad field,
    or a version kustomize-controller does not serve (the API server rejects such an object,
    so Flux never builds it)."""
    version = str(obj.get("apiVersion") or "").rpartition("/")[2]
    if version not in KUSTOMIZATION_VERSIONS:
        raise SpecError(
            f"apiVersion {obj.get('apiVersion')} is not served by kustomize-controller "
            f"({', '.join(KUSTOMIZE_GROUP + '/' + v for v in KUSTOMIZATION_VERSIONS)}): "
            "the API server rejects the object and Flux never builds it"
        )
    ref = object_ref(obj, default_namespace)
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise SpecError("spec must be a mapping")
    source = spec_.mapping(spec, "sourceRef", "spec.sourceRef")
    kind = spec_.scalar(source, "kind", "spec.sourceRef.kind") or ""
    source_name = spec_.scalar(source, "name", "spec.sourceRef.name") or ""
    if not kind or not source_name:
        raise SpecError("spec.sourceRef needs kind and name")
    source_ns = spec_.scalar(source, "namespace", "spec.sourceRef.namespace") or ref.namespace
    return FluxKustomization(
        name=ref.name,
        namespace=ref.namespace,
        path=spec_.scalar(spec, "path", "spec.path") or "",
        source=ObjectRef(kind, source_ns, source_name),
        target_namespace=spec_.scalar(spec, "targetNamespace", "spec.targetNamespace"),
        name_prefix=spec_.scalar(spec, "namePrefix", "spec.namePrefix"),
        name_suffix=spec_.scalar(spec, "nameSuffix", "spec.nameSuffix"),
        patches=tuple(_patch(p, i) for i, p in enumerate(spec_.list_of(spec, "patches"))),
        images=tuple(_image(p, i) for i, p in enumerate(spec_.list_of(spec, "images"))),
        components=tuple(
            spec_.item(c, f"spec.components[{i}]")
            for i, c in enumerate(spec_.list_of(spec, "components"))
        ),
        ignore_missing_components=bool(spec.get("ignoreMissingComponents", False)),
        post_build=_post_build(spec.get("postBuild")),
        depends_on=tuple(
            _depends(d, i, ref.namespace) for i, d in enumerate(spec_.list_of(spec, "dependsOn"))
        ),
        common_metadata=_common_metadata(spec.get("commonMetadata")),
        prune=bool(spec.get("prune", False)),
        suspend=bool(spec.get("suspend", False)),
        build_metadata=_build_metadata(spec),
    )


def _patch(value: Any, index: int) -> Patch:
    where = f"spec.patches[{index}]"
    if not isinstance(value, dict) or not isinstance(value.get("patch"), str):
        raise SpecError(f"{where} needs a patch string")
    target = value.get("target")
    if target is not None and not isinstance(target, dict):
        raise SpecError(f"{where}.target must be a mapping")
    return Patch(
        patch=value["patch"],
        target=None if target is None else spec_.string_map(target, f"{where}.target"),
    )


def _image(value: Any, index: int) -> Image:
    where = f"spec.images[{index}]"
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise SpecError(f"{where} needs a name")
    return Image(
        name=value["name"],
        new_name=str(value.get("newName") or ""),
        new_tag=str(value.get("newTag") or ""),
        digest=str(value.get("digest") or ""),
    )


def _post_build(value: Any) -> PostBuild | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SpecError("spec.postBuild must be a mapping")
    refs = []
    for i, item in enumerate(spec_.list_of(value, "substituteFrom")):
        where = f"spec.postBuild.substituteFrom[{i}]"
        if not isinstance(item, dict) or item.get("kind") not in ("ConfigMap", "Secret"):
            raise SpecError(f"{where}.kind must be ConfigMap or Secret")
        if not isinstance(item.get("name"), str) or not item["name"]:
            raise SpecError(f"{where} needs a name")
        refs.append(SubstituteFrom(item["kind"], item["name"], bool(item.get("optional"))))
    return PostBuild(
        substitute=spec_.string_map(value.get("substitute"), "spec.postBuild.substitute"),
        substitute_from=tuple(refs),
        always=value.get("substituteStrategy") == "Always",
    )


def _depends(value: Any, index: int, namespace: str) -> tuple[str, str]:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise SpecError(f"spec.dependsOn[{index}] needs a name")
    return (str(value.get("namespace") or namespace), value["name"])


def _common_metadata(value: Any) -> CommonMetadata | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SpecError("spec.commonMetadata must be a mapping")
    return CommonMetadata(
        labels=spec_.string_map(value.get("labels"), "spec.commonMetadata.labels"),
        annotations=spec_.string_map(value.get("annotations"), "spec.commonMetadata.annotations"),
    )


def _build_metadata(spec: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    for i, item in enumerate(spec_.list_of(spec, "buildMetadata")):
        if item not in BUILD_METADATA_OPTIONS:
            allowed = ", ".join(BUILD_METADATA_OPTIONS)
            raise SpecError(f"spec.buildMetadata[{i}] must be one of {allowed}, got {item!r}")
        out.append(item)
    return tuple(out)


def secure_join(root: Path, path: str) -> Path:
    """A path (`spec.path`, a chart directory) under a source root; `..` never climbs above
    it (Flux's SecureJoin)."""
    parts: list[str] = []
    for part in path.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return root.joinpath(*parts) if parts else root
