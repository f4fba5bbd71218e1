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
