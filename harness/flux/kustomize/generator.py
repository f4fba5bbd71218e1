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

from harness.core import parsed, safefile, scratch, yamlload
from harness.flux.api import FluxKustomization
from harness.flux.source.ignore import Rules
from harness.render.discover import KUSTOMIZATION_FILES, kustomization_file

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
    # the generated kustomization file (name, text); with `mirror=False` nothing is written
    file_name: str = ""
    content: str = ""


def scan(directory: Path, rules: Rules | None = None, check: bool = True) -> list[str]:
    """Resources Flux lists for a directory without a kustomization file.

    Walks recursively in lexical order (Go's filepath.Walk, which does not follow
    symlinks: a symlinked directory is neither descended into nor listed); a subdirectory
    holding a kustomization file is one resource and is not descended into; only files
    whose extension is `.yaml`/`.yml` count (Go's filepath.Ext, so a file named `.yaml`
    counts too), and each must decode as Kubernetes objects (unless `check` is off: the
    render cache knows a listing it has a result for decoded). With `rules`, what the source
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
            if path.is_dir() and not path.is_symlink():
                if prune and rules is not None and rules.exclusion(path, True) is not None:
                    continue
                if _kustomization_file(path, rules) is not None:
                    found.append(path.relative_to(directory).as_posix())
                else:
                    walk(path)
            elif _go_ext(name) in (".yaml", ".yml"):
                if rules is not None and rules.exclusion(path, False) is not None:
                    continue
                if check:
                    _check_decodes(path)
                found.append(path.relative_to(directory).as_posix())

    walk(directory)
    return ["./" + rel for rel in found]


def _go_ext(name: str) -> str:
    """Go's filepath.Ext: from the last dot of the name, even a leading one."""
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""


def _kustomization_file(directory: Path, rules: Rules | None) -> Path | None:
    return kustomization_file(directory) if rules is None else rules.kustomization_file(directory)


def _check_decodes(path: Path) -> None:
    """kustomize's resource factory must accept the file, or Flux's generator fails."""
    try:
        docs = yamlload.load_all(safefile.read_text(path))
    except (OSError, UnicodeDecodeError, yamlload.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GeneratorError(f"failed to decode Kubernetes YAML from {path}: {first}") from None
    for doc in docs:
        problem = _resource_problem(doc)
        if problem:
            raise GeneratorError(f"failed to decode Kubernetes YAML from {path}: {problem}")


def _resource_problem(doc: Any) -> str:
    """What kustomize's resource factory (dropBadNodes, List expansion) rejects, or "".

    Empty documents are skipped; every object needs a kind and, unless its kind ends in
    `List`, a metadata.name; a List's `items` must be a sequence (or absent) and each item
    is checked the same way. (kyaml's HasNilEntryInList never finds anything, so null
    list items pass.)
    """
    if doc is None or doc == {}:
        return ""
    if not isinstance(doc, dict):
        return "missing Resource metadata"
    kind = doc.get("kind")
    if not kind:
        return "missing kind"
    meta = doc.get("metadata")
    if not str(kind).endswith("List") and (not isinstance(meta, dict) or not meta.get("name")):
        return "missing metadata.name"
    if not str(kind).endswith("List"):
        return ""
    items = doc.get("items")
    if items is None:
        return ""
    if not isinstance(items, list):
        return f"expected array in {kind}/items, but found {type(items).__name__}"
    for item in items:
        problem = _resource_problem(item)
        if problem:
            return problem
    return ""


# Prefixes fluxcd/pkg's IsLocalRelativePath treats as remote (kustomize's repospec list
# without `file://`), matched case-insensitively and only when the path is longer.
_REMOTE_PREFIXES = (
    "git::",
    "gh:",
    "ssh://",
    "https://",
    "http://",
    "git@",
    "github.com:",
    "github.com/",
)


def is_local_relative(path: str) -> bool:
    """fluxcd/pkg's IsLocalRelativePath, the test `spec.components` entries must pass.

    A known remote prefix (`git@host:org/repo`, `https://`, `github.com/org/repo`, ...)
    is remote; an absolute path, also behind `file://`, is not relative; anything else,
    `file://relative` and a bare `gitlab.com/org/repo` included, counts as local.
    """
    lowered = path.lower()
    for prefix in _REMOTE_PREFIXES:
        if len(prefix) < len(path) and lowered.startswith(prefix):
            return False
    return not (os.path.isabs(path) or os.path.isabs(lowered.removeprefix("file://")))


# Top-level fields of kustomize's `types.Kustomization` (kustomize v5). Flux's generator
# decodes the file into that struct and writes it back, so any other key is dropped, and
# keys match case-insensitively (Go's encoding/json), written back in canonical spelling.
KUSTOMIZATION_FIELDS = (
    "apiVersion",
    "kind",
    "metadata",
    "openapi",
    "namePrefix",
    "nameSuffix",
    "namespace",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "patchesStrategicMerge",
    "patchesJson6902",
    "patches",
    "images",
    "imageTags",
    "replacements",
    "replicas",
    "vars",
    "sortOptions",
    "resources",
    "components",
    "crds",
    "bases",
    "configMapGenerator",
    "secretGenerator",
    "helmGlobals",
    "helmCharts",
    "helmChartInflationGenerator",
    "generatorOptions",
    "configurations",
    "generators",
    "transformers",
    "validators",
    "inventory",
    "buildMetadata",
)
_CANONICAL = {name.lower(): name for name in KUSTOMIZATION_FIELDS}
# pointer fields of the struct: `omitempty` keeps an empty mapping, drops only null
_POINTER_FIELDS = {"metadata", "sortOptions", "helmGlobals", "generatorOptions", "inventory"}
SELECTOR_FIELDS = (
    "group",
    "version",
    "kind",
    "name",
    "namespace",
    "labelSelector",
    "annotationSelector",
)
PLACEHOLDER_NAMESPACE = "_placeholder"
ORIGIN_ANNOTATIONS = "originAnnotations"


_STRING_FIELDS = {"apiVersion", "kind", "namePrefix", "nameSuffix", "namespace"}
_MAP_FIELDS = {"commonLabels", "commonAnnotations", "openapi"} | _POINTER_FIELDS
_GO_TYPES = {str: "string", list: "array", dict: "object", bool: "bool", int: "number"}


def type_problem(base: dict[str, Any]) -> str:
    """A field Go's decoder refuses (a string where a list belongs, ...), as Flux fails."""
    for key, value in base.items():
        field = _CANONICAL.get(str(key).lower())
        if field is None or value is None:
            continue
        want: type = str if field in _STRING_FIELDS else dict if field in _MAP_FIELDS else list
        if not isinstance(value, want):
            got = _GO_TYPES.get(type(value), "number" if isinstance(value, float) else "value")
            return (
                f"json: cannot unmarshal {got} into Go struct field Kustomization.{field} "
                f"of type {_GO_TYPES[want]}"
            )
    return ""


def normalize(base: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The kustomization as Flux's decode/encode round trip leaves it, and the keys it drops.

    apiVersion and kind default to a v1beta1 Kustomization; empty values vanish
    (`omitempty`); unknown keys are dropped (kustomize itself would refuse them).
    """
    out: dict[str, Any] = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization"}
    dropped: list[str] = []
    for key, value in base.items():
        canonical = _CANONICAL.get(str(key).lower())
        if canonical is None:
            dropped.append(str(key))
            continue
        out.pop(canonical, None)  # a later spelling of the same field wins, as in Go
        if value is None or (canonical not in _POINTER_FIELDS and value in ("", [], {})):
            continue
        out[canonical] = value
    out.setdefault("apiVersion", KUSTOMIZE_API)  # kustomize defaults an empty one alike
    out.setdefault("kind", "Kustomization")
    return out, dropped


def edit(
    base: dict[str, Any], ks: FluxKustomization, directory: Path, *, created: bool = False
) -> dict[str, Any]:
    """Apply a Flux Kustomization's overrides to a kustomization mapping, as Flux does.

    In fluxcd/pkg's order: a kustomization file found in the directory (`created` False)
    without resources gets `buildMetadata: [originAnnotations]`, so kustomize does not
    call it empty; `targetNamespace`, `namePrefix` and `nameSuffix` replace; `patches`
    and `components` are appended (components must be local and relative; with
    `ignoreMissingComponents` a missing one is left out); an `images` entry merges into
    the file's entry of the same name, where newName, newTag and digest override only
    when set and newTag/digest replace each other as one version; `buildMetadata`, when
    set, replaces the file's list.
    """
    out, _ = normalize(base)
    if not created and not out.get("resources"):
        out["buildMetadata"] = [ORIGIN_ANNOTATIONS]
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
                entry["target"] = {k: p.target[k] for k in SELECTOR_FIELDS if p.target.get(k)}
            patches.append(entry)
        out["patches"] = patches
    if ks.components:
        components = list(out.get("components") or [])
        for component in ks.components:
            if not is_local_relative(component):
                raise GeneratorError(f"component path '{component}' must be local and relative")
            if ks.ignore_missing_components and not os.path.exists(
                os.path.join(directory, component)
            ):
                continue
            components.append(component)
        out["components"] = components
    if ks.images:
        out["images"] = _merge_images(out.get("images"), ks)
    if ks.build_metadata:
        out["buildMetadata"] = list(ks.build_metadata)
    for key in ("namespace", "namePrefix", "nameSuffix", "patches", "components"):
        if out.get(key) in ("", []):
            del out[key]  # written back with omitempty
    return out


def _merge_images(existing: Any, ks: FluxKustomization) -> list[Any]:
    images = [dict(i) if isinstance(i, dict) else i for i in (existing or [])]
    for image in ks.images:
        index = next(
            (
                i
                for i, old in enumerate(images)
                if isinstance(old, dict) and old.get("name") == image.name
            ),
            None,
        )
        if index is None:
            entry = {"name": image.name}
            for key, value in (
                ("newName", image.new_name),
                ("newTag", image.new_tag),
                ("digest", image.digest),
            ):
                if value:
                    entry[key] = value
            images.append(entry)
            continue
        old = images[index]
        if image.new_name:
            old["newName"] = image.new_name
        if image.new_tag or image.digest:
            # tag and digest select the version together: setting one clears the other
            for key, value in (("newTag", image.new_tag), ("digest", image.digest)):
                if value:
                    old[key] = value
                else:
                    old.pop(key, None)
    return images


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
        self.root = Path(tempfile.mkdtemp(prefix=scratch.prefix("flux"), dir=scratch_dir()))
        self._lock = threading.Lock()
        self._made: dict[str, Path] = {}
        self._anchors: dict[str, Path] = {}
        self._extra: list[Path] = []
        self._listed: dict[str, list[str]] = {}  # a mirrored level's entries, listed once

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def add_anchor(self, root: Path) -> None:
        """Mirror directories under `root` (an ExternalArtifact tree) from `root` down, as
        the repo's are from the repo root: `../` then climbs only through that tree."""
        root = root.resolve()
        with self._lock:
            if root not in self._extra:
                self._extra.append(root)

    def _anchor_for(self, directory: Path) -> Path:
        with self._lock:
            extra = [a for a in self._extra if directory.is_relative_to(a)]
        if extra:
            return max(extra, key=lambda a: len(a.parts))
        return self.anchor if directory.is_relative_to(self.anchor) else Path(directory.anchor)

    def mirror(self, directory: Path, file_name: str, content: str) -> Path:
        """A directory that reads like `directory` except for its kustomization file.

        The mirror starts at the repo root (or the filesystem root for a source mapped
        outside the repo), so `../` references climb through mirrored levels.
        """
        directory = directory.resolve()
        anchor = self._anchor_for(directory)
        rel = directory.relative_to(anchor)
        key = hashlib.sha256(f"{directory}\0{file_name}\0{content}".encode()).hexdigest()[:20]
        with self._lock:
            made = self._made.get(key)
            if made is not None:
                return made
            # strings and a directory descriptor per level, not a Path per entry: a cold
            # render mirrors ~190 directories, ~70 symlinks each (every level's siblings)
            here_src, here_dst = str(anchor), str(self.root / key)
            os.mkdir(here_dst)
            for part in (*rel.parts, None):
                skip = {part} if part is not None else set(KUSTOMIZATION_FILES)
                prefix = os.path.join(here_src, "")
                fd = os.open(here_dst, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    for name in self._listing(here_src):
                        if name not in skip:
                            os.symlink(prefix + name, name, dir_fd=fd)
                finally:
                    os.close(fd)
                if part is None:
                    break
                here_src, here_dst = os.path.join(here_src, part), os.path.join(here_dst, part)
                os.mkdir(here_dst)
            Path(here_dst, file_name).write_text(content, encoding="utf-8")
            self._made[key] = Path(here_dst)
            self._anchors[key] = anchor
            return self._made[key]

    def _listing(self, directory: str) -> list[str]:
        """`directory`'s entries in name order, listed once per workspace (one render's)."""
        found = self._listed.get(directory)
        if found is None:
            found = self._listed[directory] = sorted(os.listdir(directory))
        return found

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


def plan(
    ks: FluxKustomization,
    directory: Path,
    ws: Workspace,
    rules: Rules | None = None,
    *,
    mirror: bool = True,
    check: bool = True,
) -> Plan:
    """Where to run kustomize for `ks` at `directory` (generating a kustomization if needed).

    Flux always rewrites the kustomization file. When that rewrite changes nothing
    kustomize acts on (the file lists resources, has only known keys and the Kustomization
    no overrides), the directory is built in place, so the run is shared with the path
    target of that directory. A kustomization file the source artifact lacks (`rules`) is
    not there, as for Flux. A directory without a kustomization file gets one listing
    the scan, or `namespace: _placeholder` when the scan finds nothing.
    `mirror=False` only computes the generated file (for the render cache's key).
    """
    kfile = _kustomization_file(directory, rules)
    if kfile is not None:
        try:
            base = parsed.load(safefile.read_text(kfile))  # not mutated
        except (OSError, UnicodeDecodeError, yamlload.YAMLError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise GeneratorError(f"{kfile}: cannot read kustomization: {first}") from None
        if base is None:
            base = {}
        if not isinstance(base, dict):
            raise GeneratorError(f"{kfile}: kustomization must be a mapping")
        own = kfile == kustomization_file(directory) and all(k in _CANONICAL.values() for k in base)
        if own and not ks.has_overrides and bool(base.get("resources")):
            return Plan(directory, generated=False)
        name = kfile.name
        problem = type_problem(base)
        if problem:
            raise GeneratorError(f"{kfile}: {problem}")
        edited = edit(base, ks, directory)
        if own and edited == base:
            # Flux's rewrite changes nothing kustomize reads (say a targetNamespace equal
            # to the file's own `namespace:`): the path target's build is this build
            return Plan(directory, generated=False)
        listed: tuple[str, ...] = ()
    else:
        resources = scan(directory, rules, check)
        base = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization"}
        if resources:
            base["resources"] = resources
        else:
            base["namespace"] = PLACEHOLDER_NAMESPACE
        name = "kustomization.yaml"
        edited = edit(base, ks, directory, created=True)
        listed = tuple(resources)
        if not resources and set(edited) <= _NOTHING_TO_BUILD and edited.get("namespace"):
            return Plan(directory, generated=True, empty=True)
    content = yamlload.dump(edited)
    where = ws.mirror(directory, name, content) if mirror else directory
    return Plan(where, generated=True, resources=listed, file_name=name, content=content)


# a generated kustomization with only these keys and no resources builds 0 objects
_NOTHING_TO_BUILD = {
    "apiVersion",
    "kind",
    "namespace",
    "namePrefix",
    "nameSuffix",
    "images",
    "buildMetadata",
}
