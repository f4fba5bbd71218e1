"""HelmRelease -> release name, namespaces, chart spec, CRD policy; bad specs name the field."""

from __future__ import annotations

import pytest

from harness.flux.api import ObjectRef
from harness.flux.helm.release import parse_helm_release, shorten_name
from harness.flux.spec import SpecError
from tests.flux.helm.charts import helm_release, local_chart, repo_chart


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # helm-controller internal/release/name_test.go vectors
        ("release-name", "release-name"),
        (
            "release-name-with-very-long-name-which-is-longer-than-53-characters",
            "release-name-with-very-long-name-which-i-788ca0d0d7b0",
        ),
        (
            "another-release-name-with-very-long-name-which-is-longer-than-53-characters",
            "another-release-name-with-very-long-name-7e72150d5a36",
        ),
    ],
)
def test_shorten_name_matches_helm_controller(name: str, expected: str) -> None:
    assert shorten_name(name) == expected
    assert len(shorten_name(name)) <= 53


def test_defaults_release_name_and_namespaces() -> None:
    hr = parse_helm_release(helm_release(chart=local_chart()))
    assert (hr.release_name, hr.release_namespace, hr.storage_namespace) == ("web", "apps", "apps")
    assert hr.chart is not None and hr.chart.version == "*"
    assert hr.chart.source == ObjectRef("GitRepository", "flux-system", "flux-system")
    assert (hr.install_crds, hr.upgrade_crds, hr.include_crds) == ("Create", "Skip", True)


def test_target_namespace_prefixes_the_release_name() -> None:
    hr = parse_helm_release(
        helm_release(chart=local_chart(), targetNamespace="web-prod", storageNamespace="flux")
    )
    assert hr.release_name == "web-prod-web"
    assert hr.release_namespace == "web-prod"
    assert hr.storage_namespace == "flux"


def test_release_name_wins_and_is_shortened() -> None:
    long = "x" * 60
    hr = parse_helm_release(
        helm_release(chart=local_chart(), releaseName=long, targetNamespace="n")
    )
    assert hr.release_name == shorten_name(long) and len(hr.release_name) == 53


def test_source_namespace_defaults_to_the_release_namespace() -> None:
    chart = repo_chart("1.0.0")
    del chart["sourceRef"]["namespace"]
    hr = parse_helm_release(helm_release(chart=chart))
    assert hr.chart is not None and hr.chart.source == ObjectRef("HelmRepository", "apps", "charts")


def test_chart_ref() -> None:
    hr = parse_helm_release(helm_release(chartRef={"kind": "OCIRepository", "name": "podinfo"}))
    assert hr.chart is None and hr.chart_ref == ObjectRef("OCIRepository", "apps", "podinfo")


def test_install_crds_skip_leaves_crds_out() -> None:
    hr = parse_helm_release(helm_release(chart=local_chart(), install={"crds": "Skip"}))
    assert not hr.include_crds


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "spec.chart or spec.chartRef is required"),
        ({"chart": {"spec": {"chart": "x"}}}, "spec.chart.spec.sourceRef.kind is required"),
        (
            {"chartRef": {"kind": "GitRepository", "name": "x"}},
            "is not OCIRepository, HelmChart or ExternalArtifact",
        ),
        ({"chart": {"spec": local_chart()}, "install": {"crds": "Yes"}}, "spec.install.crds"),
        ({"chart": {"spec": local_chart()}, "targetNamespace": "Bad_NS"}, "spec.targetNamespace"),
        ({"chart": {"spec": local_chart()}, "values": ["a"]}, "spec.values must be a mapping"),
        ({"chart": {"spec": local_chart()}, "valuesFrom": [{"kind": "Pod", "name": "x"}]}, "kind"),
        ({"chart": {"spec": local_chart()}, "releaseName": "Not_Valid"}, "release name"),
    ],
)
def test_bad_specs_name_the_field(spec: dict[str, object], message: str) -> None:
    obj = helm_release()
    obj["spec"] = spec
    with pytest.raises(SpecError, match=message):
        parse_helm_release(obj)
