"""Which Helm release (or manifest) most likely installs the CRDs of an API group.

Charts are not rendered for hazards, so a release is matched to a custom resource's group by
name: its release or chart name is a word of the group (`cert-manager.io` -> cert-manager,
`external-secrets.io` -> external-secrets), or it is a known installer of a group whose name
shares no word with it. Used both for HelmReleases in the Flux tree and for releases installed
before Flux (bootstrap helmfiles, k3s HelmCharts).
"""

from __future__ import annotations

from collections.abc import Iterable

# Groups whose installer's name shares no word with the group.
KNOWN_INSTALLERS: dict[str, tuple[str, ...]] = {
    "monitoring.coreos.com": (
        "kube-prometheus-stack",
        "prometheus-operator",
        "prometheus-operator-crds",
    ),
    "snapshot.storage.k8s.io": ("snapshot-controller", "external-snapshotter"),
    "groupsnapshot.storage.k8s.io": ("snapshot-controller", "external-snapshotter"),
    "upgrade.cattle.io": ("system-upgrade-controller", "system-upgrade"),
    "kubevirt.io": ("kubevirt", "kubevirt-operator"),
    "cdi.kubevirt.io": ("cdi", "cdi-operator"),
    "postgresql.cnpg.io": ("cloudnative-pg", "cnpg"),
    "gateway.networking.k8s.io": ("gateway-api", "gateway-api-crds", "envoy-gateway"),
    "gateway.networking.x-k8s.io": ("gateway-api", "gateway-api-crds", "envoy-gateway"),
}
_GENERIC = {"io", "com", "org", "net", "dev", "k8s", "x-k8s", "api", "apis", "app", "apps"}


def installs(names: Iterable[str], group: str) -> bool:
    """Whether a release known by `names` (release name, chart name) likely installs `group`."""
    names = {n for n in names if n}
    known = KNOWN_INSTALLERS.get(group, ())
    if any(n in known for n in names):
        return True
    labels = [p for p in group.split(".") if p not in _GENERIC]
    for name in names:
        words = name.split("-")
        if any(label == name or label in words for label in labels):
            return True
        if any(label.replace("-", "") == name.replace("-", "") for label in labels):
            return True
    return False


def chart_basename(chart: str) -> str:
    """`oci://ghcr.io/x/charts/cilium` or `cilium/cilium` -> `cilium`."""
    chart = chart.strip().rstrip("/")
    return chart.rsplit("/", 1)[-1].split(":", 1)[0] if chart else ""
