"""The loader accepts legal YAML that yaml.safe_load rejects."""

from __future__ import annotations

import pytest
import yaml

from harness.core import yamlload


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


TRICKY = [
    {"a": "line1\nline2\n", "b": "  leading", "c": "tab\there", "d": "é ünï 中文"},
    {"e": "x: y", "f": "", "g": None, "h": "yes", "i": "0123", "j": "a\n\nb", "k": "end \n"},
    {"l": "#c", "m": "- x", "n": "'q'", "o": '"dq"', "p": "\u2028sep", "q": "very " * 50},
    {"r": [{"s": [1, 2.5, True]}, {}], "t": {"u": []}, "v": "trailing-space "},
]


@pytest.mark.parametrize("obj", TRICKY)
def test_fast_and_pure_python_emitters_write_the_same_bytes(obj: object) -> None:
    """Goldens must not depend on whether PyYAML was built with libyaml."""
    assert yamlload.dump(obj) == yamlload.dump(obj, dumper=yamlload._PyDumper)
    assert yamlload.load(yamlload.dump(obj)) == obj


def test_fast_and_pure_python_emitters_agree_on_the_example() -> None:
    from tests.conftest import EXAMPLE

    objs = [
        o
        for p in sorted(EXAMPLE.rglob("*.yaml"))
        if "templates" not in p.relative_to(EXAMPLE).parts  # Helm chart templates: not YAML
        for o in yamlload.load_all(p.read_text())
        if isinstance(o, dict)
    ]
    assert len(objs) > 100
    for obj in objs:
        assert yamlload.dump(obj) == yamlload.dump(obj, dumper=yamlload._PyDumper)


def billion_laughs(levels: int = 9) -> str:
    """Ten anchors of nine aliases each: a few hundred bytes, 9^9 nodes expanded."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "data:", '  a: &a ["lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghijklm"[:levels]:
        lines.append(f"  {name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "\n".join(lines) + "\n"


def test_a_billion_laughs_is_rejected_not_expanded() -> None:
    with pytest.raises(yamlload.AliasBomb) as info:
        yamlload.load_all(billion_laughs())
    assert str(info.value) == (
        "YAML aliases expand this document past 1,000,000 nodes or without end "
        "(a billion-laughs document?): rejected, not expanded"
    )
    assert isinstance(info.value, yamlload.YAMLError)  # readers' "not YAML" path takes it


def test_a_recursive_alias_is_rejected() -> None:
    with pytest.raises(yamlload.AliasBomb):
        yamlload.load("a: &x [1, *x]\n")


def test_ordinary_aliases_load_as_before() -> None:
    text = "base: &base {a: 1, b: [x, y]}\nuse: *base\nmerged:\n  <<: *base\n  c: 2\n"
    assert yamlload.load_all(text) == [
        {
            "base": {"a": 1, "b": ["x", "y"]},
            "use": {"a": 1, "b": ["x", "y"]},
            "merged": {"a": 1, "b": ["x", "y"], "c": 2},
        }
    ]
    four = billion_laughs(levels=4)  # 9^4 nodes: well within the budget
    assert yamlload.load_all(four) == list(yaml.safe_load_all(four))
    assert yamlload.load_all("a: &x 1\nb: &x 2\nc: *x\n") == [{"a": 1, "b": 2, "c": 2}]


# -- the direct walk (_construct, _represent) against PyYAML's own ----------------------

from typing import Any  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _pyyaml_load_all(text: str) -> list[Any]:
    """What PyYAML's own safe constructor makes (the loader class, no direct walk)."""
    return list(yaml.load_all(text, Loader=yamlload._FAST))


def _pyyaml_dump(obj: Any, **style: Any) -> str:
    options: dict[str, Any] = {
        "sort_keys": False,
        "default_flow_style": False,
        "allow_unicode": True,
        "width": 1 << 20,
    }
    options.update(style)
    return yaml.dump(obj, Dumper=yamlload._CDumper, **options)


def same(a: Any, b: Any) -> bool:
    """Equal, of the same types all the way down, keys in the same order (iterative: the
    deep documents below are deeper than Python's recursion)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            stack.extend(zip(x, y, strict=True))
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, float) and x != x:
            if y == y:
                return False
        elif x != y:
            return False
    return True


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.sampled_from(["yes", "no", "on", "=", "~", "0o17", "012", "1_000", "1:20", "0x1f"])
    | st.sampled_from(["2001-12-14", "1.5e3", ".inf", "-.NaN", "null", "", " ", "a: b"])
)
keys = st.text() | st.integers() | st.booleans() | st.sampled_from(["<<", "=", "~", "null"])
trees = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(trees)
def test_direct_dump_writes_what_pyyaml_writes(obj: Any) -> None:
    assert yamlload.dump(obj) == _pyyaml_dump(obj)


@settings(max_examples=300, deadline=None)
@given(trees, st.sampled_from([{}, {"default_flow_style": True}, {"default_style": '"'}]))
def test_direct_load_makes_what_pyyaml_makes(obj: Any, style: dict[str, Any]) -> None:
    text = _pyyaml_dump(obj, **style)  # block, flow and quoted texts
    assert same(yamlload.load_all(text), _pyyaml_load_all(text))
    for chunk in text, f"---\n{text}---\n{text}":
        assert same(yamlload.load_all(chunk), _pyyaml_load_all(chunk))


UNUSUAL = [
    "a: &x {k: v}\nb:\n  <<: *x\n  c: 1\n",  # a merge key (with an alias)
    "b:\n  <<: {k: v}\n  c: 1\n",  # a merge key, no alias
    "s: !!set {a, b}\no: !!omap [a: 1, b: 2]\np: !!pairs [a: 1]\n",
    "bin: !!binary aGVsbG8=\nt: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\n",
    "k: !!str 1\nf: !!float 1\ni: !!int '7'\nn: !!null ''\n",
    "dup: 1\ndup: 2\n",
    "=: eq\nlist: [=, a]\n",
    "? [a, b]\n: unhashable\n",
    "? {a: b}\n: unhashable\n",
    "x: !custom 1\n",
    "x: !!map [a]\n",
    "---\n...\n---\na: 1\n",
    "plain scalar document\n",
    "[" * 990 + "]" * 990 + "\n",  # deeper than the direct walk's recursion
]


@pytest.mark.parametrize("text", UNUSUAL)
def test_unusual_documents_load_or_fail_as_pyyaml_does(text: str) -> None:
    try:
        expected: Any = _pyyaml_load_all(text)
    except yaml.YAMLError as exc:
        with pytest.raises(type(exc)) as info:
            yamlload.load_all(text)
        assert str(info.value) == str(exc)
        return
    assert same(yamlload.load_all(text), expected)


def test_an_alias_still_shares_its_object() -> None:
    loaded = yamlload.load("a: &x [1, {k: v}]\nb: *x\n")
    assert loaded["a"] is loaded["b"]


def test_shared_or_unusual_objects_dump_as_pyyaml_dumps_them() -> None:
    import datetime

    shared = {"k": "v"}
    for obj in (
        {"a": shared, "b": shared},  # PyYAML writes an anchor and an alias
        {"when": datetime.date(2024, 1, 2), "raw": b"\x00\x01", "t": (1, 2)},
        {"nested": [[[[[[[[[[[[]]]]]]]]]]]]},
    ):
        assert yamlload.dump(obj) == _pyyaml_dump(obj)
    deep: Any = []
    for _ in range(2000):  # deeper than either walk's recursion: PyYAML's error, as before
        deep = [deep]
    with pytest.raises(RecursionError):
        _pyyaml_dump(deep)
    with pytest.raises(RecursionError):
        yamlload.dump(deep)


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",
        "a: &x 1\nb: [*x,*x]\n",
        "a: &x 1\nb: {*x: 2}\n",
        "a: &x 1\nb: {k:*x}\n",
        "- &x 1\n- *x\n",
        "&x a: 1\n*x : 2\n",
        "a: &x 1\n? *x\n: 2\n",
        "--- &x a\n--- *x\n",
        "a: &x 1\nb:\t*x\n",
        "a: &x 1\nb: ['q',*x]\n",
        "a: &x-y_1 1\nb: *x-y_1\n",
    ],
)
def test_every_alias_is_seen_by_the_precheck(text: str) -> None:
    """A text `_MAY_ALIAS` finds nothing in is loaded without the alias budget: it must
    find every place an alias can start (or PyYAML must refuse the text)."""
    try:
        list(yaml.compose_all(text, Loader=yamlload._FAST))
    except yaml.YAMLError:
        return  # not YAML: refused either way
    assert yamlload._MAY_ALIAS.search(text) is not None


def test_a_compact_billion_laughs_is_rejected_too() -> None:
    lines = ['a: &a ["lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghij":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    with pytest.raises(yamlload.AliasBomb):
        yamlload.load_all("\n".join(lines) + "\n")


def test_direct_walk_agrees_with_pyyaml_on_the_example() -> None:
    from tests.conftest import EXAMPLE

    texts = [
        p.read_text()
        for p in sorted(EXAMPLE.rglob("*.yaml"))
        if "templates" not in p.relative_to(EXAMPLE).parts  # Helm chart templates: not YAML
    ]
    assert len(texts) > 100
    for text in texts:
        loaded = yamlload.load_all(text)
        assert same(loaded, _pyyaml_load_all(text))
        for obj in loaded:
            assert yamlload.dump(obj) == _pyyaml_dump(obj)
