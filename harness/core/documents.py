"""Rendered stream -> documents with identity, exact bytes and sha256; Secret values redacted."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harness.core import parsed, redaction, yamlload
from harness.core.memo import Memo
from harness.core.model import DocId, Document

_SEPARATOR = re.compile(r"^---[ \t]*(?:#.*)?$", re.MULTILINE)
REDACTED_PREFIX = redaction.PREFIX
SOPS_MASK = redaction.SOPS_MASK
SOPS_MASKED_VALUES = redaction.SOPS_MASKED_VALUES
# the core API group, as an apiVersion spells it: `v1` (no group) or `core/v1`
CORE_GROUPS = ("", "core")


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
    """A core-group Secret, whatever its version says (`v1`, `V1`, `v2`): the API server
    rejects a version it does not serve, but the object's values are a Secret's either way,
    so recognition goes by kind and group, never by the exact version string."""
    if obj.get("kind") != "Secret":
        return False
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return group in CORE_GROUPS


def is_sops_encrypted(obj: Mapping[str, Any]) -> bool:
    sops = obj.get("sops")
    return isinstance(sops, dict) and str(sops.get("mac", "")).startswith("ENC[")


def learn(obj: Any) -> None:
    """The run's scrub (redaction.known()) learns the values of a Secret object, or of each
    Secret a `List` holds; anything else is ignored."""
    if not isinstance(obj, dict):
        return
    if obj.get("kind") == "List" or str(obj.get("kind") or "").endswith("List"):
        items = obj.get("items")
        for item in items if isinstance(items, list) else ():
            learn(item)
        return
    if _is_flux_kustomization(obj):
        for _index, patch, targeted in _secret_patches(obj):
            for doc in patch:
                if isinstance(doc, dict):
                    learn(_as_secret(doc, targeted))
                    if _is_json_op(doc):
                        _learn_value(doc.get("value"))
        _substitute(obj)  # teaches the scrub the inline values the tree's Secrets take
        return
    if not is_secret(obj):
        return
    for field in ("data", "stringData"):
        values = obj.get(field)
        encoded = field == "data"
        if isinstance(values, dict):
            for value in values.values():
                redaction.known().add(value, encoded=encoded)
        elif values is not None:
            redaction.known().add(values, encoded=encoded)


def holds_secret_values(obj: Any) -> bool:
    """Whether `learn` would learn anything from `obj` (a Secret, a List, a Flux
    Kustomization whose patches write a Secret)."""
    if not isinstance(obj, dict):
        return False
    kind = str(obj.get("kind") or "")
    if kind.endswith("List"):
        return True
    if _is_flux_kustomization(obj):
        return bool(_secret_patches(obj))
    return is_secret(obj)


def _learn_value(value: Any) -> None:
    if isinstance(value, dict):
        for v in value.values():
            _learn_value(v)
    elif isinstance(value, list):
        for v in value:
            _learn_value(v)
    elif value is not None:
        redaction.known().add(value)


# -- a Flux Kustomization's patches that write a Secret ------------------------------------

FLUX_KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
_SECRET_FIELDS = ("data", "stringData")


def _is_flux_kustomization(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Kustomization" and identity(obj).group == FLUX_KUSTOMIZE_GROUP


def _is_json_op(doc: Mapping[str, Any]) -> bool:
    return isinstance(doc.get("op"), str) and isinstance(doc.get("path"), str)


_NO_SECRET_PATCH: Memo[tuple[str, bool, bool], bool] = Memo("patches writing no Secret", 4096)


def _secret_patches(obj: Mapping[str, Any]) -> list[tuple[int, list[Any], bool]]:
    """(index, parsed patch, targeted) of each `spec.patches` entry that may write a
    Secret's values: a strategic-merge patch that is a Secret, or one of any kind with
    `data`/`stringData` whose `target` may select a Secret (kustomize applies it to what
    the target selects, whatever kind the patch names: `targeted`), or JSON 6902 operations
    on `/data` or `/stringData` (or the whole object) of a target that may be a Secret."""
    spec = obj.get("spec")
    patches = spec.get("patches") if isinstance(spec, dict) else None
    if not isinstance(patches, list):
        return []
    out: list[tuple[int, list[Any], bool]] = []
    for index, entry in enumerate(patches):
        if not isinstance(entry, dict) or not isinstance(entry.get("patch"), str):
            continue
        target = entry.get("target")
        target = target if isinstance(target, dict) else {}
        may_be_secret = (
            target.get("kind") in (None, "", "Secret")
            and str(target.get("group") or "") in CORE_GROUPS
        )
        targeted = may_be_secret and bool(target)
        # a parent's patch gives every child Kustomization the same patches: whether one
        # writes a Secret is decided once per run (its text and how its target reads)
        decided = (entry["patch"], may_be_secret, targeted)
        if _NO_SECRET_PATCH.get(decided):
            continue
        try:
            loaded = yamlload.load_all(entry["patch"])
        except yamlload.YAMLError:
            continue
        docs = [d for item in loaded for d in (item if isinstance(item, list) else [item])]
        if any(
            isinstance(d, dict)
            and (
                is_secret(d)
                or (may_be_secret and _is_json_op(d) and _writes_secret(d))
                or (targeted and not _is_json_op(d) and _holds_values(d))
            )
            for d in docs
        ):
            out.append((index, loaded, targeted))
        else:
            _NO_SECRET_PATCH.put(decided, True)
    return out


def _holds_values(doc: Mapping[str, Any]) -> bool:
    return any(doc.get(field) is not None for field in _SECRET_FIELDS)


def _as_secret(doc: dict[str, Any], targeted: bool) -> dict[str, Any]:
    """A strategic-merge patch as the Secret whose values it writes: itself, or, when its
    target may select a Secret, its fields read as a Secret's (whatever kind it names)."""
    if is_secret(doc) or not targeted or _is_json_op(doc) or not _holds_values(doc):
        return doc
    return {**doc, "apiVersion": "v1", "kind": "Secret"}


def _writes_secret(op: Mapping[str, Any]) -> bool:
    path = str(op.get("path"))
    return path in ("", "/") or path.split("/")[1:2] in (["data"], ["stringData"])


def _redact_patches(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of a Flux Kustomization with the Secret values its patches write as markers
    (the patched Secret is masked in its own render; the object carrying the patch must
    not show the plaintext either), or None when no patch writes one."""
    found = _secret_patches(obj)
    if not found:
        return None
    doc_id = identity(obj)
    spec = dict(obj["spec"])
    patches = list(spec["patches"])
    for index, loaded, targeted in found:
        hidden: list[Any] = []
        for item in loaded:
            if isinstance(item, list):
                hidden.append([_redact_op(o, doc_id, index) for o in item])
            elif isinstance(item, dict) and is_secret(_as_secret(item, targeted)):
                masked = redact(_as_secret(item, targeted))
                if masked is None:
                    hidden.append(item)
                else:  # the values masked, the kind and version the patch gave kept
                    hidden.append(
                        {**masked, **{k: item[k] for k in ("apiVersion", "kind") if k in item}}
                    )
            else:
                hidden.append(_redact_op(item, doc_id, index))
        text = "---\n".join(yamlload.dump(h) for h in hidden)
        patches[index] = {**patches[index], "patch": text}
    spec["patches"] = patches
    return {**obj, "spec": spec}


def secrets_written(obj: Any) -> list[dict[str, Any]]:
    """The Secrets an object of the tree writes values into: itself, the Secrets a `List`
    holds, and a Flux Kustomization's strategic-merge patches that are Secrets."""
    if not isinstance(obj, dict):
        return []
    if obj.get("kind") == "List" or str(obj.get("kind") or "").endswith("List"):
        items = obj.get("items")
        return [
            s for item in (items if isinstance(items, list) else ()) for s in secrets_written(item)
        ]
    if is_secret(obj):
        return [obj]
    if _is_flux_kustomization(obj):
        return [
            d
            for _index, patch, targeted in _secret_patches(obj)
            for item in patch
            for d in (item if isinstance(item, list) else [item])
            if isinstance(d, dict) and is_secret(_as_secret(d, targeted))
        ]
    return []


def _substitute(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """A Flux Kustomization's `spec.postBuild.substitute` with the values the tree's Secrets
    take (redaction.secret_variables) as markers, or None when none is. Each value hidden is
    also taught to the run's scrub."""
    names = redaction.secret_variables()
    spec = obj.get("spec")
    post = spec.get("postBuild") if isinstance(spec, dict) else None
    given = post.get("substitute") if isinstance(post, dict) else None
    if not names or not isinstance(given, dict):
        return None
    hide = [k for k, v in given.items() if k in names and not redaction.kept(str(v))]
    if not hide:
        return None
    doc_id = identity(obj)
    for key in hide:
        redaction.known().add(given[key])
    hidden = {
        k: redaction_marker(doc_id, f"spec.postBuild.substitute.{k}", v) if k in hide else v
        for k, v in given.items()
    }
    assert isinstance(spec, dict) and isinstance(post, dict)
    return {**obj, "spec": {**spec, "postBuild": {**post, "substitute": hidden}}}


def _redact_op(op: Any, doc_id: DocId, index: int) -> Any:
    if not isinstance(op, dict) or not _is_json_op(op) or not _writes_secret(op):
        return op
    if "value" not in op or redaction.kept(op["value"]):
        return op
    key = f"spec.patches[{index}].{op['path']}"
    value = op["value"]
    if isinstance(value, dict):
        hidden: Any = {
            k: v if redaction.kept(v) else redaction_marker(doc_id, f"{key}/{k}", v)
            for k, v in value.items()
        }
    else:
        hidden = redaction_marker(doc_id, key, value)
    return {**op, "value": hidden}


def redaction_marker(doc_id: DocId, key: str, value: Any) -> str:
    """The marker of one Secret value (redaction.py: changes with the value, reveals nothing)."""
    return redaction.marker(doc_id, key, value)


def redact(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A copy with every Secret-derived value a marker, or None if nothing to hide.

    A Secret's `data`/`stringData` values, SOPS-marked or not (ciphertext and masks stay);
    the values a Flux Kustomization's `spec.patches` writes into a Secret, and its inline
    `postBuild.substitute` values for the variables the tree's Secrets take; a
    last-applied-configuration annotation, redacted like the object it holds."""
    out: dict[str, Any] | None = None
    if is_secret(obj):
        doc_id = identity(obj)
        learn(obj)
        for field in ("data", "stringData"):
            values = obj.get(field)
            if isinstance(values, dict):
                if all(redaction.kept(v) for v in values.values()):
                    continue
                hidden: Any = {
                    k: v if redaction.kept(v) else redaction_marker(doc_id, f"{field}.{k}", v)
                    for k, v in values.items()
                }
            elif values is None or redaction.kept(values):
                continue
            else:  # not a mapping: kubectl would refuse it, but its text is still secret
                hidden = redaction_marker(doc_id, field, values)
            out = dict(obj) if out is None else out
            out[field] = hidden
    if _is_flux_kustomization(obj):
        patched = _redact_patches(obj)
        if patched is not None:
            out = patched
        substituted = _substitute(out if out is not None else obj)
        if substituted is not None:
            out = substituted
    applied = _last_applied(obj)
    if applied is not None:
        out = dict(obj) if out is None else out
        meta = dict(out["metadata"])
        meta["annotations"] = {**meta["annotations"], redaction.LAST_APPLIED: applied}
        out["metadata"] = meta
    return out


def _last_applied(obj: Mapping[str, Any]) -> str | None:
    """The redacted last-applied annotation, or None when it holds nothing secret."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    raw = annotations.get(redaction.LAST_APPLIED) if isinstance(annotations, dict) else None
    if raw is None or redaction.is_marker(raw):
        return None
    try:
        held = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        held = None
    if isinstance(held, dict):
        hidden = redact(held)
        if hidden is None:
            return None
        text = json.dumps(hidden, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        return text + "\n" if str(raw).endswith("\n") else text
    if is_secret(obj) or "Secret" in str(raw):  # unreadable: the whole value is the secret
        return redaction_marker(
            identity(obj), f"metadata.annotations.{redaction.LAST_APPLIED}", raw
        )
    return None


def document(obj: dict[str, Any], text: str) -> Document:
    """A document from its parsed object and its exact text, Secret-derived values redacted."""
    hidden = redact(obj)
    if hidden is not None:
        text = yamlload.dump(hidden)
        parsed.remember_dumped(text, hidden)
    return Document(
        id=identity(obj),
        api_version=str(obj.get("apiVersion") or ""),
        text=text,
        sha256=sha256_text(text),
    )


def document_from_object(obj: dict[str, Any]) -> Document:
    """For objects harness itself rebuilt (Flux post-build): serialise, then redact."""
    text = yamlload.dump(obj)
    doc = document(obj, text)
    if doc.text is text:  # not redacted (a redacted text was remembered with its object)
        parsed.remember_dumped(text, obj)
    return doc


def from_objects(objs: Iterable[dict[str, Any]]) -> tuple[Document, ...]:
    """The documents of one render harness rebuilt (Flux, Helm), each redacted."""
    return tuple(document_from_object(o) for o in objs)


def parse_stream(
    text: str,
    rewrite: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | None] | None = None,
) -> list[Document]:
    """Documents of a rendered stream in order; raises DocumentError naming the bad one.

    `rewrite` may return the objects with some replaced (secretflow.mask): a replaced one
    is serialised anew, the others keep their exact text."""
    loaded: list[tuple[str, dict[str, Any]]] = []
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
        loaded.append((chunk, obj))
    rewritten = rewrite([obj for _chunk, obj in loaded]) if rewrite is not None else None
    docs: list[Document] = []
    for index, (chunk, obj) in enumerate(loaded):
        if rewritten is not None and rewritten[index] is not obj:
            docs.append(document_from_object(rewritten[index]))
            continue
        doc = document(obj, chunk)
        if doc.text is chunk:  # not redacted: obj is this text's object (parsed.py)
            parsed.remember(chunk, obj)
        docs.append(doc)
    return docs


def duplicates(docs: Iterable[Document]) -> tuple[DocId, ...]:
    counts = Counter(d.id for d in docs)
    return tuple(sorted(i for i, n in counts.items() if n > 1))
