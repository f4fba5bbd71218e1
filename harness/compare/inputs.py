"""Did a target's inputs change between the two sides of a diff? The one seam that decides
whether a failure on both sides is a *pre-existing* error (shown once, not judged) or one the
change may have caused or touched (an error, exit 2).

The answer is the render cache's input digest (closure.py), taken on each side while that
side's tree exists (a git ref's temporary checkout is gone once it is rendered):

- the build's input closure, walked by the same `Walker` the render cache keys on: every
  local file kustomize may read (resources, bases, components, every patch form, generator
  and plugin inputs, Helm values files and chart homes, ...), confined to the source root;
- for a Flux target, that closure is taken with the kustomization file Flux generates in
  place of the one on disk (generator.plan, so a directory scan's YAML files count), plus
  the source's ignore rules, the Kustomization object that declares it (owner labels
  aside) and the ConfigMaps/Secrets its `postBuild.substituteFrom` names, as rendered on
  that side.

A helm target is digested only when it failed because its chart could not be fetched (a
private registry, an offline runner): then what it would have read is the HelmRelease as
rendered (owner labels aside), the ConfigMaps/Secrets its `valuesFrom` names (Secret values
as their redaction markers) and the chart reference (the chart, version and URL asked for,
and the HelmRepository/OCIRepository/HelmChart objects naming it). Any other helm failure
is never digested: a chart comes from a repository that may answer differently on every run.
A build that reads outside its source root has no digest either (its closure stops at the
escape). Unknown counts as changed, so an unchanged digest means the same inputs. Only
failed targets are digested (nothing else is asked).

A kustomize failure whose cause can be read from its message is digested by that cause
alone (`failing_input`), not by the whole closure: the remote base it could not fetch (its
URL; offline, a root Kustomization naming a remote base fails the same way whatever else a
commit edits), or the files the message names, resolved from the failing kustomization
along kustomize's chain of resources (each file's blob id, or its absence; for a Flux
target also its declaration, since the kustomization Flux generates follows the spec).
So a target failing the same way for the same reason is pre-existing even when other
files of its closure changed, and an edit of a file the failure names is not.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core import yamlload
from harness.core.model import Document, Snapshot, TargetResult
from harness.flux.api import FluxKustomization, ObjectRef, parse_kustomization
from harness.flux.source.ignore import Rules, SourceIgnores
from harness.flux.spec import SpecError
from harness.render.closure import Blobs, Closure, EscapeError, Walker
from harness.render.discover import kustomization_file

if TYPE_CHECKING:  # the generator loads when a failed target is digested (`digester`)
    from harness.flux.kustomize import generator

FLUX_KS_GROUP = "kustomize.toolkit.fluxcd.io"
OWNER_LABELS = (f"{FLUX_KS_GROUP}/name:", f"{FLUX_KS_GROUP}/namespace:")
BOOTSTRAP = "flux-system"

Digests = Mapping[str, str]  # target name -> input digest, for the failed targets of a side


class Digester:
    """What the digests of one side share: the closure walker, blob ids, ignore rules.

    Files differ between sides (and runs), so a Digester lives for one side only.
    """

    def __init__(self, workspace: generator.Workspace) -> None:
        self.walker = Walker()
        self.blobs = Blobs()
        self.ignores = SourceIgnores()
        self.workspace = workspace


@contextlib.contextmanager
def digester(repo: Path) -> Iterator[Digester]:
    from harness.flux.kustomize import generator

    with generator.workspace(repo) as ws:
        yield Digester(ws)


def side_digests(repo: Path, snapshot: Snapshot) -> dict[str, str]:
    """Digests of the failed targets of one side, read from `repo` (that side's tree)."""
    out: dict[str, str] = {}
    failed = [r for r in snapshot.results.values() if not r.ok]
    if not failed:
        return out
    with digester(repo) as dig:
        for result in failed:
            digest = target_digest(repo, snapshot, result, dig)
            if digest is not None:
                out[result.name] = digest
    return out


def inputs_unchanged(name: str, base: Digests, head: Digests) -> bool:
    """Whether target `name` read the same inputs on both sides (unknown counts as changed)."""
    before, after = base.get(name), head.get(name)
    return before is not None and before == after


def same_inputs(base: Digests, head: Digests) -> frozenset[str]:
    """The targets judged unchanged by `inputs_unchanged`."""
    return frozenset(n for n in set(base) & set(head) if inputs_unchanged(n, base, head))


def target_digest(
    repo: Path, snapshot: Snapshot, result: TargetResult, dig: Digester | None = None
) -> str | None:
    """sha256 over the target's inputs; None when they cannot be known: helm targets (their
    inputs include remote charts, so a chart repository failing on both sides is an error
    of this run, not a pre-existing one) unless their chart was unreachable, builds that
    escape their source root, and builds from an ExternalArtifact (its tree is what a
    generator copied from anywhere in the repo; an error there always counts as this
    side's)."""
    if result.target.kind == "helm":
        return _unreachable_chart_inputs(snapshot, result)
    if result.target.kind == "flux":
        ks = _kustomization(_declaration(snapshot, result)[0])
        if ks is not None and ks.source.kind == "ExternalArtifact":
            return None
    if dig is None:
        with digester(repo) as own:
            return target_digest(repo, snapshot, result, own)
    repo = Path(os.path.abspath(repo))
    cause = failing_input(repo, result.error or "", dig)
    if cause is not None:
        h = hashlib.sha256(f"{result.target.kind}\0cause\0{cause}".encode())
        if result.target.kind == "flux" and not cause.startswith("remote\0"):
            docs, sources = _declaration(snapshot, result)
            h.update("\0".join(sorted([*docs, *sources])).encode())
        return h.hexdigest()
    directory = Path(os.path.abspath(result.target.path))
    h = hashlib.sha256(f"{result.target.kind}\0".encode())
    try:
        if result.target.kind == "flux":
            h.update(_flux_inputs(repo, snapshot, result, directory, dig).encode())
        else:
            h.update(_closure_digest(dig, directory, repo).encode())
    except EscapeError:
        return None
    return h.hexdigest()


KUSTOMIZE_SEP = ": kustomize: "
# a remote base or resource as kustomize accepts one (URL, scp-like git, bare forge host)
_REMOTE = re.compile(
    r"(?:https?|ssh|git|file)://[^\s'\"]+"
    r"|git@[\w.-]+:[^\s'\"]+"
    r"|(?<![\w./-])(?:github\.com|gitlab\.com|bitbucket\.org)/[^\s'\"]+"
)
_LINE = re.compile(r":\d+$")  # `deployment.yaml:7` (a duplicate key's line)


def failing_input(repo: Path, message: str, dig: Digester) -> str | None:
    """What a kustomize failure names as its cause, as text comparable across sides: the
    remote URLs it names (`remote\0...`), else, when the innermost thing it names is a file
    (`missing.yaml: no such file`, `deployment.yaml:7: mapping key ...`), every file along
    its chain from the failing kustomization (`<where>: kustomize: <chain> -> <file>:
    <cause>`), each repo-relative with its blob id or `absent`, and, when it is a directory
    (a component a patch fails in), that directory's closure. None when the message names
    nothing inside the build or is no kustomize failure (a Flux generator or substitution
    error): then the inputs are the whole closure."""
    where, sep, rest = message.partition(KUSTOMIZE_SEP)
    if not sep or not where:
        return None
    remotes = sorted(set(_REMOTE.findall(rest)))
    if remotes:
        return "remote\0" + "\0".join(remotes)
    start = repo / where
    if not start.exists():
        return None
    base = start if start.is_dir() else start.parent
    named = [_blob_of(repo, kustomization_file(start) if start.is_dir() else start, dig.blobs)]
    innermost: Path | None = None
    for part in re.split(r": | -> ", rest):
        token = _LINE.sub("", part.strip("'\" "))
        if not token or " " in token or token.startswith("-"):
            continue
        candidate = _resolve(repo, base, token)
        if candidate is None:
            continue
        innermost = candidate
        if candidate.is_dir():
            base = candidate
            named.append(_blob_of(repo, kustomization_file(candidate), dig.blobs, candidate))
        else:
            named.append(_blob_of(repo, candidate, dig.blobs))
    if innermost is None:
        return None
    if innermost.is_dir():
        try:
            named.append(_closure_digest(dig, innermost, repo))
        except EscapeError:
            return None
    return "files\0" + "\0".join(named)


def _resolve(repo: Path, base: Path, token: str) -> Path | None:
    """A path a kustomize message names: relative to the kustomization it was read from,
    else to the repo (messages are made repo-relative); an absent file counts (a missing
    resource) when the token looks like a manifest path."""
    for anchor in (base, repo):
        candidate = Path(os.path.normpath(anchor / token))
        if candidate.is_relative_to(repo) and candidate.exists():
            return candidate
    candidate = Path(os.path.normpath(base / token))
    if candidate.is_relative_to(repo) and token.endswith((".yaml", ".yml", ".json")):
        return candidate
    return None


def _blob_of(repo: Path, path: Path | None, blobs: Blobs, directory: Path | None = None) -> str:
    """`rel=blob` for a named file, `rel=absent` when it does not exist."""
    if path is None:
        return f"{_relative(repo, directory or repo)}/=no kustomization"
    return f"{_relative(repo, path)}={blobs.of(path) or 'absent'}"


HELM_GROUP = "helm.toolkit.fluxcd.io"
SOURCE_GROUP = "source.toolkit.fluxcd.io"


def _unreachable_chart_inputs(snapshot: Snapshot, result: TargetResult) -> str | None:
    """What a helm target whose chart could not be fetched read (module docstring)."""
    info = result.target.helm
    parts = result.name.removesuffix("@helm").rsplit("/", 2)
    if info is None or not info.unreachable or len(parts) != 3:
        return None
    _cluster, namespace, name = parts
    docs = _cluster_docs(snapshot, result.target.cluster)
    releases = [
        d
        for d in docs
        if (d.id.group, d.id.kind, d.id.name) == (HELM_GROUP, "HelmRelease", name)
        and (d.id.namespace or "default") == namespace
    ]
    if not releases:
        return None
    release = _load(releases[0].text)
    spec = release.get("spec") if isinstance(release, dict) else None
    if not isinstance(spec, dict):
        return None
    wanted = {("", kind, namespace, ref) for kind, ref in _values_from(spec)}
    sources = _chart_sources(spec, namespace)
    for doc in docs:  # a HelmChart's own source
        if (doc.id.group, doc.id.kind) == (SOURCE_GROUP, "HelmChart") and (
            doc.id.kind,
            doc.id.namespace,
            doc.id.name,
        ) in sources:
            chart_spec = (_load(doc.text) or {}).get("spec")
            if isinstance(chart_spec, dict):
                sources |= _refs(chart_spec.get("sourceRef"), doc.id.namespace)
    texts = [_without_owner_labels(releases[0].text)]
    for doc in docs:
        key = (doc.id.group, doc.id.kind, doc.id.namespace, doc.id.name)
        if key in wanted or (
            doc.id.group == SOURCE_GROUP and (doc.id.kind, doc.id.namespace, doc.id.name) in sources
        ):
            texts.append(f"{key}\0{_without_owner_labels(doc.text)}")
    reference = "\0".join((info.chart, info.version, info.url, info.source))
    h = hashlib.sha256(b"helm-unreachable\0")
    h.update("\0".join([reference, *sorted(texts)]).encode())
    return h.hexdigest()


def _values_from(spec: Mapping[str, Any]) -> set[tuple[str, str]]:
    refs = spec.get("valuesFrom")
    return {
        (str(r.get("kind")), str(r.get("name")))
        for r in (refs if isinstance(refs, list) else [])
        if isinstance(r, dict)
    }


def _chart_sources(spec: Mapping[str, Any], namespace: str) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of the source objects a HelmRelease's chart comes through."""
    chart = spec.get("chart")
    inner = chart.get("spec") if isinstance(chart, dict) else None
    out = _refs(inner.get("sourceRef") if isinstance(inner, dict) else None, namespace)
    return out | _refs(spec.get("chartRef"), namespace)


def _refs(ref: Any, namespace: str) -> set[tuple[str, str, str]]:
    if not isinstance(ref, dict) or not ref.get("name"):
        return set()
    return {(str(ref.get("kind")), str(ref.get("namespace") or namespace), str(ref["name"]))}


def _closure_digest(
    dig: Digester, directory: Path, root: Path, generated: tuple[str, str] | None = None
) -> str:
    if not directory.is_dir():
        return f"absent\0{_relative(root, directory)}"
    return dig.walker.closure(directory, root, generated=generated).digest(dig.blobs)


def _flux_inputs(
    repo: Path, snapshot: Snapshot, result: TargetResult, directory: Path, dig: Digester
) -> str:
    """The closure Flux builds for this target, under its source root, and its declaration."""
    docs, sources = _declaration(snapshot, result)
    declaration = "\n---\n".join(sorted([*docs, *sources]))
    ks = _kustomization(docs)
    if ks is None:
        # no declaration rendered (the synthesised bootstrap root, or its declarer failed):
        # the directory as Flux builds it for a Kustomization without overrides
        ks = _bare(repo, directory)
        if ks is None:
            return "\0".join((declaration, "unknown", _tree_digest(dig, directory, directory)))
    root, reached = _source_root(repo, directory, ks)
    if not reached:
        # the build stopped before reading a directory (unmapped or external source, `${}`
        # in spec.path, a missing directory): what it read is the declaration, harness.yaml
        # (the same on both sides) and whether spec.path names a directory
        exists = (repo / ks.path).is_dir() if ".." not in ks.path else False
        return "\0".join((declaration, f"unreached\0{ks.path}\0{exists}"))
    rules = dig.ignores.rules(root, ks.source.kind, _spec_ignore(snapshot, result, ks))
    from harness.flux.kustomize import generator

    try:
        plan = generator.plan(ks, directory, dig.workspace, rules, mirror=False, check=False)
    except generator.GeneratorError as exc:
        message = str(exc).replace(f"{root}/", "")  # each side's tree is somewhere else
        return "\0".join((declaration, f"generator\0{message}", _tree_digest(dig, directory, root)))
    if plan.empty:
        return "\0".join((declaration, "empty", _tree_digest(dig, directory, root)))
    generated = (plan.file_name, plan.content) if plan.generated else None
    return "\0".join(
        (
            declaration,
            _rules_part(rules, root),
            _closure_digest(dig, directory, root, generated),
        )
    )


def flux_closure(
    repo: Path, snapshot: Snapshot, result: TargetResult, dig: Digester
) -> Closure | None:
    """What a Flux target's build read: its directory's closure taken with the kustomization
    Flux generates in place of the one on disk (`spec.components`, `spec.patches`, a
    directory scan), under its source root; the walk `_flux_inputs` digests. None when it
    cannot be known here (a source that is not this tree, an ExternalArtifact, a build that
    stopped before its directory, an empty scan, an escape)."""
    directory = Path(os.path.abspath(result.target.path))
    ks = _kustomization(_declaration(snapshot, result)[0]) or _bare(repo, directory)
    if ks is None or ks.source.kind == "ExternalArtifact":
        return None
    root, reached = _source_root(repo, directory, ks)
    if not reached:
        return None
    rules = dig.ignores.rules(root, ks.source.kind, _spec_ignore(snapshot, result, ks))
    from harness.flux.kustomize import generator

    try:
        plan = generator.plan(ks, directory, dig.workspace, rules, mirror=False, check=False)
    except generator.GeneratorError:
        return None
    if plan.empty:
        return None
    generated = (plan.file_name, plan.content) if plan.generated else None
    try:
        return dig.walker.closure(directory, root, generated=generated)
    except (EscapeError, OSError):
        return None


def _bare(repo: Path, directory: Path) -> FluxKustomization | None:
    """A Kustomization of the bootstrap source without overrides, building `directory`."""
    if not directory.is_relative_to(repo):
        return None
    rel = directory.relative_to(repo).as_posix()
    return FluxKustomization(
        name=BOOTSTRAP,
        namespace=BOOTSTRAP,
        path=f"./{rel}" if rel != "." else "./",
        source=ObjectRef("GitRepository", BOOTSTRAP, BOOTSTRAP),
    )


def _source_root(repo: Path, directory: Path, ks: FluxKustomization) -> tuple[Path, bool]:
    """(source root, whether the build reached `directory`): the directory is `spec.path`
    under the root, so the root is what is left of it once `spec.path` is taken off."""
    parts = [p for p in ks.path.replace("\\", "/").split("/") if p not in ("", ".")]
    root = directory
    for part in reversed(parts):
        if part == ".." or root.name != part:
            return repo, False
        root = root.parent
    return root, directory.is_dir()


def _tree_digest(dig: Digester, directory: Path, root: Path) -> str:
    """Every file under `directory` (what a failed scan or an empty plan depends on)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            h.update(f"{_relative(root, path)}\0{dig.blobs.of(path) or 'unreadable'}\n".encode())
    return h.hexdigest()


def _rules_part(rules: Rules, root: Path) -> str:
    prefix = str(root).rstrip("/") + "/"
    return json.dumps(
        [[p.text, p.origin.removeprefix(prefix), list(p.domain), p.negated] for p in rules.patterns]
    )


def _relative(repo: Path, path: Path) -> str:
    try:
        return path.relative_to(repo).as_posix()
    except ValueError:
        return path.as_posix()


def _cluster_docs(snapshot: Snapshot, cluster: str | None) -> list[Document]:
    return [
        doc
        for other in snapshot.results.values()
        if other.target.kind == "flux" and other.target.cluster == cluster and other.ok
        for doc in other.documents
    ]


def _declaration(snapshot: Snapshot, result: TargetResult) -> tuple[list[str], list[str]]:
    """The rendered Kustomization object behind a Flux target and its substitution sources,
    owner labels dropped (a move between declaring Kustomizations changes nothing)."""
    parts = result.name.rsplit("/", 2)
    if len(parts) != 3:
        return [], []
    _cluster, namespace, name = parts
    docs = _cluster_docs(snapshot, result.target.cluster)
    texts: list[str] = []
    refs: set[tuple[str, str]] = set()
    for doc in docs:
        if (
            doc.id.group == FLUX_KS_GROUP
            and doc.id.kind == "Kustomization"
            and doc.id.name == name
            and (doc.id.namespace or "flux-system") == namespace
        ):
            texts.append(_without_owner_labels(doc.text))
            refs |= _substitute_from(doc.text)
    sources = [
        _without_owner_labels(doc.text)
        for doc in docs
        if doc.id.group == ""
        and (doc.id.kind, doc.id.name) in refs
        and doc.id.namespace == namespace
    ]
    return texts, sources


def _kustomization(texts: list[str]) -> FluxKustomization | None:
    """The declaration parsed (the first, when two Kustomizations render it)."""
    for text in sorted(texts):
        obj = _load(text)
        if isinstance(obj, dict):
            try:
                return parse_kustomization(obj, "flux-system")
            except SpecError:
                return None
    return None


def _spec_ignore(snapshot: Snapshot, result: TargetResult, ks: FluxKustomization) -> str | None:
    """The source object's `spec.ignore`, when the cluster renders the source."""
    for doc in _cluster_docs(snapshot, result.target.cluster):
        if (
            doc.id.kind == ks.source.kind
            and doc.id.name == ks.source.name
            and (doc.id.namespace or "flux-system") == ks.source.namespace
            and doc.id.group.startswith("source.toolkit.fluxcd.io")
        ):
            obj = _load(doc.text)
            spec = obj.get("spec") if isinstance(obj, dict) else None
            ignore = spec.get("ignore") if isinstance(spec, dict) else None
            return ignore if isinstance(ignore, str) else None
    return None


def _without_owner_labels(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not ln.strip().startswith(OWNER_LABELS))


def _load(text: str) -> Any:
    try:
        return yamlload.load(text)
    except yamlload.YAMLError:
        return None


def _substitute_from(text: str) -> set[tuple[str, str]]:
    obj = _load(text)
    spec = obj.get("spec") if isinstance(obj, dict) else None
    post = spec.get("postBuild") if isinstance(spec, dict) else None
    refs = post.get("substituteFrom") if isinstance(post, dict) else None
    return {
        (str(r.get("kind")), str(r.get("name")))
        for r in (refs if isinstance(refs, list) else [])
        if isinstance(r, dict)
    }
