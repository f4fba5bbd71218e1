"""Secret-derived values as markers: SOPS-marked Secrets, last-applied annotations, keyed
markers (HARNESS_MASK_KEY), and the cache keys apart per key."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable

import pytest

from harness.cache import store
from harness.core import documents, redaction
from harness.core.model import DocId

SECRET_ID = DocId("", "Secret", "a", "s")


def test_a_marker_changes_with_the_value_and_reveals_nothing() -> None:
    one = redaction.marker(SECRET_ID, "data.k", "hunter2")
    assert redaction.MARKER.fullmatch(one) and "hunter2" not in one
    assert one != redaction.marker(SECRET_ID, "data.k", "hunter3")
    assert one != redaction.marker(DocId("", "Secret", "b", "s"), "data.k", "hunter2")
    digest = hashlib.sha256(f"{SECRET_ID}\0data.k\0hunter2".encode()).hexdigest()[:16]
    assert one == f"<redacted sha256:{digest}>"  # what a guesser can recompute without a key


def test_a_keyed_marker_cannot_be_confirmed_without_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = redaction.marker(SECRET_ID, "data.k", "hunter2")
    monkeypatch.setenv(redaction.ENV_KEY, "k3y")
    keyed = redaction.marker(SECRET_ID, "data.k", "hunter2")
    tag = hmac.new(b"k3y", f"{SECRET_ID}\0data.k\0hunter2".encode(), hashlib.sha256)
    assert keyed == f"<redacted hmac-sha256:{tag.hexdigest()[:16]}>" != plain
    assert redaction.is_marker(keyed) and redaction.contains_marker(f"x{keyed}y")
    assert keyed != redaction.marker(SECRET_ID, "data.k", "hunter3")
    assert "k3y" not in redaction.mode() and redaction.mode().startswith("hmac-sha256:")


def test_cache_entries_are_keyed_apart_per_mask_key(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = store.key("x")
    monkeypatch.setenv(redaction.ENV_KEY, "one")
    one = store.key("x")
    monkeypatch.setenv(redaction.ENV_KEY, "two")
    assert len({plain, one, store.key("x")}) == 3


SOPS = (
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: a\ndata:\n"
    "  k: ENC[AES256_GCM,data:abc=,iv:eA==,tag:eQ==,type:str]\n"
    "stringData:\n  api_unencrypted: plain-leak-1\n"
    "sops:\n  mac: ENC[AES256_GCM,data:zzz,iv:eA==,tag:eQ==,type:str]\n  version: 3.9.0\n"
)


def test_a_sops_marked_secret_keeps_ciphertext_and_hides_plaintext() -> None:
    doc = documents.parse_stream(SOPS)[0]
    assert "plain-leak-1" not in doc.text
    assert "k: ENC[AES256_GCM,data:abc=,iv:eA==,tag:eQ==,type:str]" in doc.text
    assert "api_unencrypted: <redacted sha256:" in doc.text
    decrypted = SOPS.replace("ENC[AES256_GCM,data:abc=,iv:eA==,tag:eQ==,type:str]", "cGxhaW4=")
    assert "cGxhaW4=" not in documents.parse_stream(decrypted)[0].text  # decrypted in place


LAST = redaction.LAST_APPLIED


def _with_last_applied(kind: str, held: object) -> str:
    text = held if isinstance(held, str) else json.dumps(held)
    return (
        f"apiVersion: v1\nkind: {kind}\nmetadata:\n  name: x\n  namespace: a\n"
        f"  annotations:\n    {LAST}: {json.dumps(text)}\ndata:\n  k: dg==\n"
    )


def test_last_applied_is_redacted_like_the_object_it_holds() -> None:
    held = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}
    held["stringData"] = {"password": "plain-leak-2"}  # type: ignore[assignment]
    for kind in ("ConfigMap", "Secret"):
        doc = documents.parse_stream(_with_last_applied(kind, held))[0]
        assert "plain-leak-2" not in doc.text, kind
        obj = documents.yamlload.load(doc.text)
        shown = json.loads(obj["metadata"]["annotations"][LAST])
        assert redaction.is_marker(shown["stringData"]["password"])
        again = documents.parse_stream(doc.text)[0]
        assert again.text == doc.text  # a golden is not redacted twice
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x"},
        "data": {"a": "1"},
    }
    text = _with_last_applied("ConfigMap", config)
    assert documents.parse_stream(text)[0].text == text  # nothing secret: bytes kept
    broken = _with_last_applied("Secret", '{"kind":"Secret","stringData":{"p":"plain-leak-3"')
    doc = documents.parse_stream(broken)[0]
    assert "plain-leak-3" not in doc.text and f"{LAST}: <redacted sha256:" in doc.text


def test_an_empty_value_stays_empty_in_the_document() -> None:
    """Issue 33: an empty value reveals nothing; a marker in its place made goldens, and
    every substitution of it, show a string where the Secret holds nothing."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "a"},
        "data": {"empty": "", "set": "aw=="},
        "stringData": {"blank": ""},
    }
    hidden = documents.redact(secret)
    assert hidden is not None
    assert hidden["data"] == {"empty": "", "set": redaction.marker(SECRET_ID, "data.set", "aw==")}
    assert hidden["stringData"] == {"blank": ""}
    assert redaction.marker(SECRET_ID, "data.empty", "") == ""
    only_empty = {**secret, "data": {"empty": ""}, "stringData": {}}
    assert documents.redact(only_empty) is None  # nothing to hide


# -- the run's scrub ---------------------------------------------------------------------


def test_the_scrub_masks_every_form_of_a_known_value_and_nothing_short_or_shown() -> None:
    known = redaction.Known()
    plain = "canary-r1-7f3e9b21"
    encoded = base64.b64encode(plain.encode()).decode()
    known.add(encoded, encoded=True)  # a `data` value: its plaintext is known too
    known.add("line-one-of-a-key\nline-two-of-a-key\n")
    known.add("short")  # under MIN_LENGTH: an ordinary word too often
    known.add("keycloak")
    known.shown("metadata:\n  namespace: keycloak\n")  # the tree shows it: a name
    text = f"a {plain} b {encoded} c line-two-of-a-key d short e keycloak f"
    m = redaction.marker
    assert known.scrub(text) == (
        f"a {m('', '', plain)} b {m('', '', encoded)} c {m('', '', 'line-two-of-a-key')} "
        "d short e keycloak f"
    )
    marker = m("x", "y", plain)
    assert known.scrub(marker) == marker  # a marker is never scrubbed again
    assert known.scrub_all({"k": [plain, 1, None]}) == {"k": [m("", "", plain), 1, None]}
    same = {"k": ["nothing known"]}
    assert known.scrub_all(same) is same
    known.reset()
    assert known.scrub(text) == text


def test_many_values_one_pass_longest_first() -> None:
    known = redaction.Known()
    values = [f"value-{i:04d}-abcdef" for i in range(2000)]
    known.add_all(values)
    known.add("value-0001-abcdef-longer")
    text = "x value-0001-abcdef-longer y value-1999-abcdef z"
    m = redaction.marker
    assert known.scrub(text) == (
        f"x {m('', '', 'value-0001-abcdef-longer')} y {m('', '', 'value-1999-abcdef')} z"
    )


def test_texts_shown_later_are_read_only_when_the_scrub_is_searched() -> None:
    """A run that knows no plaintext value never reads what it was shown later; once it
    knows one, those texts count as shown, and a text the loader can no longer vouch for
    (it returns nothing) leaves the value scrubbed."""
    known = redaction.Known()
    asked: list[str] = []

    def later(text: str) -> Callable[[], list[str]]:
        def load() -> list[str]:
            asked.append(text)
            return [text] if text else []

        return load

    known.shown_later(later("metadata:\n  namespace: keycloak\n"))
    known.shown_later(later(""))  # a file changed since its stat was taken
    assert known.scrub("keycloak grafana-admin") == "keycloak grafana-admin"
    assert asked == []  # nothing known: nothing searched, nothing read
    known.add("keycloak")
    known.add("grafana-admin")
    m = redaction.marker
    assert known.scrub("keycloak grafana-admin") == f"keycloak {m('', '', 'grafana-admin')}"
    assert sorted(asked) == ["", "metadata:\n  namespace: keycloak\n"]
    known.scrub("again")
    assert len(asked) == 2  # each loader once
