"""Stream splitting keeps exact bytes; identity ignores the version; Secrets never leak."""

from __future__ import annotations

import hashlib

import pytest

from harness.core import documents, redaction
from harness.core.model import DocId
from harness.core.run import Run

DEPLOY_V1 = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: a\n"
SECRET = (
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: a\n"
    "data:\n  password: c3VwZXItc2VjcmV0LXZhbHVl\nstringData:\n  token: plain-token-123\n"
    "type: Opaque\n"
)


def test_split_keeps_each_documents_bytes() -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
    docs = documents.parse_stream(f"{cm}---\n{DEPLOY_V1}")
    assert [d.text for d in docs] == [cm, DEPLOY_V1]
    assert docs[1].sha256 == hashlib.sha256(DEPLOY_V1.encode()).hexdigest()


def test_identity_ignores_api_version() -> None:
    old = documents.parse_stream(DEPLOY_V1.replace("apps/v1", "apps/v1beta1"))[0]
    new = documents.parse_stream(DEPLOY_V1)[0]
    assert old.id == new.id == DocId("apps", "Deployment", "a", "web")
    assert str(new.id) == "apps/Deployment/a/web"
    assert old.sha256 != new.sha256


def test_core_cluster_scoped_id_string() -> None:
    doc = documents.parse_stream(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-system\n"
    )
    assert str(doc[0].id) == "Namespace/kube-system"


def test_empty_and_comment_only_chunks_are_dropped() -> None:
    assert documents.parse_stream("") == []
    assert documents.parse_stream("---\n# nothing\n---\n") == []


def test_non_kubernetes_yaml_is_an_error() -> None:
    with pytest.raises(documents.DocumentError, match="document 1: not a Kubernetes object"):
        documents.parse_stream("just: data\n")


def test_invalid_yaml_names_the_document() -> None:
    with pytest.raises(documents.DocumentError, match="document 2: invalid YAML"):
        documents.parse_stream(f"{DEPLOY_V1}---\na: [1\n")


def test_secret_values_are_redacted_but_changes_detected() -> None:
    doc = documents.parse_stream(SECRET)[0]
    assert "c3VwZXItc2VjcmV0LXZhbHVl" not in doc.text
    assert "plain-token-123" not in doc.text
    assert doc.text.count(documents.REDACTED_PREFIX) == 2
    changed = documents.parse_stream(SECRET.replace("plain-token-123", "plain-token-124"))[0]
    assert changed.sha256 != doc.sha256
    again = documents.parse_stream(doc.text)[0]
    assert again.text == doc.text, "re-reading a golden must not re-redact"


def test_sops_encrypted_secret_is_kept() -> None:
    sops = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n"
        "  k: ENC[AES256_GCM,data:abc=,iv:x,tag:y,type:str]\n"
        "sops:\n  mac: ENC[AES256_GCM,data:zzz,type:str]\n  version: 3.9.0\n"
    )
    assert documents.parse_stream(sops)[0].text == sops


def test_duplicates_are_reported() -> None:
    docs = documents.parse_stream(f"{DEPLOY_V1}---\n{DEPLOY_V1}")
    assert len(docs) == 2
    assert documents.duplicates(docs) == (DocId("apps", "Deployment", "a", "web"),)


def test_a_secret_is_recognised_by_kind_and_group_whatever_its_version() -> None:
    for api in ("v1", "V1", "v2", "core/v1", "/v1"):
        secret = {"apiVersion": api, "kind": "Secret", "metadata": {"name": "s"}}
        assert documents.is_secret(secret), api
        doc = documents.document({**secret, "stringData": {"t": "plain-1"}}, "")
        assert "plain-1" not in doc.text and "<redacted sha256:" in doc.text, api
    other = {"apiVersion": "example.com/v1", "kind": "Secret", "metadata": {"name": "s"}}
    assert not documents.is_secret(other)


def test_a_flux_kustomization_patch_that_writes_a_secret_is_masked_in_the_kustomization() -> None:
    smp = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: plain-2\n"
    ops = '[{"op": "add", "path": "/stringData/token", "value": "plain-3"}]'
    other = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: stays-1\n"
    ks = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {
            "patches": [
                {"patch": smp, "target": {"kind": "Secret"}},
                {"patch": ops, "target": {"kind": "Secret", "name": "db"}},
                {"patch": other},
                {"patch": ops, "target": {"kind": "ConfigMap"}},
            ]
        },
    }
    doc = documents.document(ks, "")
    assert "plain-2" not in doc.text
    patches = documents.yamlload.load(doc.text)["spec"]["patches"]
    assert "password: <redacted sha256:" in patches[0]["patch"]
    assert "value: <redacted sha256:" in patches[1]["patch"]
    assert "plain-3" not in patches[1]["patch"]
    assert patches[2] == {"patch": other}  # no Secret: as it was
    assert patches[3]["patch"] == ops  # a ConfigMap's data is not a Secret's


def test_a_patch_decided_once_per_run_is_decided_by_its_target_too() -> None:
    """Children of one parent carry the same patch texts: a run decides once that a text
    writes no Secret, for the way its target reads; the same text aimed at a Secret is
    masked all the same."""
    ops = '[{"op": "add", "path": "/stringData/token", "value": "plain-4"}]'

    def ks(target: dict[str, str]) -> dict[str, object]:
        return {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": "flux-system"},
            "spec": {"patches": [{"patch": ops, "target": target}]},
        }

    with Run().entered():
        for _ in range(2):
            assert documents.redact(ks({"kind": "ConfigMap"})) is None
            hidden = documents.redact(ks({"kind": "Secret", "name": "db"}))
            assert hidden is not None and "plain-4" not in repr(hidden)


def test_inline_substitute_values_a_secret_takes_are_masked_in_the_kustomization() -> None:
    """The Secret a `${DB_PASS}` lands in is masked; the Kustomization giving it must be too
    (issue 28); a variable no Secret takes stays readable."""
    ks = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {"postBuild": {"substitute": {"DB_PASS": "hunter2-hunter2", "REGION": "eu"}}},
    }
    assert documents.redact(ks) is None  # outside a render that knows the tree's variables
    with redaction.substituted(frozenset({"DB_PASS"})):
        hidden = documents.redact(ks)
        assert redaction.known().scrub("hunter2-hunter2") != "hunter2-hunter2"
    assert hidden is not None
    substitute = hidden["spec"]["postBuild"]["substitute"]
    assert substitute["REGION"] == "eu"
    assert redaction.MARKER.fullmatch(substitute["DB_PASS"])
    assert ks["spec"]["postBuild"]["substitute"]["DB_PASS"] == "hunter2-hunter2"  # a copy
