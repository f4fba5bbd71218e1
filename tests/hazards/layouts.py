# ruff: noqa: E501  (fixture file contents keep their real line lengths)
"""Realistic GitOps repo layouts for the hazard precision suite, as {path: text} trees.

- `home_ops()`: a home-operations style cluster (one Flux Kustomization per app under
  kubernetes/apps, `targetNamespace`, chartRef OCIRepositories) whose CNI, cert-manager and
  external-secrets are installed by a bootstrap helmfile and whose CRD bundles (envoy-gateway,
  kube-prometheus-stack) are applied from a crds-only helmfile with `--include-crds`; apps
  use those CRDs without dependsOn, as such repos do.
- `flux_tiers()`: two clusters (staging, production) in the flux2-kustomize-helm-example
  shape: infra-controllers (HelmReleases installing CRDs) -> infra-configs (custom resources)
  -> apps, each tier dependsOn the previous, substituting from a cluster-vars ConfigMap the
  root writes (with the revision-gated dependsOn on flux-system), per-env values patches.
- `platform()`: the seeds' platform tier: one `platform` Kustomization whose component
  platform/cilium is the only declarer of Namespace kube-system.
"""

from __future__ import annotations

Files = dict[str, str]

ROOT_SYNC = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1h
  url: https://example.com/home-ops.git
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1h
  path: {path}
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""


def kustomization(*resources: str, extra: str = "") -> str:
    lines = "".join(f"  - {r}\n" for r in resources)
    return f"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{lines}{extra}"


def namespace(name: str) -> str:
    return f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"


def flux_ks(
    name: str,
    path: str,
    *,
    target_namespace: str = "",
    depends: tuple[str, ...] = (),
    substitute_from: str = "",
    wait: bool = False,
) -> str:
    text = (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
        f"  name: {name}\n  namespace: flux-system\nspec:\n  interval: 1h\n"
        f"  retryInterval: 2m\n  path: {path}\n  prune: true\n  wait: {str(wait).lower()}\n"
        "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
    )
    if target_namespace:
        text += f"  targetNamespace: {target_namespace}\n"
    if depends:
        text += "  dependsOn:\n" + "".join(f"    - name: {d}\n" for d in depends)
    if substitute_from:
        text += (
            "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n"
            f"        name: {substitute_from}\n"
        )
    return text


def oci_release(name: str, url: str, tag: str, values: str = "{}") -> str:
    return f"""\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: {name}
spec:
  interval: 1h
  url: {url}
  ref:
    tag: {tag}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: {name}
spec:
  interval: 1h
  chartRef:
    kind: OCIRepository
    name: {name}
  values: {values}
"""


def custom(api: str, kind: str, name: str, spec: str = "{}", namespace: str = "") -> str:
    ns = f"\n  namespace: {namespace}" if namespace else ""
    return f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}{ns}\nspec: {spec}\n"


# -- home-operations style, bootstrap helmfile ---------------------------------------------------

HELMFILE_DEFAULT = """\
---
# yaml-language-server: $schema=https://json.schemastore.org/helmfile
templates:
  default:
    chart: '{{ (fromYaml (tpl (readFile "./templates/release.yaml.gotmpl") .)).chart }}'
    version: '{{ (fromYaml (tpl (readFile "./templates/release.yaml.gotmpl") .)).version }}'
    values:
      - ./templates/values.yaml.gotmpl
"""

HELMFILE_APPS = """\
---
# Installed before Flux so the cluster has a CNI, certificates and secrets on first reconcile.
helmDefaults:
  cleanupOnFail: true
  wait: true

bases:
  - default.yaml

defaultInherit: default

releases:
  - name: cilium
    namespace: kube-system
    hooks:
      - command: kubectl
        args:
          - apply
          - --namespace={{ .Release.Namespace }}
          - --server-side
          - --filename=../../kubernetes/apps/{{ .Release.Namespace }}/{{ .Release.Name }}/app/networking.yaml
        events: [postsync]

  - name: coredns
    namespace: kube-system
    needs:
      - kube-system/cilium

  - name: cert-manager
    namespace: cert-manager
    needs:
      - kube-system/coredns

  - name: external-secrets
    namespace: external-secrets
    needs:
      - cert-manager/cert-manager
"""

HELMFILE_CRDS = """\
---
# Only the CRDs of these charts are rendered (--include-crds) and applied before Flux starts,
# so no Kustomization needs a dependsOn to use them.
helmDefaults:
  args:
    - --include-crds
    - --no-hooks

bases:
  - default.yaml

defaultInherit: default

releases:
  - name: envoy-gateway
    namespace: network

  - name: kube-prometheus-stack
    namespace: observability
"""

RELEASE_GOTMPL = """\
{{- $oci := fromYaml (readFile (printf "../../kubernetes/apps/%s/%s/app/ocirepository.yaml" .Release.Namespace .Release.Name)) -}}
chart: {{ $oci.spec.url }}
version: {{ $oci.spec.ref.tag }}
"""

VALUES_GOTMPL = """\
{{ (fromYaml (readFile (printf "../../../kubernetes/apps/%s/%s/app/helmrelease.yaml" .Release.Namespace .Release.Name))).spec.values | toYaml }}
"""

GATUS_CONFIG = """\
web:
  port: ${GATUS_WEB_PORT}
storage:
  type: sqlite
  path: /config/sqlite.db
"""


def add_app(
    files: Files,
    ns: str,
    app: str,
    *resources: tuple[str, str],
    depends: tuple[str, ...] = (),
    declare_ns: bool = True,
    extra: str = "",
) -> None:
    """kubernetes/apps/<ns>/<app>/{ks.yaml, app/...}, as home-ops repos lay them out."""
    base = f"kubernetes/apps/{ns}/{app}"
    files[f"{base}/ks.yaml"] = flux_ks(app, f"./{base}/app", target_namespace=ns, depends=depends)
    files[f"{base}/app/kustomization.yaml"] = kustomization(
        *(name for name, _t in resources), extra=extra
    )
    for name, text in resources:
        files[f"{base}/app/{name}"] = text
    ns_index = f"kubernetes/apps/{ns}/kustomization.yaml"
    entries = files.get(ns_index, "")
    if not entries:
        entries = kustomization(*(["./namespace.yaml"] if declare_ns else []))
        if declare_ns:
            files[f"kubernetes/apps/{ns}/namespace.yaml"] = namespace(ns)
    files[ns_index] = entries + f"  - ./{app}/ks.yaml\n"


def home_ops(*, bootstrap: bool = True) -> Files:
    files: Files = {
        "kubernetes/flux/cluster/kustomization.yaml": kustomization("./ks.yaml"),
        "kubernetes/flux/cluster/ks.yaml": flux_ks("cluster-apps", "./kubernetes/apps"),
    }
    add_app(
        files,
        "kube-system",
        "cilium",
        (
            "helmrelease.yaml",
            oci_release("cilium", "oci://ghcr.io/home-operations/charts-mirror/cilium", "1.18.1"),
        ),
        (
            "networking.yaml",
            custom(
                "cilium.io/v2alpha1",
                "CiliumLoadBalancerIPPool",
                "pool",
                "{blocks: [{cidr: 10.0.5.0/24}]}",
            )
            + "---\n"
            + custom(
                "cilium.io/v2alpha1", "CiliumL2AnnouncementPolicy", "l2", "{loadBalancerIPs: true}"
            ),
        ),
        declare_ns=False,
    )
    add_app(
        files,
        "cert-manager",
        "cert-manager",
        (
            "helmrelease.yaml",
            oci_release(
                "cert-manager",
                "oci://quay.io/jetstack/charts/cert-manager",
                "v1.18.2",
                "{crds: {enabled: true}}",
            ),
        ),
        (
            "clusterissuer.yaml",
            custom(
                "cert-manager.io/v1",
                "ClusterIssuer",
                "letsencrypt-production",
                "{acme: {server: https://acme-v02.api.letsencrypt.org/directory}}",
            ),
        ),
    )
    add_app(
        files,
        "external-secrets",
        "external-secrets",
        (
            "helmrelease.yaml",
            oci_release(
                "external-secrets",
                "oci://ghcr.io/external-secrets/charts/external-secrets",
                "0.19.2",
            ),
        ),
        (
            "clustersecretstore.yaml",
            custom(
                "external-secrets.io/v1",
                "ClusterSecretStore",
                "onepassword",
                "{provider: {onepassword: {connectHost: http://onepassword-connect:8080}}}",
            ),
        ),
    )
    add_app(
        files,
        "network",
        "envoy-gateway",
        (
            "helmrelease.yaml",
            oci_release("envoy-gateway", "oci://docker.io/envoyproxy/gateway-helm", "v1.5.0"),
        ),
        (
            "gateway.yaml",
            custom(
                "gateway.networking.k8s.io/v1",
                "GatewayClass",
                "envoy",
                "{controllerName: gateway.envoyproxy.io/gatewayclass-controller}",
            )
            + "---\n"
            + custom(
                "gateway.networking.k8s.io/v1",
                "Gateway",
                "envoy-external",
                "{gatewayClassName: envoy, listeners: [{name: https, protocol: HTTPS, port: 443}]}",
            )
            + "---\n"
            + custom(
                "gateway.envoyproxy.io/v1alpha1",
                "EnvoyProxy",
                "envoy",
                "{shutdown: {drainTimeout: 180s}}",
            ),
        ),
    )
    add_app(
        files,
        "observability",
        "kube-prometheus-stack",
        (
            "helmrelease.yaml",
            oci_release(
                "kube-prometheus-stack",
                "oci://ghcr.io/prometheus-community/charts/kube-prometheus-stack",
                "77.0.0",
            ),
        ),
        (
            "prometheusrule.yaml",
            custom(
                "monitoring.coreos.com/v1",
                "PrometheusRule",
                "oom",
                "{groups: [{name: oom, rules: [{alert: OOMKilled, expr: 'kube_pod_container_status_last_terminated_reason == 1'}]}]}",
            ),
        ),
    )
    add_app(
        files,
        "observability",
        "gatus",
        (
            "helmrelease.yaml",
            oci_release("gatus", "oci://ghcr.io/bjw-s-labs/helm/app-template", "4.2.0"),
        ),
        extra=(
            "configMapGenerator:\n  - name: gatus-configmap\n    files:\n"
            "      - config.yaml=./resources/config.yaml\n"
            "generatorOptions:\n  disableNameSuffixHash: true\n"
        ),
    )
    files["kubernetes/apps/observability/gatus/app/resources/config.yaml"] = GATUS_CONFIG
    add_app(
        files,
        "default",
        "echo",
        (
            "helmrelease.yaml",
            oci_release("echo", "oci://ghcr.io/bjw-s-labs/helm/app-template", "4.2.0"),
        ),
        (
            "externalsecret.yaml",
            custom(
                "external-secrets.io/v1",
                "ExternalSecret",
                "echo",
                "{secretStoreRef: {kind: ClusterSecretStore, name: onepassword}, target: {name: echo-secret}, dataFrom: [{extract: {key: echo}}]}",
            ),
        ),
        (
            "httproute.yaml",
            custom(
                "gateway.networking.k8s.io/v1",
                "HTTPRoute",
                "echo",
                "{parentRefs: [{name: envoy-external, namespace: network}], hostnames: [echo.example.com]}",
            ),
        ),
        (
            "servicemonitor.yaml",
            custom(
                "monitoring.coreos.com/v1",
                "ServiceMonitor",
                "echo",
                "{endpoints: [{port: http}], selector: {matchLabels: {app: echo}}}",
            ),
        ),
        declare_ns=False,
    )
    files["kubernetes/apps/kustomization.yaml"] = kustomization(
        "./kube-system",
        "./cert-manager",
        "./external-secrets",
        "./network",
        "./observability",
        "./default",
    )
    if bootstrap:
        files.update(
            {
                "bootstrap/helmfile/default.yaml": HELMFILE_DEFAULT,
                "bootstrap/helmfile/apps.yaml": HELMFILE_APPS,
                "bootstrap/helmfile/crds.yaml": HELMFILE_CRDS,
                "bootstrap/helmfile/templates/release.yaml.gotmpl": RELEASE_GOTMPL,
                "bootstrap/helmfile/templates/values.yaml.gotmpl": VALUES_GOTMPL,
                "bootstrap/kustomize/kustomization.yaml": kustomization(
                    "./namespace.yaml", "./secret.yaml"
                ),
                "bootstrap/kustomize/namespace.yaml": namespace("external-secrets"),
                "bootstrap/kustomize/secret.yaml": (
                    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: onepassword-secret\n"
                    "  namespace: external-secrets\nstringData:\n  token: op://vault/item\n"
                ),
            }
        )
    return files


# -- flux2-kustomize-helm-example style tiers -----------------------------------------------------

HELM_REPO_RELEASE = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: {name}
  namespace: {namespace}
spec:
  interval: 24h
  url: {url}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: {name}
  namespace: {namespace}
spec:
  interval: 30m
  chart:
    spec:
      chart: {chart}
      sourceRef:
        kind: HelmRepository
        name: {name}
  install:
    crds: Create
  upgrade:
    crds: CreateReplace
  values: {values}
"""

VM_CLOUD_INIT = """\
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: unifi
  namespace: vms
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        devices: {}
      volumes:
        - name: cloudinit
          cloudInitNoCloud:
            userData: |
              #cloud-config
              hostname: unifi.${DOMAIN}
              runcmd:
                - echo "booted on $${HOSTNAME}" > /etc/motd
"""


def flux_tiers(
    *, root_dependency: bool = True, clusters: tuple[str, ...] = ("staging", "production")
) -> Files:
    files: Files = {
        "infrastructure/controllers/kustomization.yaml": kustomization(
            "./cert-manager.yaml", "./kube-prometheus-stack.yaml"
        ),
        "infrastructure/controllers/cert-manager.yaml": namespace("cert-manager")
        + "---\n"
        + HELM_REPO_RELEASE.format(
            name="cert-manager",
            namespace="cert-manager",
            url="https://charts.jetstack.io",
            chart="cert-manager",
            values="{crds: {enabled: true}}",
        ),
        "infrastructure/controllers/kube-prometheus-stack.yaml": namespace("monitoring")
        + "---\n"
        + HELM_REPO_RELEASE.format(
            name="kube-prometheus-stack",
            namespace="monitoring",
            url="https://prometheus-community.github.io/helm-charts",
            chart="kube-prometheus-stack",
            values="{}",
        ),
        "infrastructure/configs/kustomization.yaml": kustomization("./cluster-issuers.yaml"),
        "infrastructure/configs/cluster-issuers.yaml": custom(
            "cert-manager.io/v1",
            "ClusterIssuer",
            "letsencrypt",
            "{acme: {server: '${ACME_SERVER}', email: 'ops@${DOMAIN}', "
            "privateKeySecretRef: {name: letsencrypt}, solvers: [{http01: {ingress: {class: nginx}}}]}}",
        ),
        "apps/base/podinfo/kustomization.yaml": kustomization(
            "./namespace.yaml", "./release.yaml", "./servicemonitor.yaml"
        ),
        "apps/base/podinfo/namespace.yaml": namespace("podinfo"),
        "apps/base/podinfo/release.yaml": HELM_REPO_RELEASE.format(
            name="podinfo",
            namespace="podinfo",
            url="https://stefanprodan.github.io/podinfo",
            chart="podinfo",
            values="{ingress: {enabled: true, hosts: [{host: 'podinfo.${DOMAIN}'}]}}",
        ),
        "apps/base/podinfo/servicemonitor.yaml": custom(
            "monitoring.coreos.com/v1",
            "ServiceMonitor",
            "podinfo",
            "{endpoints: [{port: http-metrics}], selector: {matchLabels: {app: podinfo}}}",
            namespace="podinfo",
        ),
    }
    for cluster in clusters:
        root = f"clusters/{cluster}"
        replicas = 1 if cluster == "staging" else 3
        files[f"apps/{cluster}/kustomization.yaml"] = kustomization(
            "../base/podinfo",
            extra=(
                "patches:\n  - target:\n      kind: HelmRelease\n      name: podinfo\n"
                "    patch: |\n      - op: add\n        path: /spec/values/replicaCount\n"
                f"        value: {replicas}\n"
            ),
        )
        files[f"{root}/flux-system/gotk-sync.yaml"] = ROOT_SYNC.format(path=f"./{root}")
        files[f"{root}/cluster-vars.yaml"] = (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n"
            f"  namespace: flux-system\ndata:\n  DOMAIN: {cluster}.example.com\n"
            "  ACME_SERVER: https://acme-"
            + ("staging-" if cluster == "staging" else "")
            + "v02.api.letsencrypt.org/directory\n"
        )
        root_dep = ("flux-system",) if root_dependency else ()
        files[f"{root}/infrastructure.yaml"] = (
            flux_ks(
                "infra-controllers",
                "./infrastructure/controllers",
                depends=root_dep,
                wait=True,
            )
            + "---\n"
            + flux_ks(
                "infra-configs",
                "./infrastructure/configs",
                depends=("infra-controllers",),
                substitute_from="cluster-vars",
            )
        )
        files[f"{root}/apps.yaml"] = flux_ks(
            "apps",
            f"./apps/{cluster}",
            depends=("infra-configs",),
            substitute_from="cluster-vars",
            wait=True,
        )
    return files


def with_vms(files: Files, *, escaped: bool = True) -> Files:
    """An apps-vms tier substituting from cluster-vars, with a cloud-init shell script."""
    out = dict(files)
    text = VM_CLOUD_INIT if escaped else VM_CLOUD_INIT.replace("$${HOSTNAME}", "${HOSTNAME}")
    out["apps/vms/kustomization.yaml"] = kustomization("./namespace.yaml", "./unifi.yaml")
    out["apps/vms/namespace.yaml"] = namespace("vms")
    out["apps/vms/unifi.yaml"] = text
    for path in [p for p in files if p.endswith("/apps.yaml") and p.startswith("clusters/")]:
        out[path] = (
            files[path]
            + "---\n"
            + flux_ks(
                "apps-vms", "./apps/vms", depends=("infra-configs",), substitute_from="cluster-vars"
            )
        )
    return out


# -- the seeds' platform tier ---------------------------------------------------------------------


def platform() -> Files:
    return {
        "clusters/dev/flux-system/gotk-sync.yaml": ROOT_SYNC.format(path="./clusters/dev"),
        "clusters/dev/platform.yaml": flux_ks(
            "platform", "./platform", depends=("flux-system",), wait=True
        ),
        "platform/kustomization.yaml": kustomization("./cilium", "./coredns"),
        "platform/cilium/kustomization.yaml": kustomization(
            "./namespace.yaml", "./helmrelease.yaml"
        ),
        "platform/cilium/namespace.yaml": namespace("kube-system"),
        "platform/cilium/helmrelease.yaml": HELM_REPO_RELEASE.format(
            name="cilium",
            namespace="kube-system",
            url="https://helm.cilium.io",
            chart="cilium",
            values="{kubeProxyReplacement: true}",
        ),
        "platform/coredns/kustomization.yaml": kustomization("./configmap.yaml"),
        "platform/coredns/configmap.yaml": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: coredns-custom\n"
            "  namespace: kube-system\ndata:\n  home.server: 'home.arpa:53 { forward . 10.0.0.1 }'\n"
        ),
    }


CILIUM_OWN_KS = flux_ks("cilium", "./platform/cilium", depends=("flux-system",), wait=True)
