"""parsed: a document's object travels with its text (rendered, stored in the cache, read
back) and is always what parsing that text gives."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from harness.core import documents, parsed, yamlload
from harness.core.run import Run
from harness.render.seam import documents_from_payload, documents_payload

STREAM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: b
  annotations: {z: '1', a: '2'}
data:
  when: 2024-01-01
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  n: .nan
  x: 'yes'
---
apiVersion: v1
kind: Secret
metadata:
  name: s
stringData:
  password: canary-4242
"""


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    """Each test in a run of its own: parsed.py's memos start empty."""
    with Run().entered():
        yield


def test_a_rendered_stream_remembers_its_objects_but_never_a_secrets() -> None:
    docs = documents.parse_stream(STREAM)
    cm_b, cm_a, secret = docs
    assert parsed.load(cm_b.text) is parsed.load(cm_b.text)
    assert parsed.load(cm_a.text) == yamlload.load(cm_a.text)
    assert "canary-4242" not in secret.text
    assert "canary-4242" not in json.dumps(parsed.load(secret.text))


def test_a_cache_entry_keeps_objects_json_can_hold_in_their_key_order() -> None:
    docs = documents.parse_stream(STREAM)
    rows = documents_payload(docs)
    assert rows[0][7] is None  # a timestamp: JSON would give back a string
    assert rows[1][7] is None  # NaN is not equal to itself
    stored = rows[2][7]
    assert isinstance(stored, str) and "canary-4242" not in stored
    plain = documents.parse_stream(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, z: 1, a: 2}\n"
    )
    (row,) = documents_payload(plain)
    assert row[7] == '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","z":1,"a":2}}'
    with Run().entered():  # a new run: nothing parsed yet
        back = documents_from_payload(json.loads(json.dumps([row])))
        assert back == tuple(plain)
        obj = parsed.load(plain[0].text)  # from the entry's JSON, not from YAML
        assert obj == yamlload.load(plain[0].text)
        assert list(obj["metadata"]) == ["name", "z", "a"]


def test_a_malformed_row_rejects_the_whole_entry_and_its_objects() -> None:
    (row,) = documents_payload(
        documents.parse_stream("apiVersion: v1\nkind: A\nmetadata: {name: a}\n")
    )
    text = row[5]
    assert isinstance(text, str)
    planted = [*row[:7], '{"planted": true}']  # well-formed, but the entry is not
    for bad in ([*row[:7], 5], row[:7], [*row, None]):
        with Run().entered():
            assert documents_from_payload([planted, bad]) is None
            assert parsed.load(text) == {"apiVersion": "v1", "kind": "A", "metadata": {"name": "a"}}


def test_fresh_objects_are_the_callers_own() -> None:
    (row,) = documents_payload(
        documents.parse_stream("apiVersion: v1\nkind: A\nmetadata: {name: a, z: [1]}\n")
    )
    text = row[5]
    assert isinstance(text, str)
    with Run().entered():
        assert documents_from_payload([row]) is not None
        first = parsed.fresh(text)
        assert first == yamlload.load(text) and list(first["metadata"]) == ["name", "z"]
        first["metadata"]["z"].append(2)  # the caller's to change
        assert parsed.fresh(text) == parsed.load(text) == yamlload.load(text)
        assert parsed.fresh("a: 1\n") == {"a": 1}  # unknown text: parsed


def test_load_parses_a_text_once_and_still_raises() -> None:
    text = "resources:\n  - a.yaml\n"
    first = parsed.load(text)
    assert first == {"resources": ["a.yaml"]} == yamlload.load(text)
    assert parsed.load(text) is first
    with pytest.raises(yamlload.YAMLError):
        parsed.load("a: [unclosed\n")


# -- a dumped object's JSON, taken without parsing its text back -----------------------------

from string import printable  # noqa: E402
from typing import Any  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PLAIN = "".join(c for c in printable if c == "\n" or " " <= c <= "~")
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()  # any character: tabs, `\r`, NEL, LS, emoji
    | st.text(alphabet=_PLAIN)  # what takes the fast path
    | st.text(alphabet=" \n\t\r\x85\u2028-:#'\"|>a")  # block scalars' corner cases
    | st.sampled_from(["yes", "=", "~", "012", "0x1f", "2001-12-14", "1.5e3", ".inf", "", " "])
)
_keys = st.text(alphabet=_PLAIN) | st.text() | st.integers() | st.booleans()
_trees = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=25,
)


def _parsed_stored(text: str) -> str | None:
    with Run().entered():  # nothing remembered: `stored` parses the text
        return parsed.stored(text)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_keys, _trees, min_size=1, max_size=5))
def test_a_dumped_objects_json_is_what_parsing_its_text_gives(obj: dict[Any, Any]) -> None:
    text = yamlload.dump(obj)
    parsed.remember_dumped(text, obj)
    assert parsed.stored(text) == _parsed_stored(text)
    with Run().entered():  # and a document harness rebuilt takes the same way
        doc = documents.document_from_object(obj)
        assert parsed.stored(doc.text) == _parsed_stored(doc.text)


def test_a_plain_dumped_object_is_not_parsed_again_and_a_tricky_one_is() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    obj["data"] = {"script": "line one\n  line two\n", "n": "012", "t": True, "f": 1.5}
    doc = documents.document_from_object(obj)
    encoded = parsed._JSON.get(doc.text)  # known before anything parses the text
    assert encoded is not None and json.loads(encoded) == yamlload.load(doc.text) == obj
    assert parsed.stored(doc.text) == encoded
    for tricky in ("x\u2028y\nz", "caf\u00e9\n"):  # raw in a block scalar: not plain text
        text = yamlload.dump({"v": tricky})
        parsed.remember_dumped(text, {"v": tricky})
        assert parsed._JSON.get(text) is None  # left to `stored`'s parse
    escaped = yamlload.dump({"v": "a\x85b\tc"})  # escaped in double quotes: plain again
    parsed.remember_dumped(escaped, {"v": "a\x85b\tc"})
    assert parsed._JSON.get(escaped) == parsed.stored(escaped) == _parsed_stored(escaped)


def test_a_redacted_document_remembers_its_redacted_object_only() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    secret["stringData"] = {"password": "canary-4242"}
    doc = documents.document_from_object(secret)
    assert "canary-4242" not in doc.text
    encoded = parsed._JSON.get(doc.text)
    assert encoded is not None and "canary-4242" not in encoded
    assert json.loads(encoded) == yamlload.load(doc.text)
    assert not any("canary-4242" in text for text in [doc.text, encoded])
