"""A small homelab-shaped Flux repo as files: one cluster entry (`clusters/dev`) whose root
Kustomization applies one Flux Kustomization file per app, apps under `apps/`.

Realistic on purpose (namespace files, Deployments, PVCs, targetNamespace), so that the
refactors of tests/commands/test_refactors.py are the ones people make in real repos.
"""

from __future__ import annotations

from collections.abc import Iterable

Files = dict[str, str]

CLUSTER = "clusters/dev"
ROOT_KS = """apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/dev
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""


def flux_ks(
    name: str,
    path: str,
    *,
    target_namespace: str | None = None,
    depends: Iterable[str] = (),
    prune: bool = True,
) -> str:
    deps = "".join(f"    - name: {d}\n" for d in depends)
    return (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
        f"  name: {name}\n  namespace: flux-system\nspec:\n"
        + (f"  dependsOn:\n{deps}" if deps else "")
        + f"  interval: 10m\n  path: {path}\n  prune: {str(prune).lower()}\n"
        "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
        + (f"  targetNamespace: {target_namespace}\n" if target_namespace else "")
    )


def kustomization(*resources: str, namespace: str | None = None) -> str:
    lines = "".join(f"  - {r}\n" for r in resources)
    ns = f"namespace: {namespace}\n" if namespace else ""
    return (
        f"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n{ns}resources:\n{lines}"
    )


def namespace(name: str) -> str:
    return f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"


def deployment(name: str, image: str = "nginx:1.27") -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
        f"  name: {name}\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n"
        f"      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n"
        f"    spec:\n      containers:\n        - name: {name}\n          image: {image}\n"
    )


def pvc(name: str, size: str = "10Gi") -> str:
    return (
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n"
        f"  name: {name}\nspec:\n  accessModes: [ReadWriteOnce]\n"
        f"  resources:\n    requests:\n      storage: {size}\n"
    )


def configmap(name: str, **data: str) -> str:
    body = "".join(f"  {k}: {v!r}\n" for k, v in (data or {"k": "v"}).items())
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n{body}"


def app(directory: str, name: str, ns: str, *, storage: bool = False) -> Files:
    """`apps/<dir>`: a namespace, a Deployment, a ConfigMap and (with storage) a PVC."""
    files = {
        f"{directory}/namespace.yaml": namespace(ns),
        f"{directory}/deployment.yaml": deployment(name),
        f"{directory}/config.yaml": configmap(f"{name}-config", LOG_LEVEL="info"),
    }
    resources = ["namespace.yaml", "deployment.yaml", "config.yaml"]
    if storage:
        files[f"{directory}/pvc.yaml"] = pvc(f"{name}-data")
        resources.append("pvc.yaml")
    files[f"{directory}/kustomization.yaml"] = kustomization(*resources, namespace=ns)
    return files


def cluster(kustomizations: dict[str, str]) -> Files:
    """`clusters/dev`: the root sync plus one file per Flux Kustomization (name -> YAML)."""
    files = {f"{CLUSTER}/sync.yaml": ROOT_KS}
    for name, text in kustomizations.items():
        files[f"{CLUSTER}/{name}.yaml"] = text
    resources = ["sync.yaml", *(f"{n}.yaml" for n in sorted(kustomizations))]
    files[f"{CLUSTER}/kustomization.yaml"] = kustomization(*resources)
    return files


def broken(directory: str = "apps/broken") -> Files:
    """A directory whose kustomization names a file that does not exist."""
    return {f"{directory}/kustomization.yaml": kustomization("missing.yaml")}
