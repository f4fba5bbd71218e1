"""Flux builds through the render seam: confined to the source root, cached by their inputs.

A Flux build's key adds to the closure digest (taken with the generated kustomization file
in place of the one on disk) what else decides its output: the Kustomization spec, the
resolved substitution variables (they come from other builds, so they are part of the
key, not of the closure), strict mode and the source's ignore rules.

An entry stores the target's documents (already redacted) and the few raw objects the
cluster's fixed point reads back (child Kustomizations, sources, ConfigMaps and Secrets
that `substituteFrom` may name, flux-operator ResourceSets and their input providers). A
plaintext Secret value must never reach the disk, yet another Kustomization may substitute
it: such a Secret is stored redacted, and on a hit it
comes back as an `ElidedSecret` that re-runs its build (uncached, once) only when a
`substituteFrom` actually reads it.

Both the build and that rebuild read the `substituteFrom` objects through one `Snapshot`,
taken when the key is: a rebuild then builds exactly what its key names, and never looks
up the cluster's objects again. Looking them up again is how a Kustomization that renders
a Secret and substitutes from it rebuilt itself through that Secret, inside its own lock
(issue 33). No lock here is held while a build runs.

A build that fails after kustomize succeeded (strict substitution, an object that is no
object after substitution, a file the artifact lacks) fails the same way for the same key,
so its one-line error is remembered too: a candidate cluster directory that another
cluster builds fails like this on every run, and re-ran kustomize on every warm run. A
kustomize failure (`RenderFailed`: maybe a timeout or a kill) is never remembered.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.cache import store as cache_mod
from harness.core import documents, memo, redaction, secretflow, yamlload
from harness.core.model import Document
from harness.core.outside import DeclaredObject
from harness.flux import resourceset
from harness.flux.api import (
    FluxKustomization,
    ObjectRef,
    is_flux_kustomization,
    is_source,
    object_ref,
)
from harness.flux.kustomize import generator
from harness.flux.kustomize.build import (
    BuildError,
    Built,
    Context,
    Lookup,
    MissingObject,
    build,
    known_keys,
    substitute_refs,
    variables,
)
from harness.flux.source import artifacts
from harness.flux.source.ignore import Rules
from harness.render import seam as seam_mod
from harness.render.closure import EscapeError, Walker, learn_secrets
from harness.render.discover import KUSTOMIZATION_FILES
from harness.render.seam import documents_from_payload, documents_payload


class _Miss(Exception):
    """A probe found no answer in the cache: the build has to run."""


def probe_flux(
    ks: FluxKustomization,
    directory: Path,
    ctx: Context,
    lookup: Lookup,
    rules: Rules | None,
    root: Path,
) -> Built | None:
    """`build_flux` when the cache answers (a result, or a remembered failure raised as
    BuildError); None when the build would have to run. The fixed point asks this inline
    for a whole round and hands only the misses to the pool: on a warm run a thread and a
    future per cached build cost more than the lookup itself."""
    if ctx.seam is None or ctx.seam.cache is None:
        return None
    try:
        return build_flux(ks, directory, ctx, lookup, rules, root, _probe=True)
    except _Miss:
        return None


def build_flux(
    ks: FluxKustomization,
    directory: Path,
    ctx: Context,
    lookup: Lookup,
    rules: Rules | None,
    root: Path,
    *,
    _probe: bool = False,
) -> Built:
    """`build.build` behind confinement to `root` and the cache; BuildError on failure."""
    seam = ctx.seam
    if seam is None:
        return build(ks, directory, ctx, lookup, rules, _flows(ks, directory, ctx, rules, root))
    prekey = None
    if seam.cache is not None and (seam.reads is not None or seam.reuse is not None):
        lookup = Snapshot(ks, lookup)  # looked up once, for the prekey and the key alike
        prekey = _prekey(seam, ks, directory, ctx, lookup, rules, root)
    reused = _reused(seam, prekey, ks, directory, ctx, lookup, rules, root)
    if reused is not None:
        return reused
    try:
        # what Flux would generate, without writing the mirror or decoding the listed files
        # yet: a cache hit needs neither (its key covers every listed file's content)
        plan = _plan(ks, directory, ctx, rules)
    except generator.GeneratorError as exc:
        raise BuildError(ctx.relative(str(exc))) from None
    if plan.empty:
        return build(ks, directory, ctx, lookup, rules)  # no kustomize run: as cheap as a hit
    generated = (plan.file_name, plan.content) if plan.generated else None
    try:
        closure = seam.walker.closure(directory, root, generated=generated)
    except EscapeError as exc:
        if ctx.artifacts is not None:
            raise BuildError(ctx.artifacts.explain_escape(str(exc), root, ctx.repo)) from None
        raise BuildError(str(exc)) from None
    learn_secrets(closure)
    flows = closure.flows
    cache = seam.cache
    if cache is None:
        return build(ks, directory, ctx, lookup, rules, flows)
    if not closure.cacheable:
        if _probe:
            raise _Miss
        cache.skip()
        return build(ks, directory, ctx, lookup, rules, flows)
    if not isinstance(lookup, Snapshot):
        lookup = Snapshot(ks, lookup)
    digest = cache_mod.key(
        "flux",
        seam.identity(),
        closure.digest(seam.blobs),
        repr(ks),
        _variables_part(ks, lookup),
        f"strict={ctx.strict}",
        _rules_part(rules, root),
    )
    builds = seam.builds
    known = builds.get(digest) if builds is not None else None
    read = None
    if seam.reads is not None and prekey is not None:
        read = seam_mod.read_of(closure, digest, _kustomization_files(directory, root))
    if known is not None:
        if read is not None and seam.reads is not None and prekey is not None:
            seam.reads.build(prekey, read, known.kept)
        return known  # type: ignore[no-any-return]
    payload = cache.get(digest)
    if payload is not None:
        found = _from_payload(
            payload,
            _Rebuild(lambda: build(ks, directory, ctx, lookup, rules, flows), _name(ks)),
            digest,
        )
        if found is not None:
            if builds is not None and not any(isinstance(o, ElidedSecret) for o in found.raw):
                builds[digest] = found  # no tie to this run's build: kept by a resident seam
            if read is not None and seam.reads is not None and prekey is not None:
                seam.reads.build(prekey, read, found.kept)
            return found
    missing_digest = _missing_key(digest, ks, lookup)
    if missing_digest is not None:
        failure = _missing_from_payload(cache.get(missing_digest))
        if failure is not None:
            raise failure
    failed_digest = cache_mod.key("flux-failed", digest)
    failed = cache.get(failed_digest)
    if failed is not None and isinstance(failed.get("error"), str):
        raise BuildError(failed["error"])
    if _probe:
        raise _Miss
    try:
        built = build(ks, directory, ctx, lookup, rules, flows)
    except MissingObject as exc:
        if missing_digest is not None:
            cache.put(missing_digest, _missing_payload(exc))
        raise
    except BuildError as exc:
        if type(exc) is BuildError:  # decided by the inputs the key holds, as a success is
            cache.put(failed_digest, {"error": redaction.known().scrub(str(exc))})
        raise
    docs = documents.from_objects(built.objects)
    built = dataclasses.replace(built, documents=docs)
    payload = _payload(built)
    cache.put(digest, payload)
    built = dataclasses.replace(built, key=digest, kept=kept_part(payload))
    if read is not None and seam.reads is not None and prekey is not None:
        seam.reads.build(prekey, read, built.kept)
    return built


def _prekey(
    seam: seam_mod.Seam,
    ks: FluxKustomization,
    directory: Path,
    ctx: Context,
    lookup: Lookup,
    rules: Rules | None,
    root: Path,
) -> str:
    """Everything a build's cache key holds but its closure's digest: with the files the
    closure read unchanged (and no file added or removed in the tree, which the index
    checks first), the same prekey names the same key (pipeline/worktree.py)."""
    return cache_mod.key(
        "flux-inputs",
        seam.identity(),
        repr(ks),
        str(directory),
        str(root),
        _variables_part(ks, lookup),
        f"strict={ctx.strict}",
        _rules_part(rules, root),
    )


def _kustomization_files(directory: Path, root: Path) -> list[str]:
    """The kustomization file Flux's generator reads (and may replace) in `directory`,
    relative to `root`: it decides the generated file, which the closure holds in its
    place."""
    out = []
    for name in KUSTOMIZATION_FILES:
        path = directory / name
        if path.is_file():
            out.append(os.path.relpath(path, root))
    return out


def _reused(
    seam: seam_mod.Seam,
    prekey: str | None,
    ks: FluxKustomization,
    directory: Path,
    ctx: Context,
    lookup: Lookup,
    rules: Rules | None,
    root: Path,
) -> Built | None:
    """The build as the previous render of this tree answered it, when its inputs other
    than files are the same and none of its files changed: its key is the one recorded,
    so no closure is walked or digested. Its documents are the previous render's (the
    dependency index holds them decoded) with the part of its entry the fixed point reads
    back, kept beside the index: no entry is read. The scrub learns its files as on every
    run."""
    reuse = seam.reuse
    if reuse is None or prekey is None or seam.cache is None:
        return None
    read = reuse.flux.get(prekey)
    if read is None or not reuse.unchanged(read):
        return None
    rebuild = _Rebuild(
        lambda: build(ks, directory, ctx, lookup, rules, _flows(ks, directory, ctx, rules, root)),
        _name(ks),
    )
    known = _known(seam, reuse, read.digest, rebuild)
    if known is None:
        return None
    read.learn()
    if seam.reads is not None:
        seam.reads.build(prekey, read, known.kept)
    return known


def _known(seam: seam_mod.Seam, reuse: seam_mod.Reuse, key: str, rebuild: _Rebuild) -> Built | None:
    """The build keyed `key` as a resident seam holds it, else from its documents in the
    dependency index and the part kept beside it, else from its entry; None when none
    has it."""
    builds = seam.builds
    known = builds.get(key) if builds is not None else None
    if known is not None:
        return known  # type: ignore[no-any-return]
    remembered = reuse.builds.get(key)
    if remembered is not None:
        docs, kept = remembered
        known = _from_kept(kept, docs, rebuild, key)
    if known is None:
        payload = seam.cache.get(key) if seam.cache is not None else None
        if payload is None:
            return None
        known = _from_payload(payload, rebuild, key)
    # a resident seam keeps no build tied to a rebuild of this run's inputs
    elided = known is None or any(isinstance(o, ElidedSecret) for o in known.raw)
    if builds is not None and not elided:
        builds[key] = known
    return known


def remembered(seam: seam_mod.Seam, key: str) -> Built | None:
    """The Flux build keyed `key` as the previous render of this tree gave it, when none of
    the files it read changed, without its Kustomization or variables at hand: the fixed
    point's trace (targets.py) has shown them to be the ones that key was taken with. None
    when it holds a Secret stored redacted (only its own build could give the values back)
    or is not remembered. The scrub learns its files, and the index records it, as
    `_reused` does."""
    found = _unchanged_build(seam, key)
    if found is None:
        return None
    reuse, read, prekeys = found
    # nothing can ask for this rebuild: a build holding an elided Secret is refused below
    known = _known(seam, reuse, key, _Rebuild(_no_rebuild, "a remembered build"))
    if known is None or any(isinstance(o, ElidedSecret) for o in known.raw):
        return None
    read.learn()
    if seam.reads is not None:
        for prekey in prekeys:
            seam.reads.build(prekey, read, known.kept)
    return known


def is_remembered(seam: seam_mod.Seam, key: str) -> bool:
    """Whether `remembered` may answer `key` (its checks before decoding anything): a
    fixed-point round starts the builds it cannot answer before the rest."""
    return _unchanged_build(seam, key) is not None


def _unchanged_build(
    seam: seam_mod.Seam, key: str
) -> tuple[seam_mod.Reuse, seam_mod.Read, tuple[str, ...]] | None:
    """The previous render's build keyed `key` (the reuse holding it, what it read, its
    prekeys) when none of the files it read changed."""
    reuse = seam.reuse
    if reuse is None or seam.cache is None:
        return None
    found = reuse.by_key.get(key)
    if found is None or not reuse.unchanged(found[0]):
        return None
    return reuse, *found


def _no_rebuild() -> Built:
    raise BuildError("a remembered build has no inputs to rebuild from")


def _name(ks: FluxKustomization) -> str:
    return f"Kustomization {ks.namespace}/{ks.name}"


def _flows(
    ks: FluxKustomization, directory: Path, ctx: Context, rules: Rules | None, root: Path
) -> secretflow.Flows:
    """The replacements and vars of a build that has no seam (and so no closure yet)."""
    try:
        plan = _plan(ks, directory, ctx, rules)
        generated = (plan.file_name, plan.content) if plan.generated else None
        closure = Walker().closure(directory, root, generated=generated)
        learn_secrets(closure)
        return closure.flows
    except (generator.GeneratorError, EscapeError):
        return secretflow.NONE  # the build itself reports it


def _plan(
    ks: FluxKustomization, directory: Path, ctx: Context, rules: Rules | None
) -> generator.Plan:
    """generator.plan without the mirror; a resident seam keeps it while nothing under the
    directory changes (seam.Resident.forget)."""
    plans = ctx.seam.plans if ctx.seam is not None else None
    key = (repr(ks), str(directory), rules)
    if plans is not None and key in plans:
        found: generator.Plan = plans[key]
        return found
    plan = generator.plan(ks, directory, ctx.workspace, rules, mirror=False, check=False)
    if plans is not None:
        plans[key] = plan
    return plan


def _variables_part(ks: FluxKustomization, lookup: Lookup) -> str:
    """The variables the build will substitute (hashed into the key, never stored)."""
    if ks.post_build is None:
        return "no-post-build"
    try:
        values, notes = variables(ks, lookup)
    except BuildError as exc:
        return f"error:{exc}"
    return json.dumps([sorted(values.items()), notes], separators=(",", ":"))


def _missing_key(digest: str, ks: FluxKustomization, lookup: Lookup) -> str | None:
    """The key of a build that fails on a missing `substituteFrom` object, or None.

    Such a failure is as reproducible as a success: the build's key already names the
    missing object (`_variables_part` holds the error), and the one other input of the
    failure, the keys the existing substituteFrom objects define (they decide which
    variables the error lists), is added here. Candidate cluster directories that another
    cluster builds fail this way on every run; caching the failure spares a kustomize run.
    Only the failure's object and variable names are stored, never a value.
    """
    if ks.post_build is None:
        return None
    try:
        variables(ks, lookup)
    except MissingObject:
        known = sorted(known_keys(ks, lookup))
        return cache_mod.key("flux-missing", digest, json.dumps(known, separators=(",", ":")))
    except BuildError:
        return None
    return None


def _missing_payload(exc: MissingObject) -> dict[str, Any]:
    return {
        "missing": [exc.ref.kind, exc.ref.namespace, exc.ref.name],
        "variables": list(exc.variables),
    }


def _missing_from_payload(payload: dict[str, Any] | None) -> MissingObject | None:
    if payload is None:
        return None
    ref, names = payload.get("missing"), payload.get("variables")
    if not isinstance(ref, list) or len(ref) != 3 or not isinstance(names, list):
        return None
    if not all(isinstance(x, str) for x in [*ref, *names]):
        return None
    return MissingObject(ObjectRef(ref[0], ref[1], ref[2]), tuple(names))


# a source's rules are one object per run (flux/source/ignore.py SourceIgnores), shared by
# every build from it: written out once, not once per build's key and prekey
_RULES_PARTS: memo.IdentityMemo[str] = memo.IdentityMemo("flux-rules-part", 10_000)


def _rules_part(rules: Rules | None, root: Path) -> str:
    if rules is None:
        return "no-rules"
    prefix = str(root).rstrip("/") + "/"
    found = _RULES_PARTS.get(rules, prefix)
    if found is None:
        found = _RULES_PARTS.put(rules, _rules_text(rules, prefix), prefix)
    return found


def _rules_text(rules: Rules, prefix: str) -> str:
    return json.dumps(
        [
            [
                p.text,
                p.origin.removeprefix(prefix),
                list(p.domain),
                p.negated,
                p.dir_only,
                p.anchored,
            ]
            for p in rules.patterns
        ],
        separators=(",", ":"),
    )


def _kept(obj: dict[str, Any]) -> bool:
    """Raw objects the fixed point reads back (targets._integrate)."""
    if is_flux_kustomization(obj) or is_source(obj) or artifacts.is_generator(obj):
        return True
    if resourceset.is_resourceset(obj) or resourceset.is_provider(obj):
        return True
    return obj.get("apiVersion") == "v1" and obj.get("kind") in ("ConfigMap", "Secret")


def _payload(built: Built) -> dict[str, Any]:
    raw: list[dict[str, Any]] = []
    elided: list[list[str]] = []
    for obj in built.raw:
        if not _kept(obj):
            continue
        hidden = documents.redact(obj)  # a Secret's values, a last-applied annotation's
        if hidden is not None:
            if obj.get("kind") == "Secret":
                ref = object_ref(obj, "default")
                elided.append([ref.namespace, ref.name])
            obj = hidden
        raw.append(obj)
    assert built.documents is not None
    payload: dict[str, Any] = {
        "documents": documents_payload(built.documents),
        "elided": elided,
        "notes": list(built.notes),
    }
    as_json = _json_exact(raw)
    if as_json is not None:
        payload["raw_json"] = as_json
    else:
        payload["raw"] = "".join("---\n" + yamlload.dump(o) for o in raw)
    return payload


def _json_exact(objects: list[dict[str, Any]]) -> str | None:
    """The objects as JSON text when it reads back equal, key order kept (a hit then skips
    a YAML parse, a tenth of a warm run); None for what JSON cannot carry (a timestamp,
    a non-string key), which is stored as YAML as before."""
    try:
        text = json.dumps(objects, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return text if json.loads(text) == objects else None


def kept_part(payload: Mapping[str, Any]) -> dict[str, Any]:
    """What of an entry the fixed point reads back besides the documents (the raw objects,
    the Secrets elided from them, the notes): the dependency index keeps it beside the
    render whose results hold the documents (pipeline/worktree.py)."""
    return {k: v for k, v in payload.items() if k != "documents"}


def _from_payload(payload: dict[str, Any], rebuild: _Rebuild, key: str) -> Built | None:
    docs = documents_from_payload(payload.get("documents"))
    if docs is None:
        return None
    return _from_kept(kept_part(payload), docs, rebuild, key)


def _from_kept(
    kept: Mapping[str, Any], docs: tuple[Document, ...], rebuild: _Rebuild, key: str
) -> Built | None:
    """A build from its documents and its entry's `kept_part` (None: not of that shape)."""
    if not isinstance(kept, Mapping):
        return None
    notes = kept.get("notes")
    elided_rows = kept.get("elided")
    if not isinstance(notes, list) or not isinstance(elided_rows, list):
        return None
    raw = _raw_objects(kept)
    if raw is None:
        return None
    elided = {ObjectRef("Secret", str(r[0]), str(r[1])) for r in elided_rows if len(r) == 2}
    out: list[dict[str, Any]] = []
    for obj in raw:
        if obj.get("kind") == "Secret" and object_ref(obj, "default") in elided:
            obj = ElidedSecret(obj, object_ref(obj, "default"), rebuild)
        out.append(obj)
    notes_ = tuple(str(n) for n in notes)
    return Built((), tuple(out), notes_, documents=docs, key=key, kept=dict(kept))


def _raw_objects(payload: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    as_json, as_yaml = payload.get("raw_json"), payload.get("raw")
    try:
        if isinstance(as_json, str):
            loaded = json.loads(as_json)
        elif isinstance(as_yaml, str):
            loaded = yamlload.load_all(as_yaml)
        else:
            return None
    except (ValueError, yamlload.YAMLError):
        return None
    if not isinstance(loaded, list):
        return None
    return [o for o in loaded if isinstance(o, dict)]


class Snapshot:
    """The `substituteFrom` objects of one build, looked up once, when its key is taken.

    The key, the build and a later rebuild all read these: the fixed point keeps adding
    objects to the cluster (among them the Secrets this very build renders), and a rebuild
    that looked them up again would build other inputs than its key names. An error of a
    lookup (a producer's rebuild failing) is replayed like a value.
    """

    def __init__(self, ks: FluxKustomization, lookup: Lookup) -> None:
        self._seen: dict[ObjectRef, Mapping[str, Any] | DeclaredObject | None] = {}
        self._failed: dict[ObjectRef, BuildError] = {}
        for ref in substitute_refs(ks):
            if ref in self._seen or ref in self._failed:
                continue
            try:
                self._seen[ref] = lookup(ref)
            except BuildError as exc:
                self._failed[ref] = exc

    def __call__(self, ref: ObjectRef) -> Mapping[str, Any] | DeclaredObject | None:
        failed = self._failed.get(ref)
        if failed is not None:
            raise failed
        return self._seen.get(ref)


class _Rebuild:
    """The build behind a cache hit, run when a redacted Secret is needed.

    No lock is held while it runs. Its lookup is a `Snapshot`, so two threads that race
    build the same thing (the first result is kept); a thread that asks for this build
    while running it would be a build that needs its own output, and fails as one instead
    of waiting for itself forever.
    """

    def __init__(self, run: Callable[[], Built], name: str) -> None:
        self._run = run
        self._name = name
        self._lock = threading.Lock()  # guards the two fields below, never a build
        self._built: Built | None = None
        self._running: set[int] = set()

    def raw(self) -> tuple[dict[str, Any], ...]:
        me = threading.get_ident()
        with self._lock:
            if self._built is not None:
                return self._built.raw
            if me in self._running:
                raise BuildError(f"{self._name}: rebuilding it needs its own output")
            self._running.add(me)
        try:
            built = self._run()
        finally:
            with self._lock:
                self._running.discard(me)
        with self._lock:
            if self._built is None:
                self._built = built
            return self._built.raw


class ElidedSecret(dict[str, Any]):
    """A Secret stored without its values; `materialize` renders them again from the repo."""

    def __init__(self, redacted: dict[str, Any], ref: ObjectRef, rebuild: _Rebuild) -> None:
        super().__init__(redacted)
        self.ref = ref
        self._rebuild = rebuild

    def materialize(self) -> dict[str, Any] | None:
        """The Secret as the build renders it (None if, against its key, it no longer does)."""
        for obj in self._rebuild.raw():
            if obj.get("kind") == "Secret" and object_ref(obj, "default") == self.ref:
                return obj
        return None
