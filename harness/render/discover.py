"""Repo -> path targets: every directory holding a kustomization file, Components excluded."""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import os
import re
from collections.abc import Container, Iterable, Iterator
from pathlib import Path

from harness.core import documents, parsed, run, safefile, yamlload
from harness.core.config import Config, find_config
from harness.core.model import Target

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def kustomization_file(directory: Path) -> Path | None:
    for name in KUSTOMIZATION_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def is_component(kfile: Path) -> bool:
    """`kind: Component` dirs only make sense inside another build; unreadable ones are not.
    Remembered while the file's stat holds (the run's file facts, core/filefacts.py):
    discovery and cluster candidates ask about every kustomization file, every run."""
    key = str(kfile)
    files = run.files()
    at, known = files.get(key, "component")
    if known is not None:
        return known == "1"
    try:
        data = parsed.load(safefile.read_text(kfile))
    except (OSError, UnicodeDecodeError, yamlload.YAMLError):
        return False
    found = isinstance(data, dict) and data.get("kind") == "Component"
    files.put(key, "component", at, "1" if found else "0")
    return found


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
    found: list[Target] = []
    for dirpath, _dirnames, files in walk(root, [config.goldens]):
        here = Path(dirpath)
        kfile = kustomization_in(here, files)
        if kfile is None or is_component(kfile):
            continue
        rel = here.relative_to(root).as_posix()
        name = "." if rel == "." else rel
        if selected(name, config):
            found.append(Target(name=name, kind="path", path=here))
    return sorted(found, key=lambda t: t.name)


Walked = list[tuple[str, list[str], list[str]]]
# the listings `one_listing` keeps: (root, what is skipped) -> the walk's entries
_LISTINGS: contextvars.ContextVar[dict[tuple[str, tuple[str, ...]], Walked] | None] = (
    contextvars.ContextVar("harness_listings", default=None)
)


@contextlib.contextmanager
def one_listing() -> Iterator[None]:
    """Inside the block, `walk` of one root lists the tree once: discovery, the Secret
    variables and the cluster scan each walk the whole repo before any build, and the
    three walks would list the same tree three times. The block is one render of one tree
    (pipeline/repo.py), so no listing outlives it: a later render, a watch's next answer,
    lists the tree again. Threads started inside (core/parallel.py) share it."""
    token = _LISTINGS.set({})
    try:
        yield
    finally:
        _LISTINGS.reset(token)


def walk(
    root: Path, skip: Iterable[Path] = (), skip_names: Container[str] = ()
) -> Iterator[tuple[str, list[str], list[str]]]:
    """`os.walk(root)` with subdirectories in sorted order, leaving out dot-directories,
    `skip_names` and the directories `skip` resolves to (the goldens).

    The walk follows no symlink, so a directory's real path is the root's real path plus
    its relative part: one resolve in all, and skipped directories compare as strings.
    Inside `one_listing` a walk without `skip_names` is listed once and given out as
    copies (pruning the yielded `dirnames` then prunes nothing: no caller does). Listed
    through the run's file facts: a resident watcher holds the listings between saves
    (core/filefacts.py `Held`).
    """
    kept = _LISTINGS.get()
    if kept is None or skip_names:
        yield from _walk(root, skip, skip_names)
        return
    key = (str(root), tuple(sorted(os.path.realpath(p) for p in skip)))
    walked = kept.get(key)
    if walked is None:
        walked = kept[key] = [(d, list(ds), list(fs)) for d, ds, fs in _walk(root, skip, ())]
    for dirpath, dirnames, filenames in walked:
        yield dirpath, list(dirnames), list(filenames)


def _walk(
    root: Path, skip: Iterable[Path], skip_names: Container[str]
) -> Iterator[tuple[str, list[str], list[str]]]:
    top = str(root)
    real_top = os.path.realpath(root)
    skipped = {os.path.realpath(p) for p in skip}
    for dirpath, dirnames, filenames in run.files().walk(top):
        real = real_top + dirpath[len(top) :]
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in skip_names
            and os.path.join(real, d) not in skipped
        )
        yield dirpath, dirnames, filenames


def kustomization_in(directory: Path, files: list[str]) -> Path | None:
    """`kustomization_file(directory)` for a directory os.walk listed with these files (a
    kustomization file, or a symlink to one, is among them)."""
    facts = run.files()
    for name in KUSTOMIZATION_FILES:
        if name in files:
            candidate = directory / name
            if facts.is_file(str(candidate)):
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


# -- the Flux variables a Secret of the tree takes (core/redaction.py `substituted`) ----------

_VARIABLE = re.compile(r"\$\{([_a-zA-Z][_a-zA-Z0-9]*)")
_YAML = (".yaml", ".yml", ".json")


def secret_variables(config: Config) -> frozenset[str]:
    """The names of the Flux post-build variables (`${NAME}`) that a Secret of the tree
    takes into its `data` or `stringData` (a Secret manifest, or a Flux Kustomization's
    patch writing one): a Kustomization's inline `postBuild.substitute` value for such a
    name lands in a Secret, so the Kustomization shows it masked (documents.py).

    Decided from the tree alone, before any build, so the Kustomization's document is the
    same whichever target renders it first and whether the cache answered. A file is read
    only when its stat changed (the run's file facts)."""
    names: set[str] = set()
    files = run.files()
    for dirpath, _dirnames, filenames in walk(config.repo, [config.goldens]):
        for name in filenames:
            if not name.endswith(_YAML):
                continue
            path = os.path.join(dirpath, name)
            at, known = files.get(path, "secret-variables")
            if known is None:
                known = ",".join(sorted(_file_variables(path)))
                if at is not None:
                    files.put(path, "secret-variables", at, known)
            names.update(n for n in known.split(",") if n)
    return frozenset(names)


def _file_variables(path: str) -> set[str]:
    try:
        data = safefile.read_bytes(path)
    except OSError:
        return set()  # refused files are warned about by the readers that need them
    if b"${" not in data or b"Secret" not in data:
        return set()
    try:
        docs = yamlload.load_all(data.decode("utf-8"))
    except (UnicodeDecodeError, yamlload.YAMLError):
        return set(_VARIABLE.findall(data.decode("utf-8", "replace")))  # unreadable: all
    out: set[str] = set()
    for doc in docs:
        for secret in documents.secrets_written(doc):
            for field in ("data", "stringData"):
                out.update(_VARIABLE.findall(yamlload.dump({field: secret.get(field)})))
    return out
