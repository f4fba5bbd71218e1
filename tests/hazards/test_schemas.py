"""The validator against the API server's decisions: a table of cases, and CRDs shaped like
public charts' (cert-manager, the Gateway API, kube-prometheus-stack, cloudnative-pg)
against custom resources shaped like homelab repos' (the schemas here are our own, cut down).

What the API server does, as documented and as Flux reports it: a server-side apply types
the object against its schema first (`.spec.x: field not declared in schema`, `expected
numeric`), then validates it (required fields, a CRD's enums, bounds and patterns). A null
is "unset". kubeconform's strict mode agrees on unknown fields and types for built-ins."""

# ruff: noqa: E501 (literal messages and CRD fixtures read best unbroken)

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import yaml

from harness.hazards import schemas
from harness.hazards.schemas import BuiltinSchemas, Problem


@pytest.fixture(scope="module")
def k8s() -> BuiltinSchemas:
    return schemas.builtin("v1.36.0")


def deployment(**container: Any) -> dict[str, Any]:
    c = {"name": "web", "image": "nginx", **container}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "media", "creationTimestamp": None},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [c]}},
        },
    }


def check_builtin(k8s: BuiltinSchemas, obj: dict[str, Any]) -> list[str]:
    group, _, version = obj["apiVersion"].rpartition("/")
    root = k8s.root(group, version, obj["kind"])
    assert root is not None
    return [str(p) for p in schemas.validate_builtin(obj, root, k8s)]


C = "spec.template.spec.containers[0]"
BUILTIN_CASES = [
    ("valid", {}, []),
    ("unknown field", {"resourcess": {}}, [f"{C}.resourcess: unknown field"]),
    (
        "wrong type",
        {"ports": [{"containerPort": "80"}]},
        [f"{C}.ports[0].containerPort: wrong type: expected integer, got string"],
    ),
    (
        "missing required",
        {"ports": [{"name": "http"}]},
        [f"{C}.ports[0].containerPort: required field missing"],
    ),
    ("null is unset", {"resources": None, "args": None}, []),
    ("quantity as a number", {"resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}, []),
    (
        "int-or-string both ways",
        {
            "livenessProbe": {"httpGet": {"port": "http"}},
            "readinessProbe": {"tcpSocket": {"port": 8080}},
        },
        [],
    ),
    (
        "int-or-string refuses a bool",
        {"livenessProbe": {"httpGet": {"port": True}}},
        [f"{C}.livenessProbe.httpGet.port: wrong type: expected integer or string, got boolean"],
    ),
]


@pytest.mark.parametrize(
    ("case", "container", "want"), BUILTIN_CASES, ids=[c[0] for c in BUILTIN_CASES]
)
def test_builtin_table(
    k8s: BuiltinSchemas, case: str, container: dict[str, Any], want: list[str]
) -> None:
    assert check_builtin(k8s, deployment(**container)) == want


def test_builtin_unknown_top_level_field_and_metadata(k8s: BuiltinSchemas) -> None:
    obj = deployment()
    obj["sops"] = {"mac": "ENC[...]"}
    obj["metadata"]["labelz"] = {}
    assert check_builtin(k8s, obj) == ["metadata.labelz: unknown field", "sops: unknown field"]


def test_builtin_version_is_the_newest_shipped_not_above_the_cluster() -> None:
    assert schemas.builtin("v1.33.4+k3s1").used == "1.33"
    old = schemas.builtin("v1.20.0")
    assert old.used == "1.25" and "ships no schemas for Kubernetes 1.20" in old.note
    assert schemas.builtin("v1.36.0").digest != schemas.builtin("v1.33.0").digest


def test_builtin_reads_the_data_without_importing_the_package() -> None:
    # kubernetes-validate's __init__ imports jsonschema (a tenth of a second of a one-file
    # diff); harness reads only its data files, and decodes them only when a verdict is judged
    code = (
        "import sys; from harness.hazards import schemas; b = schemas.builtin('v1.36.0'); "
        "print(len(b.digest), 'kubernetes_validate' in sys.modules, 'defs' in vars(b), "
        "b.root('apps', 'v1', 'Deployment')['type'][0], 'defs' in vars(b))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["20", "False", "False", "object", "True"]


CERTIFICATE = """
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    required: [issuerRef, secretName]
    properties:
      secretName: {type: string}
      dnsNames: {type: array, items: {type: string}}
      duration: {type: string}
      issuerRef:
        type: object
        required: [name]
        properties:
          name: {type: string}
          kind: {type: string}
          group: {type: string}
      privateKey:
        type: object
        properties:
          algorithm: {type: string, enum: [RSA, ECDSA, Ed25519]}
          size: {type: integer}
  status:
    type: object
    x-kubernetes-preserve-unknown-fields: true
"""
HTTPROUTE = """
type: object
properties:
  spec:
    type: object
    properties:
      hostnames:
        type: array
        maxItems: 16
        items: {type: string, maxLength: 253, minLength: 1, pattern: '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'}
      parentRefs:
        type: array
        items:
          type: object
          required: [name]
          properties:
            name: {type: string}
            namespace: {type: string}
            sectionName: {type: string}
            port: {type: integer, format: int32, minimum: 1, maximum: 65535}
      rules:
        type: array
        default: [{matches: [{path: {type: PathPrefix, value: /}}]}]
        items:
          type: object
          properties:
            backendRefs:
              type: array
              items:
                type: object
                required: [name]
                properties:
                  name: {type: string}
                  port: {type: integer}
                  weight: {type: integer, default: 1, minimum: 0}
            matches:
              type: array
              items:
                type: object
                properties:
                  path:
                    type: object
                    properties:
                      type: {type: string, default: PathPrefix, enum: [Exact, PathPrefix, RegularExpression]}
                      value: {type: string, default: /}
"""
SERVICEMONITOR = """
type: object
properties:
  spec:
    type: object
    required: [selector]
    properties:
      selector:
        type: object
        properties:
          matchLabels: {type: object, additionalProperties: {type: string}}
      endpoints:
        type: array
        items:
          type: object
          properties:
            port: {type: string}
            targetPort:
              anyOf: [{type: integer}, {type: string}]
              x-kubernetes-int-or-string: true
            interval: {type: string, pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'}
            relabelings:
              type: array
              items:
                type: object
                properties:
                  action: {type: string, default: replace, enum: [replace, Replace, keep, Keep, drop, Drop, labelmap, LabelMap]}
                  sourceLabels: {type: array, items: {type: string}}
                  targetLabel: {type: string}
"""
CNPG_CLUSTER = """
type: object
required: [spec]
properties:
  spec:
    type: object
    required: [instances]
    properties:
      instances: {type: integer, minimum: 1, default: 1}
      imageName: {type: string}
      storage:
        type: object
        properties:
          size: {type: string}
          storageClass: {type: string}
      postgresql:
        type: object
        properties:
          parameters: {type: object, additionalProperties: {type: string}}
      plugins:
        type: array
        items:
          type: object
          required: [name]
          properties:
            name: {type: string}
            parameters:
              type: object
              x-kubernetes-preserve-unknown-fields: true
      template:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
      backup:
        type: object
        properties:
          retentionPolicy: {type: string}
        oneOf:
          - required: [retentionPolicy]
          - required: [barmanObjectStore]
        x-kubernetes-preserve-unknown-fields: true
"""


def check_cr(k8s: BuiltinSchemas, schema_yaml: str, cr_yaml: str) -> list[str]:
    cr = yaml.safe_load(cr_yaml)
    found = schemas.validate_custom(cr, yaml.safe_load(schema_yaml), k8s.object_meta, k8s.defs)
    return [str(p) for p in found]


CR_CASES = [
    (
        "certificate valid",
        CERTIFICATE,
        """
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: wildcard, namespace: network}
spec:
  secretName: wildcard-tls
  issuerRef: {name: letsencrypt-production, kind: ClusterIssuer}
  dnsNames: [example.com, "*.example.com"]
  privateKey: {algorithm: ECDSA, size: 256}
status: {conditions: [{type: Ready}]}
""",
        [],
    ),
    (
        "certificate unknown field, bad enum, missing required",
        CERTIFICATE,
        """
metadata: {name: w}
spec:
  secretname: wildcard-tls
  issuerRef: {kind: ClusterIssuer}
  privateKey: {algorithm: DSA}
""",
        [
            "spec.secretname: unknown field",
            "spec.issuerRef.name: required field missing",
            'spec.privateKey.algorithm: not one of the allowed values ("RSA", "ECDSA", "Ed25519")',
            "spec.secretName: required field missing",
        ],
    ),
    (
        "httproute valid, defaults fill what is left out",
        HTTPROUTE,
        """
metadata: {name: plex, namespace: media}
spec:
  hostnames: [plex.example.com]
  parentRefs: [{name: envoy-external, namespace: network, sectionName: https}]
  rules: [{backendRefs: [{name: plex, port: 32400}]}]
""",
        [],
    ),
    (
        "httproute bounds and pattern",
        HTTPROUTE,
        """
metadata: {name: plex}
spec:
  hostnames: [Plex.Example.com]
  parentRefs: [{name: gw, port: 0}]
  rules: [{backendRefs: [{port: 80, weight: -1}]}]
""",
        [
            "spec.hostnames[0]: does not match the pattern "
            "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
            "spec.parentRefs[0].port: below the minimum 1",
            "spec.rules[0].backendRefs[0].weight: below the minimum 0",
            "spec.rules[0].backendRefs[0].name: required field missing",
        ],
    ),
    (
        "servicemonitor int-or-string and maps",
        SERVICEMONITOR,
        """
metadata: {name: m, labels: {release: kps}}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: plex}}
  endpoints:
    - {targetPort: 9090, interval: 1m}
    - {targetPort: metrics, interval: 30s, relabelings: [{action: labeldrop}]}
""",
        [
            'spec.endpoints[1].relabelings[0].action: not one of the allowed values ("replace", '
            '"Replace", "keep", "Keep", "drop", "Drop", "labelmap", "LabelMap")'
        ],
    ),
    (
        "servicemonitor wrong types",
        SERVICEMONITOR,
        """
metadata: {name: m}
spec:
  selector: {matchLabels: {app: 1}}
  endpoints: [{targetPort: [9090], port: 80}]
""",
        [
            "spec.selector.matchLabels.app: wrong type: expected string, got integer",
            "spec.endpoints[0].targetPort: wrong type: expected integer or string, got array",
            "spec.endpoints[0].port: wrong type: expected string, got integer",
        ],
    ),
    (
        "cnpg cluster: preserved and embedded fields, defaults, oneOf",
        CNPG_CLUSTER,
        """
metadata: {name: postgres, namespace: database}
spec:
  imageName: ghcr.io/cloudnative-pg/postgresql:17
  instances: 3
  storage: {size: 20Gi, storageClass: openebs-hostpath}
  postgresql: {parameters: {max_connections: "400"}}
  plugins: [{name: barman-cloud.cloudnative-pg.io, parameters: {barmanObjectName: r2, anything: [1]}}]
  template:
    apiVersion: v1
    kind: Pod
    metadata: {labels: {a: b}}
    spec: {whatever: true}
  backup: {retentionPolicy: 30d}
""",
        [],
    ),
    (
        "cnpg cluster: embedded metadata is ObjectMeta, oneOf, required with a default",
        CNPG_CLUSTER,
        """
metadata: {name: postgres}
spec:
  postgresql: {parameters: {max_connections: 400}}
  template: {metadata: {labelz: {}}}
  backup: {}
""",
        [
            "spec.postgresql.parameters.max_connections: wrong type: expected string, got integer",
            "spec.template.metadata.labelz: unknown field",
            "spec.backup: matches 0 of its schema's oneOf (exactly one allowed)",
        ],
    ),
    (
        "a CR's metadata is typed as ObjectMeta whatever its CRD says",
        CERTIFICATE,
        """
metadata: {name: w, annotation: {a: b}}
spec: {secretName: s, issuerRef: {name: i}}
""",
        ["metadata.annotation: unknown field"],
    ),
]


@pytest.mark.parametrize(("case", "schema", "cr", "want"), CR_CASES, ids=[c[0] for c in CR_CASES])
def test_custom_resource_table(
    k8s: BuiltinSchemas, case: str, schema: str, cr: str, want: list[str]
) -> None:
    assert check_cr(k8s, schema, cr) == want


def test_an_object_type_without_properties_keeps_no_fields() -> None:
    """Structural schemas: `type: object` alone declares no field (the EMQX CRD whose
    nested metadata refused `creationTimestamp` in Flux's dry-run)."""
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"m": {"type": "object"}}}},
    }
    cr = {"metadata": {"name": "x"}, "spec": {"m": {"creationTimestamp": None}}}
    assert [str(p) for p in schemas.validate_custom(cr, schema, None, {})] == [
        "spec.m.creationTimestamp: unknown field"
    ]


def test_crd_versions_served_and_deprecated() -> None:
    crd = yaml.safe_load(
        """
spec:
  group: example.io
  names: {kind: Widget}
  versions:
    - {name: v1, served: true, schema: {openAPIV3Schema: {type: object}}}
    - {name: v1beta1, served: true, deprecated: true, deprecationWarning: use v1}
    - {name: v1alpha1, served: false}
"""
    )
    found = schemas.crd_from(crd, "sha")
    assert found is not None and (found.group, found.kind) == ("example.io", "Widget")
    v = found.versions
    assert (v["v1"].served, v["v1beta1"].deprecated, v["v1beta1"].warning) == (True, True, "use v1")
    assert v["v1alpha1"].served is False and v["v1alpha1"].schema is None


def test_problems_per_document_are_capped() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {}}}}
    cr = {"spec": {f"f{i}": i for i in range(20)}}
    found = schemas.validate_custom(cr, schema, None, {})
    assert len(found) == schemas.MAX_PROBLEMS and found[0] == Problem("spec.f0", "unknown field")


def test_a_go_pattern_python_cannot_read_is_not_judged() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "(?P<x"}}}
    assert schemas.validate_custom({"s": "anything"}, schema, None, {}) == []
