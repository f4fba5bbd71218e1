"""ArtifactGenerator and ExternalArtifact: the artifact tree source-watcher would publish.

An ArtifactGenerator (`source.extensions.fluxcd.io/v1beta1`) reads the artifacts of other
sources (each under an alias), runs its `copy` operations into one staging directory per
`spec.artifacts[]` entry and publishes the result as an ExternalArtifact of that name in
the generator's namespace; Kustomizations with `sourceRef.kind: ExternalArtifact` build
from it, so a `../` reaching a file that was not copied fails in Flux although the git
checkout has it. harness therefore builds such Kustomizations from a real tree made here,
never from the repo. Semantics (fluxcd/source-watcher `internal/builder`, learnt from its
code and tests, not copied):

- inputs are what source-controller archived: the source's ignore rules applied, symlinks
  absent (`Tree`);
- `from: "@alias/path"` without `* ? [ ]` copies like `cp -r`: a directory lands as a
  subdirectory named after it (`@alias/` alone copies the source root's content); a file
  goes into `to` when it ends with `/` or is a directory already staged, else is renamed
  to `to`;
- a glob is Go's `fs.Glob` (one segment per `*`, `**` is `*`): each match keeps its
  source-relative path under `to`, except that a pattern ending in `/**` drops that prefix;
  matched directories are copied recursively;
- `exclude` are doublestar patterns, tried on the path from the source root, on the path
  from the selection's literal prefix, and (without `/`) on the base name;
- strategies: Overwrite (later wins per file), Merge (a directly copied YAML file is
  deep-merged, Helm-values style, over one already staged; files reached through a
  directory are overwritten), Extract (`.tar.gz`/`.tgz` unpacked into `to`);
- the published tarball drops what the default source-ignore rules exclude (`.git/`,
  images, CI files, `.sops.yaml`, ...), whatever the inputs were.

Errors carry source-watcher's wording, so the target's one line reads like the controller's
condition message.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.core import safefile
from harness.flux.api import ObjectRef, api_group, object_ref
from harness.flux.source import globs, tarball
from harness.flux.source.globs import PatternError
from harness.flux.source.ignore import DEFAULT_PATTERNS, VCS_PATTERNS, Rules, read_patterns

GROUP = "source.extensions.fluxcd.io"
GENERATOR = "ArtifactGenerator"
EXTERNAL_ARTIFACT = "ExternalArtifact"
INPUT_KINDS = ("Bucket", "GitRepository", "OCIRepository", "HelmChart", "ExternalArtifact")
STRATEGIES = ("Overwrite", "Merge", "Extract")
TARBALLS = (".tar.gz", ".tgz")
_ALIAS = re.compile(r"^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$")
_FROM = re.compile(r"^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$", re.DOTALL)
_TO = re.compile(r"^@artifact/(.*)$", re.DOTALL)
_REVISION = re.compile(r"^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$")
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_CAPTURE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LABEL_KEY = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class GeneratorError(Exception):
    """The generator or one of its artifacts cannot be built; the message is one line."""


@dataclass(frozen=True)
class Copy:
    source: str  # `from`
    to: str
    exclude: tuple[str, ...] = ()
    strategy: str = "Overwrite"


@dataclass(frozen=True)
class Output:
    """One `spec.artifacts[]` entry (or one pathPattern expansion of it)."""

    name: str
    copy: tuple[Copy, ...]
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Input:
    alias: str
    kind: str
    name: str
    namespace: str

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.namespace, self.name)


@dataclass(frozen=True)
class Generator:
    name: str
    namespace: str
    inputs: tuple[Input, ...]
    outputs: tuple[Output, ...]
    path_pattern: str = ""

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(GENERATOR, self.namespace, self.name)

    def artifact(self, name: str) -> ObjectRef:
        return ObjectRef(EXTERNAL_ARTIFACT, self.namespace, name)


def is_generator(obj: Mapping[str, Any]) -> bool:
    return api_group(obj) == GROUP and obj.get("kind") == GENERATOR


def parse(obj: Mapping[str, Any], default_namespace: str = "default") -> Generator:
    """The spec as the API server and the controller's validation accept it."""
    ref = object_ref(obj, default_namespace)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise GeneratorError("spec must be a mapping")
    inputs: list[Input] = []
    aliases: set[str] = set()
    for i, src in enumerate(_list(spec, "sources", "spec.sources")):
        where = f"spec.sources[{i}]"
        if not isinstance(src, dict):
            raise GeneratorError(f"{where} must be a mapping")
        alias = _text(src, "alias", where)
        if not _ALIAS.match(alias) or len(alias) > 63:
            raise GeneratorError(
                f"{where}.alias {alias!r} must be lower case alphanumerics, '_', '-'"
            )
        kind = _text(src, "kind", where)
        if kind not in INPUT_KINDS:
            raise GeneratorError(f"{where}.kind must be one of {', '.join(INPUT_KINDS)}")
        if alias in aliases:
            raise GeneratorError(f"duplicate source alias '{alias}' found")
        aliases.add(alias)
        namespace = src.get("namespace") or ref.namespace
        inputs.append(Input(alias, kind, _text(src, "name", where), str(namespace)))
    if not inputs:
        raise GeneratorError("spec.sources must list at least one source")
    pattern = spec.get("pathPattern") or ""
    if not isinstance(pattern, str):
        raise GeneratorError("spec.pathPattern must be a string")
    if pattern and not _FROM.match(pattern):
        raise GeneratorError(f"spec.pathPattern {pattern!r} must read @alias/path")
    outputs: list[Output] = []
    names: set[str] = set()
    for i, art in enumerate(_list(spec, "artifacts", "spec.artifacts")):
        where = f"spec.artifacts[{i}]"
        if not isinstance(art, dict):
            raise GeneratorError(f"{where} must be a mapping")
        name = _text(art, "name", where)
        if name in names:
            raise GeneratorError(f"duplicate artifact name '{name}' found")
        if not pattern and not _dns_subdomain(name):
            raise GeneratorError(f"artifact name {name!r} is not a valid Kubernetes object name")
        for key in ("revision", "originRevision"):
            value = art.get(key)
            if value is not None and (not isinstance(value, str) or not _REVISION.match(value)):
                raise GeneratorError(f"{where}.{key} must read @alias")
        revision = art.get("revision")
        if isinstance(revision, str) and revision[1:] not in aliases:
            raise GeneratorError(
                f"artifact {name} revision source alias '{revision[1:]}' not found"
            )
        names.add(name)
        copies = tuple(
            _copy(op, f"{where}.copy[{j}]")
            for j, op in enumerate(_list(art, "copy", f"{where}.copy"))
        )
        if not copies:
            raise GeneratorError(f"{where}.copy must list at least one operation")
        outputs.append(Output(name, copies))
    if not outputs:
        raise GeneratorError("spec.artifacts must list at least one artifact")
    return Generator(ref.name, ref.namespace, tuple(inputs), tuple(outputs), pattern)


def _list(parent: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise GeneratorError(f"{where} must be a list")
    return value


def _text(parent: Mapping[str, Any], key: str, where: str) -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value:
        raise GeneratorError(f"{where}.{key} must be a non-empty string")
    return value


def _copy(value: Any, where: str) -> Copy:
    if not isinstance(value, dict):
        raise GeneratorError(f"{where} must be a mapping")
    source, to = _text(value, "from", where), _text(value, "to", where)
    if not _FROM.match(source):
        raise GeneratorError(f"{where}.from {source!r} must read @alias/path")
    if not _TO.match(to):
        raise GeneratorError(f"{where}.to {to!r} must start with '@artifact/'")
    exclude = value.get("exclude") or []
    if not isinstance(exclude, list) or not all(isinstance(e, str) for e in exclude):
        raise GeneratorError(f"{where}.exclude must be a list of strings")
    strategy = value.get("strategy") or "Overwrite"
    if strategy not in STRATEGIES:
        raise GeneratorError(f"{where}.strategy must be one of {', '.join(STRATEGIES)}")
    return Copy(source, to, tuple(exclude), str(strategy))


def _dns_subdomain(name: str) -> bool:
    return len(name) <= 253 and _DNS_SUBDOMAIN.match(name) is not None


# -- inputs -----------------------------------------------------------------------------------


class Tree:
    """A source artifact's files: `root` with its ignore rules applied and symlinks absent
    (source-controller archives regular files and directories only)."""

    def __init__(self, root: Path, rules: Rules | None, label: str = "") -> None:
        self.root = root
        self.rules = rules
        self.label = label or str(root)
        self._entries: dict[str, list[str]] = {}
        self._kinds: dict[str, str | None] = {".": "dir" if root.is_dir() else None}
        self._lock = threading.Lock()

    @property
    def key(self) -> tuple[str, Rules | None]:
        return (str(self.root), self.rules)

    def path(self, rel: str) -> Path:
        return self.root if rel in (".", "") else self.root / rel

    def kind(self, rel: str) -> str | None:
        """ "dir", "file" or None (absent from the artifact)."""
        rel = _clean(rel)
        if rel.startswith("../") or rel == ".." or rel.startswith("/"):
            return None
        with self._lock:
            if rel in self._kinds:
                return self._kinds[rel]
        parent, name = posixpath.split(rel)
        found = self._kinds.get(rel) if name in self.entries(parent or ".") else None
        with self._lock:
            self._kinds.setdefault(rel, found)
        return found

    def entries(self, rel: str) -> list[str]:
        """Names in a directory of the artifact, sorted (empty for anything else)."""
        rel = _clean(rel)
        with self._lock:
            known = self._entries.get(rel)
        if known is not None:
            return known
        if rel != "." and self.kind(rel) != "dir":
            return []
        names: list[str] = []
        kinds: dict[str, str] = {}
        try:
            with os.scandir(self.path(rel)) as it:
                scanned = sorted(it, key=lambda e: e.name)
        except OSError:
            scanned = []
        for entry in scanned:
            child = entry.name if rel == "." else f"{rel}/{entry.name}"
            path = Path(entry.path)
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if self._excluded(path, True) and not self._reincluded(path):
                    continue
                kinds[child] = "dir"
            elif entry.is_file(follow_symlinks=False):
                if self._excluded(path, False):
                    continue
                kinds[child] = "file"
            else:
                continue
            names.append(entry.name)
        with self._lock:
            self._kinds.update(kinds)
            self._entries[rel] = names
        return names

    def _excluded(self, path: Path, is_dir: bool) -> bool:
        return self.rules is not None and self.rules.exclusion(path, is_dir) is not None

    def _reincluded(self, directory: Path) -> bool:
        """An excluded directory still exists in the artifact when a `!` line brings back
        something inside it (source-controller walks into excluded directories)."""
        if self.rules is None or not self.rules.reincludes:
            return False
        for dirpath, _dirnames, filenames in os.walk(directory):
            for name in filenames:
                path = Path(dirpath) / name
                if not path.is_symlink() and not self._excluded(path, False):
                    return True
        return False


# -- pathPattern --------------------------------------------------------------------------------


def expand(generator: Generator, trees: Mapping[str, Tree]) -> tuple[Output, ...]:
    """The artifacts to build: as written, or one set per directory `pathPattern` matches."""
    if not generator.path_pattern:
        return generator.outputs
    match = _FROM.match(generator.path_pattern)
    assert match is not None
    alias, body = match.group(1), match.group(3)
    tree = trees.get(alias)
    if tree is None:
        raise GeneratorError(
            f"pathPattern {generator.path_pattern!r}: source alias {alias} not found "
            "in local sources"
        )
    captures = _captures(generator.path_pattern, body)
    regex = re.compile(re.sub(r"\\\{([a-zA-Z0-9_]+)\\\}", r"(?P<\1>[^/]+)", re.escape(body)))
    out: list[Output] = []
    seen: dict[str, str] = {}
    for rel in globs.walk(".", tree.kind, tree.entries):
        if tree.kind(rel) != "dir":
            continue
        found = regex.fullmatch(rel)
        if found is None:
            continue
        raw = {name: found.group(name) for name in captures}
        lower = {k: v.lower() for k, v in raw.items()}
        for key, value in lower.items():
            if len(value) > 63 or not _LABEL_VALUE.match(value):
                raise GeneratorError(
                    f"pathPattern {generator.path_pattern!r}: captured value {value!r} for "
                    f"variable {key!r} is not a valid Kubernetes label value"
                )
        for art in generator.outputs:
            name = _render(art.name, lower)
            if not _dns_subdomain(name):
                raise GeneratorError(
                    f"pathPattern {generator.path_pattern!r}: rendered artifact name {name!r} "
                    "is not a valid Kubernetes object name"
                )
            if name in seen:
                raise GeneratorError(
                    f"pathPattern {generator.path_pattern!r}: directories {seen[name]!r} and "
                    f"{rel!r} both resolve to artifact name {name!r}"
                )
            seen[name] = rel
            copies = tuple(
                Copy(_render(c.source, raw), _render(c.to, raw), c.exclude, c.strategy)
                for c in art.copy
            )
            out.append(Output(name, copies, tuple(sorted(lower.items()))))
    return tuple(out)


def _captures(whole: str, body: str) -> list[str]:
    names: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "{":
            end = body.find("}", i + 1)
            if end < 0:
                raise GeneratorError(f"pathPattern {whole!r}: missing closing brace")
            name = body[i + 1 : end]
            if not name:
                raise GeneratorError(f"pathPattern {whole!r}: empty capture variable")
            if not _CAPTURE_NAME.match(name):
                raise GeneratorError(
                    f"pathPattern {whole!r}: capture variable {name!r} must match "
                    "[A-Za-z_][A-Za-z0-9_]*"
                )
            if name in names:
                raise GeneratorError(f"pathPattern {whole!r}: duplicate capture variable {name!r}")
            if len(name) > 63 or not _LABEL_KEY.match(name):
                raise GeneratorError(
                    f"pathPattern {whole!r}: capture variable {name!r} is not a valid "
                    "Kubernetes label key"
                )
            names.append(name)
            i = end + 1
            continue
        if c == "}":
            raise GeneratorError(f"pathPattern {whole!r}: missing opening brace")
        i += 1
    return names


def _render(template: str, values: Mapping[str, str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(template):
        c = template[i]
        if c == "{":
            end = template.find("}", i + 1)
            if end < 0:
                raise GeneratorError(f"invalid template {template!r}: missing closing brace")
            name = template[i + 1 : end]
            if name not in values:
                raise GeneratorError(
                    f"invalid template {template!r}: capture variable {name!r} is not "
                    "defined by pathPattern"
                )
            out.append(values[name])
            i = end + 1
            continue
        if c == "}":
            raise GeneratorError(f"invalid template {template!r}: missing opening brace")
        out.append(c)
        i += 1
    return "".join(out)


# -- building one artifact ----------------------------------------------------------------------


@dataclass
class Staged:
    """An artifact tree being built: where each staged path came from (absolute source path)."""

    root: Path
    origins: dict[str, Path] = field(default_factory=dict)

    def at(self, rel: str) -> Path:
        rel = _clean(rel)
        if rel == ".." or rel.startswith("../") or rel.startswith("/"):
            raise GeneratorError(f"destination '{rel}' escapes the artifact")
        return self.root if rel == "." else self.root / rel


def build(output: Output, trees: Mapping[str, Tree], staging: Path) -> dict[str, Path]:
    """Run the artifact's copy operations into `staging` (empty), then drop what the
    published tarball would not hold. Returns the origin of every staged path."""
    staged = Staged(staging)
    for op in output.copy:
        try:
            _apply(op, trees, staged)
        except GeneratorError as exc:
            raise GeneratorError(
                f"failed to apply copy operation from '{op.source}' to '{op.to}': {exc}"
            ) from None
        except OSError as exc:
            raise GeneratorError(
                f"failed to apply copy operation from '{op.source}' to '{op.to}': "
                f"{exc.strerror or exc}"
            ) from None
    _archive_filter(staged)
    return staged.origins


def _apply(op: Copy, trees: Mapping[str, Tree], staged: Staged) -> None:
    found = _FROM.match(op.source)
    to = _TO.match(op.to)
    assert found is not None and to is not None
    alias, pattern, dest = found.group(1), found.group(3), to.group(1)
    tree = trees.get(alias)
    if tree is None:
        raise GeneratorError(f"source alias '{alias}' not found")
    for exclude in op.exclude:
        try:
            globs.doublestar(exclude)
        except PatternError:
            raise GeneratorError(f"invalid exclude pattern '{exclude}'") from None
    if not globs.has_glob(pattern):
        _single(op, tree, pattern, staged, dest, op.to.endswith("/"))
        return
    try:
        if op.strategy == "Extract":
            matches = globs.doublestar_glob(pattern, tree.kind, tree.entries)
        else:
            matches = globs.fs_glob(pattern, tree.kind, tree.entries)
    except PatternError as exc:
        raise GeneratorError(f"invalid glob pattern '{pattern}': {exc}") from None
    if not matches:
        raise GeneratorError(f"no files match pattern '{pattern}' in source '{alias}'")
    base = _selection_root(pattern)
    kept = [m for m in matches if m not in (".", "..") and not _excluded_path(m, base, op.exclude)]
    if not kept:
        raise GeneratorError(
            f"all files matching pattern '{pattern}' in source '{alias}' were excluded"
        )
    for match in kept:
        if op.strategy == "Extract":
            if _is_tarball(match):
                _extract(tree, match, staged, dest)
            continue
        _copy_path(op, tree, match, staged, _glob_destination(pattern, match, dest), base)


def _single(op: Copy, tree: Tree, pattern: str, staged: Staged, dest: str, slash: bool) -> None:
    """A plain path: `cp -r` semantics, decided by what the path is."""
    src = _clean(pattern)
    kind = tree.kind(src)
    if kind is None:
        raise GeneratorError(f"source '{src}' does not exist")
    if kind == "dir":
        if op.strategy == "Extract":
            raise GeneratorError(f"extract strategy is not supported for directories, got '{src}'")
        _copy_path(op, tree, src, staged, _join(dest, posixpath.basename(src) or "."), src)
        return
    if _excluded_path(src, ".", op.exclude):
        return
    if op.strategy == "Extract":
        if not _is_tarball(src):
            raise GeneratorError(
                f"extract strategy requires tarball file (.tar.gz or .tgz), got '{src}'"
            )
        _extract(tree, src, staged, dest)
        return
    name = posixpath.basename(src)
    target = _join(dest, name) if slash or staged.at(dest).is_dir() else _clean(dest)
    _copy_path(op, tree, src, staged, target, ".")


def _copy_path(op: Copy, tree: Tree, src: str, staged: Staged, dest: str, base: str) -> None:
    if tree.kind(src) == "dir":
        _copy_dir(tree, src, staged, dest, op.exclude, base)
        return
    target = staged.at(dest)
    if op.strategy == "Merge" and target.exists():
        _merge(tree, src, target)
        staged.origins[_clean(dest)] = tree.path(src)
        return
    _copy_file(tree, src, staged, dest)


def _copy_dir(
    tree: Tree, src: str, staged: Staged, dest: str, exclude: tuple[str, ...], base: str
) -> None:
    """A directory, recursively; excluded entries (and whole excluded directories) skipped.
    Files below a copied directory are always overwritten, never merged."""
    _mkdir(staged, dest)
    staged.origins.setdefault(_clean(dest), tree.path(src))
    for path in _walk_pruned(tree, src, exclude, base):
        rel = posixpath.relpath(path, src) if src != "." else path
        target = _join(dest, rel)
        if tree.kind(path) == "dir":
            _mkdir(staged, target)
            staged.origins[target] = tree.path(path)
        else:
            _copy_file(tree, path, staged, target)


def _walk_pruned(tree: Tree, top: str, exclude: tuple[str, ...], base: str) -> Iterator[str]:
    for name in tree.entries(top):
        path = name if top == "." else f"{top}/{name}"
        if _excluded_path(path, base, exclude):
            continue
        yield path
        if tree.kind(path) == "dir":
            yield from _walk_pruned(tree, path, exclude, base)


def _mkdir(staged: Staged, rel: str) -> None:
    target = staged.at(rel)
    if target.is_dir():
        return
    if target.exists():
        raise GeneratorError(f"mkdir {_clean(rel)}: not a directory")
    target.mkdir(parents=True, exist_ok=True)


def _copy_file(tree: Tree, src: str, staged: Staged, dest: str) -> None:
    target = staged.at(dest)
    if target.is_dir():
        raise GeneratorError(f"open {_clean(dest)}: is a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    source = tree.path(src)
    if source.exists() and not safefile.is_regular(source):  # /dev/zero: copied without end
        raise GeneratorError(f"open {_clean(src)}: not a regular file")
    shutil.copyfile(source, target)
    os.chmod(target, stat.S_IMODE(source.stat().st_mode))
    staged.origins[_clean(dest)] = source


def _glob_destination(pattern: str, match: str, dest: str) -> str:
    """`dir/**` drops the `dir/` prefix (cp-like); any other glob keeps the match's path."""
    if pattern.endswith("/**"):
        prefix = pattern[: -len("/**")]
        if match.startswith(prefix + "/"):
            return _join(dest, match[len(prefix) + 1 :])
    return _join(dest, match)


def _selection_root(pattern: str) -> str:
    """The literal directory prefix before the first segment holding a glob character."""
    parts: list[str] = []
    for part in _clean(pattern).split("/"):
        if globs.has_glob(part):
            break
        parts.append(part)
    return posixpath.join(*parts) if parts else "."


def _excluded_path(path: str, base: str, patterns: tuple[str, ...]) -> bool:
    """Excluded by its path from the source root, or from the selection root."""
    if _excluded(path, patterns):
        return True
    base, path = _clean(base), _clean(path)
    if base == ".":
        return False
    rel = posixpath.relpath(path, base)
    if rel == "." or rel == ".." or rel.startswith("../") or rel == path:
        return False
    return _excluded(rel, patterns)


def _excluded(path: str, patterns: tuple[str, ...]) -> bool:
    name = posixpath.basename(path)
    for pattern in patterns:
        if globs.doublestar_match(pattern, path):
            return True
        if "/" not in pattern and globs.doublestar_match(pattern, name):
            return True
    return False


def _is_tarball(path: str) -> bool:
    return path.lower().endswith(TARBALLS)


def _extract(tree: Tree, src: str, staged: Staged, dest: str) -> None:
    """Untar a gzip tarball into `dest`, keeping its internal paths; later files win.
    Bounded and confined (tarball.py): links are skipped (the published artifact holds
    none), paths may not escape, and past the archive caps the artifact fails."""
    target = staged.at(dest)
    target.mkdir(parents=True, exist_ok=True)
    source = tree.path(src)
    try:
        for member, handle in tarball.members(tarball.read(source)):
            rel = _join(dest, member.name)
            if member.is_dir:
                _mkdir(staged, rel)
                continue
            if handle is None:
                continue
            out = staged.at(rel)
            if out.is_dir():
                raise GeneratorError(f"failed to extract tarball '{src}': {rel} is a directory")
            out.parent.mkdir(parents=True, exist_ok=True)
            with handle, open(out, "wb") as fh:
                shutil.copyfileobj(handle, fh)
            os.chmod(out, member.mode & 0o777)
            staged.origins[rel] = source
    except tarball.TarballError as exc:
        raise GeneratorError(f"failed to extract tarball '{src}': {exc}") from None
    except OSError as exc:
        raise GeneratorError(f"failed to extract tarball '{src}': {exc.strerror or exc}") from None


def _merge(tree: Tree, src: str, target: Path) -> None:
    """Deep-merge the source YAML over the staged file (maps merge, anything else replaces)."""
    base = _load_merged(safefile.read_text(target, errors="replace"))
    over = _load_merged(safefile.read_text(tree.path(src), errors="replace"))
    target.write_text(dump_merged(merge_maps(base, over)), encoding="utf-8")


def _load_merged(text: str) -> dict[str, Any]:
    """A multi-document YAML (or JSON) file folded into one map, later documents winning."""
    out: dict[str, Any] = {}
    try:
        docs = list(yaml.load_all(text, Loader=_MergeLoader))
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid YAML"
        raise GeneratorError(f"cannot unmarshal YAML document: {first}") from None
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise GeneratorError(
                f"cannot unmarshal YAML document: a {type(doc).__name__} is not a map"
            )
        out = merge_maps(out, _jsonable(doc))
    return out


def merge_maps(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's values merge: nested maps merge, every other value (lists too) replaces."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_maps(out[key], value)
        else:
            out[key] = value
    return out


class _MergeLoader(yaml.SafeLoader):
    """Timestamps stay strings, as they do through sigs.k8s.io/yaml's JSON round trip."""


_MergeLoader.add_constructor(
    "tag:yaml.org,2002:timestamp",
    lambda loader, node: loader.construct_scalar(node),  # type: ignore[arg-type]
)


def _jsonable(value: Any) -> Any:
    """What sigs.k8s.io/yaml makes of a value: string keys, integral floats as integers."""
    if isinstance(value, dict):
        return {_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


class _MergeDumper(yaml.SafeDumper):
    """Keys sorted, block style, multi-line strings literal: how source-watcher writes a
    merged file (the original comments and document separators are gone)."""


def _merge_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data and not any(c in data for c in "\r\t") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_MergeDumper.add_representer(str, _merge_str)


def dump_merged(data: Mapping[str, Any]) -> str:
    return yaml.dump(
        dict(data),
        Dumper=_MergeDumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 20,
    )


def _archive_filter(staged: Staged) -> None:
    """Remove what the published tarball leaves out: the default source-ignore patterns
    (storage.SourceIgnoreFilter with no patterns), and anything not a file or directory."""
    rules = Rules(staged.root, read_patterns("\n".join((*VCS_PATTERNS, *DEFAULT_PATTERNS))))
    for dirpath, dirnames, filenames in os.walk(staged.root):
        here = Path(dirpath)
        for name in list(dirnames):
            path = here / name
            if path.is_symlink() or rules.exclusion(path, True) is not None:
                dirnames.remove(name)
                _drop(staged, path)
        for name in filenames:
            path = here / name
            if not path.is_file() or path.is_symlink() or rules.exclusion(path, False) is not None:
                _drop(staged, path)


def _drop(staged: Staged, path: Path) -> None:
    rel = path.relative_to(staged.root).as_posix()
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    for key in [k for k in staged.origins if k == rel or k.startswith(rel + "/")]:
        del staged.origins[key]


def _clean(path: str) -> str:
    """Go's `filepath.Clean` for relative paths: "" is "."."""
    return posixpath.normpath(path) if path else "."


def _join(*parts: str) -> str:
    kept = [p for p in parts if p not in ("", ".")]
    return _clean(posixpath.join(*kept)) if kept else "."


# -- the run's artifacts ------------------------------------------------------------------------


@dataclass(frozen=True)
class Artifact:
    """A built ExternalArtifact: its tree and where each path of it came from."""

    ref: ObjectRef
    generator: ObjectRef
    root: Path
    origins: Mapping[str, Path]

    def origin(self, rel: str) -> Path | None:
        """The source file or directory a path of the artifact was copied from: its own
        entry, else one under the nearest copied directory above it."""
        rel = _clean(rel)
        here, rest = rel, ""
        while True:
            found = self.origins.get(here)
            if found is not None:
                return found / rest if rest else found
            if here in (".", ""):
                return None
            parent, _, name = here.rpartition("/")
            rest = f"{name}/{rest}" if rest else name
            here = parent or "."

    def origin_dir(self, rel: str) -> Path | None:
        """The source directory a directory of the artifact stands for: the one it was
        copied from, else the deepest directory all its content came from."""
        rel = _clean(rel)
        found = self.origins.get(rel)
        if found is not None:
            return found if found.is_dir() else None
        prefix = "" if rel == "." else rel + "/"
        dirs = {
            str(path if path.is_dir() else path.parent)
            for key, path in self.origins.items()
            if key.startswith(prefix)
        }
        if not dirs:
            return None
        common = Path(os.path.commonpath(sorted(dirs)))
        return None if common == Path(common.anchor) else common


class Store:
    """The run's ExternalArtifact trees, built once per (generator, artifact, inputs) in a
    temporary directory; a failure is remembered like a result."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._built: dict[tuple[Any, ...], Artifact | GeneratorError] = {}
        self._roots: dict[Path, Artifact] = {}

    def build(
        self,
        generator: Generator,
        outputs: tuple[Output, ...],
        index: int,
        trees: Mapping[str, Tree],
    ) -> Artifact:
        """Artifact `outputs[index]`; the generator builds in list order and stops at the
        first failure, so a later artifact of a failing generator is not published either."""
        inputs = tuple(sorted((alias, tree.key) for alias, tree in trees.items()))
        with self._lock:
            for i in range(index + 1):
                key = (generator.ref, outputs[i], inputs)
                found = self._built.get(key)
                if found is None:
                    found = self._build_one(generator, outputs[i], trees)
                    self._built[key] = found
                if isinstance(found, GeneratorError):
                    if i == index:
                        raise found
                    raise GeneratorError(
                        f"{generator.ref} stops at artifact '{outputs[i].name}' before "
                        f"building '{outputs[index].name}': {found}"
                    )
            assert isinstance(found, Artifact)
            return found

    def _build_one(
        self, generator: Generator, output: Output, trees: Mapping[str, Tree]
    ) -> Artifact | GeneratorError:
        staging = Path(tempfile.mkdtemp(prefix=f"{output.name[:40]}-", dir=self.directory))
        ref = generator.artifact(output.name)
        try:
            origins = build(output, trees, staging)
        except GeneratorError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            return GeneratorError(f"{ref} of {generator.ref}: {exc}")
        artifact = Artifact(ref, generator.ref, staging, origins)
        self._roots[staging] = artifact
        return artifact

    def owner(self, path: Path) -> Artifact | None:
        """The artifact a path lies in."""
        with self._lock:
            roots = list(self._roots.items())
        for root, artifact in roots:
            if path == root or path.is_relative_to(root):
                return artifact
        return None

    def display(self, text: str, repo: Path) -> str:
        """Artifact paths in a message read as the repo files they were copied from, or as
        `ExternalArtifact/ns/name:path` for what has no origin (a path the artifact lacks)."""
        with self._lock:
            roots = sorted(self._roots.items(), key=lambda item: -len(str(item[0])))
        for root, artifact in roots:
            prefix = str(root)
            if prefix not in text:
                continue
            pattern = re.compile(re.escape(prefix) + r"(/[^\s'\":,\]\)]*)?")
            text = pattern.sub(_namer(artifact, repo), text)
        return text

    def explain_escape(self, message: str, root: Path, repo: Path) -> str:
        """A confinement error of a build from an artifact tree: its file named as the repo
        file it came from, the escaped path relative to the artifact, and why."""
        artifact = self.owner(root)
        if artifact is None:
            return message
        message = self.display(message, repo)
        leftover = re.compile(re.escape(str(self.directory)) + r"(/[^\s'\":,\]\)]*)?")
        message = leftover.sub(
            lambda m: os.path.relpath(str(self.directory) + (m.group(1) or ""), artifact.root),
            message,
        )
        head, sep, rest = message.partition(": ")
        origin = artifact.origins.get(_clean(head)) if sep else None
        if origin is not None:
            message = f"{_shown(artifact, '/' + _clean(head), repo)}{sep}{rest}"
        return f"{message}: {artifact.ref} holds only what its ArtifactGenerator copies"


def _namer(artifact: Artifact, repo: Path) -> Callable[[re.Match[str]], str]:
    return lambda match: _shown(artifact, match.group(1) or "", repo)


def _shown(artifact: Artifact, tail: str, repo: Path) -> str:
    rel = _clean(tail.lstrip("/"))
    origin = artifact.origins.get(rel)
    if origin is None and rel == ".":
        origin = artifact.origin_dir(rel)
    if origin is not None:
        try:
            return origin.relative_to(repo).as_posix() or "."
        except ValueError:
            return str(origin)
    return f"{artifact.ref}:{'' if rel == '.' else rel}"


# -- an ExternalArtifact a HelmRelease installs (`spec.chartRef`) --------------------------------


@dataclass(frozen=True)
class Files:
    """A built artifact's regular files (posix path -> bytes), kept past the Flux render's
    workspace for the helm stage: a HelmRelease's `chartRef` to an ExternalArtifact installs
    the chart source-watcher packed there."""

    ref: ObjectRef
    files: tuple[tuple[str, bytes], ...]

    def write(self, into: Path) -> Path:
        """The tree under `into` (created); returns it."""
        for rel, data in self.files:
            path = into / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        into.mkdir(parents=True, exist_ok=True)
        return into


def files_of(ref: ObjectRef, root: Path) -> Files:
    """Every regular file under a built artifact's root, in path order (symlinks are not
    archived: source-controller drops them too)."""
    found: list[tuple[str, bytes]] = []
    for directory, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = Path(directory) / name
            if path.is_symlink() or not path.is_file():
                continue
            found.append((path.relative_to(root).as_posix(), safefile.read_bytes(path)))
    return Files(ref, tuple(found))
