"""Hand-built snapshots for the diff engine tests: YAML in, `Snapshot` out, no renderer."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.core import documents
from harness.core.model import RendererInfo, Snapshot, Target, TargetResult

RENDERER = RendererInfo("kubectl", "v1.0.0")
OWNER = "kustomize.toolkit.fluxcd.io"

Spec = Mapping[str, Sequence[str] | str]  # target name -> documents (YAML), or an error message


def result(name: str, docs: Sequence[str] | str) -> TargetResult:
    """`<cluster>/<ns>/<name>` is a flux target; anything else a path target."""
    parts = name.split("/")
    flux = len(parts) == 3 and parts[1] == "flux-system"
    target = Target(
        name, "flux" if flux else "path", Path("/repo") / name, parts[0] if flux else None
    )
    if isinstance(docs, str):
        return TargetResult(target, error=docs)
    parsed = documents.parse_stream("---\n".join(textwrap.dedent(d) for d in docs))
    stream = "---\n".join(d.text for d in parsed)
    return TargetResult(target, tuple(parsed), documents.sha256_text(stream))


def snapshot(spec: Spec, label: str = "") -> Snapshot:
    return Snapshot(RENDERER, {name: result(name, docs) for name, docs in spec.items()}, label)


def cm(name: str, namespace: str = "default", owner: str | None = None, **data: str) -> str:
    labels = ""
    if owner is not None:
        labels = f"  labels:\n    {OWNER}/name: {owner}\n    {OWNER}/namespace: flux-system\n"
    body = "".join(f"  {k}: {v!r}\n" for k, v in (data or {"k": "v"}).items())
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n{labels}"
        f"  name: {name}\n  namespace: {namespace}\ndata:\n{body}"
    )


def secret(name: str, namespace: str = "default", owner: str | None = None, **data: str) -> str:
    return (
        cm(name, namespace, owner, **data)
        .replace("kind: ConfigMap", "kind: Secret")
        .replace("\ndata:\n", "\nstringData:\n")
    )


def ks(
    name: str,
    path: str,
    *,
    prune: bool = True,
    depends: Sequence[str] = (),
    owner: str | None = None,
    extra: str = "",
) -> str:
    """A Flux Kustomization object as a cluster path renders it."""
    labels = ""
    if owner is not None:
        labels = f"  labels:\n    {OWNER}/name: {owner}\n    {OWNER}/namespace: flux-system\n"
    deps = "".join(f"  - name: {d}\n" for d in depends)
    deps = f"  dependsOn:\n{deps}" if deps else ""
    return (
        f"apiVersion: {OWNER}/v1\nkind: Kustomization\nmetadata:\n{labels}"
        f"  name: {name}\n  namespace: flux-system\nspec:\n{deps}"
        f"  interval: 10m\n  path: {path}\n  prune: {str(prune).lower()}\n"
        f"  sourceRef:\n    kind: GitRepository\n    name: flux-system\n{extra}"
    )


def cilium_split(value: str = "v") -> tuple[Snapshot, Snapshot]:
    """The Cilium split in miniature; `value` != "v" changes one value on the way."""
    base = snapshot(
        {
            "platform": [cm("ns", "kube-system"), cm("hr", "kube-system"), cm("other")],
            "platform/cilium": [cm("ns", "kube-system"), cm("hr", "kube-system")],
            "clusters/base": [ks("platform", "./platform", depends=["flux-system"])],
            "dev/flux-system/flux-system": [
                ks("platform", "./platform", depends=["flux-system"], owner="flux-system")
            ],
            "dev/flux-system/platform": [
                cm("ns", "kube-system", owner="platform"),
                cm("hr", "kube-system", owner="platform"),
                cm("other", owner="platform"),
            ],
        },
        label="HEAD~1",
    )
    head = snapshot(
        {
            "platform": [cm("other")],
            "platform/cilium": [cm("ns", "kube-system"), cm("hr", "kube-system", k=value)],
            "clusters/base": [
                ks("cilium", "./platform/cilium", depends=["flux-system"]),
                ks("platform", "./platform", prune=False, depends=["flux-system", "cilium"]),
            ],
            "dev/flux-system/flux-system": [
                ks("cilium", "./platform/cilium", depends=["flux-system"], owner="flux-system"),
                ks(
                    "platform",
                    "./platform",
                    prune=False,
                    depends=["flux-system", "cilium"],
                    owner="flux-system",
                ),
            ],
            "dev/flux-system/platform": [cm("other", owner="platform")],
            "dev/flux-system/cilium": [
                cm("ns", "kube-system", owner="cilium"),
                cm("hr", "kube-system", owner="cilium", k=value),
            ],
        },
        label="working tree",
    )
    return base, head
