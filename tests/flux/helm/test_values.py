"""valuesFrom in order, targetPath through Helm's strvals parser, optional, Secrets redacted."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from harness.flux.api import ObjectRef
from harness.flux.helm import sdk
from harness.flux.helm.release import parse_helm_release
from harness.flux.helm.values import ValuesError, compose, merge_maps
from tests.flux.helm.charts import configmap, helm_release, local_chart


def _secret(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "apps"},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def _compose(objs: list[dict[str, Any]], **spec: Any) -> tuple[dict[str, Any], list[str]]:
    release = parse_helm_release(helm_release(chart=local_chart(), **spec))
    table = {ObjectRef(o["kind"], "apps", o["metadata"]["name"]): o for o in objs}
    return compose(release, table.get, sdk.parse_set)


def test_merge_maps_is_deep_and_replaces_lists() -> None:
    assert merge_maps({"a": {"b": 1, "l": [1]}}, {"a": {"c": 2, "l": [2]}}) == {
        "a": {"b": 1, "c": 2, "l": [2]}
    }


def test_values_from_in_order_then_inline_values() -> None:
    objs = [
        configmap("base", "apps", {"values.yaml": "a: 1\nb: {x: 1, y: 1}\n"}),
        configmap("over", "apps", {"custom": "b: {y: 2}\nc: 3\n"}),
    ]
    values, notes = _compose(
        objs,
        valuesFrom=[
            {"kind": "ConfigMap", "name": "base"},
            {"kind": "ConfigMap", "name": "over", "valuesKey": "custom"},
        ],
        values={"c": 4},
    )
    assert values == {"a": 1, "b": {"x": 1, "y": 2}, "c": 4}
    assert notes == []


def test_target_path_uses_helm_set_parsing() -> None:
    objs = [configmap("v", "apps", {"replicas": "3", "tag": '"007"', "host": "a.example.com"})]
    values, _ = _compose(
        objs,
        valuesFrom=[
            {
                "kind": "ConfigMap",
                "name": "v",
                "valuesKey": "replicas",
                "targetPath": "web.replicas",
            },
            {"kind": "ConfigMap", "name": "v", "valuesKey": "tag", "targetPath": "image.tag"},
            {"kind": "ConfigMap", "name": "v", "valuesKey": "host", "targetPath": "hosts[0]"},
        ],
    )
    assert values == {"web": {"replicas": 3}, "image": {"tag": "007"}, "hosts": ["a.example.com"]}


def test_missing_reference_fails_unless_optional() -> None:
    with pytest.raises(ValuesError, match="valuesFrom ConfigMap/nope: no such ConfigMap"):
        _compose([], valuesFrom=[{"kind": "ConfigMap", "name": "nope"}])
    values, _ = _compose([], valuesFrom=[{"kind": "ConfigMap", "name": "nope", "optional": True}])
    assert values == {}
    objs = [configmap("v", "apps", {"other": "x"})]
    with pytest.raises(ValuesError, match=r"no key 'values\.yaml'"):
        _compose(objs, valuesFrom=[{"kind": "ConfigMap", "name": "v"}])


def test_not_a_mapping_is_an_error() -> None:
    objs = [configmap("v", "apps", {"values.yaml": "- a\n"})]
    with pytest.raises(ValuesError, match="not a YAML mapping"):
        _compose(objs, valuesFrom=[{"kind": "ConfigMap", "name": "v"}])


def test_secret_values_become_markers() -> None:
    objs = [
        _secret(
            "creds",
            {"values.yaml": "token: hunter2\nport: 5432\ntls: true\nca: null\n", "pw": "s3cret"},
        )
    ]
    values, _ = _compose(
        objs,
        valuesFrom=[
            {"kind": "Secret", "name": "creds"},
            {"kind": "Secret", "name": "creds", "valuesKey": "pw", "targetPath": "db.password"},
        ],
    )
    assert values["port"].startswith("<redacted sha256:")  # a number is a value too
    assert values["tls"] is True and values["ca"] is None  # templates branch on these
    assert values["token"].startswith("<redacted sha256:")
    assert values["db"]["password"].startswith("<redacted sha256:")
    assert "hunter2" not in repr(values) and "s3cret" not in repr(values)


def test_sops_encrypted_secret_is_left_out_with_a_note() -> None:
    objs = [_secret("creds", {"values.yaml": "**SOPS**"})]
    values, notes = _compose(objs, valuesFrom=[{"kind": "Secret", "name": "creds"}])
    assert values == {}
    assert notes and "SOPS-encrypted" in notes[0]
