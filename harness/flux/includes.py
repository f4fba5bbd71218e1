"""Which directories a build reads, from the files alone (no kustomize run).

Used to tell a cluster entry from a directory another entry pulls in, and to find the file
an error came from. It is an over-approximation that is good enough for both: a file
resource counts as its whole directory, and remote resources are ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from harness import yamlload
from harness.discover import kustomization_file

REF_FIELDS = ("resources", "bases", "components")
MANIFEST_SUFFIXES = (".yaml", ".yml")


def is_remote(ref: str) -> bool:
    return "://" in ref or ref.startswith(("git@", "github.com/", "gitlab.com/"))


def direct_refs(directory: Path) -> tuple[Path, ...]:
    """Directories one build step of `directory` reads (kustomize refs or Flux's scan)."""
    kfile = kustomization_file(directory)
    if kfile is None:
        return _scan_refs(directory)
    try:
        data = yamlload.load(kfile.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yamlload.YAMLError):
        return ()
    if not isinstance(data, dict):
        return ()
    out: list[Path] = []
    for field in REF_FIELDS:
        entries = data.get(field)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if not isinstance(entry, str) or is_remote(entry):
                continue
            target = Path(os.path.normpath(directory / entry))
            if target.is_dir():
                out.append(target)
            elif target.is_file() and target.parent != directory:
                out.append(target.parent)
    return tuple(dict.fromkeys(out))


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
    """Memoised `direct_refs` for one run (files may change between runs)."""

    def __init__(self) -> None:
        self._refs: dict[Path, tuple[Path, ...]] = {}

    def refs(self, directory: Path) -> tuple[Path, ...]:
        found = self._refs.get(directory)
        if found is None:
            found = self._refs[directory] = direct_refs(directory)
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
