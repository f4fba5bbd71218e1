"""Explaining a sha256 mismatch: fields (dyff paths), reformat-only, ignored fields, owner labels,
unified text, and Secrets that never show."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.compare import fieldpath, gate
from harness.compare.analyze import Origin, analyze
from harness.compare.docdiff import (
    Differ,
    deep_changes,
    field_changes,
    moved_items,
    plain_changes,
    same,
    show_change,
    show_fields,
    show_value,
)
from harness.compare.fieldpath import Keyed
from harness.core import documents
from harness.core.model import Document
from harness.report import diff_json, github, junit
from harness.report import markdown as md
from harness.report.diff_text import field_lines
from tests.diffkit import cm, secret, snapshot


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


# -- keyed lists: items matched by name, dyff-style --------------------------------------------


def _pod(*containers: dict[str, object], **spec: object) -> dict[str, object]:
    return {"spec": {"template": {"spec": {"containers": list(containers), **spec}}}}


def _c(name: str, image: str = "v1", **more: object) -> dict[str, object]:
    return {"name": name, "image": image, **more}


def _env(*pairs: str) -> list[dict[str, str]]:
    return [{"name": p.split("=")[0], "value": p.split("=")[1]} for p in pairs]


C = "spec.template.spec.containers"
KEYED_CASES = {
    "insert at the front of containers": (
        _pod(_c("agent"), _c("operator")),
        _pod(_c("sidecar", "s1"), _c("agent"), _c("operator")),
        [f"{C}[name=sidecar]: (absent) -> {{name: sidecar, image: s1}}"],
    ),
    "insert at the front and change a moved item": (
        _pod(_c("cilium-agent", "v1.16.5")),
        _pod(_c("sidecar", "s1"), _c("cilium-agent", "v1.16.6")),
        [
            f"{C}[name=sidecar]: (absent) -> {{name: sidecar, image: s1}}",
            f"{C}[name=cilium-agent].image: v1.16.5 -> v1.16.6",
        ],
    ),
    "remove an item": (
        _pod(_c("agent"), _c("sidecar", "s1")),
        _pod(_c("agent")),
        [f"{C}[name=sidecar]: {{name: sidecar, image: s1}} -> (absent)"],
    ),
    "env reorder is one line": (
        _pod(_c("a", env=_env("A=1", "B=2", "C=3"))),
        _pod(_c("a", env=_env("C=3", "A=1", "B=2"))),
        [f"{C}[name=a].env: order changed (moved: C)"],
    ),
    "reorder and change": (
        _pod(_c("a"), _c("b")),
        _pod(_c("b", "v2"), _c("a")),
        [f"{C}: order changed (moved: b)", f"{C}[name=b].image: v1 -> v2"],
    ),
    "a new item in the middle is no reorder": (
        _pod(_c("a"), _c("b")),
        _pod(_c("a"), _c("new"), _c("b")),
        [f"{C}[name=new]: (absent) -> {{name: new, image: v1}}"],
    ),
    "nested keyed lists": (
        _pod(_c("a", env=_env("A=1", "B=2")), _c("b", env=_env("X=1"))),
        _pod(_c("b", env=_env("X=2")), _c("a", env=_env("N=0", "A=1", "B=3"))),
        [
            f"{C}: order changed (moved: b)",
            f"{C}[name=b].env[name=X].value: 1 -> 2",  # in the new document's order
            f"{C}[name=a].env[name=N]: (absent) -> {{name: N, value: '0'}}",
            f"{C}[name=a].env[name=B].value: 2 -> 3",
        ],
    ),
    "duplicated names stay positional": (
        {"l": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]},
        {"l": [{"name": "z", "v": 0}, {"name": "a", "v": 1}, {"name": "a", "v": 2}]},
        [
            "l[0].name: a -> z",
            "l[0].v: 1 -> 0",
            "l[1].v: 2 -> 1",
            "l[2]: (absent) -> {name: a, v: 2}",
        ],
    ),
    "duplicated on one side only stays positional": (
        {"l": [{"name": "a"}, {"name": "b"}]},
        {"l": [{"name": "b"}, {"name": "b"}]},
        ["l[0].name: a -> b"],
    ),
    "mixed lists stay positional": (
        {"l": ["x", {"name": "a"}]},
        {"l": [{"name": "b"}, "x", {"name": "a"}]},
        [
            'l[0]: "x" -> {name: b}',  # a type change quotes the string
            'l[1]: {name: a} -> "x"',
            "l[2]: (absent) -> {name: a}",
        ],
    ),
    "keyed lists inside a positional list": (
        {"l": [[{"name": "a", "v": 1}, {"name": "b"}]]},
        {"l": [[{"name": "b"}, {"name": "a", "v": 2}]]},
        ["l[0]: order changed (moved: b)", "l[0][name=a].v: 1 -> 2"],
    ),
    "scalar lists stay positional": (
        {"args": ["--a", "--b"]},
        {"args": ["--new", "--a", "--b"]},
        ["args[0]: (absent) -> --new"],  # deepdiff aligns lists of scalars itself
    ),
    "key field by `key`, then `id`": (
        {
            "t": [{"key": "x", "op": "Exists"}],
            "r": [{"name": "a", "id": "1"}, {"name": "a", "id": "2"}],
        },
        {
            "t": [{"key": "x", "op": "Equal"}],
            "r": [{"name": "a", "id": "2"}, {"name": "b", "id": "1"}],
        },
        ["t[key=x].op: Exists -> Equal", "r: order changed (moved: 2)", "r[id=1].name: a -> b"],
    ),
    "a list becoming keyed is one change": (
        {"l": [{"name": "a"}, {"name": "a"}]},
        {"l": [{"name": "a"}]},
        ["l[1]: {name: a} -> (absent)"],
    ),
    "an odd value is quoted in the path": (
        {"l": [{"name": "a]b", "v": 1}]},
        {"l": [{"name": "a]b", "v": 2}]},
        ['l[name="a]b"].v: 1 -> 2'],
    ),
}


@pytest.mark.parametrize("case", list(KEYED_CASES), ids=list(KEYED_CASES))
def test_keyed_list_items_are_matched_by_key(case: str) -> None:
    before, after, lines = KEYED_CASES[case]
    originals = copy.deepcopy((before, after))
    fields = field_changes(before, after, "Deployment")
    assert [show_change(f) for f in fields] == lines
    assert (before, after) == originals  # parses are cached and shared: never rewritten


def test_reorder_field_carries_both_orders_and_segments() -> None:
    fields = field_changes(
        _pod(_c("a", env=_env("A=1", "B=2"))), _pod(_c("a", env=_env("B=2", "A=1"))), "Pod"
    )
    assert len(fields) == 1
    (f,) = fields
    assert (f.op, f.before, f.after, f.masked) == ("reordered", ["A", "B"], ["B", "A"], False)
    assert f.segments == ("spec", "template", "spec", "containers", Keyed("name", "a"), "env")
    assert show_fields(fields) == f"{C}[name=a].env: order changed (moved: B)"
    assert field_lines(fields, "  ") == [f"  {C}[name=a].env: order changed (moved: B)"]


def test_a_long_reorder_names_a_few_moved_items() -> None:
    names = [f"n{i}" for i in range(10)]
    before = {"l": [{"name": n} for n in names]}
    after = {"l": [{"name": n} for n in reversed(names)]}
    (f,) = field_changes(before, after, "X")
    assert show_change(f) == "l: order changed (moved: n9, n8, n7, n6, n5, +4 more)"


@pytest.mark.parametrize(
    ("before", "after", "moved"),
    [
        ("abc", "abc", ""),
        ("ab", "ba", "b"),
        ("abcd", "dabc", "d"),
        ("abcd", "bcda", "a"),
        ("abcde", "aecdb", "eb"),
        ("abc", "xcab", "c"),  # x is not common: never "moved"
    ],
)
def test_moved_items_are_the_fewest_that_explain_the_order(
    before: str, after: str, moved: str
) -> None:
    assert "".join(moved_items(list(before), list(after))) == moved


def test_reorder_is_a_change_not_a_reformat() -> None:
    a = doc(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
        "  - name: a\n  - name: b\n"
    )
    b = doc(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
        "  - name: b\n  - name: a\n"
    )
    change = Differ().compare(a, b)
    assert not change.reformat_only and not change.equivalent
    assert [show_change(f) for f in change.fields] == ["spec.containers: order changed (moved: b)"]


DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    metadata:
      annotations:
        checksum/config: {checksum}
    spec:
      containers:
{containers}
"""


def deploy(*containers: tuple[str, str, str], checksum: str = "abc") -> Document:
    """Containers as (name, image, HOME value)."""
    text = "".join(
        f"      - name: {n}\n        image: {i}\n        env:\n"
        f"        - name: HOME\n          value: {h}\n        - name: USER\n          value: u\n"
        for n, i, h in containers
    )
    return doc(DEPLOY.format(checksum=checksum, containers=text.rstrip("\n")))


@pytest.mark.parametrize(
    ("patterns", "fields"),
    [
        (
            (),
            [
                f"{C}[name=sidecar]: (absent) -> {{...}}",
                f"{C}[name=app].image: a1 -> a2",
                f"{C}[name=app].env[name=HOME].value: /h -> /home",
            ],
        ),
        (
            ("spec.template.spec.containers[name=sidecar]",),
            [f"{C}[name=app].image: a1 -> a2", f"{C}[name=app].env[name=HOME].value: /h -> /home"],
        ),
        (
            ("spec.template.spec.containers[*].image", "spec.**.env[name=HOME]"),
            [f"{C}[name=sidecar]: (absent) -> {{...}}"],
        ),
        (
            ("Deployment:spec.template.spec.containers[name=*].env[*].value",),
            [f"{C}[name=sidecar]: (absent) -> {{...}}", f"{C}[name=app].image: a1 -> a2"],
        ),
        (
            ("StatefulSet:spec.template.spec.containers[*]",),
            [
                f"{C}[name=sidecar]: (absent) -> {{...}}",
                f"{C}[name=app].image: a1 -> a2",
                f"{C}[name=app].env[name=HOME].value: /h -> /home",
            ],
        ),
    ],
)
def test_ignore_fields_against_keyed_paths(patterns: tuple[str, ...], fields: list[str]) -> None:
    a = deploy(("app", "a1", "/h"))
    b = deploy(("sidecar", "s", "/s"), ("app", "a2", "/home"))
    change = Differ(fieldpath.compile_patterns(patterns)).compare(a, b)
    shown = [
        show_change(f) if f.op != "added" else f"{f.path}: (absent) -> {{...}}"
        for f in change.fields
    ]
    assert shown == fields


def test_ignoring_every_keyed_difference_is_ignored_only() -> None:
    a = deploy(("app", "a1", "/h"), ("b", "b1", "/b"))
    b = deploy(("b", "b1", "/b"), ("app", "a2", "/h"), checksum="def")
    differ = Differ(
        fieldpath.compile_patterns(
            ["spec.template.spec.containers[name=app].image", "spec.**.checksum/*"]
        )
    )
    change = differ.compare(a, b)
    assert not change.ignored_only  # the order still differs
    assert [show_change(f) for f in change.fields] == [f"{C}: order changed (moved: b)"]
    c = deploy(("app", "a3", "/h"), ("b", "b1", "/b"), checksum="xyz")
    assert differ.compare(a, c).ignored_only


SECRET_LIST = """apiVersion: v1
kind: Secret
metadata:
  name: s
stringData:
  password: {password}
  list: [{{name: {password}}}, {{name: other}}]
"""


def test_secret_values_stay_masked_with_keyed_lists() -> None:
    # a list under a Secret's stringData is never keyed: its names would be in the path
    a = doc(SECRET_LIST.format(password="hunter2"))
    b = doc(
        SECRET_LIST.format(password="hunter3").replace(
            "[{name: hunter3}, ", "[{name: x}, {name: hunter3}, "
        )
    )
    change = Differ().compare(a, b)
    assert change.fields and all(f.masked for f in change.fields)
    for f in change.fields:
        assert not any(isinstance(s, Keyed) for s in f.segments)
        text = show_change(f) + json.dumps([f.before, f.after])
        for leaked in ("hunter", "other", documents.REDACTED_PREFIX):
            assert leaked not in text


def test_a_secret_next_to_keyed_lists_is_still_masked() -> None:
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  ownerReferences:\n"
        "  - name: {owner}\n    uid: u\n  - name: app\n    uid: v\nstringData:\n  token: {token}\n"
    )
    a = doc(text.format(owner="x", token="tok1"))
    b = doc(
        text.format(owner="y", token="tok2").replace(
            "  - name: app\n    uid: v\n", "  - name: app\n    uid: w\n"
        )
    )
    shown = [(show_change(f), f.masked) for f in Differ().compare(a, b).fields]
    assert shown == [
        ("metadata.ownerReferences[name=x]: {name: x, uid: u} -> (absent)", False),
        ("metadata.ownerReferences[name=y]: (absent) -> {name: y, uid: u}", False),
        ("metadata.ownerReferences[name=app].uid: v -> w", False),
        ("stringData.token: *** (before) -> *** (after)", True),
    ]


def test_every_output_shows_keyed_paths() -> None:
    """Text, JSON, the PR comment, JUnit and GitHub annotations all format through
    docdiff.show_change / FieldChange.path, so they agree on `[name=...]`."""

    def dep(*containers: tuple[str, str, str]) -> str:
        return deploy(*containers).text

    base = snapshot({"app": [dep(("app", "a1", "/h"), ("b", "b1", "/b"))]})
    head = snapshot({"app": [dep(("sidecar", "s", "/s"), ("b", "b1", "/b"), ("app", "a2", "/h"))]})
    analysis = analyze(base, head)
    verdict = gate.judge(analysis)
    lines = [
        f"{C}: order changed (moved: b)",
        f"{C}[name=sidecar]: (absent) -> {{name: sidecar, image: s, env: [{{name: HOME, "
        "value: /s}, {name: USER, value: u}]}",
        f"{C}[name=app].image: a1 -> a2",
    ]
    assert field_lines(analysis.targets[0].changed[0].fields, "") == lines
    assert "; ".join(lines[:3]) in str(verdict.reasons[0])
    origin = Origin("worktree", "working tree")
    payload = diff_json.payload(analysis, verdict, origin, origin)
    fields = payload["targets"][0]["changed"][0]["fields"]
    assert [(f["path"], f["op"]) for f in fields] == [
        (C, "reordered"),
        (f"{C}[name=sidecar]", "added"),
        (f"{C}[name=app].image", "changed"),
    ]
    assert fields[0]["before"] == ["app", "b"] and fields[0]["after"] == ["b", "app"]
    json.dumps(payload)  # serialisable as is
    info = md.comment_input(analysis, verdict, "a", "b")
    (body,) = md.comment(analysis, info).bodies
    assert lines[0] in body and lines[2] in body
    (case,) = junit.diff_cases(analysis, verdict)
    assert case.failure is not None and lines[2] in case.failure[2]
    annotations = "\n".join(github.diff_lines(analysis, verdict))
    assert github.escape_data(lines[0]) in annotations


# -- the deepdiff-free walk answers as deepdiff does -----------------------------------------

_KEYS = st.sampled_from(["a", "b", "c", "__p", 1, True, Keyed("name", "x"), Keyed("name", "y")])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1, 2),
    st.sampled_from([0.0, 1.0, 1.5, float("nan")]),
    st.sampled_from(["", "x", "y", "1", "a\nb"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(_KEYS, inner, max_size=4),
        st.tuples(inner, inner),
    ),
    max_leaves=12,
)


@st.composite
def _edited(draw: st.DrawFn) -> tuple[object, object]:
    """A document and a copy with a few values replaced, keys added or removed."""
    before = draw(st.dictionaries(_KEYS, _VALUES, max_size=4))
    after = copy.deepcopy(before)
    for _ in range(draw(st.integers(0, 5))):
        node = after
        while isinstance(node, dict) and node and draw(st.integers(0, 3)):
            child = node[draw(st.sampled_from(list(node)))]
            if not isinstance(child, dict):
                break
            node = child
        if not isinstance(node, dict):
            continue
        key = draw(_KEYS)
        if key in node and draw(st.booleans()):
            del node[key]
        else:
            node[key] = draw(_VALUES)
    return before, after


def _by_kind(changes: list[tuple[str, list[object], object, object]]) -> dict[str, list[str]]:
    """Each kind of deepdiff report in its order (a type change is its own report)."""
    out: dict[str, list[str]] = {}
    for op, raw, old, new in changes:
        kind = "type" if op == "changed" and type(old) is not type(new) else op
        out.setdefault(kind, []).append(repr((raw, old, new)))
    return out


@settings(max_examples=400, deadline=None)
@given(st.one_of(_edited(), st.tuples(_VALUES, _VALUES)))
@example(({"a": {"x": 1}, "b": {"y": 1}}, {"b": {"y": 2}, "a": {"x": 2, "z": 0}}))
@example(({"b": {"y": 1}, "a": {"x": 1, "w": 0}}, {"a": {"x": "1"}, "b": {"y": 1.0, "v": 0}}))
def test_the_plain_walk_is_deepdiffs_answer(pair: tuple[object, object]) -> None:
    """Where no list or set differs, `plain_changes` reports what deepdiff reports, each
    kind of change in deepdiff's order; otherwise it leaves the documents to deepdiff."""
    before, after = pair
    plain = plain_changes(before, after)
    if plain is None:
        return
    assert _by_kind(plain) == _by_kind(deep_changes(before, after))


def test_field_changes_without_a_list_change_never_import_deepdiff() -> None:
    code = (
        "import sys\n"
        "from harness.compare.docdiff import field_changes\n"
        "a = {'kind': 'Deployment', 'spec': {'template': {'spec': {'containers': "
        "[{'name': 'app', 'image': 'a:1'}, {'name': 'side', 'image': 's:1'}]}}}}\n"
        "b = {'kind': 'Deployment', 'spec': {'template': {'spec': {'containers': "
        "[{'name': 'app', 'image': 'a:2'}, {'name': 'side', 'image': 's:1'}]}}}}\n"
        "(f,) = field_changes(a, b, 'Deployment')\n"
        "print(f.path, 'deepdiff' in sys.modules)\n"
        "field_changes({'args': ['a']}, {'args': ['a', 'b']}, 'X')\n"
        "print('deepdiff' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    edited, listed = proc.stdout.split("\n")[:2]
    assert edited == "spec.template.spec.containers[name=app].image False"  # a keyed item
    assert listed == "True"  # an unkeyed list grew: deepdiff aligns its items
