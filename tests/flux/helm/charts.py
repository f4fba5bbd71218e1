"""A small test chart (written, not copied), and repos that install it through Flux."""

from __future__ import annotations

from typing import Any

import yaml

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app: {{ .Release.Name }}-web
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}-web
    spec:
      containers:
        - name: web
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          env:
            - name: GREETING
              value: {{ .Values.greeting | quote }}
"""

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  namespace: {{ .Release.Namespace }}
  level: {{ .Values.logLevel | quote }}
"""

SECRET = """apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-token
stringData:
  token: {{ .Values.token | quote }}
"""

HOOK = """apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
"""

TEST_HOOK = """apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
spec:
  containers:
    - name: t
      image: busybox
"""

GADGET_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.demo.example.com
spec:
  group: demo.example.com
  scope: Namespaced
  names:
    kind: Gadget
    plural: gadgets
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
"""

WIDGET_CRD = GADGET_CRD.replace("gadget", "widget").replace("Gadget", "Widget")


def chart_files(
    version: str = "1.0.0", *, gadget_crd: bool = True, prefix: str = ""
) -> dict[str, str]:
    """The `demo` chart; version 2.x drops the templated Gadget CRD when `gadget_crd` is off."""
    files = {
        "Chart.yaml": f"apiVersion: v2\nname: demo\nversion: {version}\nappVersion: '{version}'\n",
        "values.yaml": yaml.safe_dump(
            {
                "replicas": 1,
                "image": {"repository": "ghcr.io/example/web", "tag": version},
                "greeting": "hello",
                "logLevel": "info",
                "token": "chart-default-token",
            },
            sort_keys=False,
        ),
        "values-prod.yaml": "replicas: 5\nlogLevel: warn\n",
        "crds/widgets.yaml": WIDGET_CRD,
        "templates/deployment.yaml": DEPLOYMENT,
        "templates/configmap.yaml": CONFIGMAP,
        "templates/secret.yaml": SECRET,
        "templates/hook.yaml": HOOK,
        "templates/tests/test.yaml": TEST_HOOK,
        "templates/NOTES.txt": "Installed {{ .Release.Name }}.\n",
    }
    if gadget_crd:
        files["templates/crd-gadget.yaml"] = GADGET_CRD
    return {f"{prefix}{k}": v for k, v in files.items()}


def dump(*objs: dict[str, Any]) -> str:
    return "---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objs)


def flux_ks(name: str, path: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {
            "interval": "10m",
            "path": path,
            "prune": True,
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
            **spec,
        },
    }


def helm_release(
    name: str = "web",
    namespace: str = "apps",
    *,
    chart: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "interval": "10m",
            **({"chart": {"spec": chart}} if chart is not None else {}),
            **spec,
        },
    }


def local_chart(path: str = "./charts/demo") -> dict[str, Any]:
    return {
        "chart": path,
        "sourceRef": {"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"},
    }


def repo_chart(version: str, repo: str = "charts") -> dict[str, Any]:
    return {
        "chart": "demo",
        "version": version,
        "sourceRef": {"kind": "HelmRepository", "name": repo, "namespace": "flux-system"},
    }


def helm_repository(url: str, name: str = "charts", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmRepository",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"interval": "1h", "url": url, **spec},
    }


def configmap(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def kustomization(*resources: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": list(resources),
        },
        sort_keys=False,
    )


def cluster_repo(
    release: dict[str, Any],
    *,
    sources: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
    chart_version: str = "1.0.0",
    gadget_crd: bool = True,
    harness_yaml: str = "helm: true\n",
) -> dict[str, str]:
    """One cluster `clusters/prod`: Flux Kustomizations `infra` (sources, values ConfigMaps)
    and `apps` (the HelmRelease), and the local chart under charts/demo."""
    files = {
        "harness.yaml": harness_yaml,
        "clusters/prod/kustomization.yaml": kustomization("infra.yaml", "apps.yaml"),
        "clusters/prod/infra.yaml": dump(flux_ks("infra", "./infra")),
        "clusters/prod/apps.yaml": dump(flux_ks("apps", "./apps", dependsOn=[{"name": "infra"}])),
        "infra/kustomization.yaml": kustomization("sources.yaml", "config.yaml"),
        "infra/sources.yaml": dump(*(sources or [])) or "{}\n",
        "infra/config.yaml": dump(*(config or [])) or "{}\n",
        "apps/kustomization.yaml": kustomization("namespace.yaml", "release.yaml"),
        "apps/namespace.yaml": dump(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}
        ),
        "apps/release.yaml": dump(release),
    }
    files.update(chart_files(chart_version, gadget_crd=gadget_crd, prefix="charts/demo/"))
    return files


def oci_repository(registry: str, name: str = "demo") -> dict[str, Any]:
    """An OCIRepository for `oci://<registry>/charts/<name>`, any version from 1.0.0."""
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1beta2",
        "kind": "OCIRepository",
        "metadata": {"name": name, "namespace": "apps"},
        "spec": {
            "url": f"oci://{registry}/charts/{name}",
            "ref": {"semver": ">=1.0.0"},
            "insecure": True,
        },
    }
