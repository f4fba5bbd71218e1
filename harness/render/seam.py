"""The render seam: confine a build, digest its inputs, answer from the cache or render.

Every build passes here before kustomize runs. Its input closure (closure.py) is computed
first; a read outside the source root fails the target. With a cache, the key is made of
the renderer identity and version, its flags, the harness version and the closure digest
(Flux builds add their spec, variables and ignore rules, see flux/kustomize/cached.py); a hit
returns the stored result, a miss renders and stores it. Only successful builds of
closures without remote references are stored. Without a cache (`--no-cache`) every
target renders, but confinement still applies.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cache import store as cache_mod
from harness.core import parallel, parsed
from harness.core.model import DocId, Document, Target, TargetResult
from harness.render.closure import (
    Blobs,
    Closure,
    EscapeError,
    Walker,
    learn_inputs,
    learn_secrets,
)
from harness.render.kustomize import Renderer, result_from_output

RESIDENT_LIMIT = 20_000  # entries a resident process keeps before starting over


@dataclass
class Resident:
    """What a resident process (`harness watch`) keeps between renders of one tree: the
    closure walker and blob ids (told what changed through `forget`) and each path
    target's decoded result by its key (a key is a digest of every input, so it can only
    name the same result)."""

    walker: Walker = field(default_factory=Walker)
    blobs: Blobs = field(default_factory=Blobs)
    results: dict[str, TargetResult] = field(default_factory=dict)
    # Flux's generated kustomization per (Kustomization, directory, ignore rules): it reads
    # only files under the directory (its kustomization file, or the scan)
    plans: dict[tuple[str, str, object], Any] = field(default_factory=dict)
    # decoded Flux build results by key (flux/kustomize/cached.py), those that need no run
    builds: dict[str, Any] = field(default_factory=dict)

    def forget(self, paths: Iterable[str]) -> None:
        """Files modified in place since the last render (absolute paths)."""
        paths = list(paths)
        self.walker.forget(paths)
        self.blobs.forget(paths)
        for key in list(self.plans):
            inside = key[1].rstrip("/") + "/"
            if any(p.startswith(inside) for p in paths):
                del self.plans[key]
        if len(self.results) > RESIDENT_LIMIT:
            self.results.clear()
        if len(self.plans) > RESIDENT_LIMIT:
            self.plans.clear()
        if len(self.builds) > RESIDENT_LIMIT:
            self.builds.clear()


@dataclass(frozen=True)
class Read:
    """What one cached build read: its closure's root, entries and secretGenerator sources
    (enough to teach the run's scrub again without walking), and its cache key."""

    root: str
    entries: tuple[tuple[str, str], ...]
    secrets: tuple[tuple[str, str], ...]
    digest: str

    def closure(self) -> Closure:
        return Closure(Path(self.root), self.entries, secrets=self.secrets)

    def files(self) -> tuple[str, ...]:
        return self._files

    def learn(self) -> None:
        """`learn_secrets` of this closure, with the files as already joined."""
        learn_inputs(self.root, self.entries, self.secrets, self._files)

    @functools.cached_property
    def _files(self) -> tuple[str, ...]:
        # asked twice per build of an incremental render (the index, then the probe)
        return tuple(os.path.join(self.root, rel) for kind, rel in self.entries if kind == "file")


def read_of(closure: Closure, digest: str, extra: Iterable[str] = ()) -> Read | None:
    """`closure` as the dependency index keeps it; None when it cannot be kept (a literal
    of a secretGenerator is a Secret value: it never goes to disk). `extra`: files the
    build read beside its closure (relative to its root)."""
    if any(how == "literal" for how, _ in closure.secrets):
        return None
    entries = closure.entries + tuple(("file", rel) for rel in extra)
    return Read(str(closure.root), entries, closure.secrets, digest)


@dataclass
class Reads:
    """What every cached build of one render read, by build: the raw data of the
    dependency index (pipeline/worktree.py). Path targets by name, Flux builds by a key
    of everything but their closure (`flux/kustomize/cached.py`)."""

    paths: dict[str, Read] = field(default_factory=dict)
    flux: dict[str, Read] = field(default_factory=dict)
    # by a Flux build's cache key: the part of its entry the fixed point reads back
    # (`kept`: flux/kustomize/cached.py) and a target whose documents it gave (`named`)
    kept: dict[str, Any] = field(default_factory=dict)
    named: dict[str, str] = field(default_factory=dict)
    # the fixed point's trace (flux/targets.py `_Trace`): what its start derived, and each
    # Kustomization's outcome by cluster and name
    trace: Trace | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def path(self, name: str, read: Read | None) -> None:
        if read is not None:
            with self.lock:
                self.paths[name] = read

    def build(self, prekey: str, read: Read | None, kept: Any = None) -> None:
        if read is not None:
            with self.lock:
                self.flux[prekey] = read
                if kept is not None:
                    self.kept[read.digest] = kept

    def name(self, digest: str, target: str) -> None:
        """`target`'s documents are those of the Flux build keyed `digest`."""
        with self.lock:
            self.named.setdefault(digest, target)


# a Kustomization's outcome in the fixed point's trace: ("b", its build's cache key, its
# directory) for a build from the repo; any other outcome by a digest of what it was
Outcome = tuple[str, str, str]


@dataclass
class Trace:
    """What the Flux fixed point derived in one render, beside the builds it read: a digest
    of everything its start took from outside the builds (the clusters found, their entry
    renders and roots), and each Kustomization's outcome by cluster and name. A later render
    of the tree whose start digests the same, and whose rebuilt Kustomizations give what the
    fixed point reads back as before, takes every other outcome from here (targets.py)."""

    start: str
    nodes: dict[str, Outcome] = field(default_factory=dict)


@dataclass(frozen=True)
class Reuse:
    """A previous render of this tree and which files are as it read them (the index's
    answer, pipeline/worktree.py): a build whose every input file is `stable` and whose
    other inputs are the same is answered by that render without walking or digesting."""

    stable: frozenset[str]  # absolute paths whose stat is what the previous render saw
    results: Mapping[str, TargetResult]  # the previous render's path targets, by name
    paths: Mapping[str, Read]
    flux: Mapping[str, Read]
    # a Flux build's cache key -> its documents (a result of the previous render) and the
    # part of its entry the fixed point reads back: the build answered without its entry
    builds: Mapping[str, tuple[tuple[Document, ...], Any]] = field(default_factory=dict)
    trace: Trace | None = None  # the previous render's fixed point (Reads.trace)

    def unchanged(self, read: Read) -> bool:
        return self.stable.issuperset(read.files())

    @functools.cached_property
    def by_key(self) -> dict[str, tuple[Read, tuple[str, ...]]]:
        """Each remembered Flux build by its cache key: what it read and the prekeys
        (`flux`'s keys) that named it."""
        out: dict[str, tuple[Read, tuple[str, ...]]] = {}
        for prekey, read in self.flux.items():
            known = out.get(read.digest)
            out[read.digest] = (read, (*known[1], prekey) if known else (prekey,))
        return out


@dataclass
class Seam:
    """What the builds of one render share: the cache, the closure walker, blob ids; with
    the dependency index, what each build read (`reads`) and a previous render (`reuse`)."""

    renderer: Renderer
    cache: cache_mod.RenderCache | None = None
    walker: Walker = field(default_factory=Walker)
    blobs: Blobs = field(default_factory=Blobs)
    results: dict[str, TargetResult] | None = None  # a resident process's decoded results
    plans: dict[tuple[str, str, object], Any] | None = None  # and its generated kustomizations
    builds: dict[str, Any] | None = None  # and its decoded Flux builds
    reads: Reads | None = None
    reuse: Reuse | None = None

    @classmethod
    def for_run(
        cls,
        renderer: Renderer,
        cache: cache_mod.RenderCache | None,
        blob_index: Mapping[str, str] | None = None,
        resident: Resident | None = None,
    ) -> Seam:
        if resident is not None:
            seam = cls(
                renderer,
                cache,
                resident.walker,
                resident.blobs,
                resident.results,
                resident.plans,
                resident.builds,
            )
        else:  # generated kustomizations are kept for the run: a probe and its build share one
            seam = cls(renderer, cache, Walker(), Blobs(blob_index), plans={})
        if cache is not None and cache.store is not None:
            known_version(renderer, cache.store)
        return seam

    def identity(self) -> str:
        """Renderer name, version and flags; not its path, so CI runners share entries."""
        info = self.renderer.info()
        return f"{info.name}\0{info.version}\0{' '.join(self.renderer.flags)}"


def known_version(renderer: Renderer, store: cache_mod.Store) -> threading.Thread | None:
    """The renderer's version as an earlier run asked it, kept in the cache under the binary's
    identity (real path, size, inode, mtime and ctime): a warm run starts no `version`
    process. A script (`#!`, e.g. a version manager's shim choosing a binary per directory)
    is asked every time; so is a binary whose entry is missing or corrupt. Returns the thread
    that stores a version asked now (it waits for the run's own check), else None."""
    stamp = binary_stamp(renderer.binary)
    if stamp is None:
        return None
    digest = cache_mod.key("renderer-version", renderer.mode, *stamp)
    payload = store.get_meta(digest)
    version = payload.get("version") if payload is not None else None
    if isinstance(version, str) and version:
        renderer.assume_version(version)
        return None

    def remember() -> None:  # beside the first builds, as render_repo runs the check itself
        with contextlib.suppress(Exception):  # a failed check reaches whoever asks info()
            store.put_meta(digest, {"version": renderer.info().version})

    thread = parallel.thread(remember, name="renderer-version-memo")
    thread.start()
    return thread


def binary_stamp(binary: Path) -> tuple[str, ...] | None:
    """A binary's identity for remembering its version (real path, size, inode, mtime,
    ctime); None for a script (`#!`) or a file that cannot be read: those are asked."""
    real = os.path.realpath(binary)
    try:
        with open(real, "rb") as fh:
            st = os.fstat(fh.fileno())
            if fh.read(2) == b"#!":
                return None
    except OSError:
        return None
    return (real, str(st.st_size), str(st.st_ino), str(st.st_mtime_ns), str(st.st_ctime_ns))


def probe_path(seam: Seam, target: Target, repo: Path) -> TargetResult | None:
    """`path_result` when it needs no kustomize run (a cache hit, or a build that escapes
    its root), else None: the pipeline takes these inline and sends only the rest to its
    pool."""
    reused = _reused(seam, target)
    if reused is not None:
        return reused
    try:
        closure = seam.walker.closure(target.path, repo)
    except EscapeError as exc:
        return TargetResult(target, error=str(exc))
    learn_secrets(closure)
    if seam.cache is None or not closure.cacheable:
        return None
    digest = cache_mod.key("path", seam.identity(), closure.digest(seam.blobs))
    known = seam.results.get(digest) if seam.results is not None else None
    if known is not None and known.target == target:
        _record(seam, target, closure, digest)
        return known
    payload = seam.cache.get(digest)
    found = result_from_payload(target, payload) if payload is not None else None
    if found is not None:
        _record(seam, target, closure, digest)
        if seam.results is not None:
            seam.results[digest] = found
    return found


def prestart(seam: Seam, target: Target, repo: Path) -> None:
    """Run `target`'s build now, its closure confined first as `path_result` does; the
    result waits in the renderer for `path_result`'s own `build`. For a cache that holds
    nothing yet (every probe misses), while the renderer's version, which every key
    needs, is still being asked: the first builds need not wait for it."""
    try:
        seam.walker.closure(target.path, repo)
    except EscapeError:
        return  # path_result reports it; nothing is built
    with seam.renderer.background():
        seam.renderer.build(target.path)


def _reused(seam: Seam, target: Target) -> TargetResult | None:
    """The previous render's result of `target` when none of its input files changed (the
    dependency index): no walk, no digest, no entry to decode. The run's scrub still learns
    what its files hold, as every run does (closure.learn_secrets)."""
    reuse = seam.reuse
    if reuse is None or seam.cache is None:
        return None
    read = reuse.paths.get(target.name)
    known = reuse.results.get(target.name)
    if read is None or known is None or known.target != target or not reuse.unchanged(read):
        return None
    read.learn()
    if seam.reads is not None:
        seam.reads.path(target.name, read)
    return known


def _record(seam: Seam, target: Target, closure: Closure, digest: str) -> None:
    if seam.reads is not None:
        seam.reads.path(target.name, read_of(closure, digest))


def path_result(seam: Seam, target: Target, repo: Path) -> TargetResult:
    """One path target: confined to the repo root, served from the cache when it can be."""
    try:
        closure = seam.walker.closure(target.path, repo)
    except EscapeError as exc:
        return TargetResult(target, error=str(exc))
    learn_secrets(closure)
    cache = seam.cache
    flows = closure.flows
    if cache is None:
        return result_from_output(target, seam.renderer.build(target.path), repo, flows)
    if not closure.cacheable:
        cache.skip()
        return result_from_output(target, seam.renderer.build(target.path), repo, flows)
    digest = cache_mod.key("path", seam.identity(), closure.digest(seam.blobs))
    payload = cache.get(digest)
    if payload is not None:
        found = result_from_payload(target, payload)
        if found is not None:
            _record(seam, target, closure, digest)
            return found
    result = result_from_output(target, seam.renderer.build(target.path), repo, flows)
    if result.ok:
        cache.put(digest, result_payload(result))
        _record(seam, target, closure, digest)
    return result


def render_paths(
    seam: Seam,
    targets: Iterable[Target],
    repo: Path,
    jobs: int,
    on_done: Callable[[TargetResult], None] | None = None,
) -> dict[str, TargetResult]:
    """Path targets in parallel through the seam; one failure never stops the others."""
    results: dict[str, TargetResult] = {}

    def one(target: Target) -> TargetResult:
        result = path_result(seam, target, repo)
        if on_done is not None:
            on_done(result)
        return result

    with parallel.pool(jobs) as executor:
        for result in executor.map(one, list(targets)):
            results[result.name] = result
    return results


# -- payloads: what an entry holds ---------------------------------------------------------


def documents_payload(docs: Iterable[Document]) -> list[list[str | None]]:
    """Documents as stored: identity, apiVersion, (already redacted) text, sha256, and the
    text's parsed object as JSON (parsed.py; None when JSON cannot hold it)."""
    return [
        [
            d.id.group,
            d.id.kind,
            d.id.namespace,
            d.id.name,
            d.api_version,
            d.text,
            d.sha256,
            parsed.stored(d.text),
        ]
        for d in docs
    ]


def documents_from_payload(rows: Any) -> tuple[Document, ...] | None:
    if not isinstance(rows, list):
        return None
    out: list[Document] = []
    objects: list[tuple[str, str]] = []
    for row in rows:
        if not isinstance(row, list) or len(row) != 8:
            return None
        if not all(isinstance(v, str) for v in row[:7]):
            return None
        group, kind, namespace, name, api_version, text, sha, obj = row
        if obj is not None and not isinstance(obj, str):
            return None
        out.append(Document(DocId(group, kind, namespace, name), api_version, text, sha))
        if obj is not None:
            objects.append((text, obj))
    for text, obj in objects:  # only a whole, well-formed entry is believed
        parsed.remember_json(text, obj)
    return tuple(out)


def result_payload(result: TargetResult) -> dict[str, Any]:
    return {
        "documents": documents_payload(result.documents),
        "sha256": result.sha256,
        "duplicates": [[d.group, d.kind, d.namespace, d.name] for d in result.duplicates],
        "notes": list(result.notes),
    }


def result_from_payload(target: Target, payload: Mapping[str, Any]) -> TargetResult | None:
    """The stored result for `target`, or None when the entry's shape is not ours."""
    docs = documents_from_payload(payload.get("documents"))
    sha = payload.get("sha256")
    dups = payload.get("duplicates")
    notes = payload.get("notes")
    if docs is None or not isinstance(sha, str) or not isinstance(dups, list):
        return None
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        return None
    try:
        duplicates = tuple(DocId(*d) for d in dups)
    except TypeError:
        return None
    return TargetResult(
        target, documents=docs, sha256=sha, duplicates=duplicates, notes=tuple(notes)
    )
