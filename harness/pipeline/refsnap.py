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
import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.cache import store as cache_mod
from harness.core import parsed, redaction
from harness.core.config import Config
from harness.core.errors import GitError
from harness.core.model import DocId, Document, RendererInfo, Snapshot, Target, TargetResult
from harness.pipeline import gitref

KIND = "ref-snapshot-v2"  # v2: a marshal'd value, documents stored once (snapshot_payload)


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


def known(cache: cache_mod.RenderCache, key: RefKey) -> bool:
    """Whether the render is remembered (then no checkout of the ref is started)."""
    return cache.get_value(key.digest) is not None


def load(
    cache: cache_mod.RenderCache, key: RefKey, label: str
) -> tuple[Snapshot, dict[str, str]] | None:
    """The remembered render (targets under `key.root`) and its failed targets' digests."""
    payload = cache.get_value(key.digest)
    if type(payload) is not dict or payload.keys() != {"snapshot", "digests"}:
        return None
    try:
        found = snapshot_from(payload["snapshot"], key.root, label)
        digests = _str_dict(payload["digests"])
    except (KeyError, TypeError, ValueError):
        return None
    return (found, digests) if found is not None else None


def remember(
    cache: cache_mod.RenderCache,
    key: RefKey,
    snapshot: Snapshot,
    repo: Path,
    digests: Mapping[str, str],
) -> None:
    """Store a ref's render made from its checkout at `repo` (helm targets never are)."""
    body = snapshot_payload(snapshot, repo)
    if body is not None:
        cache.put_value(key.digest, {"snapshot": body, "digests": dict(digests)})


# A snapshot as an entry holds it (fileformat.encode_value: marshal'd builtin types), laid
# out for a fast read: every distinct document once, in "documents", as a row of
# _DOCUMENT_ROW strings (the last, its object as JSON, may be None: parsed.py), and every
# result a row of _RESULT_ROW fields whose last is the indexes of its documents there (the
# same document rendered by a path target and by the Flux builds of its clusters is
# stored, read and made into a Document once). Every field's type is checked on the way
# back: a value of another shape is no snapshot.
Row = tuple[Any, ...]
_SNAPSHOT_KEYS = frozenset(["renderer", "documents", "results", "skipped"])
_DOCUMENT_ROW = 8  # group, kind, namespace, name, apiVersion, text, sha256, object JSON
_RESULT_ROW = 9  # name, kind, path, cluster, sha256, error, duplicates, notes, documents
_KINDS = frozenset(["path", "flux", "helm"])


def snapshot_payload(
    snapshot: Snapshot,
    repo: Path,
    known: Mapping[str, tuple[TargetResult, Row]] | None = None,
) -> dict[str, Any] | None:
    """A render of the tree at `repo` as an entry holds it (targets relative to `repo`);
    None when it is not a function of that tree (a helm target, a target outside it).
    `known`: results read back from an earlier payload with their stored rows (documents
    in place of their indexes), which a result equal to one of them reuses (an error or
    note is scrubbed anew, never reused)."""
    if any(r.target.kind == "helm" or r.target.helm is not None for r in snapshot.results.values()):
        return None
    table: dict[Row, int] = {}
    results: list[Row] = []
    for result in snapshot.results.values():
        before = known.get(result.target.name) if known is not None else None
        if before is not None and not result.error and not result.notes and before[0] == result:
            row = before[1]
        else:
            made = _result_row(result, repo)
            if made is None:
                return None  # a target outside the checkout: not a function of the tree
            row = made
        indexes = tuple(table.setdefault(doc, len(table)) for doc in row[-1])
        results.append((*row[:-1], indexes))
    info = snapshot.renderer
    return {
        "renderer": (info.name, info.version, tuple(info.argv)),
        "documents": tuple(table),
        "results": tuple(results),
        "skipped": dict(snapshot.skipped),
    }


def result_rows(body: Mapping[str, Any]) -> dict[str, Row]:
    """Each result's row of a `snapshot_payload`, by name, as `known` takes it (its
    documents' rows in place of their indexes)."""
    documents = body["documents"]
    return {row[0]: (*row[:-1], tuple(documents[i] for i in row[-1])) for row in body["results"]}


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
        tuple(part for d in result.duplicates for part in (d.group, d.kind, d.namespace, d.name)),
        tuple(scrub(n) for n in result.notes),
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
    root: Path,
    label: str,
    items: dict[str, tuple[TargetResult, Row]] | None = None,
) -> Snapshot | None:
    """`snapshot_payload` read back, its targets under `root`; None (or ValueError) when
    the payload is not of that shape. `items` gets each result with its row as
    `snapshot_payload`'s `known` takes it."""
    if type(payload) is not dict or payload.keys() != _SNAPSHOT_KEYS:
        return None
    name, version, argv = _row(payload["renderer"], 3)
    renderer = RendererInfo(_str(name), _str(version), _strs(argv))
    rows = payload["documents"]
    if type(rows) is not tuple:
        return None
    documents = [_document(_row(row, _DOCUMENT_ROW)) for row in rows]
    for row in rows:  # only a whole, well-formed entry is believed
        if row[7] is not None:
            parsed.remember_json(row[5], row[7])
    results: dict[str, TargetResult] = {}
    stored = payload["results"]
    if type(stored) is not tuple:
        return None
    for row in stored:
        tname, kind, path, cluster, sha, error, dups, notes, indexes = _row(row, _RESULT_ROW)
        if kind not in _KINDS or (cluster is not None and type(cluster) is not str):
            return None
        if error is not None and type(error) is not str:
            return None
        flat = _strs(dups)
        if len(flat) % 4:
            return None
        if type(indexes) is not tuple or not {int}.issuperset(map(type, indexes)):
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
            notes=_strs(notes),
        )
        if items is not None:
            items[target.name] = (result, (*row[:-1], tuple(rows[i] for i in indexes)))
    return Snapshot(
        renderer=renderer, results=results, label=label, skipped=_str_dict(payload["skipped"])
    )


def _document(row: Row) -> Document:
    if not {str}.issuperset(map(type, row[:7])) or (row[7] is not None and type(row[7]) is not str):
        raise ValueError("not a document row")
    group, kind, namespace, name, api_version, text, sha, _obj = row
    return Document(DocId(group, kind, namespace, name), api_version, text, sha)


def _row(value: object, size: int) -> Row:
    if type(value) is not tuple or len(value) != size:
        raise ValueError(f"not a row of {size}")
    return value


def _str(value: object) -> str:
    if type(value) is not str:
        raise ValueError("not a string")
    return value


def _strs(value: object) -> tuple[str, ...]:
    if type(value) is not tuple or not {str}.issuperset(map(type, value)):
        raise ValueError("not a tuple of strings")
    return value


def _str_dict(value: object) -> dict[str, str]:
    if type(value) is not dict or not {str}.issuperset(map(type, [*value, *value.values()])):
        raise ValueError("not a dict of strings")
    return value
