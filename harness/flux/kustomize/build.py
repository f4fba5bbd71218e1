"""One Flux Kustomization, built the way `flux build kustomization` does it, offline.

Steps (flux2 `internal/build/build.go`, kustomize-controller `build()`):
generate/edit the kustomization (generator.py) -> kustomize build (shared, memoised
renderer) -> drop objects without apiVersion/kind/name -> post-build substitution per
resource -> owner labels -> SOPS masking -> `commonMetadata` last.

The result keeps two views of the objects: `objects` are what the target shows;
`raw` are the same objects before SOPS masking, used only in memory as `substituteFrom`
sources and to discover child Kustomizations. Neither is redacted here: documents.py
redacts Secret values when the target's documents are made.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.core import documents, redaction, safefile, secretflow, yamlload
from harness.core.model import DocId, Document
from harness.core.outside import DeclaredObject
from harness.flux import includes
from harness.flux.api import KUSTOMIZE_GROUP, FluxKustomization, ObjectRef, substitution_disabled
from harness.flux.kustomize import generator
from harness.flux.kustomize.substitute import (
    SubstitutionError,
    envsubst,
    referenced_variables,
    validate_variable_names,
)
from harness.flux.source.artifacts import Store
from harness.flux.source.ignore import Pattern, Rules, SourceIgnores
from harness.render.discover import kustomization_file
from harness.render.kustomize import UNRESTRICTED, Renderer
from harness.render.seam import Seam

SOPS_MASK = documents.SOPS_MASK
SOPS_MASK_B64 = base64.b64encode(SOPS_MASK.encode()).decode()
# A variable taken from a SOPS-encrypted Secret has no knowable value offline. `**SOPS**`
# would read as a YAML alias once substituted, so a plain, name-safe token stands in.
SOPS_VARIABLE = "sops-masked"
_DOCKER_MASK = json.dumps({"mask": SOPS_MASK}, separators=(",", ":"))
DOCKERCONFIGJSON = "kubernetes.io/dockerconfigjson"
OWNER_NAME = f"{KUSTOMIZE_GROUP}/name"
OWNER_NAMESPACE = f"{KUSTOMIZE_GROUP}/namespace"

# A substituteFrom lookup: the rendered object, a harness.yaml declaration, or None.
Lookup = Callable[[ObjectRef], Mapping[str, Any] | DeclaredObject | None]


class BuildError(Exception):
    """The Kustomization cannot be built; the message is the target's one-line error."""


class RenderFailed(BuildError):
    """kustomize itself failed (or timed out, or was killed): never remembered as a result."""


class MissingObject(BuildError):
    """A substituteFrom object neither rendered nor declared; targets.py words the fix.

    `variables` are the names the build's manifests reference that nothing else defines:
    the keys a declaration would need.
    """

    def __init__(self, ref: ObjectRef, variables: tuple[str, ...] = ()) -> None:
        super().__init__(f"substituteFrom {ref} is neither rendered from git nor declared")
        self.ref = ref
        self.variables = variables


class UndeclaredKey(BuildError):
    """Strict substitution found variables that a harness.yaml declaration lacks.

    `ref` is the declared object (the last of the Kustomization's) that should get them.
    """

    def __init__(self, ref: ObjectRef, variables: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.ref = ref
        self.variables = variables


class _Variables(dict[str, str]):
    """Substitution variables, with the fixed placeholder of an `any_key` declaration."""

    def __init__(self, values: Mapping[str, str], fallback: str | None) -> None:
        super().__init__(values)
        self.fallback = fallback

    def get(self, key: str, default: Any = None) -> Any:
        value = super().get(key)
        if value is None:
            return self.fallback if self.fallback is not None else default
        return value

    def __bool__(self) -> bool:
        return bool(len(self)) or self.fallback is not None


@dataclasses.dataclass(frozen=True)
class Built:
    objects: tuple[dict[str, Any], ...]
    raw: tuple[dict[str, Any], ...]
    notes: tuple[str, ...] = ()
    # the target's documents when already made (a cache hit, or made to be stored)
    documents: tuple[Document, ...] | None = None
    # the render cache key it was answered from or stored under, and that entry's part the
    # fixed point reads back (cached.py `kept_part`): what the dependency index keeps of it
    key: str | None = dataclasses.field(default=None, compare=False)
    kept: Any = dataclasses.field(default=None, compare=False, repr=False)


class Memo:
    """Work one render does once, whichever cluster asks first: identical work is never
    repeated.

    Two clusters building the same Kustomization share the kustomize run (the renderer's
    memo); here they also share parsing its output and the source-artifact check. The
    parsed objects are shared read-only: `build` copies what it changes. Owned by the
    render's `Context`, not by the run (core/run.py): an artifact check is keyed by paths,
    not by content, so a run that renders a tree again after a save (`harness watch`) must
    check again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parsed: dict[str, tuple[tuple[dict[str, Any], ...], int]] = {}
        self._artifact: dict[tuple[Any, ...], str | None] = {}

    def parsed(self, stdout: str) -> tuple[tuple[dict[str, Any], ...], int]:
        with self._lock:
            found = self._parsed.get(stdout)
        if found is None:
            objects, dropped = _parse(stdout)
            with self._lock:
                found = self._parsed.setdefault(stdout, (tuple(objects), dropped))
        return found

    def artifact(self, key: tuple[Any, ...], check: Callable[[], None]) -> None:
        """Run `check` once per key; its BuildError (or success) is replayed to later askers."""
        with self._lock:
            known = key in self._artifact
            message = self._artifact.get(key)
        if not known:
            try:
                check()
                message = None
            except BuildError as exc:
                message = str(exc)
            with self._lock:
                self._artifact[key] = message
        if message is not None:
            raise BuildError(message)


@dataclasses.dataclass(frozen=True)
class Context:
    """What every build of one run shares."""

    renderer: Renderer
    workspace: generator.Workspace
    includes: includes.Includes
    repo: Path
    strict: bool
    ignores: SourceIgnores = dataclasses.field(default_factory=SourceIgnores)
    # confinement and the render cache (flux/kustomize/cached.py); None builds unconfined, uncached
    seam: Seam | None = None
    memo: Memo = dataclasses.field(default_factory=Memo)  # per render: see Memo
    # the run's ExternalArtifact trees (source/artifacts.py), named by where they came from
    artifacts: Store | None = None

    def relative(self, message: str) -> str:
        """Messages name repo files relative to the repo root, never temp mirror paths or
        ExternalArtifact trees (those read as the repo files they were copied from)."""
        message = self.workspace.to_repo(message)
        if self.artifacts is not None:
            message = self.artifacts.display(message, self.repo)
        root = str(self.repo)
        return message.replace(root + "/", "").replace(root, ".")

    def show(self, path: Path) -> str:
        if self.artifacts is not None and self.artifacts.owner(path) is not None:
            return self.artifacts.display(str(path), self.repo)
        try:
            return path.relative_to(self.repo).as_posix() or "."
        except ValueError:
            return str(path)


def substitute_refs(ks: FluxKustomization) -> list[ObjectRef]:
    """The ConfigMaps/Secrets `substituteFrom` names, in the Kustomization's namespace."""
    if ks.post_build is None:
        return []
    return [ObjectRef(s.kind, ks.namespace, s.name) for s in ks.post_build.substitute_from]


def variables(ks: FluxKustomization, lookup: Lookup) -> tuple[dict[str, str], list[str]]:
    """The merged substitution map (later sources win, inline `substitute` wins over all).

    A declared object (harness.yaml `outside_git`) gives its placeholder values; an
    `any_key` one answers whatever no other source defines. A missing, non-optional
    object is a MissingObject.
    """
    notes: list[str] = []
    merged: dict[str, str] = {}
    fallback: str | None = None
    if ks.post_build is None:
        return merged, notes
    for ref in ks.post_build.substitute_from:
        where = ObjectRef(ref.kind, ks.namespace, ref.name)
        obj = lookup(where)
        if obj is None:
            if ref.optional:
                continue
            raise MissingObject(where)
        if isinstance(obj, DeclaredObject):
            merged.update(obj.keys)
            if obj.any_key is not None and fallback is None:
                fallback = obj.any_key
            notes.append(
                f"substituteFrom {where} is declared outside git (harness.yaml outside_git): "
                "its variables are placeholders"
            )
            continue
        values, note = _source_values(where, obj)
        merged.update(values)
        if note:
            notes.append(note)
    merged.update({k: v.replace("\n", "") for k, v in ks.post_build.substitute.items()})
    return (_Variables(merged, fallback) if fallback is not None else merged), notes


def _source_values(where: ObjectRef, obj: Mapping[str, Any]) -> tuple[dict[str, str], str]:
    out: dict[str, str] = {}
    if where.kind == "ConfigMap":
        for key, value in (obj.get("data") or {}).items():
            out[str(key)] = _scalar(value).replace("\n", "")
        return out, ""
    if documents.is_sops_encrypted(obj):
        keys = [*(obj.get("data") or {}), *(obj.get("stringData") or {})]
        note = f"substituteFrom {where} is SOPS-encrypted: its variables read as {SOPS_VARIABLE}"
        return {str(k): SOPS_VARIABLE for k in keys}, note
    # A Secret's variables are its values' markers: what a substituted object shows
    # (a rotated value still changes it) and exactly what the Secret's own document shows.
    # The same whether the Secret is plaintext or came back redacted from the render cache.
    # A value that is empty once Flux strips its newlines substitutes as empty (it reveals
    # nothing), as in Flux: `key: ${EMPTY}` reads back as null, `${EMPTY:-x}` as x.
    doc_id = documents.identity(obj)
    for key, value in (obj.get("data") or {}).items():
        plain = None
        if not redaction.is_marker(value):
            try:
                plain = base64.b64decode(str(value), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                raise BuildError(
                    f"substituteFrom {where}: data.{key} is not base64-encoded UTF-8"
                ) from None
        out[str(key)] = _secret_variable(doc_id, f"data.{key}", value, plain)
    for key, value in (obj.get("stringData") or {}).items():
        plain = None if redaction.is_marker(value) else _scalar(value)
        out[str(key)] = _secret_variable(doc_id, f"stringData.{key}", value, plain)
    return out, ""


def _secret_variable(doc_id: DocId, key: str, value: Any, plain: str | None) -> str:
    """The variable a Secret value gives: its marker; empty when the value (`plain`,
    decoded; None for a marker) is empty once newlines are stripped."""
    if plain is not None and not plain.replace("\n", ""):
        return ""
    if redaction.is_marker(value):
        return str(value) if value not in documents.SOPS_MASKED_VALUES else SOPS_VARIABLE
    redaction.known().add(value, encoded=key.startswith("data."))
    return documents.redaction_marker(doc_id, key, value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def build(
    ks: FluxKustomization,
    directory: Path,
    ctx: Context,
    lookup: Lookup,
    rules: Rules | None = None,
    flows: secretflow.Flows = secretflow.NONE,
) -> Built:
    """Build `ks` from `directory` (its resolved spec.path); BuildError on any failure.

    `rules` are the source's ignore rules: the build sees the artifact source-controller
    makes, not the whole tree. `flows` are the replacements and vars of the build's closure:
    Secret values they copy into other objects are masked before anything reads them
    (substitution sources included).
    """
    try:
        plan = generator.plan(ks, directory, ctx.workspace, rules)
    except generator.GeneratorError as exc:
        raise BuildError(ctx.relative(str(exc))) from None
    notes: list[str] = []
    if plan.empty:
        return Built((), (), ("no manifests in the directory: empty build (0 objects)",))
    if rules is not None:
        key = (rules, directory, plan.resources, ks.components)
        ctx.memo.artifact(key, lambda: _check_artifact(ks, directory, plan, rules, ctx))
    output = ctx.renderer.build(plan.directory, _extra_flags(ctx.renderer))
    if output.error is not None or output.stdout is None:
        message = ctx.relative(output.error or "kustomize produced no output")
        raise RenderFailed(f"{ctx.show(directory)}: {message}")
    parsed, dropped = ctx.memo.parsed(output.stdout)
    objects = secretflow.mask(parsed, flows) or list(parsed)
    if dropped:
        notes.append(f"dropped {dropped} object(s) without apiVersion, kind or metadata.name")
    if ks.post_build is not None:
        objects, sub_notes = _substitute_all(ks, objects, directory, ctx, lookup, rules)
        notes.extend(sub_notes)
    raw = tuple(objects)  # shared with other builds: never mutated, `_finalize` copies
    return Built(tuple(_finalize(obj, ks) for obj in objects), raw, tuple(notes))


def _finalize(obj: dict[str, Any], ks: FluxKustomization) -> dict[str, Any]:
    """Owner labels, SOPS masking and `commonMetadata` on a copy of the parts they change."""
    out = dict(obj)
    meta = out.get("metadata")
    out["metadata"] = dict(meta) if isinstance(meta, dict) else {}
    if out.get("kind") == "Secret":
        for field in ("data", "stringData"):
            if isinstance(out.get(field), dict):
                out[field] = dict(out[field])
    _set_owner_labels(out, ks)
    mask_sops(out)
    if ks.common_metadata is not None:
        _merge_metadata(out, "labels", ks.common_metadata.labels)
        _merge_metadata(out, "annotations", ks.common_metadata.annotations)
    return out


def _check_artifact(
    ks: FluxKustomization, directory: Path, plan: generator.Plan, rules: Rules, ctx: Context
) -> None:
    """A file the build reads but the source artifact lacks fails the build, as in Flux.

    kustomize reads the repo, where the file is still there; in the cluster it is absent
    and the build fails. Follows the local paths each kustomization file names
    (includes.file_refs) from `directory` down.
    """
    if plan.resources:
        refs = [Path(os.path.normpath(directory / r)) for r in plan.resources]
    else:
        kfile = rules.kustomization_file(directory)
        refs = list(ctx.includes.file_refs(kfile)) if kfile is not None else []
    refs += [Path(os.path.normpath(directory / c)) for c in ks.components]
    seen: set[Path] = set()
    while refs:
        ref = refs.pop(0)
        if ref in seen:
            continue
        seen.add(ref)
        if not ref.is_dir():
            pattern = rules.exclusion(ref, False) if ref.exists() else None
            if pattern is not None:
                raise BuildError(_excluded(ref, pattern, ctx))
            continue
        kfile = rules.kustomization_file(ref)
        if kfile is not None:
            refs[:0] = ctx.includes.file_refs(kfile)
            continue
        on_disk = kustomization_file(ref)
        if on_disk is None:
            continue  # not a kustomization: kustomize reports that itself
        pattern = rules.exclusion(ref, True)
        culprit = ref if pattern is not None else on_disk
        pattern = pattern or rules.exclusion(on_disk, False)
        assert pattern is not None
        raise BuildError(_excluded(culprit, pattern, ctx))


def _excluded(path: Path, pattern: Pattern, ctx: Context) -> str:
    return (
        f"{ctx.show(path)} is excluded from the source artifact by '{pattern.text}' "
        f"in {ctx.relative(pattern.origin)}"
    )


def _extra_flags(renderer: Renderer) -> tuple[str, ...]:
    """Flux always builds with LoadRestrictionsNone; add it unless the flags already say so."""
    flags = " ".join(renderer.flags)
    if "LoadRestrictionsNone" in flags:
        return ()
    return UNRESTRICTED


def _parse(stream: str) -> tuple[list[dict[str, Any]], int]:
    objects: list[dict[str, Any]] = []
    dropped = 0
    try:
        loaded = yamlload.load_all(stream)
    except yamlload.YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BuildError(f"kustomize output is not YAML: {first}") from None
    for obj in loaded:
        if obj is None:
            continue
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if (
            not isinstance(obj, dict)
            or not obj.get("apiVersion")
            or not obj.get("kind")
            or not isinstance(meta, dict)
            or not meta.get("name")
        ):
            dropped += 1
            continue
        objects.append(obj)
    return objects, dropped


def _substitute_all(
    ks: FluxKustomization,
    objects: list[dict[str, Any]],
    directory: Path,
    ctx: Context,
    lookup: Lookup,
    rules: Rules | None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Flux's per-resource substitution over each object's YAML text."""
    assert ks.post_build is not None
    vars_: dict[str, str] | None = None
    notes: list[str] = []
    out: list[dict[str, Any]] = []
    for obj in objects:
        if substitution_disabled(obj):
            out.append(obj)
            continue
        if vars_ is None:  # loaded lazily, as Flux loads them per resource
            try:
                vars_, notes = variables(ks, lookup)
            except MissingObject as exc:
                known = known_keys(ks, lookup)
                needed = tuple(v for v in _undefined(ks, objects) if v not in known)
                raise MissingObject(exc.ref, needed) from None
            if vars_:
                try:
                    validate_variable_names(vars_)
                except SubstitutionError as exc:
                    raise BuildError(f"postBuild: {exc}") from None
        if not vars_ and not ks.post_build.always:
            return objects, notes
        if not _may_substitute(obj):
            out.append(obj)  # envsubst would return its text unchanged: skip the round trip
            continue
        text = yamlload.dump(obj)
        try:
            result = envsubst(text, vars_, strict=ctx.strict)
        except SubstitutionError as exc:
            doc_id = documents.identity(obj)
            where = _locate(doc_id, exc.variable, directory, ctx, rules)
            declared = [r for r in substitute_refs(ks) if isinstance(lookup(r), DeclaredObject)]
            if exc.kind == "unset" and declared:
                unset = [v for v in _undefined(ks, objects) if vars_.get(v) is None]
                raise UndeclaredKey(
                    declared[-1], tuple(unset or [exc.variable or ""]), f"{where}{exc} in {doc_id}"
                ) from None
            raise BuildError(f"{where}{exc} in {doc_id}") from None
        if result == text:
            out.append(obj)
            continue
        try:
            new = yamlload.load(result)
        except yamlload.YAMLError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise BuildError(
                f"{documents.identity(obj)}: not valid YAML after substitution: {first}"
            ) from None
        if not isinstance(new, dict):
            raise BuildError(f"{documents.identity(obj)}: not an object after substitution")
        out.append(new)
    return out, notes


def known_keys(ks: FluxKustomization, lookup: Lookup) -> set[str]:
    """Variables the substituteFrom objects that do exist define (for a missing one's keys)."""
    assert ks.post_build is not None
    known: set[str] = set()
    for ref in substitute_refs(ks):
        obj = lookup(ref)
        if isinstance(obj, DeclaredObject):
            known.update(obj.keys)
        elif obj is not None:
            try:
                known.update(_source_values(ref, obj)[0])
            except BuildError:
                continue
    return known


def _undefined(ks: FluxKustomization, objects: list[dict[str, Any]]) -> tuple[str, ...]:
    """Variables the objects reference without a default that inline `substitute` lacks."""
    assert ks.post_build is not None
    names: dict[str, None] = {}
    for obj in objects:
        if substitution_disabled(obj):
            continue
        try:
            refs = referenced_variables(yamlload.dump(obj))
        except SubstitutionError:
            continue
        for ref in refs:
            if not ref.has_default and ref.name not in ks.post_build.substitute:
                names.setdefault(ref.name)
    return tuple(names)


def _may_substitute(value: Any) -> bool:
    """Whether any key or string holds `$` or NUL, the only characters envsubst acts on."""
    if isinstance(value, str):
        return "$" in value or "\x00" in value
    if isinstance(value, dict):
        return any(_may_substitute(k) or _may_substitute(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_may_substitute(v) for v in value)
    return False


_VAR_REF = "${{{name}"


def _locate(
    doc_id: DocId, variable: str | None, directory: Path, ctx: Context, rules: Rules | None
) -> str:
    """`file: ` of the manifest that holds the variable, when a cheap search finds one."""
    if not variable:
        return ""
    needle = _VAR_REF.format(name=variable)
    name_line = re.compile(rf"^\s*name:\s*['\"]?{re.escape(doc_id.name)}['\"]?\s*$", re.M)
    with_var: list[Path] = []
    for path in includes.manifest_files(ctx.includes.closure([directory])):
        if rules is not None and rules.exclusion(path, False) is not None:
            continue  # not in the artifact, so not what Flux built
        try:
            text = safefile.read_text(path)
        except (OSError, UnicodeDecodeError):
            continue
        if needle in text:
            if name_line.search(text) and f"kind: {doc_id.kind}" in text:
                return f"{ctx.show(path)}: "
            with_var.append(path)
    return f"{ctx.show(with_var[0])}: " if len(with_var) == 1 else ""


def _set_owner_labels(obj: dict[str, Any], ks: FluxKustomization) -> None:
    _merge_metadata(obj, "labels", {OWNER_NAME: ks.name, OWNER_NAMESPACE: ks.namespace})


def _merge_metadata(obj: dict[str, Any], field: str, values: Mapping[str, str]) -> None:
    if not values:
        return
    meta = obj.setdefault("metadata", {})
    current = meta.get(field)
    current = dict(current) if isinstance(current, dict) else {}
    current.update(values)
    meta[field] = current


def mask_sops(obj: dict[str, Any]) -> None:
    """`flux build`'s masking: SOPS-encrypted Secret values read `**SOPS**`; `sops:` goes."""
    if obj.get("kind") != "Secret":
        obj.pop("sops", None)
        return
    if documents.is_sops_encrypted(obj):
        obj.pop("sops", None)
        docker = obj.get("type", "Opaque") == DOCKERCONFIGJSON
        _mask_values(obj, "data", _b64(_DOCKER_MASK) if docker else SOPS_MASK_B64)
        _mask_values(obj, "stringData", _DOCKER_MASK if docker else SOPS_MASK)
        return
    for field, encoded in (("data", True), ("stringData", False)):
        values = obj.get(field)
        if not isinstance(values, dict):
            continue
        for key, value in list(values.items()):
            text = _decoded(value) if encoded else str(value)
            if "sops" in text and "ENC[" in text:
                values[key] = SOPS_MASK_B64  # upstream uses the base64 mask for both fields


def _mask_values(obj: dict[str, Any], field: str, mask: str) -> None:
    values = obj.get(field)
    if isinstance(values, dict):
        obj[field] = {k: mask for k in values}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _decoded(value: Any) -> str:
    try:
        return base64.b64decode(str(value)).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return ""
