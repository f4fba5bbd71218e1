"""flux-operator's ResourceSet (`fluxcd.controlplane.io/v1`): its objects, as the operator
builds them (flux-operator `internal/inputs`, `internal/builder/resourceset.go` and the
ResourceSet controller's apply).

Inputs: `spec.inputs`, then the `ResourceSetInputProvider`s `spec.inputsFrom` names or
selects by labels in the ResourceSet's namespace, sorted by namespace and name. Each input
set gets `provider` (the object it came from). A Static provider exports its
`spec.defaultValues` with an `id` (the operator hashes the object's UID, which git does not
have: a pre-baked `status.exportedInputs[0].id` is used, else the hash of its name, as
`flux-operator build resourceset` does offline); any other provider exports its
`status.exportedInputs`, and one without them is not judged (`NotJudged`).
`inputStrategy` Flatten concatenates; Permute takes the Cartesian product, each set nested
under its provider's normalized name, with a permutation `id`, at most 10000 sets.

Each `spec.resources` entry is serialized to YAML (keys sorted, as the API server's JSON
goes through sigs.k8s.io/yaml) and templated once per input set (gotemplate.py), then
`spec.resourcesTemplate` once per set; objects are deduplicated by group, kind, namespace
and name (resources first), and those annotated `fluxcd.controlplane.io/reconcile:
disabled` dropped. `spec.steps` build alike, a resource in two steps failing the build.
Then the owner labels, `spec.commonMetadata`, and `fluxcd.controlplane.io/copyFrom` data
from ConfigMaps and Secrets the cluster renders.
"""

from __future__ import annotations

import base64
import binascii
import unicodedata
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core import yamlload
from harness.flux.api import ObjectRef, api_group

GROUP = "fluxcd.controlplane.io"
RSET_KIND = "ResourceSet"
PROVIDER_KIND = "ResourceSetInputProvider"
OWNER_NAME = f"resourceset.{GROUP}/name"
OWNER_NAMESPACE = f"resourceset.{GROUP}/namespace"
RECONCILE = f"{GROUP}/reconcile"
COPY_FROM = f"{GROUP}/copyFrom"
UNCOMPUTED = (f"{GROUP}/checksumFrom", f"{GROUP}/convertKubeConfigFrom")
MAX_PERMUTATIONS = 10000
TARGET_SUFFIX = "@resourceset"

Lookup = Callable[[ObjectRef], Mapping[str, Any] | None]


class ResourceSetError(Exception):
    """The ResourceSet fails to build (flux-operator stalls it)."""


class NotJudged(Exception):
    """Its inputs come from a provider harness cannot ask (pull requests, tags, ...)."""


@dataclass(frozen=True)
class Expansion:
    """What one ResourceSet applies."""

    objects: tuple[dict[str, Any], ...]
    inputs: int
    notes: tuple[str, ...] = ()


def is_resourceset(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == RSET_KIND and api_group(obj) == GROUP


def is_provider(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == PROVIDER_KIND and api_group(obj) == GROUP


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def target_name(cluster: str, namespace: str, name: str) -> str:
    """`<cluster>/<namespace>/<name>@resourceset`: never a Kustomization's name."""
    return f"{cluster}/{namespace}/{name}{TARGET_SUFFIX}"


def depends_on(obj: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """`spec.dependsOn` as (kind, namespace, name); the namespace defaults to its own."""
    own = str(_meta(obj).get("namespace") or "default")
    out: list[tuple[str, str, str]] = []
    for dep in _spec(obj).get("dependsOn") or []:
        if isinstance(dep, dict) and dep.get("kind") and dep.get("name"):
            out.append((str(dep["kind"]), str(dep.get("namespace") or own), str(dep["name"])))
    return out


def disabled(obj: Mapping[str, Any]) -> bool:
    annotations = _meta(obj).get("annotations")
    value = annotations.get(RECONCILE) if isinstance(annotations, dict) else None
    return isinstance(value, str) and value.lower() == "disabled"


def wants_providers(obj: Mapping[str, Any]) -> bool:
    return bool(_spec(obj).get("inputsFrom"))


# -- inputs --------------------------------------------------------------------------------


def normalize_key(name: str) -> str:
    """flux-operator's NormalizeKeyForTemplate: lowercase; spaces and punctuation to `_`;
    other characters outside [a-z0-9] dropped; empty words removed."""
    chars = []
    for ch in name:
        low = ch.lower()
        if low.isspace() or _is_punct(low):
            chars.append("_")
        elif ("a" <= low <= "z") or ("0" <= low <= "9"):
            chars.append(low)
    return "_".join(w for w in "".join(chars).split("_") if w)


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")  # Go's unicode.IsPunct


def input_id(text: str) -> str:
    """flux-operator's input id: the Adler-32 checksum, in decimal."""
    return str(zlib.adler32(text.encode()))


def _input_maps(value: Any, what: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(i, dict) for i in value):
        raise ResourceSetError(f"{what} must be a list of maps")
    from harness.flux import gotemplate

    return [{str(k): gotemplate.from_json_value(v) for k, v in item.items()} for item in value]


def _provider_ref(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    meta = _meta(obj)
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": kind,
        "name": str(meta.get("name") or ""),
        "namespace": str(meta.get("namespace") or ""),
    }


def provider_inputs(provider: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What a provider exports, or NotJudged when only its cluster knows."""
    spec, meta = _spec(provider), _meta(provider)
    name = str(meta.get("name") or "")
    status = provider.get("status")
    exported = status.get("exportedInputs") if isinstance(status, dict) else None
    kind = str(spec.get("type") or "")
    if kind == "Static":
        from harness.flux import gotemplate

        defaults = spec.get("defaultValues")
        values = {str(k): gotemplate.from_json_value(v) for k, v in (defaults or {}).items()}
        baked = _input_maps(exported, f"{PROVIDER_KIND} {name} status.exportedInputs")
        values["id"] = baked[0].get("id", input_id(name)) if baked else input_id(name)
        return [values]
    if exported is not None:
        return _input_maps(exported, f"{PROVIDER_KIND} {name} status.exportedInputs")
    raise NotJudged(
        f"{PROVIDER_KIND} {meta.get('namespace')}/{name} is of type {kind or '?'}: its inputs "
        "come from its upstream at run time and it has no status.exportedInputs"
    )


def _matches(labels: Mapping[str, Any], selector: Mapping[str, Any]) -> bool:
    """metav1.LabelSelector: matchLabels and matchExpressions all hold."""
    match = selector.get("matchLabels") or {}
    if not isinstance(match, dict):
        raise ResourceSetError("selector.matchLabels must be a map")
    for key, value in match.items():
        if labels.get(key) != str(value):
            return False
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, dict):
            raise ResourceSetError("selector.matchExpressions entries must be maps")
        key, op = str(expr.get("key")), str(expr.get("operator"))
        values = [str(v) for v in expr.get("values") or []]
        present = key in labels
        if op == "In":
            ok = present and labels[key] in values
        elif op == "NotIn":
            ok = not present or labels[key] not in values
        elif op == "Exists":
            ok = present
        elif op == "DoesNotExist":
            ok = not present
        else:
            raise ResourceSetError(f"selector operator {op!r} is not valid")
        if not ok:
            return False
    return True


def select_providers(
    rset: Mapping[str, Any], providers: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The providers `spec.inputsFrom` names or selects in the ResourceSet's namespace,
    sorted by namespace and name (one GVK: the operator sorts by GVK first)."""
    namespace = str(_meta(rset).get("namespace") or "default")
    here = {
        str(_meta(p).get("name")): p
        for p in providers
        if str(_meta(p).get("namespace") or namespace) == namespace
    }
    chosen: dict[str, Mapping[str, Any]] = {}
    for ref in _spec(rset).get("inputsFrom") or []:
        if not isinstance(ref, dict):
            raise ResourceSetError("spec.inputsFrom entries must be maps")
        if ref.get("name"):
            name = str(ref["name"])
            if name in chosen:
                continue
            if name not in here:
                raise ResourceSetError(
                    f"failed to get provider {namespace}/{name}: no {PROVIDER_KIND} of that "
                    "name in what this cluster renders"
                )
            chosen[name] = here[name]
        elif isinstance(ref.get("selector"), dict):
            for name, obj in here.items():
                labels = _meta(obj).get("labels") or {}
                if _matches(labels if isinstance(labels, dict) else {}, ref["selector"]):
                    chosen[name] = obj
        else:
            raise ResourceSetError("input provider reference must have either name or selector set")
    return [chosen[n] for n in sorted(chosen)]


def combine(
    rset: Mapping[str, Any], providers: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The input sets, by `spec.inputStrategy` (providers: select_providers' answer)."""
    spec = _spec(rset)
    strategy = spec.get("inputStrategy") if isinstance(spec.get("inputStrategy"), dict) else {}
    assert isinstance(strategy, dict)
    name = str(strategy.get("name") or "Flatten")
    include_empty = name == "Permute" and bool(strategy.get("includeEmptyProviders"))
    sources: list[tuple[str, list[dict[str, Any]]]] = []
    own = _input_maps(spec.get("inputs"), "spec.inputs")
    ref = _provider_ref(rset, RSET_KIND)
    sources.append((ref["name"], [{**i, "provider": dict(ref)} for i in own]))
    for provider in providers:
        pref = _provider_ref(provider, PROVIDER_KIND)
        sets = [{**i, "provider": dict(pref)} for i in provider_inputs(provider)]
        sources.append((pref["name"], sets))
    if name == "Flatten":
        return [s for _name, sets in sources for s in sets]
    if name != "Permute":
        raise ResourceSetError(f"unknown input strategy: '{name}'")
    return _permute(sources, include_empty)


def _permute(
    sources: Sequence[tuple[str, list[dict[str, Any]]]], include_empty: bool
) -> list[dict[str, Any]]:
    scoped: list[tuple[str, list[dict[str, Any]]]] = []
    expected = 0
    for name, sets in sources:
        if not include_empty and not sets:
            continue
        expected = len(sets) if not scoped else expected * len(sets)
        if expected > MAX_PERMUTATIONS:
            raise ResourceSetError(
                f"adding provider '{name}' with {len(sets)} inputs would exceed the maximum "
                f"allowed permutations. max: {MAX_PERMUTATIONS}, got: {expected}"
            )
        key = normalize_key(name)
        if not key:
            raise ResourceSetError(f"normalized provider name is empty: '{name}'")
        scoped.append((key, sets))
    if not scoped or any(not sets for _k, sets in scoped):
        return []
    out: list[dict[str, Any]] = []
    choice = [0] * len(scoped)
    while True:
        perm: dict[str, Any] = {}
        parts = []
        for (key, sets), index in zip(scoped, choice, strict=True):
            perm[key] = sets[index]
            parts.append(f"{key}={index}")
        perm["id"] = input_id("/".join(parts))
        out.append(perm)
        pos = len(scoped) - 1
        while pos >= 0:
            choice[pos] += 1
            if choice[pos] < len(scoped[pos][1]):
                break
            choice[pos] = 0
            pos -= 1
        if pos < 0:
            return out


# -- building ------------------------------------------------------------------------------


def _key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = _meta(obj)
    return (
        api_group(obj),
        str(obj.get("kind") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


def _template(source: str, inputs: Mapping[str, Any] | None, what: str) -> str:
    from harness.flux import gotemplate

    try:
        return gotemplate.render(source, {} if inputs is None else inputs)
    except gotemplate.TemplateError as exc:
        raise ResourceSetError(f"{what}: {exc}") from None


def _decode(text: str, what: str) -> list[dict[str, Any]]:
    """The documents of a rendered template as fluxcd/pkg's ssa reader decodes them: empty
    documents skipped, a document without `kind` an error."""
    try:
        docs = [d for d in yamlload.load_all(text) if d is not None]
    except yamlload.YAMLError as exc:
        raise ResourceSetError(f"{what}: failed to read object: {exc}") from None
    for doc in docs:
        if not isinstance(doc, dict):
            raise ResourceSetError(f"{what}: failed to read object: not a Kubernetes object")
        if not doc.get("kind"):
            raise ResourceSetError(f"{what}: failed to read object: Object 'Kind' is missing")
    return docs


def _one(text: str, what: str) -> dict[str, Any]:
    """ssautil.ReadObject: the first document."""
    docs = _decode(text, what)
    if not docs:
        raise ResourceSetError(f"{what}: failed to read object: EOF")
    return docs[0]


def _many(text: str, what: str) -> list[dict[str, Any]]:
    """ssautil.ReadObjects: Lists unpacked; objects without apiVersion, kind or name, and
    kustomize's own Kustomization files, left out."""
    out: list[dict[str, Any]] = []
    for doc in _decode(text, what):
        items = doc.get("items") if str(doc.get("kind")).endswith("List") else None
        for obj in items if isinstance(items, list) else [doc]:
            if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
                continue
            if not _meta(obj).get("name"):
                continue
            if obj.get("kind") == "Kustomization" and api_group(obj) == "kustomize.config.k8s.io":
                continue
            out.append(obj)
    return out


def build(
    resources: Any, resources_template: str, combined: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """flux-operator's BuildResourceSet for one list of resources and one template."""
    if resources is not None and not isinstance(resources, list):
        raise ResourceSetError("spec.resources must be a list")
    from harness.flux import gotemplate  # only a repo with ResourceSets loads the engine

    objects: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str, str]] = set()

    def add(obj: dict[str, Any], dedup: bool) -> None:
        key = _key(obj)
        if dedup and key in seen:
            return
        seen.add(key)
        objects.append(obj)

    for i, tmpl in enumerate(resources or []):
        if not isinstance(tmpl, dict):
            raise ResourceSetError(f"spec.resources[{i}] is not an object")
        source = gotemplate.go_yaml(tmpl)
        what = f"failed to build resources[{i}]"
        if not combined:
            add(_one(_template(source, None, what), what), False)
            continue
        for inputs in combined:
            obj = _one(_template(source, inputs, what), what)
            if not _excluded(obj):
                add(obj, True)
    if resources_template:
        what = "failed to build resources"
        built: list[dict[str, Any]] = []
        runs: list[Mapping[str, Any] | None] = list(combined) or [None]
        for run_inputs in runs:
            built.extend(_many(_template(resources_template, run_inputs, what), what))
        for obj in built:
            if not _excluded(obj):
                add(obj, True)
    return objects


def _excluded(obj: Mapping[str, Any]) -> bool:
    annotations = _meta(obj).get("annotations")
    return isinstance(annotations, dict) and annotations.get(RECONCILE) == "disabled"


def build_spec(
    spec: Mapping[str, Any], combined: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Resources, or each step's in order (a resource in two steps fails the build)."""
    steps = spec.get("steps") or []
    template = spec.get("resourcesTemplate") or ""
    if not isinstance(template, str):
        raise ResourceSetError("spec.resourcesTemplate must be a string")
    if steps and (spec.get("resources") or template):
        raise ResourceSetError(
            "spec.steps is mutually exclusive with spec.resources and spec.resourcesTemplate"
        )
    if not steps:
        return build(spec.get("resources"), template, combined)
    out: list[dict[str, Any]] = []
    owner: dict[tuple[str, str, str, str], str] = {}
    for step in steps:
        if not isinstance(step, dict):
            raise ResourceSetError("spec.steps entries must be maps")
        name = str(step.get("name") or "")
        if not step.get("resources") and not step.get("resourcesTemplate"):
            raise ResourceSetError(
                f'step "{name}": at least one of resources or resourcesTemplate must be set'
            )
        try:
            objs = build(step.get("resources"), str(step.get("resourcesTemplate") or ""), combined)
        except ResourceSetError as exc:
            raise ResourceSetError(f'step "{name}": {exc}') from None
        for obj in objs:
            key = _key(obj)
            if key in owner and owner[key] != name:
                raise ResourceSetError(
                    f'duplicate resource {key[1]}/{key[2]}/{key[3]} in step "{name}", already '
                    f'defined in step "{owner[key]}"'
                )
            owner[key] = name
        out.extend(objs)
    return out


def expand(
    rset: Mapping[str, Any], providers: Sequence[Mapping[str, Any]], lookup: Lookup
) -> Expansion:
    """The objects the ResourceSet applies. Raises ResourceSetError or NotJudged."""
    meta = _meta(rset)
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "default")
    if not name:
        raise ResourceSetError("ResourceSet name must be set")
    spec = _spec(rset)
    notes: list[str] = []
    combined = combine(rset, select_providers(rset, providers))
    if spec.get("inputsFrom") and not combined:
        notes.append("its providers export no inputs: it applies nothing (and prunes the rest)")
        objects: list[dict[str, Any]] = []
    else:
        objects = build_spec(spec, combined)
    common = spec.get("commonMetadata") if isinstance(spec.get("commonMetadata"), dict) else {}
    assert isinstance(common, dict)
    for obj in objects:
        _set_metadata(obj, "labels", {OWNER_NAME: name, OWNER_NAMESPACE: namespace})
        for part in ("labels", "annotations"):
            values = common.get(part)
            if isinstance(values, dict):
                _set_metadata(obj, part, {str(k): str(v) for k, v in values.items()})
        notes.extend(_copy_from(obj, lookup))
        for key in UNCOMPUTED:
            if _annotation(obj, key) is not None:
                notes.append(f"{_show(obj)}: {key} is not computed by harness")
    if disabled(rset):
        notes.append(f"{RECONCILE}: disabled: flux-operator does not apply it until enabled")
    return Expansion(tuple(objects), len(combined), tuple(notes))


def _set_metadata(obj: dict[str, Any], part: str, values: Mapping[str, str]) -> None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    current = meta.get(part)
    if not isinstance(current, dict):
        current = meta[part] = {}
    current.update(values)


def _annotation(obj: Mapping[str, Any], key: str) -> str | None:
    annotations = _meta(obj).get("annotations")
    if isinstance(annotations, dict) and key in annotations:
        return str(annotations[key])
    return None


def _show(obj: Mapping[str, Any]) -> str:
    _group, kind, namespace, name = _key(obj)
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def _copy_from(obj: dict[str, Any], lookup: Lookup) -> list[str]:
    """`fluxcd.controlplane.io/copyFrom: namespace/name` on a v1 ConfigMap or Secret."""
    source = _annotation(obj, COPY_FROM)
    if source is None or obj.get("apiVersion") != "v1":
        return []
    kind = obj.get("kind")
    if kind not in ("ConfigMap", "Secret"):
        return []
    parts = source.split("/")
    if len(parts) != 2:
        raise ResourceSetError(
            f"invalid {COPY_FROM} annotation value '{source}' must be in the format "
            "'namespace/name'"
        )
    found = lookup(ObjectRef(str(kind), parts[0], parts[1]))
    if found is None:
        return [
            f"{_show(obj)}: {COPY_FROM} {kind}/{source} is not in what this cluster renders: "
            "its copied data is not judged"
        ]
    if kind == "ConfigMap":
        data = found.get("data")
        if isinstance(data, dict):
            obj["data"] = {str(k): str(v) for k, v in data.items()}
        binary = found.get("binaryData")
        if isinstance(binary, dict) and binary:
            obj["binaryData"] = {str(k): str(v) for k, v in binary.items()}
        return []
    if "type" not in obj:
        obj["type"] = str(found.get("type") or "Opaque")
    values: dict[str, str] = {}
    data = found.get("data")
    for key, value in data.items() if isinstance(data, dict) else []:
        try:
            values[str(key)] = base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            values[str(key)] = str(value)
    string_data = found.get("stringData")
    if isinstance(string_data, dict):
        values.update({str(k): str(v) for k, v in string_data.items()})
    # the operator sets stringData; the applied Secret holds it as data (ssa's normalize)
    data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    assert isinstance(data, dict)
    data.update({k: base64.b64encode(v.encode()).decode() for k, v in values.items()})
    obj["data"] = data
    return []
