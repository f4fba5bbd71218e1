"""The values a HelmRelease installs with: `valuesFrom` in order, then `spec.values` on top.

As helm-controller's ChartValuesFromReferences (fluxcd/pkg chartutil): each reference reads
`valuesKey` (default `values.yaml`) of a ConfigMap or Secret in the HelmRelease's namespace; a
missing object or key fails the release unless `optional: true`; with `targetPath` the raw
value is set at that dot path through Helm's `--set` parser (a quoted value stays a string),
otherwise it is parsed as YAML and deep-merged (maps merge, anything else replaces).

The objects come from the same cluster's rendered Flux output. A Secret's values never reach
an output: every string value taken from one is replaced by a redaction marker (it still
changes when the value changes), so a chart that copies it into a ConfigMap shows the marker.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Callable, Mapping
from typing import Any

from harness.core import documents, redaction, yamlload
from harness.core.model import DocId
from harness.flux.api import ObjectRef
from harness.flux.helm.release import HelmRelease, ValuesReference

Lookup = Callable[[ObjectRef], Mapping[str, Any] | None]
SetParser = Callable[[str, bool], dict[str, Any]]


class ValuesError(Exception):
    """The values cannot be composed; the message is the target's one-line error."""


def merge_maps(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """fluxcd/pkg transform.MergeMaps: maps merge recursively, other values replace."""
    out = dict(base)
    for key, value in override.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = merge_maps(current, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def compose(
    release: HelmRelease, lookup: Lookup, parse_set: SetParser
) -> tuple[dict[str, Any], list[str]]:
    """(values, notes): valuesFrom in order, spec.values last.

    `parse_set(expr, as_string)` is Helm's strvals parser. A SOPS-encrypted Secret's values
    cannot be known offline: it is left out and a note says so.
    """
    result: dict[str, Any] = {}
    notes: list[str] = []
    for ref in release.values_from:
        obj = lookup(ObjectRef(ref.kind, release.namespace, ref.name))
        if obj is None:
            if ref.optional:
                continue
            raise ValuesError(
                f"valuesFrom {ref}: no such {ref.kind} in namespace {release.namespace} "
                "in this cluster's rendered objects"
            )
        raw = _read_key(obj, ref)
        if raw is None:
            if ref.optional:
                continue
            raise ValuesError(f"valuesFrom {ref}: no key {ref.values_key!r}")
        secret = ref.kind == "Secret"
        if secret:
            redaction.known().add(raw)  # and its lines: a YAML error below may quote one
        if raw in documents.SOPS_MASKED_VALUES:
            notes.append(
                f"valuesFrom {ref} is SOPS-encrypted: its values are unknown offline and "
                "were left out"
            )
            continue
        if ref.target_path:
            result = merge_maps(result, _at_path(ref, raw, parse_set, secret, obj))
            continue
        try:
            parsed = yamlload.load(raw) if raw.strip() else {}
        except yamlload.YAMLError as exc:
            raise ValuesError(f"valuesFrom {ref} key {ref.values_key!r}: not YAML: {exc}") from None
        if parsed is None:
            parsed = {}
        if not isinstance(parsed, dict):
            raise ValuesError(f"valuesFrom {ref} key {ref.values_key!r}: not a YAML mapping")
        if secret:
            parsed = _redact(parsed, documents.identity(obj), ref.values_key)
        result = merge_maps(result, parsed)
    return merge_maps(result, dict(release.values)), notes


def inputs(release: HelmRelease, lookup: Lookup) -> list[tuple[str, str | None]]:
    """What each valuesFrom reference reads, in order (None: absent): with the HelmRelease,
    all `compose` depends on. A Secret's value is read as its redaction marker (the same
    whether the Secret arrives in plaintext or already redacted from the render cache), so
    the render cache keys a release by these when it reads a Secret or has a `targetPath`
    (composing that needs Helm's parser, in the SDK). ValuesError as `compose` raises it."""
    out: list[tuple[str, str | None]] = []
    for ref in release.values_from:
        obj = lookup(ObjectRef(ref.kind, release.namespace, ref.name))
        raw: str | None = None
        if obj is not None and ref.kind == "Secret":
            shown = documents.redact(dict(obj)) or obj
            for field in ("stringData", "data"):
                found = shown.get(field)
                if isinstance(found, dict) and ref.values_key in found:
                    raw = f"{field}:{found[ref.values_key]}"
                    break
        elif obj is not None:
            raw = _read_key(obj, ref)
        out.append((repr(ref), raw))
    return out


def _read_key(obj: Mapping[str, Any], ref: ValuesReference) -> str | None:
    data = obj.get("data") or {}
    if ref.kind == "Secret":
        string_data = obj.get("stringData") or {}
        if isinstance(string_data, dict) and ref.values_key in string_data:
            return str(string_data[ref.values_key])
        if isinstance(data, dict) and ref.values_key in data:
            try:
                return base64.b64decode(str(data[ref.values_key]), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                raise ValuesError(
                    f"valuesFrom {ref} key {ref.values_key!r}: not base64-encoded UTF-8"
                ) from None
        return None
    if isinstance(data, dict) and ref.values_key in data:
        return str(data[ref.values_key])
    binary = obj.get("binaryData") or {}
    if isinstance(binary, dict) and ref.values_key in binary:
        return base64.b64decode(str(binary[ref.values_key])).decode("utf-8", "replace")
    return None


def _at_path(
    ref: ValuesReference,
    raw: str,
    parse_set: SetParser,
    secret: bool,
    obj: Mapping[str, Any],
) -> dict[str, Any]:
    quoted = len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\""
    value = raw.strip("'\"") if quoted else raw
    if secret:
        value = documents.redaction_marker(documents.identity(obj), ref.values_key, value)
        quoted = True
    try:
        return parse_set(f"{ref.target_path}={value}", quoted)
    except Exception as exc:  # the SDK raises its own error types
        raise ValuesError(f"valuesFrom {ref} targetPath {ref.target_path!r}: {exc}") from None


def _redact(value: Any, doc_id: DocId, key: str) -> Any:
    """A Secret's values as markers: strings and numbers (a port, an account id, a PIN).
    Booleans and nulls stay: a template branches on them, and a marker, always truthy,
    would render another chart than the cluster gets (they reveal one bit)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        redaction.known().add(value)
        return documents.redaction_marker(doc_id, key, value)
    if isinstance(value, dict):
        return {k: _redact(v, doc_id, f"{key}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, doc_id, f"{key}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str) and not _is_marker(value):
        redaction.known().add(value)
        return documents.redaction_marker(doc_id, key, value)
    return value


def _is_marker(value: str) -> bool:
    return value.startswith(documents.REDACTED_PREFIX) or value in documents.SOPS_MASKED_VALUES
