"""Which directories a build reads, from the files alone (no kustomize run).

Used to tell a cluster entry from a directory another entry pulls in, and to find the file
an error came from. It is an over-approximation that is good enough for both: a file
resource counts as its whole directory, and remote resources are ignored. `file_refs` is
the exact list of local paths one kustomization file names, for checking that a Flux build
reads nothing its source artifact lacks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.core import parsed, safefile, yamlload
from harness.render.discover import kustomization_file

REF_FIELDS = ("resources", "bases", "components")
PLUGIN_FIELDS = ("generators", "transformers", "validators")
GENERATOR_FIELDS = ("configMapGenerator", "secretGenerator")
MANIFEST_SUFFIXES = (".yaml", ".yml")


def is_remote(ref: str) -> bool:
    return "://" in ref or ref.startswith(("git@", "github.com/", "gitlab.com/"))


def _load(kfile: Path) -> dict[str, Any] | None:
    try:
        data = parsed.load(safefile.read_text(kfile))  # read only
    except (OSError, UnicodeDecodeError, yamlload.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def direct_refs(directory: Path) -> tuple[Path, ...]:
    """Directories one build step of `directory` reads (kustomize refs or Flux's scan)."""
    kfile = kustomization_file(directory)
    if kfile is None:
        return _scan_refs(directory)
    data = _load(kfile)
    if data is None:
        return ()
    here = str(directory)
    out: list[str] = []
    for field in REF_FIELDS:
        entries = data.get(field)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if not isinstance(entry, str) or is_remote(entry):
                continue
            # strings, not Paths: this runs for every directory of the repo on every run
            target = os.path.normpath(os.path.join(here, entry))
            if os.path.isdir(target):
                out.append(target)
            elif os.path.isfile(target) and os.path.dirname(target) != here:
                out.append(os.path.dirname(target))
    return tuple(Path(d) for d in dict.fromkeys(out))


def file_refs(kfile: Path) -> tuple[Path, ...]:
    """Every local path a kustomization file names, file or directory, in field order.

    Resources, bases, components and crds, patch files, generator inputs (`files` entries
    may be `key=path`), replacement sources, plugin configs and `configurations`. Remote
    refs and inline patches or plugin configs are not paths and are skipped.
    """
    data = _load(kfile)
    if data is None:
        return ()
    found: list[str] = []
    for field in (*REF_FIELDS, "crds", "patchesStrategicMerge", "configurations", *PLUGIN_FIELDS):
        found.extend(yamlload.strings(data.get(field)))
    for field in ("patches", "patchesJson6902", "replacements"):
        for entry in yamlload.mappings(data.get(field)):
            found.extend(yamlload.strings([entry.get("path")]))
    for field in GENERATOR_FIELDS:
        for entry in yamlload.mappings(data.get(field)):
            found.extend(f.partition("=")[2] or f for f in yamlload.strings(entry.get("files")))
            found.extend(yamlload.strings(entry.get("envs")))
            found.extend(yamlload.strings([entry.get("env")]))
    openapi = data.get("openapi")
    if isinstance(openapi, dict):
        found.extend(yamlload.strings([openapi.get("path")]))
    directory = kfile.parent
    paths = (
        Path(os.path.normpath(directory / ref))
        for ref in found
        if ref and "\n" not in ref and not is_remote(ref)
    )
    return tuple(dict.fromkeys(paths))


def _scan_refs(directory: Path) -> tuple[Path, ...]:
    """Flux's generator scan: subdirectories, a kustomization dir as one opaque resource."""
    out: list[Path] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return ()
    for name in names:
        path = directory / name
        if path.is_dir() and not name.startswith("."):
            out.append(path)
    return tuple(out)


class Includes:
    """Memoised `direct_refs` and `file_refs` for one run (files may change between runs)."""

    def __init__(self) -> None:
        self._refs: dict[Path, tuple[Path, ...]] = {}
        self._files: dict[Path, tuple[Path, ...]] = {}

    def refs(self, directory: Path) -> tuple[Path, ...]:
        found = self._refs.get(directory)
        if found is None:
            found = self._refs[directory] = direct_refs(directory)
        return found

    def file_refs(self, kfile: Path) -> tuple[Path, ...]:
        found = self._files.get(kfile)
        if found is None:
            found = self._files[kfile] = file_refs(kfile)
        return found

    def closure(self, directories: Iterable[Path]) -> set[Path]:
        """Every directory reachable from `directories` (themselves included)."""
        seen: set[Path] = set()
        stack = [Path(os.path.normpath(d)) for d in directories]
        while stack:
            here = stack.pop()
            if here in seen:
                continue
            seen.add(here)
            stack.extend(d for d in self.refs(here) if d not in seen)
        return seen


def manifest_files(directories: Iterable[Path]) -> list[Path]:
    """YAML files directly inside the given directories, sorted."""
    files: list[Path] = []
    for directory in sorted(set(directories)):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            path = directory / name
            if name.endswith(MANIFEST_SUFFIXES) and path.is_file():
                files.append(path)
    return files
