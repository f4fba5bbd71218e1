"""`.Capabilities` as the cluster would give them to a chart: a Kubernetes version and the
set of API versions it serves.

helm-controller renders against the live cluster's discovery: `.Capabilities.KubeVersion` is
the server's version and `.Capabilities.APIVersions` holds every served `group/version` and
every `group/version/Kind`, CRDs included. Charts branch on both (app-template picks
`gateway.networking.k8s.io/v1` for an HTTPRoute only when `Has
"gateway.networking.k8s.io/v1/HTTPRoute"`, many charts gate a ServiceMonitor on
`monitoring.coreos.com/v1`, a PodDisruptionBudget on `policy/v1/PodDisruptionBudget`).
`helm template` without a cluster knows none of that. harness builds the set per cluster:

- the built-in group/versions and kinds Kubernetes serves by default at `helm.kube_version`
  (`BUILTIN`, from 1.16 on: GA APIs and the betas that were on by default, with the release
  each appeared in and the one that stopped serving it);
- every CRD the cluster's Flux targets render (each served version, with its kind);
- the API version and kind of every custom resource those targets apply (a healthy cluster
  serves it, whoever installed the CRD: a HelmRelease, a bootstrap helmfile);
- the CRDs harness recognises as preinstalled (bootstrap manifests, Talos/k3s manifests:
  hazards/preinstalled.py; handed in by the caller, this floor cannot scan for them);
- `helm.api_versions` from the config, verbatim.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core.config import DEFAULT_KUBE_VERSION as DEFAULT_KUBE_VERSION

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
_CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")

_CORE = (
    "Binding",
    "ComponentStatus",
    "ConfigMap",
    "Endpoints",
    "Event",
    "LimitRange",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodTemplate",
    "ReplicationController",
    "ResourceQuota",
    "Secret",
    "Service",
    "ServiceAccount",
    # kinds of subresources, which discovery lists under the parent's group/version
    "Eviction",
    "NodeProxyOptions",
    "PodAttachOptions",
    "PodExecOptions",
    "PodPortForwardOptions",
    "PodProxyOptions",
    "Scale",
    "ServiceProxyOptions",
    "TokenRequest",
)
_WEBHOOKS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
_REVIEWS = (
    "LocalSubjectAccessReview",
    "SelfSubjectAccessReview",
    "SelfSubjectRulesReview",
    "SubjectAccessReview",
)
_RBAC = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
_FLOWCONTROL = ("FlowSchema", "PriorityLevelConfiguration")
_NONE = 1000  # still served
STILL_SERVED = _NONE  # the "no longer served from" minor of a version still served

# (group/version, kinds, first minor served by default, first minor no longer served)
BUILTIN: tuple[tuple[str, tuple[str, ...], int, int], ...] = (
    ("v1", _CORE, 0, _NONE),
    ("admissionregistration.k8s.io/v1", _WEBHOOKS, 16, _NONE),
    (
        "admissionregistration.k8s.io/v1",
        ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"),
        30,
        _NONE,
    ),
    ("admissionregistration.k8s.io/v1beta1", _WEBHOOKS, 9, 22),
    ("apiextensions.k8s.io/v1", ("CustomResourceDefinition",), 16, _NONE),
    ("apiextensions.k8s.io/v1beta1", ("CustomResourceDefinition",), 7, 22),
    ("apiregistration.k8s.io/v1", ("APIService",), 10, _NONE),
    ("apiregistration.k8s.io/v1beta1", ("APIService",), 7, 22),
    (
        "apps/v1",
        ("ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "Scale", "StatefulSet"),
        9,
        _NONE,
    ),
    ("apps/v1beta1", ("ControllerRevision", "Deployment", "Scale", "StatefulSet"), 5, 16),
    (
        "apps/v1beta2",
        ("ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "Scale", "StatefulSet"),
        8,
        16,
    ),
    ("authentication.k8s.io/v1", ("TokenReview",), 6, _NONE),
    ("authentication.k8s.io/v1", ("SelfSubjectReview",), 28, _NONE),
    ("authentication.k8s.io/v1beta1", ("TokenReview",), 3, 22),
    ("authorization.k8s.io/v1", _REVIEWS, 6, _NONE),
    ("authorization.k8s.io/v1beta1", _REVIEWS, 3, 22),
    ("autoscaling/v1", ("HorizontalPodAutoscaler",), 2, _NONE),
    ("autoscaling/v2", ("HorizontalPodAutoscaler",), 23, _NONE),
    ("autoscaling/v2beta1", ("HorizontalPodAutoscaler",), 8, 25),
    ("autoscaling/v2beta2", ("HorizontalPodAutoscaler",), 12, 26),
    ("batch/v1", ("Job",), 2, _NONE),
    ("batch/v1", ("CronJob",), 21, _NONE),
    ("batch/v1beta1", ("CronJob",), 8, 25),
    ("certificates.k8s.io/v1", ("CertificateSigningRequest",), 19, _NONE),
    ("certificates.k8s.io/v1beta1", ("CertificateSigningRequest",), 4, 22),
    ("coordination.k8s.io/v1", ("Lease",), 14, _NONE),
    ("coordination.k8s.io/v1beta1", ("Lease",), 12, 22),
    ("discovery.k8s.io/v1", ("EndpointSlice",), 21, _NONE),
    ("discovery.k8s.io/v1beta1", ("EndpointSlice",), 17, 25),
    ("events.k8s.io/v1", ("Event",), 19, _NONE),
    ("events.k8s.io/v1beta1", ("Event",), 8, 25),
    ("extensions/v1beta1", ("Ingress",), 0, 22),
    (
        "extensions/v1beta1",
        ("DaemonSet", "Deployment", "NetworkPolicy", "PodSecurityPolicy", "ReplicaSet", "Scale"),
        0,
        16,
    ),
    ("flowcontrol.apiserver.k8s.io/v1", _FLOWCONTROL, 29, _NONE),
    ("flowcontrol.apiserver.k8s.io/v1beta3", _FLOWCONTROL, 26, 32),
    ("flowcontrol.apiserver.k8s.io/v1beta2", _FLOWCONTROL, 23, 29),
    ("flowcontrol.apiserver.k8s.io/v1beta1", _FLOWCONTROL, 20, 26),
    ("networking.k8s.io/v1", ("NetworkPolicy",), 7, _NONE),
    ("networking.k8s.io/v1", ("Ingress", "IngressClass"), 19, _NONE),
    ("networking.k8s.io/v1", ("IPAddress", "ServiceCIDR"), 33, _NONE),
    ("networking.k8s.io/v1beta1", ("Ingress",), 14, 22),
    ("networking.k8s.io/v1beta1", ("IngressClass",), 18, 22),
    ("node.k8s.io/v1", ("RuntimeClass",), 20, _NONE),
    ("node.k8s.io/v1beta1", ("RuntimeClass",), 14, 25),
    ("policy/v1", ("PodDisruptionBudget",), 21, _NONE),
    ("policy/v1beta1", ("PodDisruptionBudget", "PodSecurityPolicy"), 0, 25),
    ("rbac.authorization.k8s.io/v1", _RBAC, 8, _NONE),
    ("rbac.authorization.k8s.io/v1beta1", _RBAC, 6, 22),
    (
        "resource.k8s.io/v1",
        ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"),
        34,
        _NONE,
    ),
    ("scheduling.k8s.io/v1", ("PriorityClass",), 14, _NONE),
    ("scheduling.k8s.io/v1beta1", ("PriorityClass",), 11, 22),
    ("storage.k8s.io/v1", ("StorageClass", "VolumeAttachment"), 13, _NONE),
    ("storage.k8s.io/v1", ("CSINode",), 17, _NONE),
    ("storage.k8s.io/v1", ("CSIDriver",), 18, _NONE),
    ("storage.k8s.io/v1", ("CSIStorageCapacity",), 24, _NONE),
    ("storage.k8s.io/v1", ("VolumeAttributesClass",), 34, _NONE),
    ("storage.k8s.io/v1beta1", ("CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"), 0, 22),
    ("storage.k8s.io/v1beta1", ("CSIStorageCapacity",), 21, 27),
)
# every group the API server itself serves (whatever the version): objects of these groups
# say nothing about CRDs
BUILTIN_GROUPS = frozenset(
    {gv.rpartition("/")[0] for gv, *_rest in BUILTIN}
    | {"internal.apiserver.k8s.io", "storagemigration.k8s.io", "metrics.k8s.io"}
)


class VersionError(ValueError):
    """Not a Kubernetes version."""


@dataclass(frozen=True)
class Capabilities:
    """What a chart sees as `.Capabilities`: the Kubernetes version (passed as written) and
    the API versions, sorted and unique."""

    kube_version: str = DEFAULT_KUBE_VERSION
    api_versions: tuple[str, ...] = ()
    digest: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.digest:
            text = "\n".join([self.kube_version, *self.api_versions])
            object.__setattr__(self, "digest", hashlib.sha256(text.encode()).hexdigest())

    def __repr__(self) -> str:  # a render cache key holds this: the digest says it all
        return f"Capabilities({self.kube_version}, {len(self.api_versions)} APIs, {self.digest})"

    def has(self, api: str) -> bool:
        return api in self.api_versions


def minor(kube_version: str) -> int:
    """The minor of `v1.33.4+k3s1`, `1.29`, `v1.31.0-gke.1` (Kubernetes' generic parse)."""
    match = _VERSION.match(kube_version.strip())
    if match is None:
        raise VersionError(f"{kube_version!r} is not a Kubernetes version like v1.33.0")
    return int(match.group(2))


def builtin(kube_version: str) -> set[str]:
    """The built-in `group/version` and `group/version/Kind` entries served at that version."""
    at = minor(kube_version)
    out: set[str] = set()
    for gv, kinds, since, until in BUILTIN:
        if since <= at < until:
            out.add(gv)
            out.update(f"{gv}/{kind}" for kind in kinds)
    return out


def crd_apis(obj: Mapping[str, Any]) -> set[str]:
    """The entries a CustomResourceDefinition object adds: each served version and its kind."""
    api = str(obj.get("apiVersion") or "")
    if (api.rpartition("/")[0], obj.get("kind")) != _CRD:
        return set()
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return set()
    names = spec.get("names")
    group = spec.get("group")
    kind = names.get("kind") if isinstance(names, dict) else None
    if not isinstance(group, str) or not group or not isinstance(kind, str) or not kind:
        return set()
    versions: list[str] = []
    for entry in spec.get("versions") or []:
        if isinstance(entry, dict) and entry.get("name") and entry.get("served", True):
            versions.append(str(entry["name"]))
    if not versions and spec.get("version"):  # apiextensions v1beta1's single version
        versions.append(str(spec["version"]))
    out: set[str] = set()
    for version in versions:
        out.add(f"{group}/{version}")
        out.add(f"{group}/{version}/{kind}")
    return out


def applied_apis(obj: Mapping[str, Any]) -> set[str]:
    """A custom resource's `group/version` and `group/version/Kind` (built-ins add none)."""
    api, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api, str) or "/" not in api or not isinstance(kind, str) or not kind:
        return set()
    if api.rpartition("/")[0] in BUILTIN_GROUPS:
        return set()
    return {api, f"{api}/{kind}"}


def for_cluster(
    objects: Iterable[Mapping[str, Any]],
    kube_version: str = DEFAULT_KUBE_VERSION,
    extras: Iterable[str] = (),
    preinstalled: Iterable[str] = (),
) -> Capabilities:
    """One cluster's capabilities from what its Flux targets render (module docstring)."""
    apis = builtin(kube_version)
    for obj in objects:
        apis |= crd_apis(obj)
        apis |= applied_apis(obj)
    apis.update(preinstalled)
    apis.update(extras)
    return Capabilities(kube_version, tuple(sorted(apis)))


# -- a chart's `kubeVersion` (Chart.yaml) ---------------------------------------------------------
# Helm's install refuses a chart whose `kubeVersion` constraint the cluster's version does not
# satisfy ("chart requires kubeVersion: ... which is incompatible with Kubernetes ..."); `helm
# template` checks it too, the SDK's render does not. Constraints are Masterminds semver's:
# `||` between alternatives, `,` or spaces between conditions, `a - b` ranges, the operators
# = != > < >= <= ~ ~> ^, `x`/`X`/`*` wildcards; a prerelease version only satisfies a
# condition that itself names a prerelease (`>=1.21.0-0`, the usual idiom).

_SEMVER = re.compile(
    r"^v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?"
    r"(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$"
)
_CONDITION = re.compile(r"^(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*(\S+)$")
_HYPHEN = re.compile(r"(\S+)\s+-\s+(\S+)")


class ConstraintError(ValueError):
    """A `kubeVersion` constraint that does not parse."""


@dataclass(frozen=True)
class _Ver:
    parts: tuple[int, int, int]
    pre: str = ""
    given: int = 3  # how many of major.minor.patch were numbers (the rest wildcards/absent)


def _parse_version(text: str) -> _Ver:
    match = _SEMVER.match(text.strip())
    if match is None:
        raise ConstraintError(f"{text!r} is not a version")
    nums: list[int] = []
    for group in match.groups()[:3]:
        if group is None or not group.isdigit():
            break
        nums.append(int(group))
    given = len(nums)
    nums += [0] * (3 - given)
    return _Ver((nums[0], nums[1], nums[2]), match.group(4) or "", given)


def _pre_key(pre: str) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split("."))


def _cmp(a: _Ver, b: _Ver) -> int:
    if a.parts != b.parts:
        return -1 if a.parts < b.parts else 1
    if a.pre == b.pre:
        return 0
    if not a.pre or not b.pre:  # a release sorts after its prereleases
        return 1 if not a.pre else -1
    return -1 if _pre_key(a.pre) < _pre_key(b.pre) else 1


def _bump(v: _Ver, at: int) -> _Ver:
    """The first version past the wildcard range at position `at` (0 major, 1 minor)."""
    parts = list(v.parts)
    parts[at] += 1
    for i in range(at + 1, 3):
        parts[i] = 0
    return _Ver((parts[0], parts[1], parts[2]), "", 3)


def _condition(text: str, v: _Ver) -> bool:
    match = _CONDITION.match(text)
    if match is None:
        raise ConstraintError(f"{text!r} is not a version condition")
    op, c = match.group(1) or "=", _parse_version(match.group(2))
    if v.pre and not c.pre:
        return False
    lo = _Ver(c.parts, c.pre)
    wild = c.given < 3
    if op in ("=", "!="):
        if wild:
            inside = c.given == 0 or (_cmp(v, lo) >= 0 and _cmp(v, _bump(c, c.given - 1)) < 0)
        else:
            inside = _cmp(v, lo) == 0
        return inside if op == "=" else not inside
    if op == ">":
        return _cmp(v, _bump(c, c.given - 1)) >= 0 if wild and c.given else _cmp(v, lo) > 0
    if op in (">=", "=>"):
        return _cmp(v, lo) >= 0
    if op == "<":
        return _cmp(v, lo) < 0
    if op in ("<=", "=<"):
        return _cmp(v, _bump(c, c.given - 1)) < 0 if wild and c.given else _cmp(v, lo) <= 0
    if op in ("~", "~>"):
        upper = _bump(c, 0 if c.given < 2 else 1)
        return _cmp(v, lo) >= 0 and _cmp(v, upper) < 0
    # ^: the leftmost non-zero part stays
    at = 0
    if c.parts[0] == 0 and c.given > 1:
        at = 1 if c.parts[1] != 0 or c.given < 3 else 2
    return _cmp(v, lo) >= 0 and _cmp(v, _bump(c, at)) < 0


def satisfies(kube_version: str, constraint: str) -> bool:
    """Whether a Kubernetes version satisfies a chart's `kubeVersion` constraint."""
    v = _parse_version(kube_version)
    for alternative in constraint.split("||"):
        text = _HYPHEN.sub(r">=\1,<=\2", alternative)
        text = re.sub(r"(!=|>=|=>|<=|=<|~>|[=<>~^])\s+", r"\1", text)
        conditions = [c for c in re.split(r"[\s,]+", text.strip()) if c]
        if conditions and all(_condition(c, v) for c in conditions):
            return True
    return False
