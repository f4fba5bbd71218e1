"""Which Helm release (or manifest) most likely installs the CRDs of an API group.

Charts are not rendered for hazards, so a release is matched to a custom resource's group by
name: its release or chart name is a word of the group (`cert-manager.io` -> cert-manager,
`external-secrets.io` -> external-secrets), or it is a known installer of a group whose name
shares no word with it. Used both for HelmReleases in the Flux tree and for releases installed
before Flux (bootstrap helmfiles, k3s HelmCharts).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

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
    return _installs(frozenset(n for n in names if n), group)


@functools.lru_cache(maxsize=65536)
def _installs(names: frozenset[str], group: str) -> bool:
    """`installs`, once per (names, group): a pure function of its arguments, asked for the
    same preinstalled provisions and releases by every cluster and rule."""
    known = KNOWN_INSTALLERS.get(group, ())
    if any(n in known for n in names):
        return True
    labels = _labels(group)
    for name in names:
        words = name.split("-")
        if any(label == name or label in words for label in labels):
            return True
        if any(label.replace("-", "") == name.replace("-", "") for label in labels):
            return True
    return False


def _labels(group: str) -> list[str]:
    return [p for p in group.split(".") if p not in _GENERIC]


class Installers:
    """Which of many releases (each known by its names) likely install a group: `installs`
    for every release at once, by a lookup per label of the group instead of a test per
    release (a cluster has hundreds of releases and asks for every custom resource group)."""

    def __init__(self, names: Sequence[Iterable[str]]) -> None:
        self._by_name: dict[str, set[int]] = {}  # a name -> releases, for KNOWN_INSTALLERS
        self._by_word: dict[str, set[int]] = {}  # a name or a word of one -> releases
        self._by_squashed: dict[str, set[int]] = {}  # a name without dashes -> releases
        for i, of in enumerate(names):
            for name in of:
                if not name:
                    continue
                self._by_name.setdefault(name, set()).add(i)
                for word in {name, *name.split("-")}:
                    self._by_word.setdefault(word, set()).add(i)
                self._by_squashed.setdefault(name.replace("-", ""), set()).add(i)

    def matching(self, group: str) -> list[int]:
        """The indices (ascending) of the releases `installs` says install `group`."""
        found: set[int] = set()
        for name in KNOWN_INSTALLERS.get(group, ()):
            found |= self._by_name.get(name, set())
        for label in _labels(group):
            found |= self._by_word.get(label, set())
            found |= self._by_squashed.get(label.replace("-", ""), set())
        return sorted(found)


def chart_basename(chart: str) -> str:
    """`oci://ghcr.io/x/charts/cilium` or `cilium/cilium` -> `cilium`."""
    chart = chart.strip().rstrip("/")
    return chart.rsplit("/", 1)[-1].split(":", 1)[0] if chart else ""
