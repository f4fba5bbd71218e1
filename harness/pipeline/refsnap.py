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
from harness.core import redaction
from harness.core.config import Config
from harness.core.errors import GitError
from harness.core.model import DocId, RendererInfo, Snapshot, Target, TargetResult
from harness.pipeline import gitref
from harness.render.seam import documents_from_payload, documents_payload

KIND = "ref-snapshot"


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
    return cache.get(key.digest) is not None


def load(
    cache: cache_mod.RenderCache, key: RefKey, label: str
) -> tuple[Snapshot, dict[str, str]] | None:
    """The remembered render (targets under `key.root`) and its failed targets' digests."""
    payload = cache.get(key.digest)
    if payload is None:
        return None
    try:
        return _from_payload(payload, key.root, label)
    except (KeyError, TypeError, ValueError):
        return None


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
        cache.put(key.digest, {**body, "digests": dict(digests)})


def snapshot_payload(
    snapshot: Snapshot,
    repo: Path,
    known: Mapping[str, tuple[TargetResult, Any]] | None = None,
) -> dict[str, Any] | None:
    """A render of the tree at `repo` as an entry holds it (targets relative to `repo`);
    None when it is not a function of that tree (a helm target, a target outside it).
    `known`: results read back from an earlier payload with their stored items, which a
    result equal to one of them reuses (an error or note is scrubbed anew, never reused)."""
    if any(r.target.kind == "helm" or r.target.helm is not None for r in snapshot.results.values()):
        return None
    results = []
    for result in snapshot.results.values():
        target = result.target
        before = known.get(target.name) if known is not None else None
        if before is not None and not result.error and not result.notes and before[0] == result:
            results.append(before[1])
            continue
        try:
            path = target.path.relative_to(repo).as_posix()
        except ValueError:
            return None  # a target outside the checkout: not a function of the tree
        results.append(
            {
                "name": target.name,
                "kind": target.kind,
                "path": path,
                "cluster": target.cluster,
                "sha256": result.sha256,
                # a stored error holds no Secret value the run knows (core/redaction.py)
                "error": redaction.known().scrub(result.error) if result.error else result.error,
                "duplicates": [[d.group, d.kind, d.namespace, d.name] for d in result.duplicates],
                "notes": [redaction.known().scrub(n) for n in result.notes],
                "documents": documents_payload(result.documents),
            }
        )
    info = snapshot.renderer
    return {
        "renderer": [info.name, info.version, list(info.argv)],
        "results": results,
        "skipped": dict(snapshot.skipped),
    }


def _from_payload(
    payload: Mapping[str, Any], root: Path, label: str
) -> tuple[Snapshot, dict[str, str]] | None:
    found = snapshot_from(payload, root, label)
    if found is None:
        return None
    digests = {str(k): str(v) for k, v in dict(payload["digests"]).items()}
    return found, digests


def snapshot_from(
    payload: Mapping[str, Any],
    root: Path,
    label: str,
    items: dict[str, tuple[TargetResult, Any]] | None = None,
) -> Snapshot | None:
    """`snapshot_payload` read back, its targets under `root` (KeyError, TypeError or
    ValueError when the payload is not of that shape); `items` gets each result with the
    item it was read from (`snapshot_payload`'s `known`)."""
    name, version, argv = payload["renderer"]
    results: dict[str, TargetResult] = {}
    for item in payload["results"]:
        docs = documents_from_payload(item["documents"])
        if docs is None:
            return None
        path = root / item["path"] if item["path"] != "." else root
        target = Target(str(item["name"]), item["kind"], path, item["cluster"])
        results[target.name] = TargetResult(
            target,
            documents=docs,
            sha256=str(item["sha256"]),
            error=item["error"],
            duplicates=tuple(DocId(*d) for d in item["duplicates"]),
            notes=tuple(str(n) for n in item["notes"]),
        )
        if items is not None:
            items[target.name] = (results[target.name], item)
    skipped = {str(k): str(v) for k, v in dict(payload["skipped"]).items()}
    snapshot = Snapshot(
        renderer=RendererInfo(str(name), str(version), tuple(str(a) for a in argv)),
        results=results,
        label=label,
        skipped=skipped,
    )
    return snapshot
