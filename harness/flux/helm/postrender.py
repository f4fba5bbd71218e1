"""helm-controller's post-renderers, in its order (internal/postrender/build.go):
`spec.postRenderers[].kustomize` (patches and images, by the same kustomize harness renders
with), then `spec.commonMetadata` labels and annotations on `metadata`, then the origin labels
`helm.toolkit.fluxcd.io/name` and `/namespace`, which win a key collision. Hooks go through
them too (Helm 4's default `combined` strategy); `crds/` files get only the origin labels, as
helm-controller's CRD installer merges them.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.core import scratch, yamlload
from harness.flux.helm.engine import Part
from harness.flux.helm.release import HELM_GROUP, HelmRelease
from harness.render.kustomize import Renderer


class PostRenderError(Exception):
    """A post-renderer failed; the message is the target's one-line error."""


def apply(parts: Sequence[Part], release: HelmRelease, renderer: Renderer) -> list[dict[str, Any]]:
    """The objects the cluster receives, in output order (crds, manifest, hooks)."""
    crds = [copy.deepcopy(p.obj) for p in parts if p.kind == "crd"]
    rest = [copy.deepcopy(p.obj) for p in parts if p.kind != "crd"]
    for index, spec in enumerate(release.post_renderers):
        if spec.get("patches") or spec.get("images"):
            rest = _kustomize(rest, spec, renderer, index)
    for obj in rest:
        _merge(obj, "labels", release.common_labels)
        _merge(obj, "annotations", release.common_annotations)
    origin = {f"{HELM_GROUP}/name": release.name, f"{HELM_GROUP}/namespace": release.namespace}
    for obj in [*crds, *rest]:
        _merge(obj, "labels", origin)
    return [*crds, *rest]


def _merge(obj: dict[str, Any], field: str, values: Mapping[str, str]) -> None:
    if not values:
        return
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return
    current = meta.get(field)
    if not isinstance(current, dict):
        current = {}
    meta[field] = {**current, **values}


def _kustomize(
    objs: list[dict[str, Any]], spec: Mapping[str, Any], renderer: Renderer, index: int
) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix=scratch.prefix("postrender")) as tmp:
        root = Path(tmp)
        (root / "resources.yaml").write_text(
            "---\n".join(yamlload.dump(o) for o in objs), encoding="utf-8"
        )
        kustomization: dict[str, Any] = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": ["resources.yaml"],
        }
        for key in ("patches", "images"):
            if spec.get(key):
                kustomization[key] = spec[key]
        (root / "kustomization.yaml").write_text(yamlload.dump(kustomization), encoding="utf-8")
        output = renderer.build(root)
    if output.stdout is None:
        raise PostRenderError(f"postRenderers[{index}].kustomize: {output.error}")
    try:
        return [o for o in yamlload.load_all(output.stdout) if isinstance(o, dict)]
    except yamlload.YAMLError as exc:
        raise PostRenderError(f"postRenderers[{index}].kustomize: {exc}") from None
