"""flux/api: a Kustomization of a version kustomize-controller does not serve is refused."""

from __future__ import annotations

import pytest

from harness.flux.api import SpecError, parse_kustomization


def kustomization(api: str) -> dict[str, object]:
    return {
        "apiVersion": api,
        "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {"path": "./apps", "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
    }


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
def test_served_versions_parse(version: str) -> None:
    ks = parse_kustomization(kustomization(f"kustomize.toolkit.fluxcd.io/{version}"))
    assert (ks.name, ks.path) == ("apps", "./apps")


@pytest.mark.parametrize("version", ["v9", "V1", "v2"])
def test_an_unserved_version_is_a_spec_error_naming_it(version: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_kustomization(kustomization(f"kustomize.toolkit.fluxcd.io/{version}"))
    assert str(err.value).startswith(
        f"apiVersion kustomize.toolkit.fluxcd.io/{version} is not served by kustomize-controller"
    )
