"""A generated Flux homelab with 250 Kustomizations, shaped like the large public ones.

One cluster: `flux-system`, an `infra` layer of HelmReleases that install CRDs
(kube-prometheus-stack, cert-manager, external-secrets) with dependsOn between them, and
240 apps in 12 namespaces, each its own Flux Kustomization (targetNamespace, substituteFrom
the cluster's ConfigMap, dependsOn its infra) rendering a ServiceMonitor, a Certificate and
an ExternalSecret beside its Deployment: hundreds of CRD-provider edges, the hairball a
whole-repo picture must not become. Path targets are limited to `clusters/` by `exclude:`
so a render is one kustomize run per Kustomization.
"""

from __future__ import annotations

from pathlib import Path

NAMESPACES = 12
INFRA = (
    # (name, chart, dependsOn)
    ("cert-manager", "cert-manager", ("cluster-settings",)),
    ("external-secrets", "external-secrets", ("cluster-settings",)),
    ("kube-prometheus-stack", "kube-prometheus-stack", ("cluster-settings",)),
    ("ingress-nginx", "ingress-nginx", ("cert-manager",)),
    ("external-dns", "external-dns", ("ingress-nginx",)),
    ("cloudnative-pg", "cloudnative-pg", ()),
    ("rook-ceph", "rook-ceph", ()),
)


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _ks(name: str, path: str, extra: str = "") -> str:
    return (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
        f"metadata:\n  name: {name}\n  namespace: flux-system\n"
        f"spec:\n  interval: 10m\n  path: {path}\n  prune: true\n"
        "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n" + extra
    )


def _depends(names: tuple[str, ...] | list[str]) -> str:
    if not names:
        return ""
    return "  dependsOn:\n" + "".join(f"    - name: {n}\n" for n in names)


def generate(root: Path, apps: int = 240) -> Path:
    """Write the repo under `root`: 250 Kustomizations (flux-system, cluster-settings, the
    infra layer, apps and one per app)."""
    _write(
        root,
        "harness.yaml",
        "goldens: goldens\nexclude:\n  - apps/**\n  - infra/**\n  - clusters/settings\n",
    )
    _write(
        root,
        "clusters/main/kustomization.yaml",
        "resources:\n  - flux-system\n  - settings.yaml\n  - infra.yaml\n  - apps.yaml\n",
    )
    _write(root, "clusters/main/settings.yaml", _ks("cluster-settings", "./clusters/settings"))
    _write(
        root,
        "clusters/settings/kustomization.yaml",
        "resources:\n  - cluster-settings.yaml\n",
    )
    _write(
        root,
        "clusters/main/flux-system/kustomization.yaml",
        "resources:\n  - gotk-sync.yaml\n",
    )
    _write(
        root,
        "clusters/main/flux-system/gotk-sync.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"
        "  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m\n"
        "  url: https://example.org/homelab.git\n  ref:\n    branch: main\n---\n"
        + _ks("flux-system", "./clusters/main"),
    )
    _write(
        root,
        "clusters/settings/cluster-settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n"
        "  namespace: flux-system\ndata:\n  DOMAIN: example.org\n  CLUSTER: main\n",
    )
    _write(
        root,
        "clusters/main/infra.yaml",
        "---\n".join(
            _ks(name, f"./infra/{name}", _depends(list(deps))) for name, _c, deps in INFRA
        ),
    )
    _write(root, "clusters/main/apps.yaml", _ks("apps", "./apps", _depends(["ingress-nginx"])))
    for name, chart, _deps in INFRA:
        _write(
            root,
            f"infra/{name}/kustomization.yaml",
            "resources:\n  - helmrelease.yaml\n",
        )
        _write(
            root,
            f"infra/{name}/helmrelease.yaml",
            f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n---\n"
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n"
            f"  name: {name}\n  namespace: {name}\nspec:\n  interval: 1h\n"
            f"  url: https://charts.example.org/{name}\n---\n"
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n"
            f"  name: {name}\n  namespace: {name}\nspec:\n  interval: 1h\n  chart:\n"
            f"    spec:\n      chart: {chart}\n      sourceRef:\n        kind: HelmRepository\n"
            f"        name: {name}\n",
        )
    namespaces = [f"team-{k:02d}" for k in range(NAMESPACES)]
    per_ns: dict[str, list[str]] = {ns: [] for ns in namespaces}
    for i in range(apps):
        per_ns[namespaces[i % NAMESPACES]].append(f"app-{i:03d}")
    _write(
        root,
        "apps/kustomization.yaml",
        "resources:\n" + "".join(f"  - {ns}\n" for ns in namespaces),
    )
    for ns, members in per_ns.items():
        _write(
            root,
            f"apps/{ns}/kustomization.yaml",
            "resources:\n  - namespace.yaml\n" + "".join(f"  - {a}/ks.yaml\n" for a in members),
        )
        _write(
            root,
            f"apps/{ns}/namespace.yaml",
            f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n",
        )
        for n, app in enumerate(members):
            deps = ["cert-manager", "external-secrets"]
            if n % 5 == 4:  # every fifth app needs the one before it (a database, say)
                deps.append(members[n - 1])
            spec = (
                f"  targetNamespace: {ns}\n"
                + _depends(deps)
                + "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n"
                "        name: cluster-settings\n"
            )
            _write(root, f"apps/{ns}/{app}/ks.yaml", _ks(app, f"./apps/{ns}/{app}/app", spec))
            _app(root, f"apps/{ns}/{app}/app", app)
    return root


def _app(root: Path, base: str, app: str) -> None:
    _write(
        root,
        f"{base}/kustomization.yaml",
        "resources:\n  - deployment.yaml\n  - monitoring.yaml\n",
    )
    _write(
        root,
        f"{base}/deployment.yaml",
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {app}\nspec:\n"
        f"  selector:\n    matchLabels:\n      app: {app}\n  template:\n    metadata:\n"
        f"      labels:\n        app: {app}\n    spec:\n      containers:\n"
        f"        - name: {app}\n          image: ghcr.io/example/{app}:1.0.0\n",
    )
    _write(
        root,
        f"{base}/monitoring.yaml",
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n"
        f"  name: {app}\nspec:\n  selector:\n    matchLabels:\n      app: {app}\n"
        "  endpoints:\n    - port: http\n---\n"
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n"
        f"  name: {app}\nspec:\n  secretName: {app}-tls\n  dnsNames:\n"
        f"    - {app}.${{DOMAIN}}\n  issuerRef:\n    name: letsencrypt\n    kind: ClusterIssuer\n"
        "---\n"
        "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n"
        f"  name: {app}\nspec:\n  secretStoreRef:\n    kind: ClusterSecretStore\n"
        f"    name: vault\n  target:\n    name: {app}-secret\n",
    )
