"""Did a target's inputs change between the two sides of a diff? The one seam that decides
whether a failure on both sides is a *pre-existing* error (shown once, not judged) or one the
change may have caused or touched (an error, exit 2).

Today the answer comes from a digest of what the target can read, taken on each side while
that side's tree exists (a git ref's temporary checkout is gone once it is rendered):

- every file directly inside each directory of the target's static closure (its directory,
  and what its kustomization files pull in through resources/bases/components, or Flux's
  directory scan where there is no kustomization file), and every file a kustomization file
  names (patches, generator inputs, crds, configurations, ...), keyed by repo-relative path;
- for a Flux target, the Kustomization object that declares it (owner labels aside) and the
  ConfigMaps/Secrets its `postBuild.substituteFrom` names, as rendered on that side.

Helm targets are never digested: a chart comes from a repository that may answer differently
on every run. It is an over-approximation: anything that could change the build counts, so an
unchanged digest means the same inputs. Only failed targets are digested (nothing else is asked).
When the render cache's input-closure digest exists, `target_digest` is what to replace.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from harness import yamlload
from harness.flux.includes import Includes
from harness.model import Snapshot, TargetResult

FLUX_KS_GROUP = "kustomize.toolkit.fluxcd.io"
OWNER_LABELS = (f"{FLUX_KS_GROUP}/name:", f"{FLUX_KS_GROUP}/namespace:")

Digests = Mapping[str, str]  # target name -> input digest, for the failed targets of a side


def side_digests(repo: Path, snapshot: Snapshot) -> dict[str, str]:
    """Digests of the failed targets of one side, read from `repo` (that side's tree)."""
    includes = Includes()
    out: dict[str, str] = {}
    for name, result in snapshot.results.items():
        if not result.ok:
            digest = target_digest(repo, snapshot, result, includes)
            if digest is not None:
                out[name] = digest
    return out


def inputs_unchanged(name: str, base: Digests, head: Digests) -> bool:
    """Whether target `name` read the same inputs on both sides (unknown counts as changed)."""
    before, after = base.get(name), head.get(name)
    return before is not None and before == after


def same_inputs(base: Digests, head: Digests) -> frozenset[str]:
    """The targets judged unchanged by `inputs_unchanged`."""
    return frozenset(n for n in set(base) & set(head) if inputs_unchanged(n, base, head))


def target_digest(
    repo: Path, snapshot: Snapshot, result: TargetResult, includes: Includes | None = None
) -> str | None:
    """sha256 over the target's inputs; None when its directory cannot be read, and for helm
    targets, whose inputs include remote charts (a chart repository failing on both sides is
    an error of this run, not a pre-existing one)."""
    if result.target.kind == "helm":
        return None
    includes = includes or Includes()
    root = Path(os.path.normpath(result.target.path))
    if not root.is_dir():
        return None
    h = hashlib.sha256()
    h.update(f"{result.target.kind}\0".encode())
    for path in sorted(_files(includes, root)):
        h.update(_relative(repo, path).encode() + b"\0")
        try:
            h.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError:
            h.update(b"<unreadable>")
    if result.target.kind == "flux":
        h.update(b"\0ks\0" + _declaration(snapshot, result).encode())
    return h.hexdigest()


def _files(includes: Includes, root: Path) -> set[Path]:
    files: set[Path] = set()
    for directory in includes.closure([root]):
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            files.add(directory)  # a missing directory is an input too (its absence)
            continue
        for entry in entries:
            if entry.is_file():
                path = Path(entry.path)
                files.add(path)
                if entry.name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
                    files.update(p for p in includes.file_refs(path) if not p.is_dir())
    return files


def _relative(repo: Path, path: Path) -> str:
    try:
        return path.relative_to(repo).as_posix()
    except ValueError:
        return path.as_posix()


def _declaration(snapshot: Snapshot, result: TargetResult) -> str:
    """The rendered Kustomization object behind a Flux target and its substitution sources,
    owner labels dropped (a move between declaring Kustomizations changes nothing)."""
    parts = result.name.rsplit("/", 2)
    if len(parts) != 3:
        return ""
    cluster, namespace, name = parts
    docs = [
        doc
        for other in snapshot.results.values()
        if other.target.kind == "flux" and other.target.cluster == cluster and other.ok
        for doc in other.documents
    ]
    texts: list[str] = []
    sources: set[tuple[str, str]] = set()
    for doc in docs:
        if (
            doc.id.group == FLUX_KS_GROUP
            and doc.id.kind == "Kustomization"
            and doc.id.name == name
            and (doc.id.namespace or "flux-system") == namespace
        ):
            texts.append(_without_owner_labels(doc.text))
            sources |= _substitute_from(doc.text)
    for doc in docs:
        key = (doc.id.kind, doc.id.name)
        if doc.id.group == "" and key in sources and doc.id.namespace == namespace:
            texts.append(_without_owner_labels(doc.text))
    return "\n---\n".join(sorted(texts))


def _without_owner_labels(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not ln.strip().startswith(OWNER_LABELS))


def _substitute_from(text: str) -> set[tuple[str, str]]:
    try:
        obj = yamlload.load(text)
    except yamlload.YAMLError:
        return set()
    spec = obj.get("spec") if isinstance(obj, dict) else None
    post = spec.get("postBuild") if isinstance(spec, dict) else None
    refs = post.get("substituteFrom") if isinstance(post, dict) else None
    return {
        (str(r.get("kind")), str(r.get("name")))
        for r in (refs if isinstance(refs, list) else [])
        if isinstance(r, dict)
    }
