"""The dependency index: the working tree's last render, what each build read, and the tree's
stat as that render saw it; a later render of the tree re-derives only what changed.

Kept with the render cache (per repo, config and renderer), and in memory by a resident
`harness watch` (`Keeper`). It holds the render (documents already redacted, as every
entry), for every path target the files its build read, for every Flux build the same by
a key of everything else its cache key holds (its Kustomization, variables, strictness,
ignore rules: `flux/kustomize/cached.py`), and the stat of every file and directory of the
tree taken before that render read any (size, mtime, ctime, inode, mode). Beside it, in an
entry of its own (`builds_key`), each Flux build by its cache key: the target whose result
holds its documents (with that result's sha256) and the part of its entry the fixed point
reads back (raw objects, elided Secrets, notes).

A new render walks the tree's stat (no file is read) and then:

- nothing changed: the remembered render is the answer, with no build looked up;
- a file or directory was added, removed, renamed or changed type, or a file changed that
  no build read but discovery might (a YAML or JSON file, a kustomization or ignore file):
  the index is not used, everything renders as without it (what exists may have changed);
- else every target whose files are unchanged is the remembered result, and the Flux
  fixed point runs as in a full render, each build whose files and other inputs are
  unchanged answered from its recorded key: its documents the remembered result's, the
  rest from the builds kept beside the index, no cache entry read or decoded (a build
  whose result is not the recorded one reads its entry, as without the index). The rest
  (the changed files' readers, and what the fixed point derives from them: a changed
  Kustomization object gives another prekey, a changed `substituteFrom` source other
  variables, a new or removed Kustomization another set of nodes) render through the cache.

Written after each render: the whole entry, or, when at most `REBASE_SHARE` of its results
differ from the whole entry it was read from, only a delta beside that entry (the tree's
stat, what the builds read, the results that differ), named by the entry's token so that
it never applies to another entry: encoding the whole render again was most of the cost.

A missing, corrupt or foreign entry is no index: the render runs in full (a bad delta
leaves the entry it was made against, an index of an earlier tree). A file modified
within `filefacts.RACY_SECONDS` of the walk is never trusted (its stat may not move when it
changes again). Not used with helm targets, a shard, a selection, a source mapped outside
the repo, or a render that read a remote input: those are not functions of the tree alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.cache import fileformat
from harness.cache import store as cache_mod
from harness.core import redaction
from harness.core.config import Config
from harness.core.filefacts import RACY_SECONDS
from harness.core.model import Document, Snapshot, TargetResult
from harness.core.run import files as current_files
from harness.flux.source.ignore import IGNORE_FILE
from harness.pipeline import refsnap
from harness.render.discover import KUSTOMIZATION_FILES
from harness.render.seam import Read, Reads, Reuse, Trace

__all__ = ["Index", "Keeper", "Read", "Reuse", "key", "load", "remember", "walk"]

KIND = "worktree-index-v4"  # v2: packed (cache/fileformat.py); v3: its token; v4: the trace
BUILDS_KIND = "worktree-flux-builds"
DELTA_KIND = "worktree-index-delta-v3"  # packed, as the entry; v3: the trace
# a delta holds at most 1/8 of the results (or 8) before the whole entry is written again
REBASE_SHARE = 8
REBASE_MIN = 8
# a changed file no build read matters only if discovery or cluster detection may read it
_STRUCTURAL_SUFFIXES = (".yaml", ".yml", ".json")
_IGNORE_NAMES = frozenset([IGNORE_FILE, ".gitignore"])
_STRUCTURAL_NAMES = frozenset([*KUSTOMIZATION_FILES, *_IGNORE_NAMES])
Stamp = tuple[int, int, int, int, int]  # mode, size, mtime_ns, ctime_ns, inode


@dataclass(frozen=True)
class Index:
    """One remembered render of the tree (see the module docstring)."""

    stamps: dict[str, Stamp | None]  # path relative to the repo -> stat (None: racy)
    snapshot: Snapshot
    paths: dict[str, Read]
    flux: dict[str, Read]
    warnings: tuple[str, ...] = ()
    # each result with the stored item it was read from: the next index reuses the items
    # of results that did not change instead of encoding them again
    items: dict[str, tuple[TargetResult, refsnap.Row]] = field(default_factory=dict, compare=False)
    # each Flux build by its cache key: the target holding its documents, that result's
    # sha256, and the part of its entry the fixed point reads back (cached.py `kept_part`);
    # kept in an entry of its own beside the index (`builds_key`)
    builds: dict[str, tuple[str, str, Any]] = field(default_factory=dict, compare=False)
    # the whole entry this index was read from or last written as, when later renders are
    # kept as a delta beside it (`remember`)
    base: Base | None = field(default=None, compare=False)
    # what the Flux fixed point derived (seam.Trace): a later render takes the outcomes it
    # shows to be unchanged from it (flux/targets.py `_Trace`)
    trace: Trace | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Base:
    """A whole index entry as stored: where, what names it (`token`) and its results."""

    digest: str
    token: str
    results: Mapping[str, TargetResult]


@dataclass
class Keeper:
    """Where an index lives between renders: on disk only (`diff`), or also in memory
    (`harness watch` keeps one for its process). `used` says what the last render did
    with it: "full", "none-changed" or "incremental" (for tests)."""

    memory: Index | None = None
    used: str = ""


def key(cfg: Config, renderer_identity: str, options: str) -> str:
    return cache_mod.key(
        KIND, os.path.realpath(cfg.repo), refsnap.config_part(cfg), renderer_identity, options
    )


def walk(repo: Path) -> dict[str, Stamp | None]:
    """The stat of every file and directory under `repo` (not `.git`), without reading
    any; a file modified within RACY_SECONDS is None (never trusted). Listed through the
    run's file facts (a resident watcher holds the listings: core/filefacts.py `Held`)."""
    out: dict[str, Stamp | None] = {}
    racy = time.time_ns() - int(RACY_SECONDS * 1e9)
    root = str(repo)
    facts = current_files()
    stack = [""]
    while stack:
        rel = stack.pop()
        entries = facts.listing(os.path.join(root, rel) if rel else root)
        if entries is None:
            out[rel or "."] = None
            continue
        for name, st, _is_dir, _is_file in entries:
            if name == ".git":
                continue
            path = f"{rel}/{name}" if rel else name
            if st is None:
                out[path] = None
                continue
            stamp: Stamp = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            out[path] = None if max(st.st_mtime_ns, st.st_ctime_ns) >= racy else stamp
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)
    return out


def reuse_of(index: Index, now: dict[str, Stamp | None], repo: Path) -> Reuse | None:
    """What of `index` a render of the tree as it is `now` may reuse; None: render it all
    (a path added or removed, a type changed, or a changed file discovery may read that no
    build read)."""
    if index.stamps.keys() != now.keys():
        return None
    root = os.path.join(str(repo), "")
    read: set[str] | None = None  # what the builds read: gathered only if a changed file asks

    def read_by_builds(rel: str) -> bool:
        nonlocal read
        if read is None:  # absolute paths, each build's as the probes ask them again
            read = set().union(*(r.files() for r in [*index.paths.values(), *index.flux.values()]))
        return root + rel in read

    stable: set[str] = set()
    for rel, stamp in now.items():
        before = index.stamps[rel]
        if stamp is not None and stamp == before:
            stable.add(root + rel)
            continue
        if before is not None and stamp is not None and (before[0] ^ stamp[0]) & 0o170000:
            return None  # a type changed (a file became a symlink)
        if stamp is not None and stat.S_ISDIR(stamp[0]):
            continue  # a directory's own stat moves when a file in it is saved
        name = rel.rsplit("/", 1)[-1]
        if name in _IGNORE_NAMES:
            return None  # ignore rules are no build's read file, yet decide what builds read
        if (
            name in _STRUCTURAL_NAMES or name.endswith(_STRUCTURAL_SUFFIXES)
        ) and not read_by_builds(rel):
            return None
    results = {n: r for n, r in index.snapshot.results.items() if r.target.kind == "path"}
    return Reuse(
        frozenset(stable), results, index.paths, index.flux, _documents(index), index.trace
    )


def _documents(index: Index) -> dict[str, tuple[tuple[Document, ...], Any]]:
    """Each remembered Flux build's documents, taken from the result that holds them while
    it is the result the build gave (its sha256 as recorded), with its kept part."""
    out: dict[str, tuple[tuple[Document, ...], Any]] = {}
    results = index.snapshot.results
    for digest, (name, sha, kept) in index.builds.items():
        result = results.get(name)
        if result is not None and result.ok and result.sha256 == sha:
            out[digest] = (result.documents, kept)
    return out


def unchanged(index: Index, now: dict[str, Stamp | None]) -> bool:
    """Whether the tree is as the index saw it (no racy entry on either side)."""
    return None not in now.values() and index.stamps == now


def teach(index: Index) -> None:
    """The run's scrub learns the Secret values of every file the remembered builds read
    (closure.learn_secrets), as a render does: an answer from the index scrubs what a
    render would."""
    for read in [*index.paths.values(), *index.flux.values()]:
        read.learn()


# -- on disk ---------------------------------------------------------------------------------


def load(cache: cache_mod.RenderCache, digest: str, repo: Path, label: str) -> Index | None:
    """The index stored under `digest`, or None when missing or not of our shape."""
    with fileformat.paused_gc():
        found = cache.get_packed(digest)
        if found is None:
            return None
        # shared (the cache keeps what it read): the token is read, the payload not changed
        token = found[0].get("token")  # written with the entry: not hashed again
        if type(token) is not str:
            return None
        payload = {k: v for k, v in found[0].items() if k != "token"}
        delta = cache.get_packed(_delta_key(digest, token))
        index: Index | None = None
        # a bad delta leaves the entry alone: the index of the tree as an earlier render saw it
        with contextlib.suppress(KeyError, TypeError, ValueError, IndexError, AttributeError):
            if delta is not None:
                # the delta holds the tree's stat and the reads whole: the entry's are not decoded
                entry = _from_payload(payload, found[1], repo, label, head=False)
                if entry is not None:
                    base = Base(digest, token, entry.snapshot.results)
                    index = _with_delta(entry, delta[0], delta[1], repo, label)
        if index is None:
            try:
                index = _from_payload(payload, found[1], repo, label)
            except (KeyError, TypeError, ValueError, IndexError, AttributeError):
                return None
            if index is None:
                return None
            base = Base(digest, token, index.snapshot.results)
        index = replace(index, builds=_builds_from(cache.get(builds_key(digest))), base=base)
    refsnap.long_lived()
    return index


def _token(
    stamps: Mapping[str, Stamp | None],
    results: Mapping[str, TargetResult],
    paths: Mapping[str, Read],
    flux: Mapping[str, Read],
) -> str:
    """What names a whole entry: the tree's stat it holds, each result's sha256 and
    whether it failed, and each build's key. A delta applies to the entry it was made
    against, never to another (a crash between two writes leaves a delta nothing names).
    Stored in the entry it names (`remember`), so a load does not hash it again."""
    parts = (
        sorted(stamps.items()),
        sorted((n, r.sha256, r.ok) for n, r in results.items()),
        sorted((n, r.digest) for n, r in paths.items()),
        sorted((k, r.digest) for k, r in flux.items()),
    )
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _delta_key(digest: str, token: str) -> str:
    return cache_mod.key(DELTA_KIND, digest, token)


def _with_delta(
    index: Index, delta: dict[str, Any], strings: list[str], repo: Path, label: str
) -> Index | None:
    """The entry `index` with a later render's delta applied (`remember`)."""
    if delta.keys() != _DELTA_KEYS:
        return None
    part = _from_payload({k: v for k, v in delta.items() if k != "removed"}, strings, repo, label)
    removed = delta["removed"]
    if part is None or type(removed) is not list or not {str}.issuperset(map(type, removed)):
        return None
    gone = set(removed)
    results = {n: r for n, r in index.snapshot.results.items() if n not in gone}
    results.update(part.snapshot.results)
    items = {n: item for n, item in index.items.items() if n not in gone}
    items.update(part.items)
    snapshot = replace(part.snapshot, results=dict(sorted(results.items())))
    return replace(part, snapshot=snapshot, items=items)


def builds_key(digest: str) -> str:
    """Where the Flux builds of the index stored under `digest` are kept (`Index.builds`)."""
    return cache_mod.key(BUILDS_KIND, digest)


def _builds_from(payload: dict[str, Any] | None) -> dict[str, tuple[str, str, Any]]:
    """`Index.builds` as stored; empty when missing or not of that shape (every build is
    then answered from its own entry, as without it)."""
    rows = payload.get("builds") if payload is not None else None
    if not isinstance(rows, list):
        return {}
    out: dict[str, tuple[str, str, Any]] = {}
    for row in rows:
        if not isinstance(row, list) or len(row) != 4:
            return {}
        digest, name, sha, kept = row
        if not all(isinstance(v, str) for v in (digest, name, sha)) or not isinstance(kept, dict):
            return {}
        out[digest] = (name, sha, kept)
    return out


def remember(
    cache: cache_mod.RenderCache,
    digest: str,
    stamps: dict[str, Stamp | None],
    snapshot: Snapshot,
    reads: Reads,
    repo: Path,
    previous: Index | None = None,
) -> Index | None:
    """Store the render of the tree whose stat was `stamps` and what its builds read;
    the index as stored (None when the render cannot be kept: refsnap's rule).

    When few results differ from the whole entry the index was read from (`Index.base`),
    only a delta is written beside that entry: the tree's stat, what the builds read and
    the results that differ (encoding the whole render again was most of this step's
    cost). Past `REBASE_SHARE` of the results (`REBASE_MIN` for a small render), the whole
    entry is written again. Both are packed entries (cache/fileformat.py): the documents'
    texts beside the JSON."""
    with reads.lock:
        paths, flux = dict(reads.paths), dict(reads.flux)
        kept, named, trace = dict(reads.kept), dict(reads.named), reads.trace
    warnings = tuple(redaction.known().scrub(w) for w in snapshot.warnings)
    head = {
        "stamps": [list(stamps), list(stamps.values())],
        "warnings": list(warnings),
        "paths": {n: _read_payload(r) for n, r in paths.items()},
        "flux": {k: _read_payload(r) for k, r in flux.items()},
        "trace": _trace_payload(trace),
    }
    known = previous.items if previous else None
    base = previous.base if previous is not None else None
    if base is not None and base.digest != digest:
        base = None  # another config's entry
    rows: dict[str, refsnap.Row] = {}
    items: dict[str, tuple[TargetResult, refsnap.Row]] = {}
    if base is not None:
        changed = {n: r for n, r in snapshot.results.items() if base.results.get(n) != r}
        removed = sorted(n for n in base.results if n not in snapshot.results)
        if len(changed) + len(removed) <= max(REBASE_MIN, len(base.results) // REBASE_SHARE):
            with fileformat.paused_gc():
                part = refsnap.snapshot_payload(
                    replace(snapshot, results=changed), repo, known, rows
                )
            if part is None:
                return None
            body, strings = part
            delta = {**head, "snapshot": body, "removed": removed}
            cache.put_packed(_delta_key(digest, base.token), delta, strings)
            items = {n: known[n] for n in snapshot.results if known and n in known}
        else:
            base = None
    token = ""
    if base is None:
        with fileformat.paused_gc():
            whole = refsnap.snapshot_payload(snapshot, repo, known, rows)
        if whole is None:
            return None
        body, strings = whole
        token = _token(stamps, snapshot.results, paths, flux)
        cache.put_packed(digest, {**head, "snapshot": body, "token": token}, strings)
    items.update((name, (snapshot.results[name], row)) for name, row in rows.items())
    builds = _builds(snapshot, flux, kept, named)
    if previous is None or previous.builds != builds:
        table = [[d, name, sha, part] for d, (name, sha, part) in sorted(builds.items())]
        cache.put(builds_key(digest), {"builds": table})
    held = replace(snapshot, warnings=warnings)
    index = Index(dict(stamps), held, paths, flux, warnings, items, builds, trace=trace)
    if base is None:  # written whole: later renders are deltas against it
        base = Base(digest, token, held.results)
    return replace(index, base=base)


def _builds(
    snapshot: Snapshot, flux: dict[str, Read], kept: dict[str, Any], named: dict[str, str]
) -> dict[str, tuple[str, str, Any]]:
    """`Index.builds` of a render: every recorded Flux build whose documents a result holds."""
    out: dict[str, tuple[str, str, Any]] = {}
    for read in flux.values():
        part, name = kept.get(read.digest), named.get(read.digest)
        result = snapshot.results.get(name) if name is not None else None
        if part is not None and result is not None and result.ok:
            out[read.digest] = (result.name, result.sha256, part)
    return out


_INDEX_KEYS = frozenset(["stamps", "snapshot", "warnings", "paths", "flux", "trace"])
_DELTA_KEYS = _INDEX_KEYS | {"removed"}


def _read_payload(read: Read) -> list[Any]:
    """A Read as the index stores it: its pairs flattened (checked at C speed when read)."""
    return [
        read.root,
        [part for pair in read.entries for part in pair],
        [part for pair in read.secrets for part in pair],
        read.digest,
    ]


def _trace_payload(trace: Trace | None) -> list[Any] | None:
    """A Trace as the index stores it: its start, the node names, their outcomes flat."""
    if trace is None:
        return None
    nodes = list(trace.nodes.items())
    return [trace.start, [n for n, _ in nodes], [part for _, o in nodes for part in o]]


def _trace_from(item: object) -> Trace | None:
    if item is None:
        return None
    if type(item) is not list or len(item) != 3:
        raise ValueError("not a trace")
    start, names, flat = item
    if type(start) is not str or type(names) is not list or type(flat) is not list:
        raise ValueError("not a trace")
    if len(flat) != 3 * len(names) or not {str}.issuperset(map(type, [*names, *flat])):
        raise ValueError("not a trace")
    outcomes = zip(flat[0::3], flat[1::3], flat[2::3], strict=True)
    return Trace(start, dict(zip(names, outcomes, strict=True)))


def _read_from(item: object) -> Read:
    if type(item) is not list or len(item) != 4:
        raise ValueError("not a read")
    root, entries, secrets, digest = item
    if type(root) is not str or type(digest) is not str:
        raise ValueError("not a read")
    return Read(root, _pairs(entries), _pairs(secrets), digest)


def _pairs(flat: object) -> tuple[tuple[str, str], ...]:
    if type(flat) is not list or len(flat) % 2 or not {str}.issuperset(map(type, flat)):
        raise ValueError("not pairs of strings")
    return tuple(zip(flat[0::2], flat[1::2], strict=True))


def _stamps(value: object) -> dict[str, Stamp | None]:
    if type(value) is not list or len(value) != 2:
        raise ValueError("not stamps")
    rels, stamps = value
    if type(rels) is not list or type(stamps) is not list or len(rels) != len(stamps):
        raise ValueError("not stamps")
    if not {str}.issuperset(map(type, rels)) or not {list, type(None)}.issuperset(
        map(type, stamps)
    ):
        raise ValueError("not stamps")
    known = [s for s in stamps if s is not None]
    if not all(len(s) == 5 for s in known) or not {int}.issuperset(
        map(type, itertools.chain.from_iterable(known))
    ):
        raise ValueError("not stamps")
    return dict(zip(rels, (None if s is None else tuple(s) for s in stamps), strict=True))


def _from_payload(
    payload: dict[str, Any], strings: list[str], repo: Path, label: str, head: bool = True
) -> Index | None:
    """The index a payload holds; without `head`, only its render (no stat, no reads:
    an entry whose delta replaces them)."""
    if payload.keys() != _INDEX_KEYS:
        return None
    stamps = _stamps(payload["stamps"]) if head else {}
    items: dict[str, tuple[TargetResult, refsnap.Row]] = {}
    found = refsnap.snapshot_from(payload["snapshot"], strings, repo, label, items)
    if found is None:
        return None
    warnings = payload["warnings"]
    if type(warnings) is not list or not {str}.issuperset(map(type, warnings)):
        return None
    snapshot = replace(found, warnings=tuple(warnings))
    paths, flux = payload["paths"], payload["flux"]
    if type(paths) is not dict or type(flux) is not dict:
        return None
    if not head:
        return Index(stamps, snapshot, {}, {}, snapshot.warnings, items)
    return Index(
        stamps,
        snapshot,
        {n: _read_from(r) for n, r in paths.items()},
        {k: _read_from(r) for k, r in flux.items()},
        snapshot.warnings,
        items,
        trace=_trace_from(payload["trace"]),
    )
