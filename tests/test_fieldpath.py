"""Field paths shown dyff-style and the documented `ignore_fields` pattern syntax."""

from __future__ import annotations

import pytest

from harness import fieldpath


def test_show_uses_dots_for_keys_and_brackets_for_indexes() -> None:
    assert fieldpath.show(("spec", "containers", 0, "image")) == "spec.containers[0].image"
    assert fieldpath.show(("metadata", "labels", "helm.sh/chart")) == (
        "metadata.labels.helm.sh/chart"
    )
    assert fieldpath.show(()) == "(document)"


def _m(pattern: str, path: tuple[str | int, ...], kind: str = "Deployment") -> bool:
    return fieldpath.compile_pattern(pattern).matches(kind, path)


def test_a_dot_matches_a_boundary_or_a_dot_inside_a_key() -> None:
    path = ("metadata", "labels", "helm.sh/chart")
    assert _m("metadata.labels.helm.sh/chart", path)
    assert not _m("metadata.labels.helm.sh/other", path)
    assert not _m("metadata.labels", ("metadata", "annotations"))


def test_escaped_dot_matches_only_a_literal_dot() -> None:
    assert _m(r"metadata.labels.helm\.sh/chart", ("metadata", "labels", "helm.sh/chart"))
    assert not _m(r"metadata.labels.helm\.sh/chart", ("metadata", "labels", "helm", "sh/chart"))


def test_star_stays_inside_one_key_double_star_crosses_segments() -> None:
    assert _m("metadata.annotations.checksum/*", ("metadata", "annotations", "checksum/config"))
    assert _m(
        "metadata.annotations.checksum/*", ("metadata", "annotations", "checksum/config.yaml")
    )
    assert not _m("metadata.*", ("metadata", "labels", "a"))
    assert _m("metadata.*", ("metadata", "labels"))
    assert _m("spec.**.checksum/config", ("spec", "template", "metadata", "checksum/config"))


def test_list_indexes() -> None:
    assert _m("spec.containers[0].image", ("spec", "containers", 0, "image"))
    assert not _m("spec.containers[1].image", ("spec", "containers", 0, "image"))
    assert _m("spec.containers[*].image", ("spec", "containers", 7, "image"))


def test_kind_prefix_limits_the_pattern() -> None:
    assert _m("Deployment:spec.replicas", ("spec", "replicas"), kind="Deployment")
    assert not _m("Deployment:spec.replicas", ("spec", "replicas"), kind="StatefulSet")
    assert _m("*Set:spec.replicas", ("spec", "replicas"), kind="StatefulSet")


def test_empty_pattern_is_rejected() -> None:
    with pytest.raises(ValueError):
        fieldpath.compile_pattern("  ")


def test_strip_removes_matching_subtrees_only() -> None:
    obj = {
        "metadata": {
            "labels": {"helm.sh/chart": "x-1", "app": "x"},
            "annotations": {"checksum/config": "abc", "checksum/secret": "def", "keep": "1"},
        },
        "spec": {"containers": [{"name": "a", "env": [1]}, {"name": "b", "env": [2]}]},
    }
    patterns = fieldpath.compile_patterns(
        [
            "metadata.labels.helm.sh/chart",
            "metadata.annotations.checksum/*",
            "spec.containers[*].env",
        ]
    )
    assert fieldpath.strip(obj, "Deployment", patterns) == {
        "metadata": {"labels": {"app": "x"}, "annotations": {"keep": "1"}},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
    }
    assert obj["metadata"]["labels"]["helm.sh/chart"] == "x-1"  # input untouched
    assert fieldpath.strip(obj, "Deployment", ()) is obj


def test_segments_tell_list_indexes_from_integer_keys() -> None:
    before = {"data": {1: "a"}, "items": ["x"]}
    assert fieldpath.segments(["data", 1], before) == ("data", "1")
    assert fieldpath.segments(["items", 0], before) == ("items", 0)
