"""What each Flux Kustomization looks like *before* post-build substitution, and its variables.

After substitution `${VAR}` is gone from a flux target, and under strict mode a missing
variable fails the target altogether, so substitution checks read the source instead: the
path target rendering the Kustomization's `spec.path` (kustomize leaves `${...}` alone), or,
for a path without a kustomization file, its YAML files scanned the way Flux's generator
does. Components and inline `spec.patches` are scanned as text. Files are named relative to
the repo root so a finding can say where to edit. A rendered document's `${...}` references
and escapes are facts of its sha256 (facts.py), derived once for both sides of a diff.

A Kustomization's source resolves as the renderer resolves it (core/outside.py): the
cluster's bootstrap source is the repo, any other a harness.yaml mapping (a local checkout
inside the repo is read, one outside it is not), `external` (not rendered, so not judged)
or unmapped (its target fails). A `substituteFrom` object missing from git but declared in
`outside_git` defines its declared keys (an `any_key` one defines every variable).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core import outside, safefile, yamlload
from harness.core.documents import identity, is_kubernetes_object
from harness.core.memo import IdentityMemo
from harness.core.model import DocId, Document, TargetResult
from harness.flux.api import ObjectRef
from harness.flux.ksgraph import (
    DEFAULT_NAMESPACE,
    ClusterGraph,
    KsNode,
    is_flux_kustomization,
    parse,
)
from harness.flux.kustomize.substitute import (
    SubstitutionError,
    escaped_expressions,
    referenced_variables,
)
from harness.render.closure import EscapeError, Walker
from harness.render.discover import kustomization_file

if TYPE_CHECKING:
    from harness.hazards.facts import Facts
    from harness.hazards.scope import Scope

YAML_SUFFIXES = (".yaml", ".yml")
Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class SourceDoc:
    """One pre-substitution object (or, with `patch`, the text of a patch/component file).

    A rendered document's object (`document`) is parsed only when asked for: its facts
    (references, escapes) are kept by its sha256, so a side that reads them from another
    side's never parses it."""

    id: DocId | None
    value: Any  # the object, or None where `document` gives it
    file: str | None = None
    patch: bool = False
    sha256: str = ""  # the rendered document's, when it is one: its facts' key (facts.py)
    document: Document | None = field(default=None, compare=False, repr=False)

    @cached_property
    def obj(self) -> Any:
        return parse(self.document) if self.document is not None else self.value

    @classmethod
    def rendered(cls, doc: Document, file: str | None) -> SourceDoc:
        return cls(doc.id, None, file, sha256=doc.sha256, document=doc)


@dataclass(frozen=True)
class Variables:
    """The merged substitution map one Kustomization gets in one cluster.

    `hidden` are keys whose values come from Secrets (redacted in renders); `complete` is
    False when a non-optional source is not among the rendered objects, so an undefined
    variable cannot be told apart from an unknown one.
    """

    values: Mapping[str, str] = field(default_factory=dict)
    hidden: frozenset[str] = frozenset()
    origin: Mapping[str, str] = field(default_factory=dict)
    complete: bool = True
    active: bool = False
    missing: tuple[str, ...] = ()
    any_key: bool = False  # a declared `any_key` object answers every variable

    def defines(self, name: str) -> bool:
        return self.any_key or name in self.values or name in self.hidden


def variables(
    graph: ClusterGraph,
    node: KsNode,
    declared: Mapping[ObjectRef, outside.DeclaredObject] | None = None,
) -> Variables:
    """substituteFrom sources in order (later wins), then inline `substitute` over all.

    An object rendered from git wins over a `declared` one (harness.yaml `outside_git`)."""
    post = node.post_build
    if post is None:
        return Variables()
    values: dict[str, str] = {}
    hidden: set[str] = set()
    origin: dict[str, str] = {}
    missing: list[str] = []
    any_key = False
    for src in post.substitute_from:
        found = graph.find(DocId("", src.kind, node.namespace, src.name))
        decl = (declared or {}).get(ObjectRef(src.kind, node.namespace, src.name))
        if not found and decl is not None:
            label = f"{src} (harness.yaml {outside.SECTION})"
            for key, value in decl.keys.items():
                if src.kind == "ConfigMap":
                    values[key] = value
                    hidden.discard(key)
                else:
                    values.pop(key, None)
                    hidden.add(key)
                origin[key] = label
            any_key = any_key or decl.any_key is not None
            continue
        if not found:
            if not src.optional:
                missing.append(str(src))
            continue
        obj = parse(found[0][1])
        if src.kind == "ConfigMap":
            for key, value in (obj.get("data") or {}).items():
                values[str(key)] = str(value).replace("\n", "")
                hidden.discard(str(key))
                origin[str(key)] = str(src)
        else:
            for part in ("data", "stringData"):
                for key in obj.get(part) or {}:
                    values.pop(str(key), None)
                    hidden.add(str(key))
                    origin[str(key)] = str(src)
    for key, value in post.substitute.items():
        values[key] = value
        hidden.discard(key)
        origin[key] = "postBuild.substitute"
    return Variables(
        values=values,
        hidden=frozenset(hidden),
        origin=origin,
        complete=not missing,
        active=bool(values or hidden or missing or any_key) or post.always,
        missing=tuple(missing),
        any_key=any_key,
    )


def walk_strings(obj: Any, path: Path_ = ()) -> Iterator[tuple[Path_, str]]:
    """Every string leaf with its path (mapping keys and list indexes), in document order.

    Collected by plain recursion: nested `yield from` passes every leaf up through each
    level, and the lint rules walk every document of both sides of a diff."""
    out: list[tuple[Path_, str]] = []
    _strings_into(obj, path, out)
    return iter(out)


def _strings_into(obj: Any, path: Path_, out: list[tuple[Path_, str]]) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            _strings_into(value, (*path, str(key)), out)
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            _strings_into(value, (*path, index), out)
    elif isinstance(obj, str):
        out.append((path, obj))


def walk_leaves(obj: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every scalar leaf (and empty containers) with its path, as `walk_strings` collects."""
    out: list[tuple[Path_, Any]] = []
    _leaves_into(obj, path, out)
    return iter(out)


def _leaves_into(obj: Any, path: Path_, out: list[tuple[Path_, Any]]) -> None:
    if isinstance(obj, dict) and obj:
        for key, value in obj.items():
            _leaves_into(value, (*path, str(key)), out)
    elif isinstance(obj, list) and obj:
        for index, value in enumerate(obj):
            _leaves_into(value, (*path, index), out)
    else:
        out.append((path, obj))


def get_path(obj: Any, path: Path_) -> Any:
    """The value at `path`, or None when any step is missing."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or step >= len(obj):
                return None
            obj = obj[step]
        else:
            if not isinstance(obj, dict) or step not in obj:
                return None
            obj = obj[step]
    return obj


def format_path(path: Path_) -> str:
    """dyff-style: `spec.values.k8sServiceHost`, `spec.containers[0].args[1]`."""
    out = ""
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            out += ("." if out else "") + step
    return out or "(document)"


@dataclass(frozen=True)
class Reference:
    """One `${...}` in a pre-substitution document."""

    name: str
    expression: str
    has_default: bool
    field: str
    multiline: bool
    script: bool
    source: SourceDoc


_SCRIPT_KEYS = ("userdata", "script", "command", "args", "entrypoint", "run", "cmd")
_SHELL_STARTS = ("echo ", "export ", "if ", "for ", "while ", "curl ", "set -", "cd ", "exec ")


def looks_like_script(path: Path_, text: str) -> bool:
    """A multi-line value that a shell will run (cloud-init, a script key, shell lines)."""
    if "\n" not in text.strip():
        return False
    head = text.lstrip()
    if head.startswith(("#!", "#cloud-config")):
        return True
    last = str(path[-1]).lower() if path and isinstance(path[-1], str) else ""
    if last.endswith(".sh") or any(k in last for k in _SCRIPT_KEYS):
        return True
    return any(line.strip().startswith(_SHELL_STARTS) for line in text.splitlines())


_RawRef = tuple[str, str, bool, str, bool, bool]  # Reference without its source
_STRINGS: IdentityMemo[tuple[tuple[Path_, str], ...]] = IdentityMemo("strings", 32768)
_RawRefs = tuple[tuple[_RawRef, ...], tuple[str, ...]]  # (references, parse errors)
_REFERENCES: IdentityMemo[_RawRefs] = IdentityMemo("references", 32768)


def strings(obj: Any) -> tuple[tuple[Path_, str], ...]:
    """`walk_strings(obj)` as a tuple, walked once per shared (parsed) object."""
    found = _STRINGS.get(obj)
    if found is None:
        found = _STRINGS.put(obj, tuple(walk_strings(obj)))
    return found


def references(doc: SourceDoc, facts: Facts | None = None) -> tuple[list[Reference], list[str]]:
    """(references, parse errors) of one source document's string values; a rendered
    document's are a fact of its sha256 (facts.py)."""
    if facts is not None and doc.sha256:
        raw, errors = facts.get(
            "substitution:references",
            f"{doc.sha256}:{doc.patch}",
            lambda: _json_references(doc),
        )
    else:
        raw, errors = _memo_references(doc)
    return [Reference(n, e, d, f, m, s, doc) for n, e, d, f, m, s in raw], list(errors)


def _json_references(doc: SourceDoc) -> list[Any]:
    refs, errors = _memo_references(doc)
    return [[list(r) for r in refs], list(errors)]


def _memo_references(doc: SourceDoc) -> _RawRefs:
    found = _REFERENCES.get(doc.obj, doc.patch)
    if found is None:
        found = _REFERENCES.put(doc.obj, _raw_references(doc.obj, doc.patch), doc.patch)
    return found


@dataclass(frozen=True)
class Escaped:
    """One escaped `$${...}` in a document (what substitution would unescape)."""

    expression: str  # `$${src%.dist}`
    field: str
    multiline: bool
    script: bool
    source: SourceDoc

    @property
    def name(self) -> str:
        body = self.expression[3:-1]
        end = next((i for i, c in enumerate(body) if not (c.isalnum() or c == "_")), len(body))
        return body[:end]


def escapes(doc: SourceDoc, facts: Facts | None = None) -> list[Escaped]:
    """Every escaped `$${...}` of one document's string values; a rendered document's are
    a fact of its sha256 (facts.py)."""
    if facts is not None and doc.sha256:
        raw = facts.get(
            "substitution:escapes", f"{doc.sha256}:{doc.patch}", lambda: _raw_escapes(doc)
        )
    else:
        raw = _raw_escapes(doc)
    return [Escaped(e, f, m, s, doc) for e, f, m, s in raw]


def _raw_escapes(doc: SourceDoc) -> list[list[Any]]:
    out: list[list[Any]] = []
    for path, text in strings(doc.obj):
        for expression in escaped_expressions(text) if "$${" in text else ():
            script = not doc.patch and looks_like_script(path, text)
            multiline = "\n" in text.strip()
            out.append([expression, format_path(path), multiline, script])
    return out


def _raw_references(obj: Any, patch: bool) -> _RawRefs:
    refs: list[_RawRef] = []
    errors: list[str] = []
    for path, text in strings(obj):
        if "$" not in text:
            continue
        try:
            found = referenced_variables(text)
        except SubstitutionError as exc:
            errors.append(f"{format_path(path)}: {exc}")
            continue
        multiline = "\n" in text.strip()
        script = not patch and looks_like_script(path, text)
        for ref in found:
            refs.append(
                (ref.name, ref.expression, ref.has_default, format_path(path), multiline, script)
            )
    return tuple(refs), tuple(errors)


@dataclass(frozen=True)
class _File:
    rel: str
    text: str
    names: frozenset[tuple[str, str]]
    variables: frozenset[str]


class SourceIndex:
    """Pre-substitution documents per Kustomization, and repo files to name in findings."""

    def __init__(self, ctx: Scope) -> None:
        self._ctx = ctx
        self._paths: dict[str, TargetResult] = {
            r.name: r for r in ctx.snapshot.results.values() if r.target.kind == "path"
        }
        self._docs: dict[tuple[str, str, str], list[SourceDoc] | None] = {}
        self._clusters: dict[str, ClusterSources] = {}
        self._path_docs: dict[str, list[SourceDoc]] = {}
        self._walker = Walker()  # component closures share parsed kustomization files

    @property
    def repo(self) -> Path | None:
        return self._ctx.repo

    def path_target(self, rel: str) -> TargetResult | None:
        return self._paths.get(rel)

    def source_root(self, node: KsNode) -> outside.SourceRoot | None:
        """Where the node's source is (core/outside.py's resolution); None if unknown."""
        if node.source is None:
            return None
        cluster = self.cluster(node.cluster)
        return outside.source_root(
            cluster.declared, ObjectRef(*node.source), cluster.bootstrap, self._ctx.sources
        )

    def external(self, node: KsNode) -> bool:
        """Built from a source harness.yaml marks external: not rendered, not judged."""
        where = self.source_root(node)
        return where is not None and where.kind == "external"

    def cluster(self, name: str) -> ClusterSources:
        found = self._clusters.get(name)
        if found is None:
            found = self._clusters[name] = _cluster_sources(self._ctx, name)
        return found

    def rel_path(self, node: KsNode) -> str | None:
        """`spec.path` as a repo-relative directory (`.` for the root); None when its
        source is external, unmapped or a checkout outside the repo.

        A rendered target already names the repo directory it was built from (its source
        root may be a subdirectory an OCI artifact is pushed from, or an ExternalArtifact
        tree whose directory was copied from the repo): that is used first."""
        rendered = self._rendered_dir(node)
        if rendered is not None:
            return rendered
        root = ""
        where = self.source_root(node)
        if where is not None:
            if where.kind in ("external", "unmapped"):
                return None
            root = where.directory or ""
        joined = os.path.normpath(os.path.join(root, node.path.lstrip("/") or "."))
        if joined.startswith(".."):
            return None
        return joined

    def _rendered_dir(self, node: KsNode) -> str | None:
        result = self._ctx.snapshot.results.get(node.target)
        if result is None or not result.ok or result.target.kind != "flux" or self.repo is None:
            return None
        # `Path.relative_to` of the two absolute paths, as strings (a Path per node was
        # most of the preinstalled scan's Flux paths)
        repo, top = self._repo_top
        path = os.path.abspath(result.target.path)
        if path == repo:
            return "."
        if not path.startswith(top):
            return None
        return path[len(top) :].replace(os.sep, "/")

    @cached_property
    def _repo_top(self) -> tuple[str, str]:
        """The repo's absolute path, and it with a trailing separator (once, not per node)."""
        assert self.repo is not None
        repo = os.path.abspath(self.repo)
        return repo, repo if repo.endswith(os.sep) else repo + os.sep

    def documents(self, node: KsNode) -> list[SourceDoc] | None:
        """The Kustomization's objects before substitution, or None when they are unknown."""
        rel = self.rel_path(node)
        if rel is None:
            return None
        key = (node.cluster, node.namespace, node.name)
        if key not in self._docs:
            self._docs[key] = self._documents(node, rel)
        return self._docs[key]

    def _documents(self, node: KsNode, rel: str) -> list[SourceDoc] | None:
        docs = self._directory(rel)
        if docs is None:
            return None
        for index, patch in enumerate(node.patches):
            docs.append(SourceDoc(None, patch, f"spec.patches[{index}] of {node.display}", True))
        for component in node.components:
            crel = os.path.normpath(os.path.join(rel, component))
            docs.extend(self._component(crel))
        return docs

    def _directory(self, rel: str) -> list[SourceDoc] | None:
        result = self._paths.get(rel)
        if result is not None:
            if not result.ok:
                return None
            found = self._path_docs.get(rel)
            if found is None:  # every cluster building this path shares one list
                found = self._path_docs[rel] = [
                    SourceDoc.rendered(d, self.file_for(d.id, rel)) for d in result.documents
                ]
            return list(found)
        if self.repo is None:
            return None
        directory = self.repo / rel
        if not directory.is_dir() or kustomization_file(directory) is not None:
            return None
        return self._generated(directory)

    def _generated(self, directory: Path) -> list[SourceDoc] | None:
        """Flux's generator: every YAML file, recursively; kustomization dirs as one build."""
        assert self.repo is not None
        out: list[SourceDoc] = []
        for entry in sorted(directory.iterdir()):
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                if kustomization_file(entry) is not None:
                    sub = self._directory(entry.relative_to(self.repo).as_posix())
                else:
                    sub = self._generated(entry)
                if sub is None:
                    return None
                out.extend(sub)
            elif entry.suffix in YAML_SUFFIXES:
                rel = entry.relative_to(self.repo).as_posix()
                for obj in _load_objects(entry):
                    out.append(SourceDoc(identity(obj), obj, rel))
        return out

    def _component(self, rel: str) -> list[SourceDoc]:
        """The YAML files a Component's build reads (its kustomization and what that lists:
        the build's input closure), as texts: a file the component does not include (a
        commented-out resource, a sub-component nobody includes) never counts."""
        if self.repo is None:
            return []
        directory = self.repo / rel
        if not directory.is_dir():
            return []
        try:
            closure = self._walker.closure(directory, self.repo)
        except (EscapeError, OSError):
            return []
        out = []
        for frel in closure.files():
            if not frel.endswith(YAML_SUFFIXES):
                continue
            try:
                text = safefile.read_text(self.repo / frel)
            except (OSError, UnicodeDecodeError):
                continue
            out.append(SourceDoc(None, text, frel, True))
        return out

    @cached_property
    def files(self) -> list[_File]:
        """Every YAML file of the repo (dot dirs and the goldens skipped)."""
        if self.repo is None:
            return []
        skip = {self._ctx.goldens.resolve()} if self._ctx.goldens is not None else set()
        out: list[_File] = []
        for dirpath, dirnames, filenames in os.walk(self.repo):
            here = Path(dirpath)
            dirnames[:] = sorted(
                d for d in dirnames if not d.startswith(".") and (here / d).resolve() not in skip
            )
            for name in sorted(filenames):
                if not name.endswith(YAML_SUFFIXES):
                    continue
                path = here / name
                try:
                    text = safefile.read_text(path)
                except (OSError, UnicodeDecodeError):
                    continue
                names = frozenset(
                    (str(o.get("kind")), str((o.get("metadata") or {}).get("name")))
                    for o in _load_objects(path, text)
                )
                try:
                    used = frozenset(r.name for r in referenced_variables(text))
                except SubstitutionError:
                    used = frozenset()
                out.append(_File(path.relative_to(self.repo).as_posix(), text, names, used))
        return out

    def file_for(self, doc_id: DocId, under: str = "", variable: str = "") -> str | None:
        """The repo file declaring this object (kind and name), preferring files below
        `under` and files that use `variable`; None when no file matches."""
        candidates = [f for f in self.files if (doc_id.kind, doc_id.name) in f.names]
        if variable:
            candidates = [f for f in candidates if variable in f.variables] or candidates
        if not candidates:
            return None
        prefix = "" if under in ("", ".") else under.rstrip("/") + "/"
        below = [f for f in candidates if f.rel.startswith(prefix)]
        return (below or candidates)[0].rel

    def file_containing(self, needle: str, under: str = "", name: str = "") -> str | None:
        """The first repo file below `under` whose text contains `needle` (any file type:
        generated ConfigMaps come from .json, .conf, ... files), one named `name` first."""
        if self.repo is None or not needle:
            return None
        directory = self.repo / under if under not in ("", ".") else self.repo
        if not directory.is_dir():
            return None
        paths = sorted(directory.rglob("*"), key=lambda p: (p.name != name, p))
        for path in paths:
            if any(p.startswith(".") for p in path.relative_to(self.repo).parts):
                continue
            try:
                if not path.is_file() or path.stat().st_size > 1 << 20:
                    continue
                if needle in safefile.read_text(path):
                    return path.relative_to(self.repo).as_posix()
            except (OSError, UnicodeDecodeError):
                continue
        return None


def _load_objects(path: Path, text: str | None = None) -> list[dict[str, Any]]:
    try:
        if text is None:
            text = safefile.read_text(path)
        loaded = yamlload.load_all(text)
    except (OSError, UnicodeDecodeError, yamlload.YAMLError):
        return []
    return [o for o in loaded if is_kubernetes_object(o)]


@dataclass(frozen=True)
class ClusterSources:
    """What harness.yaml says about one cluster, and the source that is the repo there."""

    declared: outside.Resolved
    bootstrap: ObjectRef


def _cluster_sources(ctx: Scope, cluster: str) -> ClusterSources:
    """The renderer's view of a cluster rebuilt from the render: its root Kustomization is
    the one that renders itself (the entry directory holds it), whose source is the
    bootstrap source and whose `spec.path` is the cluster directory; without one, the
    root was synthesised with GitRepository flux-system. The declarations are those for the
    cluster's names (its basename and repo-relative path), over `*`."""
    graph = ctx.graphs.get(cluster)
    bootstrap = BOOTSTRAP_SOURCE
    names = [cluster]
    if graph is not None:
        roots = sorted(
            (node.name != DEFAULT_NAMESPACE, node.key)
            for key, result in graph.results.items()
            if result.ok
            for doc in result.documents
            if is_flux_kustomization(doc.id)
            and (doc.id.namespace or DEFAULT_NAMESPACE, doc.id.name) == key
            for node in [graph.nodes.get(key)]
            if node is not None and node.source is not None and node.source[0] in ROOT_KINDS
        )
        if roots:
            root = graph.nodes[roots[0][1]]
            assert root.source is not None
            bootstrap = ObjectRef(*root.source)
            rel = os.path.normpath(root.path.lstrip("/") or ".")
            if rel != ".":
                names += [rel, rel.rsplit("/", 1)[-1]]
            elif ctx.repo is not None:
                names += [".", ctx.repo.name]
        elif ctx.repo is not None:
            for key, result in graph.results.items():
                node = graph.nodes.get(key)
                if node is not None and not node.spec_known:
                    path = Path(os.path.abspath(result.target.path))
                    names += outside.aliases(path, Path(os.path.abspath(ctx.repo)))
                    break
    return ClusterSources(outside.resolve(ctx.outside_git, names), bootstrap)


BOOTSTRAP_SOURCE = ObjectRef("GitRepository", DEFAULT_NAMESPACE, DEFAULT_NAMESPACE)
ROOT_KINDS = ("GitRepository", "OCIRepository", "Bucket")
