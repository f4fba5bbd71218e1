"""The pipeline's data as the API's (model.py): every public object is built here, so an
internal type never reaches a user and can change without breaking one."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.api import model
from harness.compare import images
from harness.compare.docdiff import FieldChange
from harness.compare.groups import ChangeGroup
from harness.core import model as core
from harness.core import parsed
from harness.core.imageref import ImageRef
from harness.hazards.finding import Finding


def _object(text: str) -> dict[str, Any]:
    """The document's own parsed copy (decoded from the cache entry's JSON when the run has
    it: much faster than YAML)."""
    found = parsed.fresh(text)
    return found if isinstance(found, dict) else {}


def document(doc: core.Document, target: core.Target) -> model.Document:
    return model.Document(
        id=str(doc.id),
        api_version=doc.api_version,
        group=doc.id.group,
        kind=doc.id.kind,
        namespace=doc.id.namespace,
        name=doc.id.name,
        sha256=doc.sha256,
        text=doc.text,
        object=_object(doc.text),
        target=target.name,
        cluster=target.cluster,
    )


def _relative(path: Path, root: Path) -> Path:
    try:
        return path.relative_to(root)
    except ValueError:
        return path


def target(result: core.TargetResult, root: Path) -> model.Target:
    t = result.target
    return model.Target(
        name=t.name,
        kind=t.kind,
        cluster=t.cluster,
        path=_relative(t.path, root),
        documents=tuple(document(d, t) for d in result.documents),
        error=result.error,
    )


def reference(ref: ImageRef) -> model.Reference:
    return model.Reference(
        text=ref.text,
        registry=ref.registry or None,
        repository=ref.repository,
        identity=ref.identity,
        tag=ref.tag or None,
        digest=ref.digest or None,
    )


def image(use: images.ImageUse) -> model.Image:
    return model.Image(
        cluster=use.cluster or None,
        workload=str(use.workload),
        kind=use.workload.kind,
        container=use.container,
        field=use.field,
        ref=reference(use.image),
        targets=use.targets,
    )


def snapshot(snap: core.Snapshot, root: Path, repo: Path | None = None) -> model.Snapshot:
    """`snap` rendered from the tree at `root`; `repo`: the path to report (the user's
    repo, where a ref's checkout in a temp dir is gone by the time anyone reads this)."""
    info = snap.renderer
    return model.Snapshot(
        repo=repo or root,
        renderer=f"{info.name} {info.version}".strip(),
        targets=tuple(target(r, root) for r in snap.results.values()),
        images=tuple(image(u) for u in images.images_of(snap)),
        skipped=dict(snap.skipped),
        warnings=snap.warnings,
    )


def _field(f: FieldChange) -> model.FieldChange:
    return model.FieldChange(path=f.path, op=f.op, before=f.before, after=f.after)


def change(g: ChangeGroup) -> model.Change:
    return model.Change(
        op=g.op,
        id=str(g.id),
        targets=g.targets,
        clusters=g.clusters,
        fields=tuple(_field(f) for f in g.fields),
        real=g.real,
        moved=g.moved,
        note=g.note,
    )


def image_change(c: images.ImageChange) -> model.ImageChange:
    return model.ImageChange(
        op=c.op,
        repository=c.repository,
        before=reference(c.before) if c.before is not None else None,
        after=reference(c.after) if c.after is not None else None,
        workloads=tuple((p.cluster or None, str(p.workload), p.container) for p in c.places),
    )


def findings(found: Iterable[Finding]) -> tuple[model.Finding, ...]:
    return tuple(
        model.Finding(
            id=f.id,
            rule=f.rule,
            severity=f.severity,
            cluster=f.cluster,
            kustomizations=f.kustomizations,
            documents=f.documents,
            message=f.message,
        )
        for f in found
    )
