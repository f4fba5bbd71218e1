"""Small charts shaped like real public ones (written here, not copied): each reproduces the
parts of a real chart that decide how Helm turns its templates into manifests.

- `watcher` (like stakater/Reloader): a NOTES.txt that is not YAML, `_helpers.tpl`
  partials, RBAC, a ServiceMonitor only when the cluster serves `monitoring.coreos.com/v1`, a
  PodDisruptionBudget at `policy/v1` only when `policy/v1/PodDisruptionBudget` is served.
- `dns` (like kubernetes-sigs/external-dns and metrics-server): NOTES.txt with template
  actions and colons, a whitespace-only template, `.Capabilities.KubeVersion` branches
  (`semverCompare`, `.Minor | int`), a Chart.yaml `kubeVersion` constraint, an APIService.
- `app` (like bjw-s app-template): everything from a vendored library subchart `common`
  (partials only, plus its own NOTES.txt), one template emitting many documents that each start
  with their own `---` (the app-template `---\\n---` shape), an HTTPRoute at
  `gateway.networking.k8s.io/v1` only when `.../v1/HTTPRoute` is served (else `v1alpha2`),
  pod `resources` only from Kubernetes 1.32, `hostUsers` from 1.29, `tpl` in values, a
  values.schema.json.
- `stack` (like kube-prometheus-stack): subcharts (one enabled, one disabled by condition, one
  aliased), a `crds` subchart with `crds/` files, subchart NOTES.txt that is not YAML,
  webhook configurations, hooks with weights, a hook with an unknown event (Helm drops it),
  test hooks (`test`, `test-success`; `test-failure` is not an event), custom kinds Helm
  sorts alphabetically after its install order, a YAML template with a `.txt` name.
"""

from __future__ import annotations

from pathlib import Path

from harness.flux.helm import sdk
from tests.conftest import write_tree

WATCHER = {
    "Chart.yaml": "apiVersion: v2\nname: watcher\nversion: {version}\nappVersion: v1.4.0\n",
    "values.yaml": (
        "image: {repository: ghcr.io/example/watcher, tag: v1.4.0}\n"
        "serviceMonitor: {enabled: false}\n"
        "podDisruptionBudget: {enabled: false, minAvailable: 1}\n"
        "watchGlobally: true\n"
    ),
    "templates/NOTES.txt": (
        "- {{ .Release.Name }} is watching: ConfigMaps: and Secrets\n"
        "   key: : value [unclosed\n"
        'Annotate a workload with: reloader.example.com/auto: "true"\n'
    ),
    "templates/_helpers.tpl": (
        '{{- define "watcher.name" -}}{{ .Release.Name }}-watcher{{- end -}}\n'
        '{{- define "watcher.labels" -}}\n'
        "app.kubernetes.io/name: watcher\n"
        "app.kubernetes.io/instance: {{ .Release.Name }}\n"
        "helm.sh/chart: watcher-{{ .Chart.Version }}\n"
        "{{- end -}}\n"
    ),
    "templates/serviceaccount.yaml": (
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n"
        '  name: {{ include "watcher.name" . }}\n'
        '  labels:\n{{ include "watcher.labels" . | indent 4 }}\n'
    ),
    "templates/clusterrole.yaml": (
        "{{- if .Values.watchGlobally }}\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n"
        '  name: {{ include "watcher.name" . }}-role\n'
        "rules:\n"
        "  - apiGroups: ['']\n    resources: [configmaps, secrets]\n"
        "    verbs: [get, list, watch]\n"
        "---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n"
        '  name: {{ include "watcher.name" . }}-role-binding\n'
        "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n"
        '  name: {{ include "watcher.name" . }}-role\n'
        "subjects:\n  - kind: ServiceAccount\n"
        '    name: {{ include "watcher.name" . }}\n    namespace: {{ .Release.Namespace }}\n'
        "{{- end }}\n"
    ),
    "templates/deployment.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
        '  name: {{ include "watcher.name" . }}\n'
        '  labels:\n{{ include "watcher.labels" . | indent 4 }}\n'
        "spec:\n  replicas: 1\n  selector:\n    matchLabels:\n"
        "      app.kubernetes.io/instance: {{ .Release.Name }}\n"
        "  template:\n    metadata:\n      labels:\n"
        "        app.kubernetes.io/instance: {{ .Release.Name }}\n"
        "    spec:\n"
        '      serviceAccountName: {{ include "watcher.name" . }}\n'
        "      containers:\n        - name: watcher\n"
        '          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"\n'
    ),
    "templates/servicemonitor.yaml": (
        "{{- if and .Values.serviceMonitor.enabled "
        '(.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") }}\n'
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n"
        '  name: {{ include "watcher.name" . }}\n'
        "spec:\n  endpoints:\n    - port: http\n"
        "  selector:\n    matchLabels:\n      app.kubernetes.io/instance: {{ .Release.Name }}\n"
        "{{- end }}\n"
    ),
    "templates/poddisruptionbudget.yaml": (
        "{{- if .Values.podDisruptionBudget.enabled }}\n"
        '{{- if .Capabilities.APIVersions.Has "policy/v1/PodDisruptionBudget" }}\n'
        "apiVersion: policy/v1\n{{- else }}\napiVersion: policy/v1beta1\n{{- end }}\n"
        "kind: PodDisruptionBudget\nmetadata:\n"
        '  name: {{ include "watcher.name" . }}\n'
        "spec:\n  minAvailable: {{ .Values.podDisruptionBudget.minAvailable }}\n"
        "  selector:\n    matchLabels:\n      app.kubernetes.io/instance: {{ .Release.Name }}\n"
        "{{- end }}\n"
    ),
}

DNS = {
    "Chart.yaml": (
        "apiVersion: v2\nname: dns\nversion: {version}\nkubeVersion: '>=1.22.0-0'\n"
        "appVersion: 0.18.0\n"
    ),
    "values.yaml": "provider: {name: aws}\npolicy: upsert-only\nsources: [service, ingress]\n",
    "templates/NOTES.txt": (
        "***********************************************************************\n"
        "* External DNS                                                        *\n"
        "***********************************************************************\n"
        "  Chart version: {{ .Chart.Version }}\n"
        "  App version:   {{ .Chart.AppVersion }}\n"
        "  Image tag:     registry.k8s.io/external-dns:{{ .Chart.AppVersion }}\n"
        "***********************************************************************\n"
    ),
    "templates/_helpers.tpl": '{{- define "dns.name" -}}{{ .Release.Name }}-dns{{- end -}}\n',
    "templates/unused.yaml": (
        "{{- if .Values.neverSet }}\napiVersion: v1\nkind: ConfigMap\n{{- end }}\n   \n\n"
    ),
    "templates/deployment.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
        '  name: {{ include "dns.name" . }}\n'
        "spec:\n  selector:\n    matchLabels: {app: dns}\n  template:\n"
        "    metadata:\n      labels: {app: dns}\n    spec:\n"
        '      {{- if semverCompare ">=1.29-0" .Capabilities.KubeVersion.Version }}\n'
        "      hostUsers: false\n      {{- end }}\n"
        "      containers:\n        - name: external-dns\n"
        '          image: "registry.k8s.io/external-dns:{{ .Chart.AppVersion }}"\n'
        "          args:\n"
        "            - --provider={{ .Values.provider.name }}\n"
        "            - --policy={{ .Values.policy }}\n"
        "            {{- range .Values.sources }}\n            - --source={{ . }}\n"
        "            {{- end }}\n"
        "            - --kube-minor={{ .Capabilities.KubeVersion.Minor }}\n"
    ),
    "templates/apiservice.yaml": (
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n"
        "  name: v1beta1.dns.example.com\n"
        "spec:\n  group: dns.example.com\n  version: v1beta1\n"
        "  groupPriorityMinimum: 100\n  versionPriority: 100\n"
        '  service: {name: {{ include "dns.name" . }}, namespace: {{ .Release.Namespace }}}\n'
    ),
    "templates/service.yaml": (
        "apiVersion: v1\nkind: Service\nmetadata:\n"
        '  name: {{ include "dns.name" . }}\n'
        "spec:\n  selector: {app: dns}\n  ports: [{port: 7979, name: http}]\n"
    ),
}

COMMON = {
    "charts/common/Chart.yaml": "apiVersion: v2\nname: common\nversion: 4.1.1\ntype: library\n",
    "charts/common/values.yaml": "global: {}\n",
    "charts/common/templates/NOTES.txt": "the library: never rendered as a manifest: {{\n",
    "charts/common/templates/_loader.tpl": (
        '{{- define "common.loader.all" -}}\n'
        '{{- include "common.render.pvcs" . }}\n'
        '{{- include "common.render.services" . }}\n'
        '{{- include "common.render.controllers" . }}\n'
        '{{- include "common.render.routes" . }}\n'
        "{{- end -}}\n"
    ),
    "charts/common/templates/_pvc.tpl": (
        '{{- define "common.render.pvcs" -}}\n'
        "{{- range $name, $p := .Values.persistence }}\n---\n"
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n"
        "  name: {{ $.Release.Name }}-{{ $name }}\n"
        "spec:\n  accessModes: [{{ $p.accessMode }}]\n"
        "  resources:\n    requests:\n      storage: {{ $p.size }}\n"
        "{{- end }}\n{{- end -}}\n"
    ),
    "charts/common/templates/_service.tpl": (
        '{{- define "common.render.services" -}}\n'
        "{{- range $name, $s := .Values.service }}\n---\n"
        "apiVersion: v1\nkind: Service\nmetadata:\n"
        '  name: {{ $.Release.Name }}{{ if ne $name "main" }}-{{ $name }}{{ end }}\n'
        "spec:\n  ports:\n"
        "  {{- range $pname, $port := $s.ports }}\n"
        "    - name: {{ $pname }}\n      port: {{ $port.port }}\n"
        "  {{- end }}\n"
        "{{- end }}\n{{- end -}}\n"
    ),
    "charts/common/templates/_controllers.tpl": (
        '{{- define "common.render.controllers" -}}\n'
        "{{- range $name, $c := .Values.controllers }}\n---\n"
        '{{- if eq ($c.type | default "deployment") "cronjob" }}\n'
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n"
        "  name: {{ $.Release.Name }}-{{ $name }}\n"
        "spec:\n  schedule: {{ $c.cronjob.schedule | quote }}\n"
        "  jobTemplate:\n    spec:\n      template:\n"
        '{{ include "common.pod" (dict "root" $ "c" $c) | indent 8 }}\n'
        "{{- else }}\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
        '  name: {{ $.Release.Name }}{{ if ne $name "main" }}-{{ $name }}{{ end }}\n'
        "spec:\n  selector:\n    matchLabels: {app: {{ $name }}}\n  template:\n"
        '{{ include "common.pod" (dict "root" $ "c" $c) | indent 4 }}\n'
        "{{- end }}\n"
        "{{- end }}\n{{- end -}}\n"
    ),
    "charts/common/templates/_pod.tpl": (
        '{{- define "common.pod" -}}\n'
        "{{- $root := .root -}}\n"
        "spec:\n"
        "  {{- if ge ($root.Capabilities.KubeVersion.Minor | int) 29 }}\n"
        "  hostUsers: {{ $root.Values.defaultPodOptions.hostUsers }}\n"
        "  {{- end }}\n"
        "  {{- if ge ($root.Capabilities.KubeVersion.Minor | int) 32 }}\n"
        "  resources: {{ toJson $root.Values.defaultPodOptions.resources }}\n"
        "  {{- end }}\n"
        "  containers:\n"
        "  {{- range $cname, $ctr := .c.containers }}\n"
        "    - name: {{ $cname }}\n"
        '      image: "{{ $ctr.image.repository }}:{{ $ctr.image.tag }}"\n'
        "      {{- with $ctr.env }}\n      env:\n"
        "      {{- range $k, $v := . }}\n        - name: {{ $k }}\n"
        "          value: {{ tpl (toString $v) $root | quote }}\n"
        "      {{- end }}\n      {{- end }}\n"
        "  {{- end }}\n"
        "{{- end -}}\n"
    ),
    "charts/common/templates/_route.tpl": (
        '{{- define "common.render.routes" -}}\n'
        "{{- range $name, $r := .Values.route }}\n---\n"
        '{{- if $.Capabilities.APIVersions.Has "gateway.networking.k8s.io/v1/HTTPRoute" }}\n'
        "apiVersion: gateway.networking.k8s.io/v1\n"
        "{{- else }}\napiVersion: gateway.networking.k8s.io/v1alpha2\n{{- end }}\n"
        "kind: HTTPRoute\nmetadata:\n  name: {{ $.Release.Name }}-{{ $name }}\n"
        "spec:\n  hostnames: {{ toJson $r.hostnames }}\n"
        "  parentRefs: {{ toJson $r.parentRefs }}\n"
        "{{- end }}\n{{- end -}}\n"
    ),
}

APP = {
    "Chart.yaml": (
        "apiVersion: v2\nname: app\nversion: {version}\n"
        "dependencies:\n  - name: common\n    version: 4.1.1\n"
        "    repository: https://charts.example.invalid\n"
    ),
    "values.yaml": (
        "defaultPodOptions:\n  hostUsers: true\n  resources: {}\n"
        "controllers: {}\nservice: {}\npersistence: {}\nroute: {}\n"
    ),
    "values.schema.json": (
        '{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",'
        ' "properties": {"controllers": {"type": "object"},'
        ' "service": {"type": "object"}, "route": {"type": "object"}}}\n'
    ),
    # app-template's shape: the file starts with `---` and blank lines, so its first
    # document keeps a `---` of its own (Helm <= 4.2 splits on `---` after a newline)
    "templates/common.yaml": '---\n\n\n{{ include "common.loader.all" . }}\n',
    **COMMON,
}

SUB_A = {
    "charts/metrics/Chart.yaml": "apiVersion: v2\nname: metrics\nversion: 8.4.0\n",
    "charts/metrics/values.yaml": "replicas: 1\n",
    "charts/metrics/templates/NOTES.txt": "metrics: {{ .Release.Name }}: : [not yaml\n",
    "charts/metrics/templates/deployment.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
        "  name: {{ .Release.Name }}-{{ .Chart.Name }}\n"
        "spec:\n  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: m}}\n"
        "  template:\n    metadata: {labels: {app: m}}\n"
        "    spec: {containers: [{name: m, image: 'registry.k8s.io/m:v2'}]}\n"
    ),
    "charts/metrics/templates/service.yaml": (
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Name }}\n"
        "spec: {ports: [{port: 8080}]}\n"
    ),
}
SUB_B = {
    "charts/grafana/Chart.yaml": "apiVersion: v2\nname: grafana\nversion: 12.11.1\n",
    "charts/grafana/templates/NOTES.txt": "1. Get your 'admin' password: kubectl get secret\n",
    "charts/grafana/templates/secret.yaml": (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-grafana\n"
        "stringData: {admin-password: fixed}\n"
    ),
}
CRDS = {
    "charts/crds/Chart.yaml": "apiVersion: v2\nname: crds\nversion: 0.0.0\n",
    "charts/crds/crds/monitors.yaml": (
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata:\n  name: servicemonitors.monitoring.coreos.com\n"
        "spec:\n  group: monitoring.coreos.com\n  scope: Namespaced\n"
        "  names: {kind: ServiceMonitor, plural: servicemonitors}\n"
        "  versions:\n    - name: v1\n      served: true\n      storage: true\n"
        "      schema: {openAPIV3Schema: {type: object}}\n"
    ),
    "charts/crds/crds/README.md": "not a CRD: Helm loads only .yaml, .yml and .json here\n",
}
STACK = {
    "Chart.yaml": (
        "apiVersion: v2\nname: stack\nversion: {version}\n"
        "dependencies:\n"
        "  - {name: crds, version: 0.0.0, condition: crds.enabled}\n"
        "  - {name: metrics, version: 8.4.0, condition: metrics.enabled}\n"
        "  - {name: metrics, alias: metrics-ha, version: 8.4.0, condition: metricsHa.enabled}\n"
        "  - {name: grafana, version: 12.11.1, condition: grafana.enabled}\n"
    ),
    "values.yaml": (
        "crds: {enabled: true}\nmetrics: {enabled: true}\nmetricsHa: {enabled: true}\n"
        "metrics-ha: {replicas: 3}\ngrafana: {enabled: false}\n"
    ),
    "templates/NOTES.txt": "stack installed. Check its status by running: kubectl get pods\n",
    "templates/prometheus.yaml": (
        "apiVersion: monitoring.coreos.com/v1\nkind: Prometheus\nmetadata:\n"
        "  name: {{ .Release.Name }}-prometheus\nspec: {replicas: 1}\n"
        "---\n"
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n"
        "  name: {{ .Release.Name }}-self\nspec: {endpoints: [{port: web}]}\n"
        "---\n"
        "apiVersion: monitoring.coreos.com/v1\nkind: Alertmanager\nmetadata:\n"
        "  name: {{ .Release.Name }}-alertmanager\n"
    ),
    "templates/rules.txt": (
        "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n"
        "  name: {{ .Release.Name }}-rules\nspec: {groups: []}\n"
    ),
    "templates/webhooks.yaml": (
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
        "metadata:\n  name: {{ .Release.Name }}-admission\nwebhooks: []\n"
        "---\n"
        "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n"
        "metadata:\n  name: {{ .Release.Name }}-admission\nwebhooks: []\n"
    ),
    "templates/operator.yaml": (
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}-operator\n"
        "---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-operator\n"
        "spec:\n  selector: {matchLabels: {app: op}}\n  template:\n"
        "    metadata: {labels: {app: op}}\n"
        "    spec: {containers: [{name: op, image: 'quay.io/example/operator:v0.80'}]}\n"
    ),
    "templates/admission-hooks.yaml": (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n"
        "  name: {{ .Release.Name }}-admission-create\n  annotations:\n"
        '    "helm.sh/hook": pre-install,pre-upgrade\n    "helm.sh/hook-weight": "5"\n'
        "spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: c, image: x}]}}}\n"
        "---\n"
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n"
        "  name: {{ .Release.Name }}-admission\n  annotations:\n"
        '    "helm.sh/hook": pre-install,pre-upgrade,post-install,post-upgrade\n'
        '    "helm.sh/hook-weight": "-5"\n'
        "---\n"
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n"
        "  name: {{ .Release.Name }}-admission-patch\n  annotations:\n"
        '    "helm.sh/hook": " Post-Install, post-upgrade"\n'
        "spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: c, image: x}]}}}\n"
        "---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        "  name: {{ .Release.Name }}-argo-only\n  annotations:\n"
        '    "helm.sh/hook": pre-install,post-sync\n'
        "data: {dropped: by Helm, unknown event}\n"
    ),
    "templates/tests/test.yaml": (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n"
        "  annotations: {helm.sh/hook: test}\n"
        "spec: {restartPolicy: Never, containers: [{name: t, image: busybox}]}\n"
        "---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-test-data\n"
        "  annotations: {helm.sh/hook: test-success}\n"
        "---\n"
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test-failure\n"
        "  annotations: {helm.sh/hook: test-failure}\n"
        "spec: {restartPolicy: Never, containers: [{name: t, image: busybox}]}\n"
    ),
    **SUB_A,
    **SUB_B,
    **CRDS,
}

CHARTS = {"watcher": WATCHER, "dns": DNS, "app": APP, "stack": STACK}

# values a homelab repo gives each release (the app one through valuesFrom + targetPath in
# the CLI tests); `app`'s are app-template's usual shape
VALUES: dict[str, dict[str, object]] = {
    "watcher": {"serviceMonitor": {"enabled": True}, "podDisruptionBudget": {"enabled": True}},
    "dns": {"provider": {"name": "cloudflare"}, "policy": "sync"},
    "app": {
        "defaultPodOptions": {
            "hostUsers": False,
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
        },
        "controllers": {
            "main": {
                "containers": {
                    "main": {
                        "image": {"repository": "ghcr.io/example/app", "tag": "1.2.3"},
                        "env": {"TZ": "UTC", "HOST": "{{ .Release.Name }}.example.com"},
                    }
                }
            },
            "worker": {
                "type": "cronjob",
                "cronjob": {"schedule": "*/5 * * * *"},
                "containers": {
                    "main": {"image": {"repository": "ghcr.io/example/worker", "tag": "1.0.0"}}
                },
            },
        },
        "service": {"main": {"ports": {"http": {"port": 8080}}}},
        "persistence": {"config": {"accessMode": "ReadWriteOnce", "size": "1Gi"}},
        "route": {
            "main": {
                "hostnames": ["app.example.com"],
                "parentRefs": [{"name": "gw", "namespace": "gateway"}],
            }
        },
    },
    "stack": {"metrics-ha": {"replicas": 2}},
}


def write_chart(root: Path, name: str, version: str = "1.0.0") -> Path:
    """The chart directory `root/<name>`."""
    files = {f"{name}/{k}": v.replace("{version}", version) for k, v in CHARTS[name].items()}
    return write_tree(root, files) / name


def package(root: Path, name: str, version: str = "1.0.0") -> Path:
    """A packaged chart archive (the SDK's `helm package`)."""
    chart = write_chart(root / f"src-{name}-{version}", name, version)
    out = root / "packages"
    out.mkdir(parents=True, exist_ok=True)
    return sdk.package(chart, out)
