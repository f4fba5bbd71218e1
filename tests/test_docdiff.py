"""Explaining a sha256 mismatch: fields (dyff paths), reformat-only, ignored fields, owner labels,
unified text, and Secrets that never show."""

from __future__ import annotations

import re

from harness import documents, fieldpath
from harness.docdiff import Differ, field_changes, same, show_fields, show_value
from harness.model import Document
from tests.diffkit import cm, secret


def doc(text: str) -> Document:
    return documents.parse_stream(text)[0]


HR = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: cilium
  namespace: kube-system
  labels:
    helm.sh/chart: cilium-1.16.5
spec:
  values:
    k8sServiceHost: {host}
    operator:
      replicas: {replicas}
    hubble:
      metrics:
        enabled: [dns, {metric}]
"""


def hr(
    host: str = "192.168.1.10", replicas: int = 1, metric: str = "drop", chart: str = ""
) -> Document:
    text = HR.format(host=host, replicas=replicas, metric=metric)
    if chart:
        text = text.replace("cilium-1.16.5", chart)
    return doc(text)


def test_fields_are_dyff_paths_in_document_order() -> None:
    change = Differ().compare(hr(), hr(host="192.168.2.10", metric="tcp"))
    assert [(f.path, f.before, f.after) for f in change.fields] == [
        ("spec.values.k8sServiceHost", "192.168.1.10", "192.168.2.10"),
        ("spec.values.hubble.metrics.enabled[1]", "drop", "tcp"),
    ]
    assert show_fields(change.fields) == (
        "spec.values.k8sServiceHost: 192.168.1.10 -> 192.168.2.10; "
        "spec.values.hubble.metrics.enabled[1]: drop -> tcp"
    )
    assert not change.reformat_only and not change.pure_ownership


def test_added_and_removed_fields_and_type_changes() -> None:
    before = {"spec": {"a": 1, "gone": "x", "list": [1]}}
    after = {"spec": {"a": True, "list": [1, {"name": "cilium"}], "new": None}}
    fields = {f.path: f for f in field_changes(before, after, "Thing")}
    assert fields["spec.a"].op == "changed" and fields["spec.a"].after is True
    assert fields["spec.gone"].op == "removed" and fields["spec.gone"].after is None
    assert fields["spec.list[1]"].op == "added"
    assert show_value(fields["spec.list[1]"].after) == "{name: cilium}"
    assert fields["spec.new"].op == "added"
    assert show_value(None, present=False) == "(absent)"


def test_same_tells_types_apart() -> None:
    assert same({"a": [1, "x"]}, {"a": [1, "x"]})
    assert not same(1, True)
    assert not same(1, 1.0)
    assert not same({"a": 1}, {"a": 1, "b": 2})


def test_reformat_only_is_told_apart_from_a_real_change() -> None:
    a = doc("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: v\n  j: w\n")
    b = doc("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  j: w\n  k: 'v'\n")
    change = Differ().compare(a, b)
    assert not change.identical and change.reformat_only and change.equivalent
    assert change.fields == ()
    c = doc("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: 'true'\n  j: w\n")
    d = doc("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: true\n  j: w\n")
    assert not Differ().compare(c, d).reformat_only  # "true" -> true is a type change


def test_ignore_fields_hide_noise_but_only_when_configured() -> None:
    a, b = hr(chart="cilium-1.16.5"), hr(chart="cilium-1.16.6")
    plain = Differ().compare(a, b)
    assert [f.path for f in plain.fields] == ["metadata.labels.helm.sh/chart"]
    assert not plain.ignored_only
    ignoring = Differ(fieldpath.compile_patterns(["metadata.labels.helm.sh/chart"]))
    change = ignoring.compare(a, b)
    assert change.ignored_only and change.equivalent and change.fields == ()
    both = ignoring.compare(a, hr(chart="cilium-1.16.6", replicas=2))
    assert [f.path for f in both.fields] == ["spec.values.operator.replicas"]


def test_pure_ownership_means_only_the_owner_labels_differ() -> None:
    a, b = doc(cm("x", owner="platform")), doc(cm("x", owner="cilium"))
    change = Differ().compare(a, b)
    assert change.pure_ownership and change.same_content and not change.equivalent
    c = doc(cm("x", owner="cilium", k="other"))
    changed = Differ().compare(a, c)
    assert not changed.pure_ownership and not changed.same_content


def test_secret_values_are_masked_in_fields() -> None:
    a = doc(secret("db", password="hunter2", user="admin"))
    b = doc(secret("db", password="hunter3", user="admin", token="tok"))
    change = Differ().compare(a, b)
    shown = {f.path: (f.before, f.after) for f in change.fields}
    assert shown == {
        "stringData.password": ("*** (before)", "*** (after)"),
        "stringData.token": (None, "***"),
    }
    assert all(f.masked for f in change.fields)


def test_unified_diff_masks_secrets_and_marks_the_changed_side() -> None:
    a = doc(secret("db", password="hunter2", user="admin"))
    b = doc(secret("db", password="hunter3", user="admin"))
    text = Differ(unified=3).compare(a, b, labels=("HEAD~1", "working tree")).unified
    assert text is not None
    assert text.splitlines()[:2] == [
        "--- HEAD~1: Secret/default/db",
        "+++ working tree: Secret/default/db",
    ]
    assert "-  password: *** (before)" in text
    assert "+  password: *** (after)" in text
    assert "   user: ***" in text
    for leaked in ("hunter", "admin", documents.REDACTED_PREFIX):
        assert leaked not in text


def test_unified_context_lines() -> None:
    a = doc(cm("x", **{f"k{i}": str(i) for i in range(10)}))
    b = doc(cm("x", **{f"k{i}": str(i if i != 5 else 55) for i in range(10)}))
    text = Differ(unified=1).compare(a, b).unified or ""
    body = [line for line in text.splitlines()[2:]]
    assert body[0] == "@@ -11,3 +11,3 @@"
    assert body[1:] == ["   k4: '4'", "-  k5: '5'", "+  k5: '55'", "   k6: '6'"]
    assert Differ().compare(a, b).unified is None
    assert re.match(r"^--- base: ConfigMap/default/x$", text.splitlines()[0])
