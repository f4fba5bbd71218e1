"""Repos in the shapes real Flux repos have today, as files (built from the semantics).

- `helm_example()`: fluxcd/flux2-kustomize-helm-example as it is now: `flux bootstrap`
  placeholders per cluster, an ArtifactGenerator that copies `apps/` and `infrastructure/`
  from the bootstrap GitRepository into two ExternalArtifacts, and Kustomizations that
  build `./staging`, `./controllers`, `./configs` from those artifacts.
- `fleet()`: controlplaneio-fluxcd/d2-fleet: one FluxInstance per cluster syncing an
  OCIRepository built from this repo (pushed from its root), its patches on the root.
- `pushed_from_subdir()`: an OCIRepository pushed from `kubernetes/`, the FluxInstance in a
  values file of the flux-instance chart, per-app ArtifactGenerator directory copies.
"""

from __future__ import annotations

from typing import Any

import yaml

Files = dict[str, str | bytes]

PLACEHOLDER = "# This file will be generated automatically by flux bootstrap.\n"


def dump(*objs: dict[str, Any]) -> str:
    return "---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objs)


def kustomization(*resources: str, **extra: Any) -> str:
    return dump(
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": list(resources),
            **extra,
        }
    )


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data or {"k": "v"},
    }


def flux_ks(name: str, path: str, source_kind: str, source: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {
            "interval": "1h",
            "path": path,
            "prune": True,
            "sourceRef": {"kind": source_kind, "name": source},
            **spec,
        },
    }


def generator(
    name: str, sources: list[dict[str, str]], artifacts: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": "source.extensions.fluxcd.io/v1beta1",
        "kind": "ArtifactGenerator",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"sources": sources, "artifacts": artifacts},
    }


def helm_example(clusters: tuple[str, ...] = ("staging", "production")) -> Files:
    files: Files = {
        "apps/base/podinfo/kustomization.yaml": kustomization("namespace.yaml", "release.yaml"),
        "apps/base/podinfo/namespace.yaml": dump(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "podinfo"}}
        ),
        "apps/base/podinfo/release.yaml": dump(
            configmap("podinfo-values", "podinfo", replicas="1")
        ),
        "apps/base/README.md": "not copied: excluded\n",
        "infrastructure/controllers/kustomization.yaml": kustomization("cert-manager.yaml"),
        "infrastructure/controllers/cert-manager.yaml": dump(
            configmap("cert-manager", "cert-manager")
        ),
        "infrastructure/configs/kustomization.yaml": kustomization("issuer.yaml"),
        "infrastructure/configs/issuer.yaml": dump(
            configmap("issuer", "cert-manager", server="prod")
        ),
        ".sourceignore": "# keep the defaults off: nothing to ignore but this\n/scripts/\n",
        "scripts/validate.sh": "#!/bin/sh\n",
    }
    for cluster in clusters:
        files[f"apps/{cluster}/kustomization.yaml"] = kustomization(
            "../base/podinfo",
            patches=[
                {
                    "path": "podinfo-values.yaml",
                    "target": {"kind": "ConfigMap", "name": "podinfo-values"},
                }
            ],
        )
        files[f"apps/{cluster}/podinfo-values.yaml"] = dump(
            {
                **configmap("podinfo-values", "podinfo", replicas=str(len(cluster))),
                "data": {"env": cluster},
            }
        )
        root = f"clusters/{cluster}"
        files[f"{root}/flux-system/gotk-components.yaml"] = PLACEHOLDER
        files[f"{root}/flux-system/gotk-sync.yaml"] = PLACEHOLDER
        files[f"{root}/flux-system/kustomization.yaml"] = kustomization(
            "gotk-components.yaml", "gotk-sync.yaml"
        )
        files[f"{root}/artifacts.yaml"] = dump(
            generator(
                "flux-system",
                [{"alias": "monorepo", "kind": "GitRepository", "name": "flux-system"}],
                [
                    {
                        "name": "infrastructure",
                        "originRevision": "@monorepo",
                        "copy": [{"from": "@monorepo/infrastructure/**", "to": "@artifact/"}],
                    },
                    {
                        "name": "apps",
                        "originRevision": "@monorepo",
                        "copy": [
                            {
                                "from": "@monorepo/apps/base/**",
                                "to": "@artifact/base/",
                                "exclude": ["*.md"],
                            },
                            {"from": f"@monorepo/apps/{cluster}/**", "to": f"@artifact/{cluster}/"},
                        ],
                    },
                ],
            )
        )
        files[f"{root}/infrastructure.yaml"] = dump(
            flux_ks("infra-controllers", "./controllers", "ExternalArtifact", "infrastructure"),
            flux_ks(
                "infra-configs",
                "./configs",
                "ExternalArtifact",
                "infrastructure",
                dependsOn=[{"name": "infra-controllers"}],
            ),
        )
        files[f"{root}/apps.yaml"] = dump(
            flux_ks(
                "apps",
                f"./{cluster}",
                "ExternalArtifact",
                "apps",
                dependsOn=[{"name": "infra-configs"}],
            )
        )
    return files


def flux_instance(
    kind: str, path: str, patches: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "distribution": {"version": "2.x", "registry": "ghcr.io/fluxcd"},
        "components": ["source-controller", "kustomize-controller", "source-watcher"],
        "sync": {"kind": kind, "url": "oci://ghcr.io/org/fleet", "ref": "latest", "path": path},
    }
    if patches:
        spec["kustomize"] = {"patches": patches}
    return {
        "apiVersion": "fluxcd.controlplane.io/v1",
        "kind": "FluxInstance",
        "metadata": {"name": "flux", "namespace": "flux-system"},
        "spec": spec,
    }


RUNTIME_PATCH = {
    "target": {"kind": "Kustomization", "name": "flux-system"},
    "patch": (
        "- op: add\n  path: /spec/postBuild\n  value:\n    substitute:\n"
        "      CLUSTER_NAME: from-the-patch\n"
    ),
}


def fleet(clusters: tuple[str, ...] = ("staging", "prod")) -> Files:
    files: Files = {
        "tenants/apps.yaml": dump(configmap("tenant-apps", "apps", cluster="${CLUSTER_NAME}")),
    }
    for cluster in clusters:
        root = f"clusters/{cluster}"
        files[f"{root}/flux-system/flux-instance.yaml"] = dump(
            flux_instance("OCIRepository", root, [RUNTIME_PATCH])
        )
        files[f"{root}/flux-system/kustomization.yaml"] = kustomization(
            "flux-instance.yaml", "info.yaml"
        )
        files[f"{root}/flux-system/info.yaml"] = dump(
            configmap("flux-runtime-info", "flux-system", ENV=cluster)
        )
        files[f"{root}/tenants.yaml"] = dump(
            flux_ks(
                "tenants",
                "./tenants",
                "OCIRepository",
                "flux-system",
                postBuild={"substitute": {"CLUSTER_NAME": cluster}},
            )
        )
    # a cluster whose root renders no Flux Kustomization at all (ResourceSets only)
    files["clusters/update/flux-system/flux-instance.yaml"] = dump(
        flux_instance("OCIRepository", "clusters/update")
    )
    files["clusters/update/automation.yaml"] = dump(
        {
            "apiVersion": "fluxcd.controlplane.io/v1",
            "kind": "ResourceSet",
            "metadata": {"name": "automation", "namespace": "flux-system"},
            "spec": {"inputs": [{"tenant": "apps"}], "resources": []},
        }
    )
    return files


def web_ks(app: str) -> dict[str, Any]:
    ks = flux_ks("web", f"./{app}", "ExternalArtifact", "web")
    ks["metadata"]["namespace"] = "home"
    ks["spec"]["sourceRef"]["namespace"] = "flux-system"
    return ks


def pushed_from_subdir() -> Files:
    values = {
        "instance": {
            "sync": {
                "kind": "OCIRepository",
                "url": "oci://ghcr.io/org/k8s",
                "ref": "main",
                "path": "./clusters/c0",
            }
        }
    }
    app = "apps/base/home/web/app"
    return {
        "kubernetes/clusters/c0/flux-system/flux-instance/app/values.yaml": dump(values),
        "kubernetes/clusters/c0/flux-system/flux-instance/app/kustomization.yaml": kustomization(
            configMapGenerator=[
                {
                    "name": "flux-instance-values",
                    "namespace": "flux-system",
                    "files": ["values.yaml"],
                }
            ]
        ),
        "kubernetes/clusters/c0/ks.yaml": dump(
            flux_ks("cluster", "./apps/overlays/c0", "OCIRepository", "flux-system")
        ),
        "kubernetes/apps/overlays/c0/kustomization.yaml": kustomization(
            "../../base/flux-system/generator.yaml", "../../base/home/web/ks.yaml"
        ),
        "kubernetes/apps/base/flux-system/generator.yaml": dump(
            generator(
                "k8s",
                [{"alias": "repo", "kind": "OCIRepository", "name": "flux-system"}],
                [{"name": "web", "copy": [{"from": f"@repo/{app}/", "to": f"@artifact/{app}/"}]}],
            )
        ),
        "kubernetes/apps/base/home/web/ks.yaml": dump(web_ks(app)),
        f"kubernetes/{app}/kustomization.yaml": kustomization("cm.yaml"),
        f"kubernetes/{app}/cm.yaml": dump(configmap("web", "home", image="nginx:1.27")),
        "talos/README.md": "not part of the pushed artifact\n",
    }
