"""What exists in a cluster before Flux's first reconcile: CRDs, Helm releases, Namespaces.

Many repos install the CNI, cert-manager, external-secrets and a handful of CRD bundles out of
band, so that no Kustomization has to wait for them. A custom resource whose CRD is there
before Flux starts cannot deadlock an apply, so `crd-order` must know. Recognised, from the
repo's files alone:

- bootstrap helmfiles (`helmfile*.yaml`, `helmfile/*.yaml`, `helmfile.d/*.yaml`, also
  `.gotmpl`, read as YAML with Go-template actions neutralised): each release is installed
  (`helmfile sync`/`apply`, the chart's CRDs come with it) or, with `--include-crds` in its
  args (or a file named for CRDs), only its CRDs are rendered and applied;
- directories with `bootstrap` in their path outside every Flux Kustomization's `spec.path`
  (a `kubectl apply -k bootstrap/...` before Flux): the CRDs and Namespaces they render;
- Talos machine configs / talconfig `inlineManifests` (read) and `extraManifests` (URLs: not
  fetched, judged by name), and k3s auto-deploy directories (`.../server/manifests`): CRDs,
  Namespaces and k3s `HelmChart` releases;
- the config's `preinstalled:` entries (CRD groups or group/Kind, Helm releases, Namespaces,
  each with a reason).

Every provision carries a sentence saying how it was recognised, which findings quote. In a
repo with several clusters, a file below a directory named after one cluster applies to that
cluster only. Whether a file names Talos manifests at all is remembered by its stat
(core/filefacts.py), so a rescan of an unchanged tree (`harness watch`) reads none of the
files that do not.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.core import run, safefile, yamlload
from harness.core.config import Preinstalled
from harness.core.filefacts import RACY_SECONDS, directory_stamp, stamp
from harness.flux.helm.capabilities import crd_apis
from harness.flux.ksgraph import parse
from harness.hazards.installers import chart_basename, installs
from harness.hazards.k8s import CRD_ID
from harness.hazards.scope import Scope
from harness.render.discover import walk

if TYPE_CHECKING:
    from harness.hazards.sources import SourceIndex


class IndexedScope(Scope, Protocol):
    """What the preinstalled scan reads: the scope and its source index."""

    @property
    def source_index(self) -> SourceIndex: ...


SUFFIXES = (".yaml", ".yml", ".gotmpl", ".j2", ".tmpl", ".tpl")
HELMCHART = ("helm.cattle.io", "HelmChart")
_WHOLE_LINE_ACTION = re.compile(r"^\s*(\{\{.*\}\}|\{%.*%\}|\{#.*#\})\s*$")
_INLINE_ACTION = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}")
_MAX_BYTES = 2 << 20
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class Provision:
    """One out-of-band installation: what it provides, and how harness recognised it.

    `crds` holds (group, kind) pairs, kind "" meaning every kind of the group; `names` are
    release/chart names matched against API groups like a HelmRelease's (installers.py);
    `apis` the `group/version` and `group/version/Kind` entries of CRD objects read in full
    (a chart's `.Capabilities.APIVersions`, flux/helm/capabilities.py).
    """

    source: str
    file: str
    how: str
    crds: frozenset[tuple[str, str]] = frozenset()
    release: tuple[str, str] | None = None
    names: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    clusters: tuple[str, ...] | None = None
    apis: frozenset[str] = frozenset()

    def applies(self, cluster: str) -> bool:
        return self.clusters is None or cluster in self.clusters

    def provides_crd(self, group: str, kind: str, extra_names: Iterable[str] = ()) -> bool:
        if (group, kind) in self.crds or (group, "") in self.crds:
            return True
        names = set(self.names) | set(extra_names)
        return bool(names) and installs(names, group)


@dataclass(frozen=True)
class Inventory:
    """Every provision found; lookups answer with the provision (its `how` is the reason)."""

    provisions: tuple[Provision, ...] = ()

    def crd(
        self, cluster: str, group: str, kind: str, releases: Iterable[tuple[str, str]] = ()
    ) -> Provision | None:
        """What preinstalls the CRD of `group`/`kind`: an exact CRD, a release judged to
        install the group by name, or a release matching one of `releases` (namespace,
        name) of the HelmReleases judged to install it."""
        wanted = set(releases)
        for p in self.provisions:
            if not p.applies(cluster):
                continue
            if (group, kind) in p.crds or (group, "") in p.crds:
                return p
        for p in self.provisions:
            if p.applies(cluster) and p.release is not None and p.release in wanted:
                return p
        for p in self.provisions:
            if p.applies(cluster) and p.names and installs(p.names, group):
                return p
        return None

    def release(self, cluster: str, namespace: str, name: str) -> Provision | None:
        for p in self.provisions:
            if p.applies(cluster) and p.release == (namespace, name):
                return p
        return None

    def namespace(self, cluster: str, name: str) -> Provision | None:
        for p in self.provisions:
            if p.applies(cluster) and name in p.namespaces:
                return p
        return None

    def apis(self, cluster: str) -> frozenset[str]:
        """What the preinstalled CRDs read in full serve in `cluster`."""
        return frozenset(a for p in self.provisions if p.applies(cluster) for a in p.apis)


# -- reading templated YAML --------------------------------------------------------------------


def neutralise(text: str) -> str:
    """Go-template / Jinja text made YAML-parsable: whole-line actions dropped, inline ones
    replaced by a placeholder word."""
    lines = []
    for line in text.splitlines():
        if _WHOLE_LINE_ACTION.match(line):
            continue
        lines.append(_INLINE_ACTION.sub("TEMPLATED", line))
    return "\n".join(lines)


def load_documents(text: str) -> list[Any]:
    """Each `---` document that parses (after neutralising templates); others skipped."""
    out: list[Any] = []
    for chunk in re.split(r"(?m)^---[ \t]*(?:#.*)?$", neutralise(text)):
        if not chunk.strip():
            continue
        try:
            for doc in yamlload.load_all(chunk):
                if doc is not None:
                    out.append(doc)
        except yamlload.YAMLError:
            continue
    return out


def _objects(docs: Iterable[Any]) -> Iterator[dict[str, Any]]:
    for doc in docs:
        if (
            isinstance(doc, dict)
            and doc.get("kind") == "List"
            and isinstance(doc.get("items"), list)
        ):
            yield from (i for i in doc["items"] if isinstance(i, dict))
        elif isinstance(doc, dict) and doc.get("kind") and doc.get("apiVersion"):
            yield doc


def _group(api_version: object) -> str:
    text = str(api_version or "")
    return text.rsplit("/", 1)[0] if "/" in text else ""


def crd_of(obj: dict[str, Any]) -> tuple[str, str] | None:
    """(group, kind) a CustomResourceDefinition object defines."""
    if (_group(obj.get("apiVersion")), obj.get("kind")) != CRD_ID:
        return None
    spec = obj.get("spec")
    names = spec.get("names") if isinstance(spec, dict) else None
    if not isinstance(spec, dict) or not isinstance(names, dict):
        return None
    group, kind = spec.get("group"), names.get("kind")
    if not isinstance(group, str) or not isinstance(kind, str) or "TEMPLATED" in group + kind:
        return None
    return group, kind


@dataclass
class _Found:
    crds: set[tuple[str, str]] = field(default_factory=set)
    apis: set[str] = field(default_factory=set)
    namespaces: set[str] = field(default_factory=set)
    charts: list[tuple[str, str, str]] = field(default_factory=list)  # (ns, name, chart)


def _manifest_contents(objs: Iterable[dict[str, Any]]) -> _Found:
    found = _Found()
    for obj in objs:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        crd = crd_of(obj)
        if crd is not None:
            found.crds.add(crd)
            found.apis |= {a for a in crd_apis(obj) if "TEMPLATED" not in a}
        elif obj.get("kind") == "Namespace" and _group(obj.get("apiVersion")) == "":
            name = meta.get("name")
            if isinstance(name, str) and _DNS_LABEL.match(name):
                found.namespaces.add(name)
        elif (_group(obj.get("apiVersion")), obj.get("kind")) == HELMCHART:
            spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
            assert isinstance(spec, dict)
            name = str(meta.get("name") or "")
            ns = str(spec.get("targetNamespace") or meta.get("namespace") or "default")
            if name:
                found.charts.append((ns, name, str(spec.get("chart") or "")))
    return found


# -- scanning ------------------------------------------------------------------------------------


def _is_helmfile(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    if "templates" in parts[:-1]:
        return False
    return name.startswith("helmfile") or any(p in ("helmfile", "helmfile.d") for p in parts[:-1])


def _is_k3s_manifests(rel: str) -> bool:
    directory = rel.rsplit("/", 1)[0] if "/" in rel else ""
    parts = directory.split("/")
    return directory.endswith("server/manifests") or (
        "manifests" in parts and any("k3s" in p for p in parts)
    )


def _under_bootstrap(rel: str) -> bool:
    return any("bootstrap" in p for p in rel.split("/")[:-1])


_TALOS_FACT = "talos-manifests"


def _names_talos_manifests(text: str) -> bool:
    return "inlineManifests" in text or "extraManifests" in text


def _talos_candidate(path: str) -> bool:
    """Whether the file may be a Talos machine config (it names `inlineManifests` or
    `extraManifests`), remembered by the file's stat (core/filefacts.py): a scan repeated
    over an unchanged tree (`harness watch`, or a later run once the cache directory keeps
    the facts) reads only the files that changed."""
    facts = run.files()
    at, found = facts.get(path, _TALOS_FACT)
    if found is not None:
        return found == "1"
    if at is None or at[0] > _MAX_BYTES:  # not a regular file, or too big: never read
        return False
    try:
        text = safefile.read_text(Path(path))
    except (OSError, UnicodeDecodeError):
        return False
    candidate = _names_talos_manifests(text)
    facts.put(path, _TALOS_FACT, at, "1" if candidate else "0")
    return candidate


class _Scanner:
    def __init__(
        self,
        repo: Path,
        skip: set[Path],
        flux_paths: set[str],
        clusters: Sequence[str],
    ) -> None:
        self.repo = repo
        self.skip = skip
        self.flux_paths = {p for p in flux_paths if p not in ("", ".")}
        self.clusters = list(clusters)
        self.out: list[Provision] = []
        self.bootstrap_targets: list[str] = []
        # what `run` walked: every directory, and every manifest-like file with whether its
        # bytes were read for provisions (a record's check, see `_Record`)
        self.walked: list[str] = []
        self.listings: list[str] = []  # each walked directory's `listing`, in walk order
        self.seen: list[tuple[str, str, bool]] = []  # (rel, path, read)

    def scoped(self, rel: str) -> tuple[str, ...] | None:
        """The clusters a file applies to: those named by one of its directories, else all."""
        if len(self.clusters) < 2:
            return None
        parts = set(rel.split("/")[:-1])
        named = tuple(c for c in self.clusters if c.rsplit("/", 1)[-1] in parts)
        return named or None

    def in_flux_tree(self, rel: str) -> bool:
        return any(rel == p or rel.startswith(p + "/") for p in self.flux_paths)

    def in_bootstrap_target(self, rel: str) -> bool:
        return any(rel.startswith(p + "/") for p in self.bootstrap_targets)

    def files(self) -> Iterator[tuple[str, str]]:
        """(repo-relative path, path) of every manifest-like file, in sorted walk order,
        from the repo's real path (strings: a Path per file cost more than the walk)."""
        root = os.path.realpath(self.repo)
        for dirpath, dirnames, filenames in walk(Path(root), self.skip, {"node_modules"}):
            self.walked.append(dirpath)
            self.listings.append(listing(dirpath, dirnames, filenames))
            # the walk starts at `root` and follows no symlink: every dirpath extends it
            prefix = dirpath[len(root.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
            prefix = prefix + "/" if prefix else ""
            for name in sorted(filenames):
                if name.endswith(SUFFIXES):
                    yield prefix + name, os.path.join(dirpath, name)

    def flagged(self, rel: str) -> bool:
        """Whether the file is read for what its path says (a helmfile, a k3s manifest, a
        bootstrap manifest), whatever its bytes."""
        return (
            _is_helmfile(rel)
            or _is_k3s_manifests(rel)
            or (
                _under_bootstrap(rel)
                and not self.in_flux_tree(rel)
                and not self.in_bootstrap_target(rel)
            )
        )

    def run(self) -> None:
        for rel, path in self.files():
            helmfile = _is_helmfile(rel)
            k3s = _is_k3s_manifests(rel)
            bootstrap = (
                _under_bootstrap(rel)
                and not self.in_flux_tree(rel)
                and not self.in_bootstrap_target(rel)
            )
            if not (helmfile or k3s or bootstrap) and not _talos_candidate(path):
                self.seen.append((rel, path, False))
                continue  # most files: known from their stat alone after the first read
            self.seen.append((rel, path, True))
            try:
                if os.stat(path).st_size > _MAX_BYTES:
                    continue
                text = safefile.read_text(Path(path))
            except (OSError, UnicodeDecodeError):
                continue
            talos = _names_talos_manifests(text)
            if not (helmfile or k3s or bootstrap or talos):
                continue
            docs = load_documents(text)
            if helmfile:
                self.helmfile(rel, docs)
            elif talos:
                self.talos(rel, docs)
            elif k3s:
                self.manifests(rel, docs, "k3s auto-deploy manifest", "k3s applies it at start-up")
            elif bootstrap:
                self.manifests(
                    rel, docs, "bootstrap manifest", "applied before Flux (outside the Flux tree)"
                )

    # -- helmfile ------------------------------------------------------------------------------

    def helmfile(self, rel: str, docs: list[Any]) -> None:
        default_args: list[str] = []
        template_args: dict[str, list[str]] = {}
        releases: list[dict[str, Any]] = []
        default_ns = ""
        default_inherit: list[str] = []
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            defaults = doc.get("helmDefaults")
            if isinstance(defaults, dict):
                default_args += _str_list(defaults.get("args"))
            templates = doc.get("templates")
            if isinstance(templates, dict):
                for tname, tmpl in templates.items():
                    if isinstance(tmpl, dict):
                        template_args[str(tname)] = _str_list(tmpl.get("args"))
            default_inherit += _str_list(doc.get("defaultInherit"))
            if isinstance(doc.get("namespace"), str):
                default_ns = doc["namespace"]
            for release in doc.get("releases") or []:
                if isinstance(release, dict) and isinstance(release.get("name"), str):
                    releases.append(release)
        crd_file = "crd" in rel.rsplit("/", 1)[-1].lower()
        for release in releases:
            name = release["name"]
            if "TEMPLATED" in name:
                continue
            namespace = str(release.get("namespace") or default_ns or "default")
            args = [*default_args, *_str_list(release.get("args"))]
            for tname in _inherited(release.get("inherit")) or default_inherit:
                args += template_args.get(tname, [])
            if release.get("installed") is False and "--include-crds" not in args:
                continue
            chart = str(release.get("chart") or "")
            names = {name, chart_basename(chart)} - {"", "TEMPLATED"}
            crds_only = "--include-crds" in args or crd_file
            what = (
                f"renders the CRDs of release {namespace}/{name}"
                + (" with --include-crds" if "--include-crds" in args else "")
                if crds_only
                else f"installs release {namespace}/{name} (with its chart's CRDs)"
            )
            self.out.append(
                Provision(
                    source="bootstrap helmfile",
                    file=rel,
                    how=f"bootstrap helmfile {rel} {what} before Flux starts",
                    release=(namespace, name),
                    names=frozenset(names),
                    namespaces=frozenset({namespace}) if not crds_only else frozenset(),
                    clusters=self.scoped(rel),
                )
            )

    # -- plain manifests (bootstrap dirs, k3s) -------------------------------------------------

    def manifests(self, rel: str, docs: list[Any], source: str, when: str) -> None:
        found = _manifest_contents(_objects(docs))
        self.add_found(rel, found, source, f"{source} {rel} ({when})")

    def add_found(
        self,
        rel: str,
        found: _Found,
        source: str,
        how: str,
        scope: str = "",
        names: frozenset[str] = frozenset(),
    ) -> None:
        clusters = self.scoped(scope or rel)
        if found.crds or found.namespaces or names:
            self.out.append(
                Provision(
                    source=source,
                    file=rel,
                    how=how,
                    crds=frozenset(found.crds),
                    apis=frozenset(found.apis),
                    names=names,
                    namespaces=frozenset(found.namespaces),
                    clusters=clusters,
                )
            )
        for ns, name, chart in found.charts:
            self.out.append(
                Provision(
                    source=source,
                    file=rel,
                    how=f"{how}: HelmChart installs release {ns}/{name}",
                    release=(ns, name),
                    names=frozenset({name, chart_basename(chart)} - {""}),
                    namespaces=frozenset({ns}),
                    clusters=clusters,
                )
            )

    # -- Talos ---------------------------------------------------------------------------------

    def talos(self, rel: str, docs: list[Any]) -> None:
        for key, value in _find_keys(docs, ("inlineManifests", "extraManifests")):
            if key == "inlineManifests" and isinstance(value, list):
                for item in value:
                    if not isinstance(item, dict) or not isinstance(item.get("contents"), str):
                        continue
                    label = str(item.get("name") or "")
                    found = _manifest_contents(_objects(load_documents(item["contents"])))
                    # An inline manifest named after what it installs (`cilium`): its
                    # operator's CRDs are judged by that name, like a release's.
                    self.add_found(
                        rel,
                        found,
                        "Talos inline manifest",
                        f"Talos inline manifest {label or 'unnamed'!r} in {rel} (applied by "
                        "Talos at boot)",
                        names=frozenset({label} - {""}),
                    )
            elif key == "extraManifests" and isinstance(value, list):
                for url in value:
                    if not isinstance(url, str) or "TEMPLATED" in url:
                        continue
                    words = _url_words(url)
                    if words:
                        self.out.append(
                            Provision(
                                source="Talos extra manifest",
                                file=rel,
                                how=(
                                    f"Talos extraManifests in {rel} applies {url} at boot "
                                    "(not fetched; judged by its name)"
                                ),
                                names=frozenset(words),
                                clusters=self.scoped(rel),
                            )
                        )


def _str_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int | float)]
    return []


def _inherited(value: object) -> list[str]:
    """Template names of a release's `inherit:` (`[{template: default}]` or names)."""
    items = value if isinstance(value, list) else [value] if value else []
    out = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("template"), str):
            out.append(item["template"])
        elif isinstance(item, str):
            out.append(item)
    return out


def _find_keys(docs: Iterable[Any], keys: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    stack = list(docs)
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in keys:
                    yield str(key), value
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _url_words(url: str) -> set[str]:
    """Names in a manifest URL that can identify an installer (`gateway-api`, `cilium`)."""
    path = url.split("://", 1)[-1].split("?", 1)[0]
    parts = [p for p in path.split("/")[1:] if p]
    words: set[str] = set()
    for part in parts:
        stem = re.sub(r"\.(ya?ml|json)$", "", part)
        if stem and not re.fullmatch(
            r"v?\d+(\.\d+)*.*|releases|download|main|master|raw|refs|heads|tags", stem
        ):
            words.add(stem)
    return words


# -- config entries -------------------------------------------------------------------------------


def from_config(entries: Sequence[Preinstalled], config_file: str) -> list[Provision]:
    out = []
    for entry in entries:
        crds = set()
        for crd in entry.crds:
            group, _sep, kind = crd.partition("/")
            crds.add((group, kind))
        clusters = tuple(entry.clusters) or None
        how = f"declared preinstalled in {config_file}: {entry.reason}"
        if crds or entry.namespaces:
            out.append(
                Provision(
                    source="config",
                    file=config_file,
                    how=how,
                    crds=frozenset(crds),
                    namespaces=frozenset(entry.namespaces),
                    clusters=clusters,
                )
            )
        for release in entry.helmreleases:
            ns, _sep, name = release.partition("/")
            out.append(
                Provision(
                    source="config",
                    file=config_file,
                    how=how,
                    release=(ns, name),
                    names=frozenset({name}),
                    namespaces=frozenset({ns}),
                    clusters=clusters,
                )
            )
    return out


# -- entry point --------------------------------------------------------------------------------


def listing(dirpath: str, dirnames: Sequence[str], filenames: Iterable[str]) -> str:
    """What the scan's walk takes from one directory: the subdirectories it descends into
    or passes (a symlink is listed but not entered) and the manifest-like files; equal
    listings walk alike whatever else the directory's stat says (an editor's save by
    rename moves it)."""
    import hashlib

    h = hashlib.sha256()
    for d in dirnames:
        link = os.path.islink(os.path.join(dirpath, d))
        h.update(f"{d}\0{int(link)}\0".encode("utf-8", "surrogateescape"))
    h.update(b"\1")
    for name in sorted(n for n in filenames if n.endswith(SUFFIXES)):
        h.update(name.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


def _bootstrap_targets(ctx: IndexedScope, scanner: _Scanner) -> None:
    """Path targets below a `bootstrap` directory outside the Flux tree (kustomize builds);
    the outermost of nested ones, whose build holds the inner ones."""
    candidates = sorted(
        (
            r
            for r in ctx.snapshot.results.values()
            if r.target.kind == "path"
            and r.ok
            and any("bootstrap" in p for p in r.name.split("/"))
            and not scanner.in_flux_tree(r.name)
        ),
        key=lambda r: r.name,
    )
    names = [r.name for r in candidates]
    outer = [r for r in candidates if not any(r.name.startswith(n + "/") for n in names)]
    scanner.bootstrap_targets = [r.name for r in outer]
    for result in outer:
        rel = result.name
        found = _manifest_contents(parse(doc) for doc in result.documents)
        scanner.add_found(
            rel,
            found,
            "bootstrap kustomize",
            f"kustomize directory {rel} renders it outside the Flux tree (a bootstrap apply)",
            scope=rel + "/",
        )


def scan(
    ctx: IndexedScope,
    entries: Sequence[Preinstalled] = (),
    config_file: str = "harness.yaml",
    cache: Any = None,
) -> Inventory:
    """The inventory of one render: config entries first, then the repo's files. `cache`
    (a RenderCache) keeps what the files gave across runs (`_Record`)."""
    provisions = from_config(entries, config_file)
    if ctx.repo is None:
        return Inventory(tuple(provisions))
    flux_paths: set[str] = set()
    for graph in ctx.graphs.values():
        for node in graph.nodes.values():
            if node.spec_known:
                rel = ctx.source_index.rel_path(node)
                if rel is not None:
                    flux_paths.add(rel)
    repo = os.path.realpath(ctx.repo)
    # each cluster's Flux targets build the same directories: resolve each one once
    directories = {r.target.path for r in ctx.snapshot.results.values() if r.target.kind == "flux"}
    for directory in directories:  # also the synthesised roots, whose spec is unknown
        real = os.path.realpath(directory)  # `Path.resolve().relative_to(repo)`, as strings
        if real == repo:
            flux_paths.add(".")
        elif real.startswith(repo.rstrip(os.sep) + os.sep):
            flux_paths.add(real[len(repo.rstrip(os.sep)) + 1 :].replace(os.sep, "/"))
    skip = {ctx.goldens.resolve()} if ctx.goldens is not None else set()
    scanner = _Scanner(ctx.repo, skip, flux_paths, sorted(ctx.graphs))
    _bootstrap_targets(ctx, scanner)
    record = _Record(cache, scanner) if cache is not None else None
    found = record.load() if record is not None else None
    if found is not None:
        scanner.out.extend(found)
    else:
        before = len(scanner.out)
        scanner.run()
        if record is not None:
            record.save(scanner.out[before:])
    seen: set[Provision] = set()
    unique = []
    for p in [*provisions, *scanner.out]:
        if p not in seen:
            seen.add(p)
            unique.append(p)
    return Inventory(tuple(unique))


# -- the scan remembered across runs --------------------------------------------------------


class _Record:
    """What `_Scanner.run` found in the repo's files, kept in the render cache with the
    stat of everything it walked, so a fresh process (the next `harness diff`) stats the
    tree instead of walking it and asking every file whether it names Talos manifests.

    The entry's key holds what the scan decides by besides the files (the repo's real
    path, the skipped directories, the Flux tree's paths, the bootstrap targets, the
    clusters, harness's own code through the store's key), so any other scan is another
    entry. Its payload is trusted only when every directory the walk listed has its stat
    (core/filefacts.py: an entry added, removed or renamed moves its directory's mtime and
    ctime, so the walk would list the same files), or, where that moved (a file saved by
    writing a new one and renaming it over the old), still has the `listing` it had, and
    every file it read for provisions has its stat. A manifest-like file it did not read
    that changed is asked again (its Talos check, remembered by stat like the scan's own);
    one that now names Talos manifests is a miss. Anything else missing, changed or
    malformed is a miss: the scan runs and the record is written again, unless something
    it walked was modified within `RACY_SECONDS` (its stat may not move when it changes
    again)."""

    KIND = "preinstalled-scan"

    def __init__(self, cache: Any, scanner: _Scanner) -> None:
        from harness.cache.store import key

        self.cache = cache
        self.scanner = scanner
        self.root = os.path.realpath(scanner.repo)
        self.key = key(
            self.KIND,
            self.root,
            "\0".join(sorted(os.path.realpath(p) for p in scanner.skip)),
            "\0".join(sorted(scanner.flux_paths)),
            "\0".join(scanner.bootstrap_targets),
            "\0".join(scanner.clusters),
        )

    def load(self) -> list[Provision] | None:
        """The provisions the files gave, when the tree is still what the record saw."""
        payload = self.cache.get(self.key)
        if payload is None:
            return None
        try:
            dirs, files, rows = payload["dirs"], payload["files"], payload["provisions"]
            if not (isinstance(dirs, list) and isinstance(files, list)):
                return None
            # a stamp is compared for equality with the stat now: a value of another type
            # equals none, so it reads as a change
            for row in dirs:
                rel, names, *at = row
                path = self._path(rel)
                if directory_stamp(path) != tuple(at) and not self._same_names(path, names):
                    return None
            for row in files:
                rel, read, *at = row
                path = self._path(rel)
                if read not in (0, 1):
                    return None
                if stamp(path) == tuple(at):
                    continue
                if read or self.scanner.flagged(rel) or _talos_candidate(path):
                    return None  # its provisions may differ: scan again
            return [_provision(row) for row in _list(rows)]
        except (TypeError, ValueError, KeyError):
            return None

    def _same_names(self, path: str, recorded: object) -> bool:
        """Whether a directory whose stat moved still lists what the walk recorded (a file
        saved by rename); a directory that is now a symlink, or gone, is a change."""
        if directory_stamp(path) is None or not isinstance(recorded, str):
            return False
        for dirpath, dirnames, filenames in walk(Path(path), self.scanner.skip, {"node_modules"}):
            return listing(dirpath, dirnames, filenames) == recorded
        return False

    def _path(self, rel: object) -> str:
        """The path of a repo-relative name from a record: inside the repo, or ValueError
        (an entry names no file elsewhere for harness to stat or read)."""
        if not isinstance(rel, str) or rel.startswith("/") or ".." in rel.split("/"):
            raise ValueError("not a path in the repo")
        return os.path.join(self.root, rel) if rel else self.root

    def save(self, found: list[Provision]) -> None:
        """Keep `found` with the stat of every directory and file the scan walked."""
        cutoff = time.time() - RACY_SECONDS
        top = len(self.root.rstrip(os.sep)) + 1
        dirs: list[list[object]] = []
        for path, names in zip(self.scanner.walked, self.scanner.listings, strict=True):
            at = directory_stamp(path)
            if at is None or at[1] / 1e9 > cutoff:
                return  # changing, or racily new: not remembered
            dirs.append([path[top:].replace(os.sep, "/"), names, *at])
        files: list[list[object]] = []
        for rel, path, read in self.scanner.seen:
            at = stamp(path)
            if at is None or at[1] / 1e9 > cutoff:
                return
            files.append([rel, int(read), *at])
        rows = [_provision_row(p) for p in found]
        self.cache.put(self.key, {"dirs": dirs, "files": files, "provisions": rows})


def _list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError("not a list")
    return value


def _texts(value: object) -> list[str]:
    items = _list(value)
    if not all(isinstance(v, str) for v in items):
        raise ValueError("not strings")
    return items


def _provision_row(p: Provision) -> dict[str, Any]:
    return {
        "source": p.source,
        "file": p.file,
        "how": p.how,
        "crds": sorted([g, k] for g, k in p.crds),
        "release": list(p.release) if p.release is not None else None,
        "names": sorted(p.names),
        "namespaces": sorted(p.namespaces),
        "clusters": list(p.clusters) if p.clusters is not None else None,
        "apis": sorted(p.apis),
    }


def _provision(row: object) -> Provision:
    """A `_provision_row` read back, every field's type checked (ValueError otherwise)."""
    if not isinstance(row, dict):
        raise ValueError("not a provision")
    source, file, how = row["source"], row["file"], row["how"]
    if not all(isinstance(v, str) for v in (source, file, how)):
        raise ValueError("not a provision")
    crds = []
    for pair in _list(row["crds"]):
        group, kind = _texts(pair)
        crds.append((group, kind))
    release = row["release"]
    if release is not None:
        namespace, name = _texts(release)
        release = (namespace, name)
    clusters = row["clusters"]
    return Provision(
        source=source,
        file=file,
        how=how,
        crds=frozenset(crds),
        release=release,
        names=frozenset(_texts(row["names"])),
        namespaces=frozenset(_texts(row["namespaces"])),
        clusters=tuple(_texts(clusters)) if clusters is not None else None,
        apis=frozenset(_texts(row["apis"])),
    )
