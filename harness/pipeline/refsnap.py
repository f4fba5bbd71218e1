"""The whole render of a git commit, remembered: a diff's base side without a checkout.

A commit's tree never changes, so the render of a ref is a function of its tree (every path,
mode and blob id, as `git ls-tree -r` lists them) and of
what harness renders it with: the config (minus where the checkout happens to live), the
render options, the renderer's identity and version, and harness's own code (every cache
key holds that). A `diff` whose base was rendered before (by the last local run, or by the
CI run of the base commit whose cache the PR run restored) then reads one entry instead of
exporting the commit, walking it and looking up ~500 entries: the base side of a one-file
diff on a 250-Kustomization repo goes from seconds to tens of milliseconds.

Only renders that are a function of the tree are remembered, the rule every cache entry
follows: no target read a remote input (a remote kustomize resource, a Helm chart from a
repository: helm targets are never remembered here), the checkout is byte-for-byte the tree
(`gitref.checkout_is_tree`: no filter or CRLF conversion, the rule of `gitref.blob_index`),
no source is mapped to a directory outside the repo, and no `--shard`. The entry holds the
snapshot (documents already redacted, as in every entry) and the input digests of its failed
targets (compare/inputs.py), which need the tree.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.cache import fileformat
from harness.cache import store as cache_mod
from harness.core import parsed, redaction
from harness.core.config import Config
from harness.core.errors import GitError
from harness.core.model import DocId, Document, RendererInfo, Snapshot, Target, TargetResult
from harness.pipeline import gitref

KIND = "ref-snapshot-v2"  # v2: a packed entry, documents stored once (snapshot_payload)


@dataclasses.dataclass(frozen=True)
class RefKey:
    """Where a ref's render is remembered, and the path its targets are shown under."""

    digest: str
    sha: str
    root: Path  # a stand-in for the checkout's `--repo` directory (it is never created)


def ref_key(
    cfg: Config,
    git_root: Path,
    sub: Path,
    sha: str,
    *,
    renderer_identity: str,
    options: Mapping[str, object],
) -> RefKey | None:
    """The key of `sha`'s render with these settings, or None when it cannot be remembered."""
    if not config_in_tree(cfg):
        return None
    try:
        # every path, mode and blob id of the commit: what its tree id stands for
        listing = gitref.git(
            git_root, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", sha
        )
        if not gitref.checkout_is_tree(git_root, listing):
            return None
    except GitError:
        return None
    digest = cache_mod.key(
        KIND,
        hashlib.sha256(listing.encode("utf-8", "surrogateescape")).hexdigest(),
        sub.as_posix(),
        config_part(cfg),
        renderer_identity,
        repr(sorted(options.items())),
    )
    stand_in = Path(tempfile.gettempdir()) / f"{gitref.TEMP_PREFIX}{sha[:12]}" / "tree" / sub
    return RefKey(digest, sha, Path(os.path.normpath(stand_in)))


def config_in_tree(cfg: Config) -> bool:
    """Every mapped source directory lies inside the repo (so inside the commit's tree)."""
    mapped = [*cfg.sources.values()]
    for decl in cfg.outside_git.values():
        mapped += [d for d in decl.sources.values() if d is not None]
    root = os.path.normpath(cfg.repo)
    for directory in mapped:
        where = os.path.normpath(os.path.join(root, directory))
        if where != root and not where.startswith(root.rstrip("/") + "/"):
            return False
    return True


def config_part(cfg: Config) -> str:
    """The config as it decides a render: not where the repo, goldens or file live."""
    neutral = dataclasses.replace(
        cfg, repo=Path("."), goldens=Path("."), source_file=None, jobs=0, timeout=0.0
    )
    return repr(neutral)


def stored(cache: cache_mod.RenderCache, key: RefKey) -> bool:
    """Whether the render may be remembered, without reading it: in memory, or an entry
    of that name in the store (`load` still checks the whole of it, and may refuse it)."""
    return cache.has_packed(key.digest)


def known(cache: cache_mod.RenderCache, key: RefKey) -> bool:
    """Whether the render is remembered (then no checkout of the ref is started)."""
    return cache.get_packed(key.digest) is not None


def load(
    cache: cache_mod.RenderCache, key: RefKey, label: str
) -> tuple[Snapshot, dict[str, str]] | None:
    """The remembered render (targets under `key.root`) and its failed targets' digests."""
    with fileformat.paused_gc():
        found = cache.get_packed(key.digest)
        if found is None:
            return None
        payload, strings = found
        if payload.keys() != {"snapshot", "digests"}:
            return None
        try:
            snapshot = snapshot_from(payload["snapshot"], strings, key.root, label)
            digests = _str_dict(payload["digests"])
        except (KeyError, TypeError, ValueError, IndexError):
            return None
    if snapshot is None:
        return None
    long_lived()
    return snapshot, digests


def long_lived() -> None:
    """A whole render just decoded (~100k objects) lives as long as the run: taken out of
    the cyclic collector's generations (`gc.freeze`), so the collections that follow do not
    traverse it (right after a load, a full one cost ~45 ms of a one-file diff's head).
    Reference counting still frees what is dropped; only a cycle among them would stay,
    and documents, results and snapshots hold none."""
    gc.freeze()


def remember(
    cache: cache_mod.RenderCache,
    key: RefKey,
    snapshot: Snapshot,
    repo: Path,
    digests: Mapping[str, str],
) -> None:
    """Store a ref's render made from its checkout at `repo` (helm targets never are)."""
    packed = snapshot_payload(snapshot, repo)
    if packed is not None:
        body, strings = packed
        cache.put_packed(key.digest, {"snapshot": body, "digests": dict(digests)}, strings)


# A snapshot as a packed entry holds it (cache/fileformat.py: a JSON payload beside a table
# of strings), laid out for a fast read: every distinct document once, in "documents", as a
# row of its identity, apiVersion and sha256 and the indexes of its text and of its object
# as JSON (-1: none, parsed.py) in the strings, which JSON never escapes; every result a
# row of _RESULT_ROW fields, the last the indexes of its documents (the same document
# rendered by a path target and by the Flux builds of its clusters is stored, read and made
# into a Document once). Every field's type is checked on the way back: a payload of
# another shape is no snapshot.
Row = tuple[Any, ...]  # a result as `known` takes it: its documents' _DocRow in place
_DocRow = tuple[str, str, str, str, str, str, str, str | None]  # id, apiVersion, text, sha, JSON
_SNAPSHOT_KEYS = frozenset(["renderer", "documents", "results", "skipped"])
_RESULT_ROW = 9  # name, kind, path, cluster, sha256, error, duplicates, notes, documents
_KINDS = frozenset(["path", "flux", "helm"])


def snapshot_payload(
    snapshot: Snapshot,
    repo: Path,
    known: Mapping[str, tuple[TargetResult, Row]] | None = None,
    rows: dict[str, Row] | None = None,
) -> tuple[dict[str, Any], list[str]] | None:
    """A render of the tree at `repo` as an entry holds it (targets relative to `repo`):
    the payload and its strings; None when it is not a function of that tree (a helm
    target, a target outside it). `known`: results read back from an earlier payload with
    their rows, which a result equal to one of them reuses (an error or note is scrubbed
    anew, never reused); `rows` gets each result's row as `known` takes it."""
    if any(r.target.kind == "helm" or r.target.helm is not None for r in snapshot.results.values()):
        return None
    table: dict[_DocRow, int] = {}
    results: list[list[Any]] = []
    for result in snapshot.results.values():
        before = known.get(result.target.name) if known is not None else None
        if before is not None and not result.error and not result.notes and before[0] == result:
            row = before[1]
        else:
            made = _result_row(result, repo)
            if made is None:
                return None  # a target outside the checkout: not a function of the tree
            row = made
        if rows is not None:
            rows[result.target.name] = row
        results.append([*row[:-1], [table.setdefault(doc, len(table)) for doc in row[-1]]])
    strings: list[str] = []
    documents: list[list[Any]] = []
    for group, kind, namespace, name, api_version, text, sha, obj in table:
        at = len(strings)
        strings += [text] if obj is None else [text, obj]
        json_at = at + 1 if obj is not None else -1
        documents.append([group, kind, namespace, name, api_version, sha, at, json_at])
    info = snapshot.renderer
    body = {
        "renderer": [info.name, info.version, list(info.argv)],
        "documents": documents,
        "results": results,
        "skipped": dict(snapshot.skipped),
    }
    return body, strings


def _result_row(result: TargetResult, repo: Path) -> Row | None:
    target = result.target
    try:
        path = target.path.relative_to(repo).as_posix()
    except ValueError:
        return None
    scrub = redaction.known().scrub
    return (
        target.name,
        target.kind,
        path,
        target.cluster,
        result.sha256,
        # a stored error holds no Secret value the run knows (core/redaction.py)
        scrub(result.error) if result.error else result.error,
        [part for d in result.duplicates for part in (d.group, d.kind, d.namespace, d.name)],
        [scrub(n) for n in result.notes],
        tuple(
            (
                d.id.group,
                d.id.kind,
                d.id.namespace,
                d.id.name,
                d.api_version,
                d.text,
                d.sha256,
                parsed.stored(d.text),
            )
            for d in result.documents
        ),
    )


def snapshot_from(
    payload: object,
    strings: list[str],
    root: Path,
    label: str,
    items: dict[str, tuple[TargetResult, Row]] | None = None,
) -> Snapshot | None:
    """`snapshot_payload` read back, its targets under `root`; None (or ValueError,
    IndexError) when the payload is not of that shape. `items` gets each result with its
    row as `snapshot_payload`'s `known` takes it."""
    if type(payload) is not dict or payload.keys() != _SNAPSHOT_KEYS:
        return None
    name, version, argv = _row(payload["renderer"], 3)
    renderer = RendererInfo(_str(name), _str(version), tuple(_strs(argv)))
    rows = [_document_row(row, strings) for row in _list(payload["documents"])]
    documents = [Document(DocId(*row[:4]), row[4], row[5], row[6]) for row in rows]
    for row in rows:  # only a whole, well-formed entry is believed
        if row[7] is not None:
            parsed.remember_json(row[5], row[7])
    results: dict[str, TargetResult] = {}
    for row in _list(payload["results"]):
        tname, kind, path, cluster, sha, error, dups, notes, indexes = _row(row, _RESULT_ROW)
        if kind not in _KINDS or (cluster is not None and type(cluster) is not str):
            return None
        if error is not None and type(error) is not str:
            return None
        flat = _strs(dups)
        if len(flat) % 4 or not {int}.issuperset(map(type, _list(indexes))):
            return None
        if indexes and min(indexes) < 0:
            return None
        docs = tuple(documents[i] for i in indexes)  # IndexError: not of this shape
        where = root / _str(path) if path != "." else root
        target = Target(_str(tname), kind, where, cluster)
        results[target.name] = result = TargetResult(
            target,
            documents=docs,
            sha256=_str(sha),
            error=error,
            duplicates=tuple(DocId(*flat[i : i + 4]) for i in range(0, len(flat), 4)),
            notes=tuple(_strs(notes)),
        )
        if items is not None:
            items[target.name] = (result, (*row[:-1], tuple(rows[i] for i in indexes)))
    return Snapshot(
        renderer=renderer, results=results, label=label, skipped=_str_dict(payload["skipped"])
    )


def _document_row(row: object, strings: list[str]) -> _DocRow:
    """A stored document's row with its text and object JSON from the strings."""
    group, kind, namespace, name, api_version, sha, text, obj = _row(row, 8)
    if not {str}.issuperset(map(type, (group, kind, namespace, name, api_version, sha))):
        raise ValueError("not a document row")
    if type(text) is not int or type(obj) is not int or text < 0 or obj < -1:
        raise ValueError("not a document row")
    return (
        group,
        kind,
        namespace,
        name,
        api_version,
        strings[text],
        sha,
        strings[obj] if obj >= 0 else None,
    )


def _list(value: object) -> list[Any]:
    if type(value) is not list:
        raise ValueError("not a list")
    return value


def _row(value: object, size: int) -> list[Any]:
    if type(value) is not list or len(value) != size:
        raise ValueError(f"not a row of {size}")
    return value


def _str(value: object) -> str:
    if type(value) is not str:
        raise ValueError("not a string")
    return value


def _strs(value: object) -> list[str]:
    if type(value) is not list or not {str}.issuperset(map(type, value)):
        raise ValueError("not a list of strings")
    return value


def _str_dict(value: object) -> dict[str, str]:
    if type(value) is not dict or not {str}.issuperset(map(type, [*value, *value.values()])):
        raise ValueError("not a dict of strings")
    return value
