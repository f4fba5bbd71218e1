"""Synthetic analyses of any size, built directly (no render, no deepdiff) to keep tests fast."""

from __future__ import annotations

import hashlib

from harness.compare.analyze import Analysis, RenderError, TargetChange
from harness.compare.docdiff import DocChange, FieldChange
from harness.core.model import DocId, Document, RendererInfo, Snapshot

RENDERER = RendererInfo("kubectl", "v1.0.0")


def doc_id(i: int, namespace: str = "apps") -> DocId:
    return DocId("apps", "Deployment", namespace, f"app-{i:05d}")


def document(i: int, text: str = "") -> Document:
    body = text or f"kind: Deployment\nmetadata:\n  name: app-{i:05d}\n"
    return Document(doc_id(i), "apps/v1", body, hashlib.sha256(body.encode()).hexdigest())


def unified(i: int, lines: int = 6, width: int = 40) -> str:
    out = [f"--- base: {doc_id(i)}", f"+++ head: {doc_id(i)}", f"@@ -1,{lines} +1,{lines} @@"]
    for n in range(lines):
        out.append(f"-  key{n}: {'a' * width}")
        out.append(f"+  key{n}: {'b' * width}")
    return "\n".join(out) + "\n"


def change(i: int, diff: str | None = None, fields: int = 2) -> DocChange:
    return DocChange(
        doc_id(i),
        "Deployment",
        "0" * 64,
        "1" * 64,
        fields=tuple(
            FieldChange(f"spec.template.spec.containers[0].env[{n}].value", "changed", "1", "2")
            for n in range(fields)
        ),
        unified=unified(i) if diff is None else diff,
    )


def target(name: str, changes: list[DocChange], cluster: str | None = None) -> TargetChange:
    n = len(changes)
    return TargetChange(
        name,
        "flux" if cluster else "path",
        cluster,
        "changed",
        documents_before=n + 10,
        documents_after=n + 10,
        changed=tuple(changes),
        unchanged=10,
    )


def analysis(
    changed: int,
    *,
    targets: int = 1,
    diff: str | None = None,
    errors: int = 0,
) -> Analysis:
    """`changed` documents spread round-robin over `targets` path targets."""
    per: list[list[DocChange]] = [[] for _ in range(targets)]
    for i in range(changed):
        per[i % targets].append(change(i, diff))
    tcs = tuple(target(f"apps/t{k:04d}", per[k]) for k in range(targets))
    errs = tuple(
        RenderError(f"broken/{k}", "head", f"kustomize: accumulating resources: missing-{k}.yaml")
        for k in range(errors)
    )
    snap = Snapshot(RENDERER, {}, "base")
    return Analysis(snap, Snapshot(RENDERER, {}, "head"), tcs, errors=errs)
