"""Rendered stream -> documents with identity, exact bytes and sha256; Secret values redacted."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from harness.cache import parsed
from harness.core import yamlload
from harness.core.model import DocId, Document

_SEPARATOR = re.compile(r"^---[ \t]*(?:#.*)?$", re.MULTILINE)
REDACTED_PREFIX = "<redacted sha256:"
# What `flux build` writes over SOPS-encrypted Secret values (plain, base64, and the
# dockerconfigjson forms). They reveal nothing, so redaction leaves them readable.
SOPS_MASK = "**SOPS**"
SOPS_MASKED_VALUES = frozenset(
    {
        SOPS_MASK,
        "KipTT1BTKio=",
        '{"mask":"**SOPS**"}',
        "eyJtYXNrIjoiKipTT1BTKioifQ==",
    }
)


class DocumentError(ValueError):
    """The rendered output is not a stream of Kubernetes objects."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_stream(text: str) -> list[str]:
    """Split on `---` lines, keeping each chunk's bytes; chunks with no content are dropped."""
    chunks: list[str] = []
    start = 0
    for match in _SEPARATOR.finditer(text):
        chunks.append(text[start : match.start()])
        start = match.end() + 1 if match.end() < len(text) else match.end()
    chunks.append(text[start:])
    return [c for c in chunks if _has_content(c)]


def _has_content(chunk: str) -> bool:
    for line in chunk.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and stripped != "...":
            return True
    return False


def identity(obj: Mapping[str, Any]) -> DocId:
    api_version = str(obj.get("apiVersion") or "")
    group = api_version.rpartition("/")[0]
    meta = obj.get("metadata") or {}
    return DocId(
        group=group,
        kind=str(obj.get("kind") or ""),
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
    )


def is_kubernetes_object(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    meta = obj.get("metadata")
    return (
        bool(obj.get("apiVersion"))
        and bool(obj.get("kind"))
        and isinstance(meta, dict)
        and bool(meta.get("name") or meta.get("generateName"))
    )


def is_secret(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def is_sops_encrypted(obj: Mapping[str, Any]) -> bool:
    sops = obj.get("sops")
    return isinstance(sops, dict) and str(sops.get("mac", "")).startswith("ENC[")


def redaction_marker(doc_id: DocId, key: str, value: Any) -> str:
    """Marker that changes when the value changes but does not reveal it.

    Salted with the object identity and key so one common password does not produce
    the same marker everywhere; a short guessable value can still be confirmed by hashing
    candidates (see README, "Secrets").
    """
    digest = hashlib.sha256(f"{doc_id}\0{key}\0{value}".encode()).hexdigest()[:16]
    return f"{REDACTED_PREFIX}{digest}>"


def redact(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of a Secret with data/stringData values replaced, or None if nothing to hide."""
    if not is_secret(obj) or is_sops_encrypted(obj):
        return None
    doc_id = identity(obj)
    out = dict(obj)
    changed = False
    for field in ("data", "stringData"):
        values = obj.get(field)
        if isinstance(values, dict) and not all(_is_marker(v) for v in values.values()):
            out[field] = {
                k: v if _is_marker(v) else redaction_marker(doc_id, f"{field}.{k}", v)
                for k, v in values.items()
            }
            changed = True
    return out if changed else None


def _is_marker(value: Any) -> bool:
    return isinstance(value, str) and (
        value.startswith(REDACTED_PREFIX) or value in SOPS_MASKED_VALUES
    )


def document(obj: dict[str, Any], text: str) -> Document:
    """A document from its parsed object and its exact text, redacting Secrets."""
    redacted = redact(obj)
    if redacted is not None:
        text = yamlload.dump(redacted)
    return Document(
        id=identity(obj),
        api_version=str(obj.get("apiVersion") or ""),
        text=text,
        sha256=sha256_text(text),
    )


def document_from_object(obj: dict[str, Any]) -> Document:
    """For objects harness itself rebuilt (Flux post-build): serialise, then redact."""
    return document(obj, yamlload.dump(obj))


def parse_stream(text: str) -> list[Document]:
    """Documents of a rendered stream in order; raises DocumentError naming the bad one."""
    docs: list[Document] = []
    for index, chunk in enumerate(split_stream(text), start=1):
        try:
            obj = yamlload.load(chunk)
        except yamlload.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DocumentError(f"document {index}: invalid YAML: {first}") from None
        if obj is None:
            continue
        if not is_kubernetes_object(obj):
            raise DocumentError(
                f"document {index}: not a Kubernetes object (needs apiVersion, kind, metadata.name)"
            )
        doc = document(obj, chunk)
        if doc.text is chunk:  # not redacted: obj is this text's object (parsed.py)
            parsed.remember(chunk, obj)
        docs.append(doc)
    return docs


def duplicates(docs: Iterable[Document]) -> tuple[DocId, ...]:
    counts = Counter(d.id for d in docs)
    return tuple(sorted(i for i, n in counts.items() if n > 1))
