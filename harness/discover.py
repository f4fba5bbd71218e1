"""Repo -> path targets: every directory holding a kustomization file, Components excluded."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from harness import yamlload
from harness.config import Config, find_config
from harness.model import Target

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def kustomization_file(directory: Path) -> Path | None:
    for name in KUSTOMIZATION_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def is_component(kfile: Path) -> bool:
    """`kind: Component` dirs only make sense inside another build; unreadable ones are not."""
    try:
        data = yamlload.load_shared(kfile.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yamlload.YAMLError):
        return False
    return isinstance(data, dict) and data.get("kind") == "Component"


def matches(name: str, patterns: tuple[str, ...]) -> bool:
    """fnmatch globs on target names; `*` crosses `/`, and `dir/**` also matches `dir`."""
    for pattern in patterns:
        if fnmatch.fnmatchcase(name, pattern):
            return True
        if pattern.endswith("/**") and name == pattern[:-3]:
            return True
    return False


def selected(name: str, config: Config) -> bool:
    return matches(name, config.include) and not matches(name, config.exclude)


def path_targets(config: Config) -> list[Target]:
    """Sorted path targets under the repo root; dot-directories and the goldens dir skipped."""
    root = config.repo
    skip = {config.goldens.resolve()}
    found: list[Target] = []
    # os.walk descends into real directories only, so a directory's resolved path is its
    # parent's plus its name: one resolve for the root, not one per directory
    real: dict[str, Path] = {str(root): root.resolve()}
    for dirpath, dirnames, files in os.walk(root):
        here = Path(dirpath)
        parent = real.pop(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and _real(here, d, parent) not in skip
        )
        for d in dirnames:
            real[os.path.join(dirpath, d)] = parent / d
        kfile = kustomization_in(here, files)
        if kfile is None or is_component(kfile):
            continue
        rel = here.relative_to(root).as_posix()
        name = "." if rel == "." else rel
        if selected(name, config):
            found.append(Target(name=name, kind="path", path=here))
    return sorted(found, key=lambda t: t.name)


def _real(here: Path, name: str, real_here: Path) -> Path:
    """`(here / name).resolve()`, given `real_here` (`here` resolved)."""
    child = here / name
    return child.resolve() if child.is_symlink() else real_here / name


def kustomization_in(directory: Path, files: list[str]) -> Path | None:
    """`kustomization_file(directory)` for a directory os.walk listed with these files (a
    kustomization file, or a symlink to one, is among them)."""
    for name in KUSTOMIZATION_FILES:
        if name in files:
            candidate = directory / name
            if candidate.is_file():
                return candidate
    return None


def find_repo_root(start: Path) -> Path:
    """The directory itself when it has a harness config, else the enclosing git root."""
    start = start.resolve()
    if find_config(start) is not None:
        return start
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start
