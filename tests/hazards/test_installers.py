"""Which release installs a CRD group: a word of the group, or a known installer."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.hazards.installers import KNOWN_INSTALLERS, Installers, chart_basename, installs

# names and groups built from a few words, so that matches are common (and the known
# installers' names and groups appear), with the edge cases: "", "-", words with dashes
_WORDS = ["cert", "manager", "cert-manager", "io", "k8s", "x", "", "-", "cnpg", "gateway-api"]
_WORD = st.sampled_from(_WORDS)
_NAME = st.one_of(
    st.lists(_WORD, max_size=3).map("-".join),
    st.sampled_from([n for names in KNOWN_INSTALLERS.values() for n in names]),
)
_GROUP = st.one_of(
    st.lists(_WORD, max_size=4).map(".".join), st.sampled_from(sorted(KNOWN_INSTALLERS))
)


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


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_NAME, max_size=3), max_size=6), st.lists(_GROUP, max_size=5))
def test_the_index_answers_what_installs_answers_release_by_release(
    releases: list[list[str]], groups: list[str]
) -> None:
    index = Installers(releases)
    for group in groups:
        expected = [i for i, names in enumerate(releases) if installs(names, group)]
        assert index.matching(group) == expected
