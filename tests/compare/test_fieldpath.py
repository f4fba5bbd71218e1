"""Field paths shown dyff-style and the documented `ignore_fields` pattern syntax."""

from __future__ import annotations

import pytest

from harness.compare import fieldpath


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


# -- keyed list items -----------------------------------------------------------------------

K = fieldpath.Keyed


@pytest.mark.parametrize(
    ("segs", "shown"),
    [
        (
            ("spec", "containers", K("name", "cilium-agent"), "image"),
            "spec.containers[name=cilium-agent].image",
        ),
        (("spec", "c", K("name", "a"), "env", K("name", "HOME")), "spec.c[name=a].env[name=HOME]"),
        (
            ("spec", "tolerations", K("key", "node.kubernetes.io/x")),
            "spec.tolerations[key=node.kubernetes.io/x]",
        ),
        (("l", K("name", "a]b")), 'l[name="a]b"]'),
        (("l", K("name", "")), 'l[name=""]'),
        (("l", K("name", " padded")), 'l[name=" padded"]'),
        (("l", K("name", "glob*")), 'l[name="glob*"]'),
        (("l", K("name", 'q"\\')), 'l[name="q\\"\\\\"]'),
        (("l", K("name", "two words")), "l[name=two words]"),
        (("l", 3, K("id", "x")), "l[3][id=x]"),
    ],
)
def test_show_keyed_items(segs: tuple[fieldpath.Segment, ...], shown: str) -> None:
    assert fieldpath.show(segs) == shown
    # every shown path reads back as a pattern matching exactly that path
    assert fieldpath.compile_pattern(shown).matches("Pod", segs)


def test_keyed_identity_ignores_the_position() -> None:
    assert K("name", "a", 0) == K("name", "a", 5) == K("name", "a")
    assert hash(K("name", "a", 0)) == hash(K("name", "a"))
    assert K("name", "a") != K("key", "a")


@pytest.mark.parametrize(
    ("lists", "field"),
    [
        (([{"name": "a"}, {"name": "b"}],), "name"),
        (([{"name": "a"}], [{"name": "b"}, {"name": "a"}]), "name"),
        (([], [{"name": "a"}]), "name"),
        (([], []), None),
        (([{"name": "a"}, {"name": "a"}],), None),  # duplicated names: positional
        (([{"name": "a"}], [{"name": "a"}, {"name": "a"}]), None),  # duplicated on one side
        (([{"name": "a"}, "b"],), None),  # mixed list
        (([1, 2],), None),
        (([{"name": "a"}, {"image": "x"}],), None),  # one item without a name
        (([{"name": 1}, {"name": 2}],), None),  # not strings
        (([{"key": "a", "effect": "x"}, {"key": "b"}],), "key"),
        (([{"name": "a", "id": "1"}, {"name": "a", "id": "2"}],), "id"),  # next field on dups
        (([{"name": "a", "key": "k"}], [{"key": "k"}]), "key"),  # both sides, same field
        (([{"name": "a\nb"}],), None),  # control characters never key
    ],
)
def test_key_field(lists: tuple[list[object], ...], field: str | None) -> None:
    assert fieldpath.key_field(*lists) == field


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("spec.c[name=a].image", ("spec", "c", K("name", "a", 1), "image"), True),
        ("spec.c[name=a].image", ("spec", "c", K("name", "a"), "image"), True),
        ("spec.c[name=a].image", ("spec", "c", K("name", "b", 0), "image"), False),
        ("spec.c[name=a].image", ("spec", "c", K("key", "a", 0), "image"), False),
        ("spec.c[name=a].image", ("spec", "c", 0, "image"), False),
        ("spec.c[*].image", ("spec", "c", K("name", "a", 4), "image"), True),
        ("spec.c[*].image", ("spec", "c", K("name", "a"), "image"), True),
        ("spec.c[*].image", ("spec", "c", 4, "image"), True),
        ("spec.c[1].image", ("spec", "c", K("name", "a", 1), "image"), True),
        ("spec.c[1].image", ("spec", "c", K("name", "a", 2), "image"), False),
        ("spec.c[1].image", ("spec", "c", K("name", "a"), "image"), False),  # no position known
        ("spec.c[name=istio-*]", ("spec", "c", K("name", "istio-proxy", 0)), True),
        ("spec.c[name=istio-*]", ("spec", "c", K("name", "cilium", 0)), False),
        ("spec.c[name=*]", ("spec", "c", K("name", "x", 0)), True),
        ("spec.c[name=*]", ("spec", "c", 0), False),
        ("spec.c[name=a.b]", ("spec", "c", K("name", "a.b")), True),
        ("spec.c[name=a.b]", ("spec", "c", K("name", "a", 0), "b"), False),
        (r"spec.c[name=a\*]", ("spec", "c", K("name", "a*")), True),
        (r"spec.c[name=a\*]", ("spec", "c", K("name", "ab")), False),
        ('spec.c[name="a]b"].x', ("spec", "c", K("name", "a]b"), "x"), True),
        ('spec.c[name="a*"]', ("spec", "c", K("name", "ab")), False),
        (
            "spec.c[name=a].env[name=HOME]",
            ("spec", "c", K("name", "a"), "env", K("name", "HOME")),
            True,
        ),
        ("spec.c[*].env[*].value", ("spec", "c", K("name", "a"), "env", 3, "value"), True),
        ("spec.**.value", ("spec", "c", K("name", "a"), "env", K("name", "B"), "value"), True),
        ("Pod:spec.c[name=a]", ("spec", "c", K("name", "a")), True),
        ("Job:spec.c[name=a]", ("spec", "c", K("name", "a")), False),
        # a `[` that opens no item pattern is a literal character of a key
        ("data.weird[key", ("data", "weird[key"), True),
        (r"data.x\[0]", ("data", "x[0]"), True),
    ],
)
def test_patterns_against_keyed_items(
    pattern: str, path: tuple[fieldpath.Segment, ...], hit: bool
) -> None:
    assert _m(pattern, path, kind="Pod") is hit


@pytest.mark.parametrize("pattern", ["spec.c[name=a", 'spec.c[name="a].x', 'spec.c[name="a"x]'])
def test_unreadable_keyed_patterns_are_rejected(pattern: str) -> None:
    with pytest.raises(ValueError):
        fieldpath.compile_pattern(pattern)


def test_strip_matches_keyed_items_by_key_position_or_star() -> None:
    obj = {
        "spec": {
            "containers": [
                {"name": "app", "image": "x", "env": [{"name": "A", "value": "1"}]},
                {"name": "istio-proxy", "image": "y"},
            ],
            "args": ["--a", "--b"],
        }
    }

    def strip(*patterns: str) -> object:
        return fieldpath.strip(obj, "Deployment", fieldpath.compile_patterns(patterns))

    assert strip("spec.containers[name=istio-*]") == {
        "spec": {"containers": [obj["spec"]["containers"][0]], "args": ["--a", "--b"]}
    }
    assert strip("spec.containers[*].image", "spec.args[1]") == {
        "spec": {
            "containers": [
                {"name": "app", "env": [{"name": "A", "value": "1"}]},
                {"name": "istio-proxy"},
            ],
            "args": ["--a"],
        }
    }
    assert strip("spec.containers[0].env[name=A].value") == {
        "spec": {
            "containers": [
                {"name": "app", "image": "x", "env": [{"name": "A"}]},
                {"name": "istio-proxy", "image": "y"},
            ],
            "args": ["--a", "--b"],
        }
    }
