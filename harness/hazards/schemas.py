"""Would the API server accept this object? Offline validation against the schemas it uses.

Flux applies a Kustomization's render as one server-side apply, dry-run first. The API
server turns each object into a typed value of its schema (an unknown field fails with
`field not declared in schema`, a string where an integer belongs with `expected numeric`)
and then validates it (required fields, enums, bounds of a CRD's schema). This module does
both, offline, for two kinds of schema:

- built-in kinds: the OpenAPI definitions of the cluster's Kubernetes version as the
  `kubernetes-validate` package ships them (its strict set, read from the package's data
  files through importlib.resources: 1.25 to 1.37; a version outside that range uses the
  nearest one shipped, and says so);
- custom resources: the `openAPIV3Schema` of the CRD version they use, from the CRD objects
  the same cluster renders, with Kubernetes' structural-schema semantics:
  `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-int-or-string`,
  `x-kubernetes-embedded-resource`, `nullable`, defaults (a required field with a default
  is never missing), served and deprecated versions.

What is not judged (no schema known, CEL `x-kubernetes-validations`, `format`s) is never an
error. A `null` is accepted anywhere: an apply treats it as "unset".
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.memo import Memo
from harness.flux.helm import capabilities
from harness.hazards.finding import Severity

if TYPE_CHECKING:  # importlib.resources loads only where the package is no directory
    from importlib.resources.abc import Traversable

PACKAGE = "kubernetes_validate"  # ships the built-in schemas (Apache-2.0)
_SCHEMA_DIR = "kubernetes-json-schema"
_REF = "/api/_definitions.json#/$defs/"
MAX_PROBLEMS = 5  # per document: the first few say what to fix
_DEFS: Memo[str, BuiltinSchemas] = Memo("accept.builtin", 4)
_PATTERNS: Memo[str, re.Pattern[str]] = Memo("accept.patterns", 4096)


@dataclass(frozen=True)
class Problem:
    """One reason the API server would refuse an object (or warn about it)."""

    path: str  # `spec.template.spec.containers[0].resourcess`; "" for the object itself
    message: str  # `unknown field`
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


# ---------------------------------------------------------------- built-in schemas


def _schema_root() -> Traversable:
    """The package's schema directory, found without importing the package: its __init__
    imports jsonschema and more (a tenth of a second of a one-file diff) and harness reads
    only its data files. A package not installed as a directory is read through
    importlib.resources, which imports it."""
    import importlib.util

    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if locations and os.path.isdir(os.path.join(locations[0], _SCHEMA_DIR)):
        return Path(locations[0], _SCHEMA_DIR)
    from importlib import resources

    return resources.files(PACKAGE).joinpath(_SCHEMA_DIR)


def shipped_versions() -> list[tuple[int, int]]:
    """The Kubernetes (major, minor) versions the schema package ships, oldest first."""
    root = _schema_root()
    out: list[tuple[int, int]] = []
    for entry in root.iterdir():
        m = re.fullmatch(r"v(\d+)\.(\d+)\.\d+-local-strict", entry.name)
        if m:
            out.append((int(m.group(1)), int(m.group(2))))
    return sorted(out)


def package_version() -> str:
    from importlib.metadata import version

    return version("kubernetes-validate")


@dataclass(frozen=True)
class BuiltinSchemas:
    """The built-in definitions of one Kubernetes version: `$defs` by name, and the root
    definition of each (group, version, kind). The definitions file (megabytes of JSON) is
    decoded on first use: a run whose verdicts all come from the cache needs only `digest`,
    which is of the file's bytes."""

    kube_version: str  # as configured
    used: str  # the shipped version used, `1.36`
    note: str  # why another version was used ("" when it is the configured one)
    raw: bytes = field(repr=False, compare=False)  # the definitions file as shipped
    digest: str

    @cached_property
    def defs(self) -> Mapping[str, Any]:
        found = json.loads(self.raw).get("$defs") or {}
        return found if isinstance(found, dict) else {}

    @cached_property
    def roots(self) -> Mapping[tuple[str, str, str], str]:
        out: dict[tuple[str, str, str], str] = {}
        for def_name, schema in self.defs.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or ():
                out.setdefault(
                    (gvk.get("group", ""), gvk.get("version", ""), gvk["kind"]), def_name
                )
        return out

    def root(self, group: str, version: str, kind: str) -> Any:
        name = self.roots.get((group, version, kind))
        return self.defs.get(name) if name else None

    @property
    def object_meta(self) -> Any:
        return self.defs.get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")


def builtin(kube_version: str) -> BuiltinSchemas:
    """The shipped schemas for `kube_version` (the newest shipped minor not above it)."""
    found = _DEFS.get(kube_version)
    if found is not None:
        return found
    want = (1, capabilities.minor(kube_version))
    shipped = shipped_versions()
    older = [v for v in shipped if v <= want]
    pick = older[-1] if older else shipped[0]
    note = ""
    if pick != want:
        note = (
            f"kubernetes-validate {package_version()} ships no schemas for Kubernetes "
            f"{want[0]}.{want[1]}: judged against {pick[0]}.{pick[1]}"
        )
    name = f"v{pick[0]}.{pick[1]}.0-local-strict"
    ref = _schema_root().joinpath(name, "_definitions.json")
    raw = ref.read_bytes()
    digest = hashlib.sha256(b"builtin\0" + name.encode() + b"\0" + raw).hexdigest()[:20]
    found = BuiltinSchemas(kube_version, f"{pick[0]}.{pick[1]}", note, raw, digest)
    _DEFS.put(kube_version, found)
    return found


# ---------------------------------------------------------------- CRD schemas


@dataclass(frozen=True)
class CrdVersion:
    name: str
    served: bool
    deprecated: bool
    warning: str
    schema: Any  # the openAPIV3Schema, or None when the CRD gives none


@dataclass(frozen=True)
class Crd:
    """One CustomResourceDefinition object's versions, and a digest of it."""

    group: str
    kind: str
    versions: Mapping[str, CrdVersion]
    digest: str


def crd_from(obj: Mapping[str, Any], sha256: str) -> Crd | None:
    """A CRD object's group, kind and versions (apiextensions v1 and v1beta1 shapes)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    group, kind = spec.get("group"), (names or {}).get("kind")
    if not isinstance(group, str) or not isinstance(kind, str):
        return None
    shared = (spec.get("validation") or {}).get("openAPIV3Schema")  # v1beta1
    versions: dict[str, CrdVersion] = {}
    for entry in spec.get("versions") or ():
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        schema = (entry.get("schema") or {}).get("openAPIV3Schema", shared)
        versions[entry["name"]] = CrdVersion(
            entry["name"],
            entry.get("served", True) is not False,
            entry.get("deprecated") is True,
            str(entry.get("deprecationWarning") or ""),
            schema if isinstance(schema, dict) else None,
        )
    if not versions and isinstance(spec.get("version"), str):
        versions[spec["version"]] = CrdVersion(spec["version"], True, False, "", shared)
    return Crd(group, kind, versions, sha256)


# ---------------------------------------------------------------- the walk


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _fits(value: Any, t: str) -> bool:
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _key(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _pattern(text: str) -> re.Pattern[str] | None:
    found = _PATTERNS.get(text)
    if found is not None:
        return found
    try:
        return _compiled(text)
    except (re.error, RecursionError, OverflowError):
        return None  # a Go regexp Python does not read: not judged


def _compiled(text: str) -> re.Pattern[str]:
    compiled = re.compile(text)
    _PATTERNS.put(text, compiled)
    return compiled


@dataclass
class Walker:
    """Validate one value against one schema. `structural` is the CRD dialect (an object
    type with no properties keeps no fields, junctors validate values only); the built-in
    dialect is JSON Schema's, with `additionalProperties: false` where the strict set has
    it. `meta` is ObjectMeta's definition, for a custom resource's and an embedded
    resource's `metadata`."""

    defs: Mapping[str, Any] = field(default_factory=dict)
    structural: bool = False
    meta: Any = None
    problems: list[Problem] = field(default_factory=list)

    def full(self) -> bool:
        return len(self.problems) >= MAX_PROBLEMS

    def add(self, path: str, message: str) -> None:
        if not self.full():
            self.problems.append(Problem(path, message))

    def resolve(self, schema: Any) -> Any:
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 32:
            ref = str(schema["$ref"])
            name = ref[len(_REF) :] if ref.startswith(_REF) else ref.rsplit("/", 1)[-1]
            schema = self.defs.get(name)
            seen += 1
        return schema if isinstance(schema, dict) else None

    def types(self, schema: Mapping[str, Any]) -> set[str]:
        if schema.get("x-kubernetes-int-or-string") is True:
            return {"integer", "string"}
        t = schema.get("type")
        if isinstance(t, str):
            return {t}
        if isinstance(t, list):
            return {str(x) for x in t if x != "null"}
        if not self.structural:  # IntOrString and Quantity: a oneOf of plain types
            alts = schema.get("oneOf") or schema.get("anyOf")
            if (
                isinstance(alts, list)
                and alts
                and all(isinstance(a, dict) and set(a) <= {"type"} for a in alts)
            ):
                out: set[str] = set()
                for a in alts:
                    out |= self.types(a)
                return out
        return set()

    def value(self, value: Any, schema: Any, path: str) -> None:
        """Walk `value` under `schema` (a $ref is followed), adding what is wrong."""
        schema = self.resolve(schema)
        if schema is None or value is None or self.full():
            return
        types = self.types(schema)
        if types and not any(_fits(value, t) for t in types):
            want = " or ".join(sorted(types))
            self.add(path, f"wrong type: expected {want}, got {_type_name(value)}")
            return
        if isinstance(value, dict):
            self._object(value, schema, path)
        elif isinstance(value, list):
            self._array(value, schema, path)
        else:
            self._scalar(value, schema, path)
        if self.structural:
            self._junctors(value, schema, path)

    def _object(self, value: dict[str, Any], schema: Mapping[str, Any], path: str) -> None:
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        for name, item in value.items():
            where = _key(path, str(name))
            if name in props:
                self.value(item, props[name], where)
            elif embedded and name in ("apiVersion", "kind"):
                if item is not None and not isinstance(item, str):
                    self.add(where, f"wrong type: expected string, got {_type_name(item)}")
            elif embedded and name == "metadata":
                if self.meta is not None:
                    self.value(item, self.meta, where)
            elif isinstance(extra, dict):
                self.value(item, extra, where)
            elif extra is True or preserve:
                continue
            elif extra is False or (self.structural and (props or "type" in schema)):
                self.add(where, "unknown field")
        for name in schema.get("required") or ():
            if value.get(name) is not None:
                continue
            sub = self.resolve(props.get(name))
            if sub is not None and "default" in sub:
                continue  # defaulted before validation
            self.add(_key(path, str(name)), "required field missing")
        if self.structural:
            n = len(value)
            if isinstance(schema.get("maxProperties"), int) and n > schema["maxProperties"]:
                self.add(path, f"more than {schema['maxProperties']} properties")
            if isinstance(schema.get("minProperties"), int) and n < schema["minProperties"]:
                self.add(path, f"fewer than {schema['minProperties']} properties")

    def _array(self, value: list[Any], schema: Mapping[str, Any], path: str) -> None:
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                self.value(item, items, f"{path}[{i}]")
        if self.structural:
            if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
                self.add(path, f"more than {schema['maxItems']} items")
            if isinstance(schema.get("minItems"), int) and len(value) < schema["minItems"]:
                self.add(path, f"fewer than {schema['minItems']} items")

    def _scalar(self, value: Any, schema: Mapping[str, Any], path: str) -> None:
        if not self.structural:
            return  # the built-in definitions carry types only
        enum = schema.get("enum")
        if isinstance(enum, list) and value not in enum:
            shown = ", ".join(json.dumps(e) for e in enum[:8])
            self.add(path, f"not one of the allowed values ({shown})")
        if isinstance(value, int | float) and not isinstance(value, bool):
            self._bounds(value, schema, path)
        if isinstance(value, str):
            n = len(value)
            if isinstance(schema.get("maxLength"), int) and n > schema["maxLength"]:
                self.add(path, f"longer than {schema['maxLength']} characters")
            if isinstance(schema.get("minLength"), int) and n < schema["minLength"]:
                self.add(path, f"shorter than {schema['minLength']} characters")
            pattern = schema.get("pattern")
            if isinstance(pattern, str):
                compiled = _pattern(pattern)
                if compiled is not None and compiled.search(value) is None:
                    self.add(path, f"does not match the pattern {pattern}")

    def _bounds(self, value: float, schema: Mapping[str, Any], path: str) -> None:
        low: Any = schema.get("minimum")
        high: Any = schema.get("maximum")
        exclusive_low = schema.get("exclusiveMinimum") is True
        exclusive_high = schema.get("exclusiveMaximum") is True
        if _number(low) and (value < low or (exclusive_low and value == low)):
            self.add(path, f"below the minimum {low}")
        if _number(high) and (value > high or (exclusive_high and value == high)):
            self.add(path, f"above the maximum {high}")

    def _passes(self, value: Any, schema: Any, path: str) -> bool:
        """A junctor's branch validates the value only: no unknown-field verdicts."""
        sub = Walker(self.defs, True, self.meta)
        sub.value(value, _values_only(schema), path)
        return not sub.problems

    def _junctors(self, value: Any, schema: Mapping[str, Any], path: str) -> None:
        for sub in schema.get("allOf") or ():
            if not self._passes(value, sub, path):
                self.add(path, "does not satisfy its schema's allOf")
                break
        any_of = schema.get("anyOf")
        if (
            isinstance(any_of, list)
            and any_of
            and not any(self._passes(value, s, path) for s in any_of)
        ):
            self.add(path, "matches none of its schema's anyOf")
        one_of = schema.get("oneOf")
        if isinstance(one_of, list) and one_of:
            hits = sum(1 for s in one_of if self._passes(value, s, path))
            if hits != 1:
                self.add(path, f"matches {hits} of its schema's oneOf (exactly one allowed)")
        if isinstance(schema.get("not"), dict) and self._passes(value, schema["not"], path):
            self.add(path, "matches its schema's not")


def _values_only(schema: Any) -> Any:
    """A junctor branch as a schema that keeps every unknown field: it only constrains."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    out["x-kubernetes-preserve-unknown-fields"] = True
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _values_only(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _values_only(out["items"])
    return out


# ---------------------------------------------------------------- one object


def validate_builtin(obj: Mapping[str, Any], root: Any, schemas: BuiltinSchemas) -> list[Problem]:
    """A built-in object against its definition (apiVersion and kind already matched)."""
    walker = Walker(schemas.defs, structural=False)
    walker.value(dict(obj), root, "")
    return walker.problems


def validate_custom(
    obj: Mapping[str, Any], schema: Any, meta: Any, defs: Mapping[str, Any]
) -> list[Problem]:
    """A custom resource against its CRD version's openAPIV3Schema; `metadata` against
    ObjectMeta (the API server types it whatever the CRD says)."""
    walker = Walker(defs, structural=True, meta=meta)
    if not isinstance(schema, dict):
        return []
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    root = dict(schema)
    root["properties"] = {k: v for k, v in (props or {}).items() if k != "metadata"}
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    walker.value(body, root, "")
    if meta is not None and obj.get("metadata") is not None:
        walker.value(obj.get("metadata"), meta, "metadata")
    return walker.problems


def digest_of(parts: Iterable[str]) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]
