"""Hand-built snapshots for hazard tests: flux and path targets from YAML strings, no kubectl."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from harness.core.documents import parse_stream, sha256_text
from harness.core.model import Document, RendererInfo, Snapshot, Target, TargetResult

OWNER = "kustomize.toolkit.fluxcd.io"


def obj(
    kind: str,
    name: str,
    namespace: str = "",
    api: str = "v1",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **body: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": api, "kind": kind, "metadata": meta, **body}


def ks(
    name: str,
    path: str = "",
    *,
    prune: bool = True,
    depends: Iterable[str] = (),
    subst_from: Iterable[str] | None = None,
    substitute: dict[str, str] | None = None,
    source: str = "flux-system",
    namespace: str = "flux-system",
    **spec: Any,
) -> dict[str, Any]:
    """A Flux Kustomization object (substituteFrom ConfigMaps by name)."""
    body: dict[str, Any] = {
        "interval": "10m",
        "path": path or f"./{name}",
        "prune": prune,
        "sourceRef": {"kind": "GitRepository", "name": source},
        **spec,
    }
    deps = list(depends)
    if deps:
        body["dependsOn"] = [{"name": d} for d in deps]
    if subst_from is not None or substitute is not None:
        post: dict[str, Any] = {}
        if subst_from is not None:
            post["substituteFrom"] = [{"kind": "ConfigMap", "name": n} for n in subst_from]
        if substitute is not None:
            post["substitute"] = substitute
        body["postBuild"] = post
    return obj("Kustomization", name, namespace, f"{OWNER}/v1", spec=body)


def ns(name: str, **kw: Any) -> dict[str, Any]:
    return obj("Namespace", name, **kw)


def cm(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    return obj("ConfigMap", name, namespace, data=dict(data))


def crd(group: str, kind: str, plural: str) -> dict[str, Any]:
    return obj(
        "CustomResourceDefinition",
        f"{plural}.{group}",
        api="apiextensions.k8s.io/v1",
        spec={"group": group, "names": {"kind": kind, "plural": plural}, "scope": "Namespaced"},
    )


def helmrelease(name: str, namespace: str, chart: str = "", **values: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"chart": {"spec": {"chart": chart or name}}}
    if values:
        spec["values"] = values
    return obj("HelmRelease", name, namespace, "helm.toolkit.fluxcd.io/v2", spec=spec)


def docs(*objs: dict[str, Any] | str, owner: str | None = None) -> tuple[Document, ...]:
    """Documents from objects (dumped like kustomize would) or raw YAML text."""
    out: list[Document] = []
    for o in objs:
        if isinstance(o, str):
            out.extend(parse_stream(textwrap.dedent(o)))
            continue
        if owner is not None:
            o = _with_owner(o, owner)
        out.extend(parse_stream(yaml.safe_dump(o, sort_keys=True)))
    return tuple(out)


def _with_owner(o: dict[str, Any], owner: str) -> dict[str, Any]:
    meta = dict(o["metadata"])
    meta["labels"] = {
        **(meta.get("labels") or {}),
        f"{OWNER}/name": owner,
        f"{OWNER}/namespace": "flux-system",
    }
    return {**o, "metadata": meta}


def flux(
    cluster: str,
    name: str,
    *objs: dict[str, Any] | str,
    namespace: str = "flux-system",
    error: str | None = None,
) -> TargetResult:
    target = Target(
        name=f"{cluster}/{namespace}/{name}",
        kind="flux",
        path=Path("/repo") / name,
        cluster=cluster,
    )
    if error is not None:
        return TargetResult(target, error=error)
    documents = docs(*objs, owner=name)
    return TargetResult(target, documents, sha256_text("---\n".join(d.text for d in documents)))


def path(name: str, *objs: dict[str, Any] | str) -> TargetResult:
    target = Target(name=name, kind="path", path=Path("/repo") / name)
    documents = docs(*objs)
    return TargetResult(target, documents, sha256_text("---\n".join(d.text for d in documents)))


def snapshot(*results: TargetResult) -> Snapshot:
    return Snapshot(RendererInfo("test", "0"), {r.name: r for r in results})


def ids(findings: Iterable[Any]) -> list[str]:
    return sorted(f.id for f in findings)


def diff_ctx(base: Snapshot, head: Snapshot) -> Any:
    from harness.hazards.context import DiffContext, LintContext

    return DiffContext(base=base, head=head, head_lint=LintContext(head))


def lint_ctx(snap: Snapshot, repo: Path | None = None) -> Any:
    from harness.hazards.context import LintContext

    return LintContext(snap, repo=repo)


def by_id(findings: Iterable[Any]) -> dict[str, Any]:
    return {f.id: f for f in findings}


KUBECONFIG = {"secretRef": {"name": "cluster-kubeconfig"}}


def spoke(name: str, *objs: dict[str, Any] | str, env: str = "production") -> TargetResult:
    """A hub target `hub/<env>/<name>` (the Kustomization `env/name`, whose kubeConfig names
    the Secret `cluster-kubeconfig` of namespace `env`: the spoke)."""
    return flux("hub", name, *objs, namespace=env)


def hub_spoke(
    tenants: tuple[dict[str, Any], ...],
    *,
    staging: tuple[dict[str, Any], ...] | None = None,
    extra: tuple[TargetResult, ...] = (),
    root: tuple[dict[str, Any], ...] = (),
) -> Snapshot:
    """The flux2-hub-spoke-example shape in small: the hub's root declares `production` and
    `staging` Namespaces and a `tenants` Kustomization in each, both applying through a
    Secret named `cluster-kubeconfig` (the same name in two namespaces: two spokes)."""
    return snapshot(
        flux(
            "hub",
            "flux-system",
            ns("production"),
            ns("staging"),
            ks("tenants", namespace="production", kubeConfig=KUBECONFIG),
            ks("tenants", namespace="staging", kubeConfig=KUBECONFIG),
            *root,
        ),
        spoke("tenants", *tenants),
        spoke("tenants", *(tenants if staging is None else staging), env="staging"),
        *extra,
    )
