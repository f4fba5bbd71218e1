"""Secret values kustomize itself copies into other objects become markers.

Redaction (redaction.py) hides a Secret's own values and what Flux and Helm take from
Secrets. kustomize has two more routes of its own: `replacements` (inline, from a file,
or a `ReplacementTransformer` config) and the deprecated `vars`. Both copy a field of a
source object into fields of other objects, so `source: {kind: Secret, fieldPath:
data.password}` puts the password, as it is, into a Deployment's env or a ConfigMap.

Scanning the whole render for every Secret value masks ordinary text that merely equals
one (a Namespace named like a username), so the rule follows the declarations instead:
the build's closure (render/closure.py) collects every replacement and var; a source that
is a Secret in the build's output taints the values it copies; and only the fields those
declarations write are masked, in the objects they select:

- replacements: the target's `select` (anchored regexes, as kustomize reads them) minus
  its `reject`, at each of its `fieldPaths` (`a.b`, `[name=x]`, `[=x]`, `*`, an index);
  a path that runs into a scalar holding YAML or JSON masks that whole scalar;
- vars: the `varReference` field specs (kustomize's defaults and the closure's
  `configurations` files), in every object of a matching kind;
- a chain (Secret -> ConfigMap -> Deployment) carries the taint: a replacement whose
  source holds a tainted value masks that value wherever it writes.

Only the tainted value is replaced inside a field (`postgres://app:<redacted ...>@db`),
by the marker of the Secret field it came from, so a rotation still shows as a change.
Selectors are read generously (a selector's name also matches the name kustomize later
prefixed, suffixed or hashed, and a target that writes `metadata.name` matches whatever
name the output shows, since it carries the copied value; label and annotation selectors
are not evaluated): masking an extra field costs a reader little, missing one leaks a value.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core import documents, redaction, yamlload

DEFAULT_FIELD_PATH = "metadata.name"
SECRET_FIELDS = ("data", "stringData")  # what redaction hides; what a copy must not reveal


@dataclass(frozen=True)
class Selector:
    """Which objects a source or target names; '' is any. `regex` for target selectors
    (anchored, as kustomize compiles them), exact for sources."""

    group: str = ""
    version: str = ""
    kind: str = ""
    name: str = ""
    namespace: str = ""
    regex: bool = False
    # a reject entry that also names labels or annotations is not evaluated: never rejects
    conditional: bool = False

    def selects(
        self, obj: Mapping[str, Any], *, strict: bool = False, any_name: bool = False
    ) -> bool:
        """Whether this selector picks `obj`. kustomize also matches the namespace and name
        an object had before a later `namespace:`, prefix, suffix or content hash, which the
        output no longer shows, so a selection ignores the namespace and takes a name that
        contains the selector's; `strict` (a reject) matches both as shown, never more, so
        a reject can only leave more fields masked. `any_name`: the name itself was written
        (a replacement into `metadata.name`), so the output's name cannot be matched."""
        api = str(obj.get("apiVersion") or "")
        group, _, version = api.rpartition("/")
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "")
        return (
            self._same(self.group, group)
            and self._same(self.version, version)
            and self._same(self.kind, str(obj.get("kind") or ""))
            and (not strict or self._same(self.namespace, namespace))
            and (any_name or self._named(name, strict))
        )

    def _same(self, want: str, have: str) -> bool:
        if not want:
            return True
        if not self.regex:
            return want == have
        try:
            return re.fullmatch(want, have) is not None
        except re.error:
            return want == have

    def _named(self, have: str, strict: bool) -> bool:
        if not self.name:
            return True
        if strict:
            return self._same(self.name, have)
        if not self.regex:
            return self.name == have or self.name in have
        try:
            return re.search(self.name, have) is not None  # a full match is also a match
        except re.error:
            return self.name in have


@dataclass(frozen=True)
class Target:
    select: Selector
    reject: tuple[Selector, ...]
    field_paths: tuple[str, ...]

    @property
    def renames(self) -> bool:
        """Whether the target writes the selected objects' names: in the output they carry
        the copied value, not the name the selector gives."""
        return any(_split(p)[:2] == ("metadata", "name") for p in self.field_paths)

    def selects(self, obj: Mapping[str, Any]) -> bool:
        if not self.select.selects(obj, any_name=self.renames):
            return False
        return not any(r.selects(obj, strict=True) for r in self.reject if not r.conditional)


@dataclass(frozen=True)
class Replacement:
    source: Selector
    field_path: str
    delimiter: str
    index: int
    targets: tuple[Target, ...]


@dataclass(frozen=True)
class Var:
    name: str
    source: Selector
    field_path: str


@dataclass(frozen=True)
class FieldSpec:
    """A `varReference` entry: a slash path (lists crossed implicitly) in objects of a kind."""

    path: str
    kind: str = ""
    group: str = ""


@dataclass(frozen=True)
class Flows:
    """What one build may copy between objects: its replacements and vars, and where vars
    are substituted beyond kustomize's defaults."""

    replacements: tuple[Replacement, ...] = ()
    vars: tuple[Var, ...] = ()
    var_references: tuple[FieldSpec, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.replacements or self.vars)

    @staticmethod
    def join(parts: Iterable[Flows]) -> Flows:
        parts = list(parts)  # each once, in order: a base two overlays share is read once
        return Flows(
            tuple(dict.fromkeys(r for p in parts for r in p.replacements)),
            tuple(dict.fromkeys(v for p in parts for v in p.vars)),
            tuple(dict.fromkeys(f for p in parts for f in p.var_references)),
        )


NONE = Flows()

# kustomize's built-in varReference field specs: where `$(VAR)` is substituted by default
_POD = ("containers", "initContainers")
_POD_FIELDS = ("args", "command", "env/value", "volumeMounts/mountPath")


def _workload(kind: str, pod: str) -> list[FieldSpec]:
    specs = [FieldSpec(f"{pod}/{c}/{f}", kind) for c in _POD for f in _POD_FIELDS]
    return [*specs, FieldSpec(f"{pod}/volumes/nfs/server", kind)]


DEFAULT_VAR_REFERENCES: tuple[FieldSpec, ...] = (
    *_workload("CronJob", "spec/jobTemplate/spec/template/spec"),
    *(
        s
        for k in ("DaemonSet", "Deployment", "Job", "ReplicaSet", "StatefulSet")
        for s in _workload(k, "spec/template/spec")
    ),
    *_workload("Pod", "spec"),
    FieldSpec("spec/template/metadata/annotations", "Deployment"),
    FieldSpec("spec/rules/host", "Ingress"),
    FieldSpec("spec/tls/hosts", "Ingress"),
    FieldSpec("spec/tls/secretName", "Ingress"),
    FieldSpec("spec/ports/port", "Service"),
    FieldSpec("spec/ports/targetPort", "Service"),
    FieldSpec("spec/volumeClaimTemplates/spec/nfs/server", "StatefulSet"),
    FieldSpec("spec/nfs/server", "PersistentVolume"),
    FieldSpec("metadata/labels"),
    FieldSpec("metadata/annotations"),
)


# -- reading declarations ------------------------------------------------------------------


def from_kustomization(data: Mapping[str, Any], read: Callable[[str], list[Any]]) -> Flows:
    """The replacements and vars one kustomization file declares. `read(path)` returns
    the documents of a file it names (relative to its directory), [] when unreadable."""
    reps: list[Replacement] = []
    for entry in yamlload.mappings(data.get("replacements")):
        reps += _replacements_entry(entry, read)
    vars_ = [v for v in (_var(e) for e in yamlload.mappings(data.get("vars"))) if v is not None]
    return Flows(tuple(reps), tuple(vars_))


def from_transformer(doc: Mapping[str, Any], read: Callable[[str], list[Any]]) -> Flows:
    """A `ReplacementTransformer` plugin config's replacements."""
    if doc.get("kind") != "ReplacementTransformer":
        return NONE
    reps: list[Replacement] = []
    for entry in yamlload.mappings(doc.get("replacements")):
        reps += _replacements_entry(entry, read)
    return Flows(tuple(reps))


def from_configuration(docs: Iterable[Any]) -> Flows:
    """A `configurations` file's `varReference` field specs."""
    refs: list[FieldSpec] = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        for spec in yamlload.mappings(doc.get("varReference")):
            path = spec.get("path")
            if isinstance(path, str) and path:
                refs.append(FieldSpec(path, _str(spec.get("kind")), _str(spec.get("group"))))
    return Flows(var_references=tuple(refs))


def _replacements_entry(
    entry: Mapping[str, Any], read: Callable[[str], list[Any]]
) -> list[Replacement]:
    path = entry.get("path")
    if isinstance(path, str) and path:
        out: list[Replacement] = []
        for doc in read(path):
            for item in doc if isinstance(doc, list) else [doc]:
                if isinstance(item, dict):
                    found = _replacement(item)
                    if found is not None:
                        out.append(found)
        return out
    found = _replacement(entry)
    return [found] if found is not None else []


def _replacement(entry: Mapping[str, Any]) -> Replacement | None:
    source = entry.get("source")
    if not isinstance(source, dict):
        return None  # `sourceValue`: a literal, nothing copied from an object
    options = source.get("options")
    options = options if isinstance(options, dict) else {}
    targets: list[Target] = []
    for t in yamlload.mappings(entry.get("targets")):
        select = t.get("select")
        if not isinstance(select, dict):
            continue
        paths = tuple(p for p in yamlload.strings(t.get("fieldPaths")) if p)
        paths = paths or (DEFAULT_FIELD_PATH,)
        rejects = tuple(_selector(r, regex=True) for r in yamlload.mappings(t.get("reject")))
        targets.append(Target(_selector(select, regex=True), rejects, paths))
    index = options.get("index", 0)
    return Replacement(
        _selector(source, regex=False),
        _str(source.get("fieldPath")) or DEFAULT_FIELD_PATH,
        _str(options.get("delimiter")),
        index if isinstance(index, int) else 0,
        tuple(targets),
    )


def _var(entry: Mapping[str, Any]) -> Var | None:
    name = entry.get("name")
    objref = entry.get("objref")
    if not isinstance(name, str) or not isinstance(objref, dict):
        return None
    fieldref = entry.get("fieldref")
    path = fieldref.get("fieldpath") if isinstance(fieldref, dict) else None
    group, _, version = _str(objref.get("apiVersion")).rpartition("/")
    selector = Selector(
        group=_str(objref.get("group")) or group,
        version=_str(objref.get("version")) or version,
        kind=_str(objref.get("kind")),
        name=_str(objref.get("name")),
        namespace=_str(objref.get("namespace")),
    )
    return Var(name, selector, _str(path) or DEFAULT_FIELD_PATH)


def _selector(data: Mapping[str, Any], *, regex: bool) -> Selector:
    return Selector(
        group=_str(data.get("group")),
        version=_str(data.get("version")),
        kind=_str(data.get("kind")),
        name=_str(data.get("name")),
        namespace=_str(data.get("namespace")),
        regex=regex,
        conditional=bool(data.get("labelSelector") or data.get("annotationSelector")),
    )


# -- masking -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Taint:
    value: str
    marker: str


def mask(objects: Sequence[dict[str, Any]], flows: Flows) -> list[dict[str, Any]] | None:
    """`objects` with every Secret value the flows copied replaced by its marker; None when
    nothing is (the common case, decided without copying). Changed objects are copies:
    the inputs are shared with other builds and never mutated."""
    if not flows:
        return None
    taints = _taints(objects, flows)
    if not taints:
        return None
    out = list(objects)
    copied: set[int] = set()

    def writable(i: int) -> dict[str, Any]:
        if i not in copied:
            out[i] = copy.deepcopy(out[i])
            copied.add(i)
        return out[i]

    for rep in flows.replacements:
        carried = _carried(objects, rep.source, rep.field_path, taints)
        if not carried:
            continue
        for target in rep.targets:
            for i, obj in enumerate(objects):
                if not target.selects(obj):
                    continue
                for path in target.field_paths:
                    _mask_at(out, i, _split(path), carried, writable)
    var_taints = [t for v in flows.vars for t in _carried(objects, v.source, v.field_path, taints)]
    if var_taints:
        for spec in DEFAULT_VAR_REFERENCES + flows.var_references:
            for i, obj in enumerate(objects):
                if spec.kind and obj.get("kind") != spec.kind:
                    continue
                if spec.group and documents.identity(obj).group != spec.group:
                    continue
                _mask_at(out, i, _slash_path(spec.path), var_taints, writable, lists=True)
    return out if copied else None


def _taints(objects: Sequence[dict[str, Any]], flows: Flows) -> list[_Taint]:
    """Values copied out of a Secret by some replacement or var, each with its marker."""
    found: dict[str, _Taint] = {}
    sources = [(r.source, r.field_path, r.delimiter, r.index) for r in flows.replacements]
    sources += [(v.source, v.field_path, "", 0) for v in flows.vars]
    for selector, path, delimiter, index in sources:
        if selector.kind not in ("", "Secret") or _split(path)[0] not in SECRET_FIELDS:
            continue  # a Secret's name or labels are not its values (`fieldPath` defaults to
            # metadata.name: a replacement copying a generated Secret's hashed name is common)
        for obj in objects:
            if obj.get("kind") != "Secret" or not selector.selects(obj):
                continue
            owner = documents.identity(obj)
            for value in _scalars_at(obj, _split(path)):
                if delimiter:
                    pieces = value.split(delimiter)
                    if not 0 <= index < len(pieces):
                        continue
                    value = pieces[index]
                if value and not redaction.kept(value) and value not in found:
                    found[value] = _Taint(value, redaction.marker(owner, path, value))
    # longest first: a value inside another is replaced after the one that holds it
    return sorted(found.values(), key=lambda t: -len(t.value))


def _carried(
    objects: Sequence[dict[str, Any]], source: Selector, path: str, taints: list[_Taint]
) -> list[_Taint]:
    """The tainted values a source's field holds (a Secret's own, or ones a replacement
    copied into a ConfigMap that is itself a source)."""
    held: list[str] = []
    for obj in objects:
        if source.selects(obj):
            held += _scalars_at(obj, _split(path))
    return [t for t in taints if any(t.value in text for text in held)]


# -- field paths ---------------------------------------------------------------------------


# process-wide: a pure function of the path string (no repo or run in it)
@functools.cache
def _split(path: str) -> tuple[str, ...]:
    """kustomize's field path: `.`-separated, `\\.` escaped, `[...]` kept whole; a bracketed
    part without `=` is a map key that may hold dots (`metadata.annotations.[a.b/c]`).
    Memoised: a build's few paths are split once, not once per object they are tried on."""
    raw: list[str] = []
    for part in path.lstrip(".").split("."):
        if raw and raw[-1].endswith("\\"):
            raw[-1] = raw[-1][:-1] + "." + part
        else:
            raw.append(part)
    out: list[str] = []
    i = 0
    while i < len(raw):
        part = raw[i]
        if part.startswith("[") and not part.endswith("]"):
            group = [part]
            while i < len(raw) - 1:
                i += 1
                group.append(raw[i])
                if raw[i].endswith("]"):
                    break
            part = ".".join(group)
        if part.startswith("[") and part.endswith("]") and "=" not in part:
            part = part[1:-1]
        out.append(part)
        i += 1
    return tuple(out)


def _slash_path(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.split("/") if p)


def _step(node: Any, part: str) -> Iterator[tuple[Any, Any]]:
    """(container, key) pairs one path part leads to from `node`."""
    if part == "*":
        if isinstance(node, dict):
            yield from ((node, k) for k in node)
        elif isinstance(node, list):
            yield from ((node, i) for i in range(len(node)))
        return
    if isinstance(node, list):
        if part.isdigit():
            if int(part) < len(node):
                yield node, int(part)
            return
        if part.startswith("[") and part.endswith("]") and "=" in part:
            key, _, want = part[1:-1].partition("=")
            for i, item in enumerate(node):
                if isinstance(item, dict):
                    matched = bool(key) and str(item.get(key)) == want
                else:
                    matched = not key and not isinstance(item, list) and str(item) == want
                if matched:
                    yield node, i
        return
    if isinstance(node, dict) and part in node:
        yield node, part


def _mask_at(
    out: list[dict[str, Any]],
    index: int,
    parts: tuple[str, ...],
    taints: list[_Taint],
    writable: Callable[[int], dict[str, Any]],
    lists: bool = False,
) -> None:
    """Mask the taints in the fields `parts` reaches in object `index`; a path that meets
    a scalar before its end (structured data inside a string) masks that scalar. The object
    is copied only when a field really changes."""
    for route in list(_routes(out[index], parts, (), lists)):
        masked = _masked(_get(out[index], route), taints)
        if masked is not _get(out[index], route):
            _get(writable(index), route[:-1])[route[-1]] = masked


def _routes(
    node: Any, parts: tuple[str, ...], route: tuple[Any, ...], lists: bool = False
) -> Iterator[tuple[Any, ...]]:
    """Routes (keys from the object down) to what `parts` reaches; `lists`: a name crosses
    a list into each of its items (varReference paths), as a replacement's path does not."""
    if not parts:
        if route:
            yield route
        return
    if not isinstance(node, (dict, list)):
        if route:
            yield route  # a scalar holding YAML/JSON the rest of the path points into
        return
    if lists and isinstance(node, list):
        for i, item in enumerate(node):
            yield from _routes(item, parts, (*route, i), lists)
        return
    for container, key in _step(node, parts[0]):
        yield from _routes(container[key], parts[1:], (*route, key), lists)


def _get(node: Any, route: Sequence[Any]) -> Any:
    for key in route:
        node = node[key]
    return node


def _masked(value: Any, taints: list[_Taint]) -> Any:
    """`value` with the taints replaced by their markers; `value` itself when none occurs."""
    if isinstance(value, dict):
        new = {k: _masked(v, taints) for k, v in value.items()}
        return value if all(new[k] is v for k, v in value.items()) else new
    if isinstance(value, list):
        items = [_masked(v, taints) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if value is None:
        return value
    text = value if isinstance(value, str) else str(value)
    changed = text
    for taint in taints:
        changed = changed.replace(taint.value, taint.marker)
    return changed if changed != text else value


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _scalars_at(obj: Any, parts: tuple[str, ...]) -> list[str]:
    """Every scalar (as text) at or below the fields a path reaches."""
    out: list[str] = []
    for route in _routes(obj, parts, ()):
        _collect(_get(obj, route), out)
    return out


def _collect(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for v in value.values():
            _collect(v, out)
    elif isinstance(value, list):
        for v in value:
            _collect(v, out)
    elif value is not None:
        out.append(value if isinstance(value, str) else str(value))
