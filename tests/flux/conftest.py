"""Helpers for Flux tests: small repos in tmp dirs, rendered with the real kubectl."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from harness.core import config as config_mod
from harness.core.model import TargetResult
from harness.flux.targets import render_flux
from harness.render import kustomize as render


def flux_ks(
    name: str, path: str, namespace: str = "flux-system", source: str = "flux-system", **spec: Any
) -> str:
    """A Flux Kustomization manifest; keyword arguments are extra spec fields."""
    body: dict[str, Any] = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "interval": "10m",
            "path": path,
            "prune": True,
            "sourceRef": {"kind": "GitRepository", "name": source},
            **spec,
        },
    }
    return yaml.safe_dump(body, sort_keys=False)


def cm(name: str, namespace: str | None = None, **data: Any) -> str:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"k": "v"}},
        sort_keys=False,
    )


def ks_file(*resources: str, **extra: Any) -> str:
    body: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": list(resources),
        **extra,
    }
    return yaml.safe_dump(body, sort_keys=False)


def docs(*parts: str) -> str:
    return "---\n".join(parts)


def new_renderer() -> render.Renderer:
    return render.resolve(flags=("--load-restrictor", "LoadRestrictionsNone"), timeout=300)


def render_repo(
    repo: Path,
    *,
    strict: bool = True,
    renderer: render.Renderer | None = None,
    **overrides: Any,
) -> dict[str, TargetResult]:
    cfg = replace(config_mod.load(repo), **overrides)
    return render_flux(cfg, renderer or new_renderer(), jobs=4, strict=strict)


def objects(result: TargetResult) -> list[dict[str, Any]]:
    assert result.ok, result.error
    return [yaml.safe_load(d.text) for d in result.documents]


def by_id(result: TargetResult) -> dict[str, dict[str, Any]]:
    assert result.ok, result.error
    return {str(d.id): yaml.safe_load(d.text) for d in result.documents}
