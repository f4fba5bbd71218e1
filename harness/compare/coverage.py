"""Blind spots: what a run did not judge, said out loud.

A diff that says `0 changed` is only as good as what it rendered. Two things escape it:
Kustomizations that were not rendered at all (their source is external, so harness skips
them; or the parent that declares them failed, so nobody saw them), and changed files that
no rendered target reads (an image bump in a directory reached only through a failed
root). Both are counted and listed, so a reviewer never reads "no change" where harness
simply did not look.

A file is covered when a rendered target reads it: it is in the input closure of a path or
Flux target that rendered (render/closure.py, the same walk the render cache keys on; for a
Flux target taken with the kustomization Flux generates, so files read only through
`spec.components` or the patches of those components count, as in compare/inputs.py; for a
build from an ExternalArtifact, the repo files its tree's copies came from, as the render
recorded them: `TargetResult.reads`), under
the directory of a Flux target without a kustomization file (Flux's generated
kustomization takes every manifest below it), or in the directory of a chart a `helm`
target rendered from the repo. Only files that can be manifests count: YAML and JSON, and
any file in a directory with a kustomization file (generator inputs); dot paths, the
goldens and harness.yaml never do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core import safefile, yamlload
from harness.core.model import Snapshot
from harness.flux.api import is_flux_kustomization
from harness.flux.includes import Includes, manifest_files
from harness.render.closure import EscapeError
from harness.render.discover import kustomization_file

if TYPE_CHECKING:  # inputs.py and clusters.py load only when a changed file or a failed Flux
    from harness.compare import inputs  # target asks (a diff of a tree that renders does not)

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
CONFIG_FILES = ("harness.yaml", "harness.yml")


@dataclass(frozen=True)
class BlindSpots:
    """What one run did not judge: skipped Kustomizations (target name -> why) and changed
    files no rendered target reads (repo-relative)."""

    skipped: Mapping[str, str]
    uncovered: tuple[str, ...] = ()
    # failed Flux target -> how many Flux Kustomizations its build would declare (unseen)
    under_failed: Mapping[str, int] = field(default_factory=dict)

    @property
    def skipped_sources(self) -> dict[str, int]:
        """`reason -> how many Kustomizations`, each reason once (one per source)."""
        out: dict[str, int] = {}
        for reason in self.skipped.values():
            out[reason] = out.get(reason, 0) + 1
        return dict(sorted(out.items()))

    def __bool__(self) -> bool:
        return bool(self.skipped or self.uncovered or self.under_failed)


def uncovered(
    repo: Path, snapshot: Snapshot, changed: Iterable[str], goldens: Path | None = None
) -> tuple[str, ...]:
    """The `changed` files (relative to `repo`, the tree `snapshot` was rendered from) that
    exist there, can be manifests and are read by no rendered target."""
    skip = _relative_dir(repo, goldens)
    left = {rel for rel in changed if _may_be_manifest(repo, rel, skip) and (repo / rel).is_file()}
    if not left:
        return ()
    from harness.compare import inputs

    with inputs.digester(repo) as dig:
        for files, directories in _covered(repo, snapshot, dig):
            left -= files
            left = {rel for rel in left if not any(_under(rel, d) for d in directories)}
            if not left:  # the usual edit: some target reads it, and the walk stops there
                break
    return tuple(sorted(left))


def _under(rel: str, directory: str) -> bool:
    return directory == "" or rel.startswith(directory + "/")


def _relative_dir(repo: Path, directory: Path | None) -> str | None:
    """`directory` relative to `repo` (the goldens), None when outside it or not given."""
    if directory is None:
        return None
    try:
        return directory.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return None


def under_failed(repo: Path, snapshot: Snapshot) -> dict[str, int]:
    """Failed Flux targets -> how many Flux Kustomizations they hide (`hidden`)."""
    return {name: len(keys) for name, keys in hidden(repo, snapshot).items()}


def hidden(repo: Path, snapshot: Snapshot) -> dict[str, tuple[str, ...]]:
    """Failed Flux targets -> the Flux Kustomizations (`namespace/name`) their build would
    have declared and no other target rendered (read from the files the build reaches,
    without kustomize): the Kustomizations a failed parent hides."""
    rendered = {
        (r.target.cluster, r.name.split("/", 1)[1])
        for r in snapshot.results.values()
        if r.target.kind == "flux"
    }
    root = Path(os.path.abspath(repo))
    includes = Includes()
    out: dict[str, tuple[str, ...]] = {}
    for name, result in sorted(snapshot.results.items()):
        target = result.target
        if target.kind != "flux" or result.ok:
            continue
        directory = Path(os.path.abspath(target.path))
        if not directory.is_relative_to(root) or directory == root:
            continue  # the whole repo is no evidence of what this one declares
        unseen = {
            key
            for key in _declared(manifest_files(includes.closure([directory])))
            if (target.cluster, key) not in rendered
        }
        if unseen:
            out[name] = tuple(sorted(unseen))
    return out


def _declared(files: Iterable[Path]) -> set[str]:
    """`namespace/name` of every Flux Kustomization the files hold."""
    from harness.flux.clusters import declares_flux_kustomization

    out: set[str] = set()
    for path in files:
        try:
            text = safefile.read_text(path)
        except (OSError, UnicodeDecodeError):
            continue
        if not declares_flux_kustomization(text):
            continue
        try:
            objects = yamlload.load_all(text)
        except yamlload.YAMLError:
            continue
        for obj in objects:
            if isinstance(obj, dict) and is_flux_kustomization(obj):
                meta = obj.get("metadata") or {}
                out.add(f"{meta.get('namespace') or 'flux-system'}/{meta.get('name')}")
    return out


def _may_be_manifest(repo: Path, rel: str, goldens: str | None) -> bool:
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts) or rel in CONFIG_FILES:
        return False
    if goldens is not None and (rel == goldens or rel.startswith(goldens + "/")):
        return False
    if rel.endswith(MANIFEST_SUFFIXES):
        return True
    return kustomization_file((repo / rel).parent) is not None


def _covered(
    repo: Path, snapshot: Snapshot, dig: inputs.Digester
) -> Iterator[tuple[set[str], list[str]]]:
    """Per rendered target, (files it reads, directories whose every file it reads), relative
    to the repo; lazily, so a caller stops once everything it asks about is covered. A Flux
    target reads what its generated kustomization reads (inputs.flux_closure: components,
    patches), beside its directory's own closure."""
    from harness.compare import inputs

    root = Path(os.path.abspath(repo))
    walker = dig.walker
    for result in snapshot.results.values():
        if not result.ok:
            continue
        target = result.target
        if target.kind == "helm":
            chart = _repo_chart(target.helm.source if target.helm else "")
            if chart is not None:
                yield set(), [chart]
            continue
        if result.reads:  # built from an ExternalArtifact: the repo files its copies are
            yield {os.path.relpath(p, root) for p in result.reads}, []
            continue
        directory = Path(os.path.abspath(target.path))
        try:
            rel = directory.relative_to(root).as_posix()
        except ValueError:
            continue  # a source outside this tree (a mapped checkout)
        if target.kind == "flux":
            built = inputs.flux_closure(root, snapshot, result, dig)
            if built is not None:
                yield {_repo_relative(root, built.root, f) for f in built.files()}, []
        if kustomization_file(directory) is None:
            yield set(), ["" if rel == "." else rel]
            continue
        try:
            closure = walker.closure(directory, root)
        except (EscapeError, OSError):
            continue
        yield set(closure.files()), []


def _repo_relative(repo: Path, root: Path, rel: str) -> str:
    """A closure file (relative to its source root) relative to the repo."""
    return os.path.relpath(os.path.join(root, rel), repo)


def _repo_chart(source: str) -> str | None:
    """`GitRepository/ns/name ./charts/app` -> `charts/app` (a chart in a git source's tree;
    the repo's own source is the usual case)."""
    kind, _, path = source.partition(" ")
    if not kind.startswith("GitRepository/") or not path.startswith("./"):
        return None
    return os.path.normpath(path).removeprefix("./") or None
