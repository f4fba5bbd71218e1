"""The pipeline's data becomes the API's: each document its own parsed copy, paths relative
to the repo, images and changes in builtins only."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.api import convert, model
from harness.compare import images
from tests.compare.test_images import deploy
from tests.diffkit import snapshot


def test_a_snapshot_converts_to_builtins_only() -> None:
    core = snapshot(
        {"dev/flux-system/apps": [deploy("web", "ghcr.io/o/web:1")], "broken": "kustomize: boom"}
    )
    public = convert.snapshot(core, Path("/repo"))
    web = public.target("dev/flux-system/apps")
    assert (web.kind, web.cluster, web.path) == ("flux", "dev", Path("dev/flux-system/apps"))
    (doc,) = web.documents
    assert (doc.id, doc.kind, doc.namespace, doc.target, doc.cluster) == (
        "apps/Deployment/apps/web",
        "Deployment",
        "apps",
        "dev/flux-system/apps",
        "dev",
    )
    doc.object["spec"]["replicas"] = 3  # type: ignore[index]  # its own copy
    again = convert.snapshot(core, Path("/repo")).target("dev/flux-system/apps").documents[0]
    assert "replicas" not in again.object["spec"]
    assert public.target("broken").error == "kustomize: boom"
    (image,) = public.images
    assert image.ref == model.Reference(
        "ghcr.io/o/web:1", "ghcr.io", "ghcr.io/o/web", "ghcr.io/o/web", "1", None
    )
    assert _only_builtins(public)


def test_an_image_change_converts() -> None:
    base = snapshot({"c/flux-system/apps": [deploy("web", "app:1")]})
    head = snapshot({"c/flux-system/apps": [deploy("web", "app:2")]})
    (change,) = [convert.image_change(c) for c in images.changes(base, head)]
    assert (change.op, change.repository, change.workloads) == (
        "changed",
        "app",
        (("c", "apps/Deployment/apps/web", "web"),),
    )
    assert change.before is not None and change.before.identity == "docker.io/library/app"


def _only_builtins(value: object) -> bool:
    """No harness type but the API's own anywhere inside."""
    if dataclasses.is_dataclass(value):
        assert type(value).__module__ == "harness.api.model", type(value)
        return all(_only_builtins(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, dict | tuple | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        return all(_only_builtins(v) for _, v in items)
    return True
