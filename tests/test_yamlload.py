"""The loader accepts legal YAML that yaml.safe_load rejects."""

from __future__ import annotations

import pytest
import yaml

from harness import yamlload


def test_duplicate_anchor_later_definition_wins() -> None:
    text = "a: &x 1\nb: &x 2\nc: *x\n"
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text)
    assert yamlload.load(text) == {"a": 1, "b": 2, "c": 2}


def test_equals_scalar_from_kustomize_output() -> None:
    text = "spec:\n  rules:\n  - matchType: =\n    value: x\n"
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text)
    assert yamlload.load(text) == {"spec": {"rules": [{"matchType": "=", "value": "x"}]}}


def test_multi_document_stream() -> None:
    assert yamlload.load_all("a: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]


def test_real_errors_still_raise() -> None:
    with pytest.raises(yamlload.YAMLError):
        yamlload.load("a: [1, 2\n")


def test_dump_is_block_style_with_literal_multiline() -> None:
    out = yamlload.dump({"b": "x\ny\n", "a": [1, 2]})
    assert out == "b: |\n  x\n  y\na:\n- 1\n- 2\n"
    assert yamlload.load(out) == {"b": "x\ny\n", "a": [1, 2]}
