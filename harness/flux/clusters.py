"""Cluster entry directories and their names.

A cluster is the directory `flux bootstrap --path` points at. Found automatically it is a
directory whose render holds Flux Kustomizations and that no other such directory pulls in:

1. candidates (here, from files alone): directories with a kustomization file whose static
   closure (resources/bases/components, see includes.py) reaches a file declaring a Flux
   Kustomization, plus plain directories that directly hold such a file;
2. a candidate inside another candidate's closure is dropped (`clusters/base`, included by
   `clusters/dev` and `clusters/prod`, is not a cluster);
3. targets.py then renders each remaining candidate, drops one whose render holds no Flux
   Kustomization, and drops one that another candidate reaches through a Flux Kustomization
   `spec.path` (`tenants/staging`, built by the cluster's `tenants` Kustomization).

The `clusters:` config key replaces all of this with an explicit list.

Naming: a cluster is named by its directory's basename (`clusters/dev` -> `dev`); when two
clusters share a basename, each of those is named by its repo-relative path instead
(`east/prod`, `west/prod`). The repo root itself is named after the repo directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.cache import memo
from harness.core.config import Config
from harness.core.errors import ConfigError
from harness.discover import is_component, kustomization_file, kustomization_in, walk
from harness.flux.api import KUSTOMIZE_GROUP
from harness.flux.includes import MANIFEST_SUFFIXES, Includes

_KIND_LINE = re.compile(r"^\s*kind:\s*['\"]?Kustomization['\"]?\s*(#.*)?$", re.MULTILINE)


@dataclass(frozen=True)
class Cluster:
    name: str
    path: Path


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


def candidates(config: Config, incl: Includes) -> list[Path]:
    """Steps 1 and 2 above: directories that may be cluster entries, sorted."""
    declaring: set[Path] = set()
    with_kfile: list[Path] = []
    for dirpath, _dirnames, filenames in walk(config.repo, [config.goldens]):
        here = Path(dirpath)
        kfile = kustomization_in(here, filenames)
        if kfile is not None and not is_component(kfile):
            with_kfile.append(here)
        for name in filenames:
            if name.endswith(MANIFEST_SUFFIXES) and _file_declares(here / name):
                declaring.add(here)
                break
    reaching = _reaching(with_kfile, declaring, incl)
    found = [d for d in with_kfile if d in reaching]
    found += [d for d in declaring if kustomization_file(d) is None]
    found = sorted(set(found))
    closures = {d: incl.closure([d]) for d in found}
    return [d for d in found if not any(d in closures[o] for o in found if o != d)]


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


def _file_declares(path: Path) -> bool:
    """Whether the file declares a Flux Kustomization; remembered while its stat holds
    (memo.FILES), so a run over an unchanged tree reads none of its manifests here."""
    key = str(path)
    at, known = memo.FILES.get(key, "declares-ks")
    if known is not None:
        return known == "1"
    try:
        found = declares_flux_kustomization(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
    memo.FILES.put(key, "declares-ks", at, "1" if found else "0")
    return found


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


def names(paths: Iterable[Path], repo: Path) -> list[Cluster]:
    """Basename, or the repo-relative path for basenames that collide."""
    paths = sorted(paths)
    base = {p: (p.name if p != repo else repo.name) for p in paths}
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
