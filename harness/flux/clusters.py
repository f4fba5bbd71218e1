"""Cluster entry directories and their names.

A cluster is the directory its root Kustomization builds. harness looks for evidence of
a bootstrap first, from the files alone:

1. `<dir>/flux-system/gotk-sync.yaml` or `gotk-components.yaml` (what `flux bootstrap
   --path=<dir>` commits; placeholders count): the cluster is `<dir>`, or the directory
   the file's own root Kustomization points at;
2. a FluxInstance's `spec.sync` (flux-operator; a manifest, or the `flux-instance` chart's
   values in a HelmRelease or a values file): the cluster is `sync.path` under the
   source's root (operator.py), and its root Kustomization comes from the sync;
3. only when neither exists: a Flux Kustomization that builds the directory it is declared
   in (a self-managing root such as `flux-cluster` -> `./cluster/flux`), unless another
   cluster builds that directory through a Kustomization (`tenants/staging`).

Without any evidence, the directories are guessed: directories with a kustomization file
whose static closure reaches a file declaring a Flux Kustomization, plus plain directories
that directly hold one, minus those inside another's closure; targets.py then drops a
guess whose render holds no Flux Kustomization, one whose Kustomizations all carry an
unresolved `${...}` in their names (a template), and one another guess reaches through a
Kustomization `spec.path`. A guess is reported once, with the `clusters:` line to pin.
A directory whose path holds `${` is never a cluster.

The `clusters:` config key replaces all of this with an explicit list (a FluxInstance's
sync still supplies the root Kustomization of a listed directory).

Naming: a cluster is named by its directory's basename (`clusters/dev` -> `dev`), or when
that is a generic name (`flux`, `flux-system`, `clusters`, ...: GENERIC_NAMES) by the
nearest ancestor's that is not (`kube/clusters/home/flux` -> `home`; the basename still
when all are generic, `cluster/flux` -> `flux`); when two clusters share a name, each of
those is named by its repo-relative path instead (`east/prod`, `west/prod`). The repo
root itself is named after the repo directory.

A self-managing root counts only when its `spec.path` names a directory: with an OCI or
Bucket source, `path: ./` (an upstream artifact such as flux-manifests, built whole)
matches every ancestor of its file and so says nothing about where a cluster is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import run, safefile, yamlload
from harness.core.config import Config
from harness.core.errors import ConfigError
from harness.flux import operator
from harness.flux.api import (
    KUSTOMIZE_GROUP,
    SOURCE_KINDS,
    is_flux_kustomization,
    secure_join,
)
from harness.flux.includes import MANIFEST_SUFFIXES, Includes
from harness.render.discover import is_component, kustomization_file, kustomization_in, walk

_KIND_LINE = re.compile(r"^\s*kind:\s*['\"]?Kustomization['\"]?\s*(#.*)?$", re.MULTILINE)


GOTK_FILES = ("gotk-sync.yaml", "gotk-components.yaml")
BOOTSTRAP_DIR = "flux-system"
PIN_SHOWN = 8  # directories a `clusters:` suggestion names before "..."


@dataclass(frozen=True)
class Cluster:
    name: str
    path: Path


@dataclass(frozen=True)
class Entry:
    """A cluster directory and what says it is one.

    `sync` is the FluxInstance sync its root comes from; `source_root` the directory its
    root's source holds (the repo, or the directory an OCI artifact was pushed from);
    `droppable` entries (guesses, self-managing roots) give way to a cluster that builds
    them.
    """

    path: Path
    evidence: str
    sync: operator.Sync | None = None
    source_root: Path | None = None
    droppable: bool = False


@dataclass(frozen=True)
class Detection:
    """The entries found, whether they are guesses, and what could not be used."""

    entries: tuple[Entry, ...]
    guessed: bool = False
    problems: tuple[str, ...] = ()

    def entry(self, path: Path) -> Entry | None:
        for entry in self.entries:
            if entry.path == path:
                return entry
        return None


# "K": declares a Flux Kustomization, "S": declares a FluxInstance sync, "-": neither
_SCAN_FACT = "flux-scan-2"


@dataclass
class _Scan:
    """What one walk of the repo found."""

    with_kfile: list[Path]
    declaring: dict[Path, list[Path]]  # directory -> files declaring a Flux Kustomization
    gotk: list[Path]  # flux-system directories holding gotk files
    syncs: list[operator.Sync]


def declares_flux_kustomization(text: str) -> bool:
    """Cheap text test; the render decides for real."""
    return f"{KUSTOMIZE_GROUP}/" in text and _KIND_LINE.search(text) is not None


def configured(config: Config) -> list[Path]:
    """The `clusters:` config entries as absolute directories."""
    out = []
    for entry in config.clusters:
        path = Path(os.path.normpath(config.repo / entry))
        if not path.is_dir():
            where = config.source_file or "config"
            raise ConfigError(f"{where}: clusters: {entry}: not a directory")
        out.append(path)
    return sorted(dict.fromkeys(out))


def detect(config: Config, incl: Includes) -> Detection:
    """Cluster directories from bootstrap evidence, else guessed (see the module doc)."""
    scan = _scan(config)
    repo = config.repo
    problems: list[str] = []
    found: dict[Path, Entry] = {}
    for sync in sorted(scan.syncs, key=lambda s: (str(s.file), s.path)):
        root = operator.source_root(sync, repo)
        where = operator.relative(sync.file, repo)
        if root is None:
            problems.append(
                f"{sync.shape} in {where} syncs {sync.kind} path {sync.path!r}, which is no "
                "directory of this repo: not a cluster here"
            )
            continue
        path = secure_join(root, sync.path)
        if "${" in str(path) or path in found:
            continue
        evidence = f"{sync.shape} in {where} (spec.sync {sync.kind}, path {sync.path})"
        found[path] = Entry(path, evidence, sync, root)
    for flux_system in scan.gotk:
        path = _gotk_target(flux_system, repo) or flux_system.parent
        if "${" not in str(path) and path not in found:
            files = [f for f in GOTK_FILES if (flux_system / f).is_file()]
            rel = operator.relative(flux_system / files[0], repo)
            found[path] = Entry(path, f"{rel} (flux bootstrap)", None, repo)
    if not found:
        for entry in _self_roots(scan, config, incl):
            found.setdefault(entry.path, entry)
    if found:
        return Detection(tuple(found[p] for p in sorted(found)), False, tuple(problems))
    guesses = _guess(scan, incl)
    entries = tuple(
        Entry(p, "guessed: holds Flux Kustomizations", None, None, True)
        for p in guesses
        if "${" not in str(p)
    )
    return Detection(entries, True, tuple(problems))


def candidates(config: Config, incl: Includes) -> list[Path]:
    """Guessed cluster directories (no evidence considered), sorted."""
    return _guess(_scan(config), incl)


def _scan(config: Config) -> _Scan:
    scan = _Scan([], {}, [], [])
    for dirpath, _dirnames, filenames in walk(config.repo, [config.goldens]):
        here = Path(dirpath)
        kfile = kustomization_in(here, filenames)
        if kfile is not None and not is_component(kfile):
            scan.with_kfile.append(here)
        if here.name == BOOTSTRAP_DIR and any(f in filenames for f in GOTK_FILES):
            scan.gotk.append(here)
        base = str(here)
        for name in filenames:
            if not name.endswith(MANIFEST_SUFFIXES):
                continue
            # a string until the file matters: this runs for every manifest, every run
            found = _manifest(os.path.join(base, name), config.repo)
            if found is None:
                continue
            declares, syncs = found
            if declares:
                scan.declaring.setdefault(here, []).append(here / name)
            scan.syncs.extend(syncs)
    return scan


def _manifest(path: str, repo: Path) -> tuple[bool, list[operator.Sync]] | None:
    """(whether the file declares a Flux Kustomization, the FluxInstance syncs it
    declares); None when it cannot be read. What a read found is remembered by the file's
    stat (core/filefacts.py): a scan of an unchanged tree reads only the files that declare
    a sync (the others were read whole once, so none is refused now)."""
    files = run.files()
    at, fact = files.get(path, _SCAN_FACT)
    if fact is not None and "S" not in fact:
        return "K" in fact, []
    text = _read(Path(path), repo)
    if text is None:
        return None
    # "S" only where a sync is declared: a file that merely says "sync" is not read again
    declares = declares_flux_kustomization(text)
    syncs = operator.file_syncs(Path(path), text) if "sync" in text else []
    files.put(path, _SCAN_FACT, at, ("K" if declares else "") + ("S" if syncs else "") or "-")
    return declares, syncs


def _guess(scan: _Scan, incl: Includes) -> list[Path]:
    declaring = set(scan.declaring)
    reaching = _reaching(scan.with_kfile, declaring, incl)
    found = [d for d in scan.with_kfile if d in reaching]
    found += [d for d in declaring if kustomization_file(d) is None]
    found = sorted(set(found))
    closures = {d: incl.closure([d]) for d in found}
    return [d for d in found if not any(d in closures[o] for o in found if o != d)]


def _gotk_target(flux_system: Path, repo: Path) -> Path | None:
    """The directory a real gotk-sync.yaml's root Kustomization builds (None for a
    placeholder, or a path that is not a directory)."""
    text = _read(flux_system / "gotk-sync.yaml", repo)
    for doc in _docs(text or ""):
        if not is_flux_kustomization(doc):
            continue
        spec = doc.get("spec")
        path = spec.get("path") if isinstance(spec, dict) else None
        if isinstance(path, str) and "${" not in path:
            target = secure_join(repo, path)
            if target.is_dir():
                return target
    return None


def _self_roots(scan: _Scan, config: Config, incl: Includes) -> list[Entry]:
    """Flux Kustomizations that build the directory declaring them: self-managing roots.

    Not one whose source harness.yaml maps (another repo's), nor one building the repo
    root under another name than flux-system (the repo root reaches every file)."""
    repo = config.repo
    mapped = set(config.sources)
    for decl in config.outside_git.values():
        mapped.update(decl.sources)
    out: list[Entry] = []
    for files in scan.declaring.values():
        for file in files:
            for doc in _docs(_read(file, repo) or ""):
                entry = _self_root(doc, file, repo, mapped, incl)
                if entry is not None:
                    out.append(entry)
    return sorted(out, key=lambda e: e.path)


def _self_root(
    doc: dict[str, Any], file: Path, repo: Path, mapped: set[str], incl: Includes
) -> Entry | None:
    if not is_flux_kustomization(doc) or not isinstance(doc.get("spec"), dict):
        return None
    spec = doc["spec"]
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    path, source = spec.get("path"), spec.get("sourceRef")
    if not isinstance(path, str) or "${" in path or not isinstance(source, dict):
        return None
    kind, name = source.get("kind"), str(source.get("name") or "")
    namespace = str(source.get("namespace") or meta.get("namespace") or "default")
    if kind not in SOURCE_KINDS or mapped & {
        f"{kind}/{namespace}/{name}",
        f"{namespace}/{name}",
        name,
    }:
        return None
    if kind != "GitRepository" and not _names_a_directory(path):
        # an artifact built whole (`path: ./`, such as the upstream flux-manifests a
        # bootstrap file installs Flux from) names no directory: every ancestor of the
        # file would match, so it is no evidence of where a cluster is
        return None
    roots = [repo] if kind == "GitRepository" else _ancestors(file.parent, repo)
    for root in roots:
        target = secure_join(root, path)
        if target == repo and meta.get("name") != BOOTSTRAP_DIR:
            continue
        if not target.is_dir() or not file.is_relative_to(target):
            continue
        if file.parent in incl.closure([target]):
            rel = operator.relative(file, repo)
            evidence = f"Kustomization {meta.get('name')} in {rel} builds its own directory"
            return Entry(target, evidence, None, root, True)
    return None


def _names_a_directory(path: str) -> bool:
    return any(p not in ("", ".") for p in path.replace("\\", "/").split("/"))


def _ancestors(directory: Path, repo: Path) -> list[Path]:
    chain = [directory, *directory.parents]
    return [d for d in reversed(chain) if d == repo or d.is_relative_to(repo)]


def _read(path: Path, root: Path) -> str | None:
    """A scanned file's text; None when it cannot be read (safefile: a device, a FIFO or a
    file over the cap is refused, and the run warns about it)."""
    try:
        return safefile.read_text(path, root=root)
    except (OSError, UnicodeDecodeError):
        return None


def _docs(text: str) -> list[dict[str, Any]]:
    try:
        return [d for d in yamlload.load_all(text) if isinstance(d, dict)]
    except yamlload.YAMLError:
        return []


def pin_line(paths: Iterable[str]) -> str:
    """The `clusters:` line that pins these directories: `clusters: [a, b]`, the first
    PIN_SHOWN of them and then how many more there are (outside the YAML)."""
    items = sorted(paths)
    line = f"`clusters: [{', '.join(items[:PIN_SHOWN])}]`"
    return line + (f" (+{len(items) - PIN_SHOWN} more)" if len(items) > PIN_SHOWN else "")


def _reaching(starts: Iterable[Path], targets: set[Path], incl: Includes) -> set[Path]:
    """The directories reachable from `starts` whose closure meets `targets`.

    One walk of the include graph and one backwards search from the targets, instead of
    a closure per start: linear in the graph, where a closure each is quadratic on repos
    with hundreds of kustomization directories.
    """
    seen = incl.closure(starts)
    callers: dict[Path, list[Path]] = {}
    for here in seen:
        for ref in incl.refs(here):
            callers.setdefault(ref, []).append(here)
    reaching: set[Path] = set()
    queue = [t for t in targets if t in seen]
    while queue:
        here = queue.pop()
        if here in reaching:
            continue
        reaching.add(here)
        queue.extend(c for c in callers.get(here, ()) if c not in reaching)
    return reaching


def keep(candidates_: Iterable[Path], reaches: dict[Path, set[Path]]) -> list[Path]:
    """Step 3: drop a candidate another one reaches, unless they reach each other.

    Of candidates that reach one another, the first by path is kept.
    """
    pool = sorted(candidates_)
    kept = []
    for c in pool:
        reached_by = [o for o in pool if o != c and c in reaches.get(o, set())]
        if all(o in reaches.get(c, set()) and c < o for o in reached_by):
            kept.append(c)
    return kept


# Directory names that say "Flux lives here", not which cluster: `clusters/<name>/flux`
# is the cluster <name>, `kube/clusters/<name>/flux-system` too.
GENERIC_NAMES = frozenset(
    {"flux", "flux-system", "cluster", "clusters", "kubernetes", "k8s", "kube", "gitops"}
)


def meaningful_name(path: Path, repo: Path) -> str:
    """The nearest directory name, from `path` up, that is not generic (GENERIC_NAMES);
    the basename when every one up to the repo is."""
    if path == repo:
        return repo.name
    for here in (path, *path.parents):
        if here == repo or not here.is_relative_to(repo):
            break
        if here.name not in GENERIC_NAMES:
            return here.name
    return path.name


def names(paths: Iterable[Path], repo: Path) -> list[Cluster]:
    """The meaningful basename, or the repo-relative path for names that collide."""
    paths = sorted(paths)
    base = {p: meaningful_name(p, repo) for p in paths}
    counts: dict[str, int] = {}
    for name in base.values():
        counts[name] = counts.get(name, 0) + 1
    out = []
    for p in paths:
        name = base[p]
        if counts[name] > 1:
            rel = p.relative_to(repo).as_posix() if p.is_relative_to(repo) else str(p)
            name = rel if rel != "." else repo.name
        out.append(Cluster(name, p))
    return out
