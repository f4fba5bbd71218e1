"""Flux's kustomization generator (fluxcd/pkg `kustomize_generator.go`), without touching the repo.

kustomize-controller edits (or creates) the kustomization file in `spec.path` before it
builds. harness must never write into the user's tree, so the edited file goes into a
*mirror* under a temporary workspace: the chain of directories from the repo root down to
`spec.path` is recreated as real directories whose other entries are symlinks to the
originals, and the generated kustomization file sits where the original would. Relative
references (`../base`, `./patch.yaml`, components) then resolve exactly as in the repo, and
kustomize follows the symlinks to the real files.

Why not reference the originals from a flat temp dir: kustomize rejects absolute directory
resources (`new root ... cannot be absolute`), and rewriting every path field of an existing
kustomization file (resources, patches, generators, components, ...) would be fragile. The
mirror costs one directory listing per path level.

Mirrors are keyed by the file's content, so two Flux Kustomizations (say in two clusters)
with the same path and overrides get the same directory and share one kustomize run through
the renderer's memo.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import yamlload
from harness.discover import KUSTOMIZATION_FILES, kustomization_file
from harness.flux.model import FluxKustomization
from harness.flux.sourceignore import Rules

KUSTOMIZE_API = "kustomize.config.k8s.io/v1beta1"


class GeneratorError(ValueError):
    """The kustomization for a path cannot be generated (Flux fails the same way)."""


@dataclass(frozen=True)
class Plan:
    """How to build one path: `directory` is what kustomize runs on.

    `empty` means there is nothing to build (a directory without manifests): Flux builds
    an empty kustomization and applies 0 objects. `resources` are what a generated
    kustomization lists (the scan), for checking what the build reads.
    """

    directory: Path
    generated: bool
    empty: bool = False
    resources: tuple[str, ...] = ()


def scan(directory: Path, rules: Rules | None = None) -> list[str]:
    """Resources Flux lists for a directory without a kustomization file.

    Walks recursively in lexical order (Go's filepath.Walk); a subdirectory holding a
    kustomization file is one resource and is not descended into; only `.yaml`/`.yml`
    files count, and each must decode as Kubernetes objects. With `rules`, what the source
    artifact lacks is not there: excluded files are skipped, and an excluded directory is
    entered only when a `!` pattern may bring something inside it back.
    """
    found: list[str] = []
    prune = rules is None or not rules.reincludes

    def walk(here: Path) -> None:
        try:
            entries = sorted(os.listdir(here))
        except OSError as exc:
            raise GeneratorError(f"cannot read {here}: {exc.strerror}") from None
        for name in entries:
            path = here / name
            if path.is_dir():
                if prune and rules is not None and rules.exclusion(path, True) is not None:
                    continue
                if _kustomization_file(path, rules) is not None:
                    found.append(path.relative_to(directory).as_posix())
                else:
                    walk(path)
            elif path.suffix in (".yaml", ".yml") and path.is_file():
                if rules is not None and rules.exclusion(path, False) is not None:
                    continue
                _check_decodes(path)
                found.append(path.relative_to(directory).as_posix())

    walk(directory)
    return ["./" + rel for rel in found]


def _kustomization_file(directory: Path, rules: Rules | None) -> Path | None:
    return kustomization_file(directory) if rules is None else rules.kustomization_file(directory)


def _check_decodes(path: Path) -> None:
    """kustomize's resource factory must accept the file, or Flux's generator fails."""
    try:
        docs = yamlload.load_all(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yamlload.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GeneratorError(f"failed to decode Kubernetes YAML from {path}: {first}") from None
    for doc in docs:
        if doc is None:
            continue
        problem = ""
        if not isinstance(doc, dict):
            problem = "missing Resource metadata"
        elif not doc.get("kind"):
            problem = "missing kind"
        elif not isinstance(doc.get("metadata"), dict) or not doc["metadata"].get("name"):
            problem = "missing metadata.name"
        if problem:
            raise GeneratorError(f"failed to decode Kubernetes YAML from {path}: {problem}")


def is_local_relative(path: str) -> bool:
    """Components must be local relative paths (no URL, no absolute path)."""
    return bool(path) and not os.path.isabs(path) and "://" not in path


def edit(base: dict[str, Any], ks: FluxKustomization, directory: Path) -> dict[str, Any]:
    """Apply a Flux Kustomization's overrides to a kustomization mapping, as Flux does.

    `targetNamespace`, `namePrefix` and `nameSuffix` replace; `patches` and `components`
    are appended; `images` replace an entry of the same name or are appended.
    """
    out = dict(base)
    out.setdefault("apiVersion", KUSTOMIZE_API)
    out.setdefault("kind", "Kustomization")
    if ks.target_namespace is not None:
        out["namespace"] = ks.target_namespace
    if ks.name_prefix is not None:
        out["namePrefix"] = ks.name_prefix
    if ks.name_suffix is not None:
        out["nameSuffix"] = ks.name_suffix
    if ks.patches:
        patches = list(out.get("patches") or [])
        for p in ks.patches:
            entry: dict[str, Any] = {"patch": p.patch}
            if p.target is not None:
                target = {k: v for k, v in p.target.items() if v}
                if target:
                    entry["target"] = target
            patches.append(entry)
        out["patches"] = patches
    if ks.components:
        components = list(out.get("components") or [])
        for component in ks.components:
            if not is_local_relative(component):
                raise GeneratorError(f"component path '{component}' must be local and relative")
            if ks.ignore_missing_components and not (directory / component).exists():
                continue
            components.append(component)
        out["components"] = components
    if ks.images:
        images = list(out.get("images") or [])
        for image in ks.images:
            entry = {"name": image.name}
            for key, value in (
                ("newName", image.new_name),
                ("newTag", image.new_tag),
                ("digest", image.digest),
            ):
                if value:
                    entry[key] = value
            index = next(
                (
                    i
                    for i, old in enumerate(images)
                    if isinstance(old, dict) and old.get("name") == image.name
                ),
                None,
            )
            if index is None:
                images.append(entry)
            else:
                images[index] = entry
        out["images"] = images
    return out


def scratch_dir() -> str | None:
    """Where mirrors go: memory-backed /dev/shm unless $TMPDIR says otherwise.

    A mirror is a few dozen symlinks in fresh directories; on a journalled disk under
    load that costs ~15 ms per mirror, on tmpfs ~0.2 ms (measured by scripts/bench.py).
    """
    shm = "/dev/shm"
    if os.environ.get("TMPDIR") or not os.path.isdir(shm) or not os.access(shm, os.W_OK | os.X_OK):
        return None
    return shm


class Workspace:
    """Temporary directory outside the repo for generated kustomizations; removed on close."""

    def __init__(self, anchor: Path) -> None:
        self.anchor = anchor.resolve()
        self.root = Path(tempfile.mkdtemp(prefix="harness-flux-", dir=scratch_dir()))
        self._lock = threading.Lock()
        self._made: dict[str, Path] = {}
        self._anchors: dict[str, Path] = {}

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def mirror(self, directory: Path, file_name: str, content: str) -> Path:
        """A directory that reads like `directory` except for its kustomization file.

        The mirror starts at the repo root (or the filesystem root for a source mapped
        outside the repo), so `../` references climb through mirrored levels.
        """
        directory = directory.resolve()
        anchor = self.anchor if directory.is_relative_to(self.anchor) else Path(directory.anchor)
        rel = directory.relative_to(anchor)
        key = hashlib.sha256(f"{directory}\0{file_name}\0{content}".encode()).hexdigest()[:20]
        with self._lock:
            made = self._made.get(key)
            if made is not None:
                return made
            here_src, here_dst = anchor, self.root / key
            here_dst.mkdir()
            for part in (*rel.parts, None):
                skip = {part} if part is not None else set(KUSTOMIZATION_FILES)
                for name in sorted(os.listdir(here_src)):
                    if name not in skip:
                        os.symlink(here_src / name, here_dst / name)
                if part is None:
                    break
                here_src, here_dst = here_src / part, here_dst / part
                here_dst.mkdir()
            (here_dst / file_name).write_text(content, encoding="utf-8")
            self._made[key] = here_dst
            self._anchors[key] = anchor
            return here_dst

    def to_repo(self, message: str) -> str:
        """Mirror paths in a kustomize message read as the real paths they stand for."""
        prefix = str(self.root) + os.sep
        if prefix not in message:
            return message
        chunks = message.split(prefix)
        out = [chunks[0]]
        for chunk in chunks[1:]:
            key, sep, rest = chunk.partition(os.sep)
            anchor = self._anchors.get(key)
            if anchor is None:
                out.append(prefix + chunk)
            else:
                out.append(str(anchor).rstrip(os.sep) + os.sep + rest if sep else str(anchor))
        return "".join(out)


@contextmanager
def workspace(anchor: Path) -> Iterator[Workspace]:
    ws = Workspace(anchor)
    try:
        yield ws
    finally:
        ws.close()


def plan(ks: FluxKustomization, directory: Path, ws: Workspace, rules: Rules | None = None) -> Plan:
    """Where to run kustomize for `ks` at `directory` (generating a kustomization if needed).

    A directory with its own kustomization file and a Kustomization without overrides is
    built in place, so the run is shared with the path target of that directory. A
    kustomization file the source artifact lacks (`rules`) is not there, as for Flux.
    """
    kfile = _kustomization_file(directory, rules)
    if kfile is not None and not ks.has_overrides and kfile == kustomization_file(directory):
        return Plan(directory, generated=False)
    if kfile is not None:
        try:
            base = yamlload.load(kfile.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yamlload.YAMLError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise GeneratorError(f"{kfile}: cannot read kustomization: {first}") from None
        if base is None:
            base = {}
        if not isinstance(base, dict):
            raise GeneratorError(f"{kfile}: kustomization must be a mapping")
        name = kfile.name
    else:
        resources = scan(directory, rules)
        if not resources and not ks.components:
            return Plan(directory, generated=True, empty=True)
        base = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization"}
        if resources:
            base["resources"] = resources
        name = "kustomization.yaml"
    content = yamlload.dump(edit(base, ks, directory))
    listed = tuple(base.get("resources") or ()) if kfile is None else ()
    return Plan(ws.mirror(directory, name, content), generated=True, resources=listed)
