"""spec: Kustomizations and HelmReleases read and reject fields the same way."""

from __future__ import annotations

from typing import Any

import pytest

from harness.flux.api import parse_kustomization
from harness.flux.helm.release import parse_helm_release
from harness.flux.spec import SpecError, item, list_of, scalar, string, string_map


def _ks(**spec: Any) -> dict[str, Any]:
    base = {"path": "./x", "sourceRef": {"kind": "GitRepository", "name": "flux-system"}}
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "a", "namespace": "flux-system"},
        "spec": {**base, **spec},
    }


def _hr(**spec: Any) -> dict[str, Any]:
    chart = {"spec": {"chart": "c", "sourceRef": {"kind": "HelmRepository", "name": "r"}}}
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "a", "namespace": "default"},
        "spec": {"chart": chart, **spec},
    }


@pytest.mark.parametrize("value", [True, 3, 1.5, None, ["x"]])
def test_a_label_value_that_is_not_a_string_fails_both_kinds_alike(value: Any) -> None:
    common = {"commonMetadata": {"labels": {"tier": value}}}
    with pytest.raises(SpecError) as ks_error:
        parse_kustomization(_ks(**common))
    with pytest.raises(SpecError) as hr_error:
        parse_helm_release(_hr(**common))
    assert str(ks_error.value) == str(hr_error.value)
    assert str(ks_error.value).startswith("spec.commonMetadata.labels.tier must be a string")


def test_string_labels_pass_through_unchanged() -> None:
    labels = {"tier": "true", "n": "3"}
    ks = parse_kustomization(_ks(commonMetadata={"labels": labels}))
    hr = parse_helm_release(_hr(commonMetadata={"labels": labels}))
    assert ks.common_metadata is not None and dict(ks.common_metadata.labels) == labels
    assert dict(hr.common_labels) == labels


def test_each_reader_names_the_field_it_rejects() -> None:
    parent: dict[str, Any] = {"m": [1], "l": {"a": 1}, "s": True, "t": 5, "e": ""}
    with pytest.raises(SpecError, match=r"^spec\.l must be a list$"):
        list_of(parent, "l")
    with pytest.raises(SpecError, match=r"^here\.s must be a string$"):
        scalar(parent, "s", "here.s")
    assert scalar(parent, "t", "here.t") == "5"  # YAML typed a path or name as a number
    with pytest.raises(SpecError, match=r"^here\.t must be a string$"):
        string(parent, "t", "here.t")
    assert string(parent, "e", "here.e") is None
    with pytest.raises(SpecError, match=r"^here\.e is required$"):
        string(parent, "e", "here.e", required=True)
    with pytest.raises(SpecError, match="must hold non-empty strings"):
        item("", "files", non_empty=True)
    assert item("", "path") == ""
    with pytest.raises(SpecError, match=r"^sel must be a mapping$"):
        string_map(["a"], "sel")
