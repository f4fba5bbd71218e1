"""flux-operator's FluxInstance: where its `spec.sync` says a cluster's root is.

A FluxInstance (`fluxcd.controlplane.io/v1`) with `spec.sync` makes the operator create two
objects in its namespace, both named `sync.name` (default: that namespace): a source of
`sync.kind` (GitRepository, OCIRepository or Bucket) and a Kustomization building
`sync.path` from it (`interval: 10m`, `prune: true`, nothing else), then applies
`spec.kustomize.patches` to everything it generates, these two included (flux-operator
`internal/builder`). That Kustomization is the cluster's root, exactly like the one
`flux bootstrap` commits, except that it is not in git.

Repos ship the spec either as a FluxInstance manifest or as the values of the
`flux-instance` Helm chart (`instance.sync`, `instance.kustomize.patches`), in a HelmRelease's
`values` or in a values file; all three shapes are read, from the files alone.

An OCIRepository (or Bucket) root is an artifact CI pushed from some directory of the repo
(`flux push artifact --path=kubernetes`): `sync.path` is relative to that directory, which
is the ancestor of the declaring file under which `sync.path` exists.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import safefile, yamlload
from harness.flux.api import KUSTOMIZE_GROUP, SOURCE_GROUP, SOURCE_KINDS, api_group, secure_join

GROUP = "fluxcd.controlplane.io"
INSTANCE_KIND = "FluxInstance"
CHART = "flux-instance"
DEFAULT_NAMESPACE = "flux-system"
_HINT = re.compile(r"^\s*(sync|instance)\s*:", re.MULTILINE)


@dataclass(frozen=True)
class Sync:
    """One FluxInstance's `spec.sync`, and where it was declared."""

    kind: str
    path: str
    name: str
    namespace: str
    url: str = ""
    ref: str = ""
    patches: tuple[Mapping[str, Any], ...] = ()
    file: Path = Path()
    shape: str = INSTANCE_KIND  # "FluxInstance", "HelmRelease values" or "values file"

    @property
    def what(self) -> str:
        return f"{self.shape} in {self.file}"


def file_syncs(path: Path, text: str | None = None) -> list[Sync]:
    """Every FluxInstance sync a YAML file declares (none when it cannot be read)."""
    if text is None:
        try:
            text = safefile.read_text(path)
        except (OSError, UnicodeDecodeError):
            return []
    if "sync" not in text or not _HINT.search(text):
        return []
    try:
        docs = yamlload.load_all(text)
    except yamlload.YAMLError:
        return []
    out: list[Sync] = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        found = _doc_sync(doc, path)
        if found is not None:
            out.append(found)
    return out


def _doc_sync(doc: Mapping[str, Any], path: Path) -> Sync | None:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    kind = doc.get("kind")
    if kind == INSTANCE_KIND and api_group(doc) == GROUP:
        spec = doc.get("spec")
        namespace = str(meta.get("namespace") or DEFAULT_NAMESPACE)
        return _sync(spec, namespace, path, INSTANCE_KIND) if isinstance(spec, dict) else None
    if kind == "HelmRelease":
        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        values = spec.get("values")
        instance = values.get("instance") if isinstance(values, dict) else None
        if not isinstance(instance, dict) or not _flux_instance_chart(spec):
            return None
        namespace = str(spec.get("targetNamespace") or meta.get("namespace") or DEFAULT_NAMESPACE)
        return _sync(instance, namespace, path, "HelmRelease values")
    if "kind" not in doc and "apiVersion" not in doc:
        instance = doc.get("instance")
        if isinstance(instance, dict):
            return _sync(instance, DEFAULT_NAMESPACE, path, "values file")
    return None


def _flux_instance_chart(spec: Mapping[str, Any]) -> bool:
    """A HelmRelease of the flux-instance chart (by chart name or its source's name)."""
    chart = spec.get("chart")
    chart_spec = chart.get("spec") if isinstance(chart, dict) else None
    if isinstance(chart_spec, dict) and str(chart_spec.get("chart", "")).endswith(CHART):
        return True
    ref = spec.get("chartRef")
    return isinstance(ref, dict) and CHART in str(ref.get("name", ""))


def _sync(body: Mapping[str, Any], namespace: str, path: Path, shape: str) -> Sync | None:
    sync = body.get("sync")
    if not isinstance(sync, dict):
        return None
    kind, target = sync.get("kind"), sync.get("path")
    if kind not in SOURCE_KINDS or not isinstance(target, str) or not target:
        return None
    kustomize = body.get("kustomize")
    patches = kustomize.get("patches") if isinstance(kustomize, dict) else None
    return Sync(
        kind=str(kind),
        path=target,
        name=str(sync.get("name") or namespace),
        namespace=namespace,
        url=str(sync.get("url") or ""),
        ref=str(sync.get("ref") or ""),
        patches=tuple(p for p in (patches or []) if isinstance(p, dict)),
        file=path,
        shape=shape,
    )


def source_root(sync: Sync, repo: Path) -> Path | None:
    """The directory `sync.path` is relative to; None when no such directory exists.

    A Git source is the whole repo. An OCI artifact or a bucket holds some directory of
    it: the shallowest ancestor of the declaring file under which `sync.path` exists (the
    FluxInstance is normally inside the tree it syncs).
    """
    if "${" in sync.path:
        return None
    if sync.kind == "GitRepository":
        return repo if secure_join(repo, sync.path).is_dir() else None
    here = sync.file.parent
    chain = [here, *here.parents]
    candidates = [d for d in reversed(chain) if d == repo or d.is_relative_to(repo)]
    found = [d for d in candidates if secure_join(d, sync.path).is_dir()]
    inside = [d for d in found if sync.file.is_relative_to(secure_join(d, sync.path))]
    pick = inside or found
    return pick[0] if pick else None


def objects(sync: Sync) -> list[dict[str, Any]]:
    """The source and the Kustomization the operator generates for the sync (unpatched)."""
    spec: dict[str, Any] = {"interval": "1m0s"}
    if sync.kind == "GitRepository":
        spec["ref"] = {"name": sync.ref} if sync.ref else {}
        spec["url"] = sync.url
    elif sync.kind == "OCIRepository":
        spec["ref"] = {"tag": sync.ref} if sync.ref else {}
        spec["url"] = sync.url
    else:
        spec["bucketName"] = sync.ref
        spec["endpoint"] = sync.url
    meta = {"name": sync.name, "namespace": sync.namespace}
    source = {
        "apiVersion": f"{SOURCE_GROUP}/v1",
        "kind": sync.kind,
        "metadata": dict(meta),
        "spec": spec,
    }
    kustomization = {
        "apiVersion": f"{KUSTOMIZE_GROUP}/v1",
        "kind": "Kustomization",
        "metadata": dict(meta),
        "spec": {
            "interval": "10m0s",
            "path": sync.path,
            "prune": True,
            "sourceRef": {"kind": sync.kind, "name": sync.name},
        },
    }
    return [source, kustomization]


def relevant_patches(sync: Sync) -> list[dict[str, Any]]:
    """The `spec.kustomize.patches` that may touch the two sync objects.

    The operator patches everything it generates (Deployments, RBAC, ...); a patch aimed
    at those would fail as "no match" against the two objects alone, so it is left out.
    A patch with a file `path` is not valid in a FluxInstance and is skipped too.
    """
    kinds = ("Kustomization", sync.kind)
    out: list[dict[str, Any]] = []
    for patch in sync.patches:
        body = patch.get("patch")
        if not isinstance(body, str):
            continue
        target = patch.get("target")
        if isinstance(target, dict):
            kind = target.get("kind")
            if kind is not None and not any(_selects(str(kind), k) for k in kinds):
                continue
        else:
            try:
                doc = yamlload.load(body)
            except yamlload.YAMLError:
                continue
            if not isinstance(doc, dict) or doc.get("kind") not in kinds:
                continue
        out.append({"patch": body, **({"target": target} if isinstance(target, dict) else {})})
    return out


def _selects(pattern: str, kind: str) -> bool:
    """kustomize target selectors are anchored regular expressions."""
    try:
        return re.fullmatch(pattern, kind) is not None
    except re.error:
        return pattern == kind


def kustomization_file(patches: list[dict[str, Any]]) -> str:
    """The kustomization that applies the patches to `sync.yaml` (as the operator does)."""
    body: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["sync.yaml"],
        "patches": patches,
    }
    return yamlload.dump(body)


def relative(path: Path, repo: Path) -> str:
    try:
        return path.relative_to(repo).as_posix() or "."
    except ValueError:
        return os.fspath(path)
