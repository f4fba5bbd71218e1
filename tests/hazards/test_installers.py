"""Which release installs a CRD group: a word of the group, or a known installer."""

from __future__ import annotations

from harness.hazards.installers import chart_basename, installs


def test_a_word_of_the_group_names_its_installer() -> None:
    assert installs(("cert-manager", "cert-manager"), "cert-manager.io")
    assert installs(("external-secrets",), "external-secrets.io")
    assert installs(("my-traefik", ""), "traefik.io")  # a word of the release name
    assert installs(("cilium",), "cilium.io")
    assert not installs(("cilium",), "cert-manager.io")


def test_known_installers_share_no_word_with_their_group() -> None:
    assert installs(("kps", "kube-prometheus-stack"), "monitoring.coreos.com")
    assert installs(("cnpg",), "postgresql.cnpg.io")
    assert not installs(("grafana",), "monitoring.coreos.com")


def test_generic_labels_match_nothing() -> None:
    assert not installs(("io", "apps"), "apps.example.io")
    assert not installs(("k8s",), "gateway.networking.k8s.io")
    assert not installs((), "cert-manager.io")


def test_chart_basename() -> None:
    assert chart_basename("oci://ghcr.io/x/charts/cilium") == "cilium"
    assert chart_basename("cilium/cilium") == "cilium"
    assert chart_basename("podinfo:6.5.0") == "podinfo"
    assert chart_basename(" charts/app/ ") == "app"
    assert chart_basename("") == ""
