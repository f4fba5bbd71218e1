"""Helm targets in the render cache (harness/cache/store.py): a release's render is reused while
nothing it reads has changed, and a cache hit loads no Helm library.

The key (cache.key adds the entry format, harness's version and code) is made of:
- the entry schema (`SCHEMA`) and the engine's identity (engine.py `identity`: the SDK
  wheel's version and the RECORD hashes of its files, library included, read without loading
  it; a binary's `helm version`, remembered under the binary's identity as kubectl's is,
  `$HARNESS_HELM_ARGS` and `HELM_*`); the SDK's identity also when a binary renders (charts are
  expanded and `--set` paths parsed by the SDK);
- the chart: a local chart directory's files as Helm loads them (`.helmignore` honoured only
  where its meaning is certain: any negation, character class or escape and nothing is left
  out) and every `file://` dependency directory it names, or a fetched archive's sha256;
- the valuesFiles (their content where they come from the source, else their names), the
  fully merged values (valuesFrom resolved; a Secret's values are already redaction markers,
  so not even the hashed key sees them), the parsed HelmRelease (names, namespaces, CRD
  policies, hooks, tests, post-renderers, common metadata) and the engine's RenderRequest
  (with the cluster's `.Capabilities`, as their digest: capabilities.py);
- the cluster's cluster-scoped custom kinds (they decide which objects get the release
  namespace) and, when post-renderers patch, the kustomize renderer's identity.

An entry holds what every entry holds (the target's documents, already redacted, notes,
sha256, duplicates) plus the chart version and CRD ids. A failed render is never stored, nor
one that downloaded a chart dependency from a repository (what it resolved to is not in the
key); a chart fetched from a repository is resolved over the network as before (source/fetch.py),
and once its archive is on disk its render is keyed by the archive's sha256.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.cache import store as cache_mod
from harness.core import safefile, yamlload
from harness.core.model import Target, TargetResult
from harness.flux.api import secure_join
from harness.flux.helm import sdk
from harness.flux.helm.engine import BinaryEngine, Engine, RenderRequest
from harness.flux.helm.release import HelmRelease
from harness.flux.source import charts
from harness.render import seam
from harness.render.closure import Blobs
from harness.render.kustomize import Renderer

SCHEMA = "helm-entry-v1"
HELMIGNORE = ".helmignore"
_GLOB_UNSURE = re.compile(r"[\[\\!]|\*\*")


@dataclass
class ReleaseCache:
    """What the helm targets of one run share: the render cache, blob ids, memoised digests."""

    cache: cache_mod.RenderCache
    engine: Engine
    renderer: Renderer
    blobs: Blobs = field(default_factory=Blobs)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _engine: str | None = None
    _dirs: dict[str, str] = field(default_factory=dict)
    _archives: dict[str, str] = field(default_factory=dict)

    def key(
        self,
        release: HelmRelease,
        request: charts.ChartRequest,
        chart: Path,
        render: RenderRequest,
        values: str,
        scoped: Iterable[tuple[str, str]],
    ) -> str:
        """The entry's digest; `chart` is the local directory or the fetched archive, `values`
        the merged values (or what the valuesFrom references read, targets._cache_key)."""
        location = request.location
        if isinstance(location, charts.LocalChart):
            chart_part = "dir\0" + self._local_chart(chart)
            files_part = self._values_files(request, location.root)
        else:
            chart_part = f"archive\0{self._archive(chart)}"
            files_part = repr((request.values_files, request.ignore_missing_values_files))
        patched = any(s.get("patches") or s.get("images") for s in release.post_renderers)
        kustomize = seam.Seam(self.renderer).identity() if patched else "no-kustomize"
        return cache_mod.key(
            "helm",
            SCHEMA,
            self.engine_identity(),
            chart_part,
            files_part,
            repr(release),
            repr(render),
            values,
            repr(sorted(scoped)),
            kustomize,
        )

    def get(self, digest: str, target: Target) -> TargetResult | None:
        """The stored result, its HelmInfo completed with the chart version and CRDs."""
        payload = self.cache.get(digest)
        if payload is None or payload.get("schema") != SCHEMA or target.helm is None:
            return None
        version, crds = payload.get("version"), payload.get("crds")
        if not isinstance(version, str) or not isinstance(crds, list):
            return None
        if not all(isinstance(c, str) for c in crds):
            return None
        helm = replace(target.helm, version=version, crds=tuple(crds))
        return seam.result_from_payload(replace(target, helm=helm), payload)

    def put(self, digest: str, result: TargetResult) -> None:
        info = result.target.helm
        if not result.ok or info is None:
            return
        payload = seam.result_payload(result)
        payload.update(schema=SCHEMA, version=info.version, crds=list(info.crds))
        self.cache.put(digest, payload)

    def skip(self) -> None:
        self.cache.skip()

    # -- ingredients -----------------------------------------------------------------------

    def engine_identity(self) -> str:
        with self._lock:
            if self._engine is None:
                if isinstance(self.engine, BinaryEngine):
                    self._remember_version(self.engine)
                    self._engine = f"{self.engine.identity()}\0sdk\0{sdk.identity()}"
                else:
                    self._engine = self.engine.identity()
            return self._engine

    def _remember_version(self, engine: BinaryEngine) -> None:
        """A binary's version as an earlier run asked it, kept under the binary's identity
        (real path, size, inode, times); a script (`#!`, a version manager's shim) is asked."""
        store = self.cache.store
        stamp = seam.binary_stamp(engine.binary)
        if store is None or stamp is None:
            return
        digest = cache_mod.key("helm-binary-version", *stamp)
        payload = store.get_meta(digest)
        known = payload.get("version") if payload is not None else None
        if isinstance(known, str) and known:
            engine.assume_version(known)
        else:
            store.put_meta(digest, {"version": engine.version()})

    def _local_chart(self, chart: Path) -> str:
        """The chart directory and, in order, every `file://` dependency it declares."""
        parts: list[str] = []
        seen: set[str] = set()
        pending = [(".", chart)]
        while pending:
            label, directory = pending.pop(0)
            real = os.path.realpath(directory)
            if real in seen:
                continue
            seen.add(real)
            parts.append(f"{label}\0{self._directory(directory)}")
            for repository in _file_dependencies(directory):
                pending.append((repository, directory / repository.removeprefix("file://")))
        return "\n".join(parts)

    def _directory(self, directory: Path) -> str:
        real = os.path.realpath(directory)
        with self._lock:
            known = self._dirs.get(real)
        if known is not None:
            return known
        h = hashlib.sha256()
        if not os.path.isdir(real):
            h.update(b"missing")
        for rel, path in chart_files(directory):
            h.update(f"{rel}\0{self.blobs.of(path) or 'unreadable'}\n".encode())
        digest = h.hexdigest()
        with self._lock:
            self._dirs[real] = digest
        return digest

    def _archive(self, archive: Path) -> str:
        key = str(archive)
        with self._lock:
            known = self._archives.get(key)
        if known is None:
            known = hashlib.sha256(safefile.read_bytes(archive)).hexdigest()
            with self._lock:
                self._archives[key] = known
        return known

    def _values_files(self, request: charts.ChartRequest, root: Path) -> str:
        rows = [f"ignore-missing={request.ignore_missing_values_files}"]
        for name in request.values_files:
            path = secure_join(root, name)
            blob = self.blobs.of(path) if path.is_file() else None
            rows.append(f"{name}\0{blob or 'missing'}")
        return "\n".join(rows)


def chart_files(chart: Path) -> Iterator[tuple[str, str]]:
    """(relative path, path) of every file Helm's directory loader may read, sorted; only
    what `.helmignore` certainly leaves out is left out (Helm's rules: a pattern without
    `/` matches the base name, one with `/` the whole path, a trailing `/` only directories;
    a matching directory is skipped whole)."""
    rules = _helmignore(chart / HELMIGNORE)
    seen: set[str] = set()

    def walk(directory: str, prefix: str) -> Iterator[tuple[str, str]]:
        real = os.path.realpath(directory)
        if real in seen:  # a symlink loop: Helm fails on it, the digest just stops
            return
        seen.add(real)
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return
        for name in names:
            path = os.path.join(directory, name)
            rel = f"{prefix}{name}"
            is_dir = os.path.isdir(path)
            if _ignored(rules, rel, is_dir):
                continue
            if is_dir:
                yield from walk(path, f"{rel}/")
            else:
                yield rel, path

    yield from walk(str(chart), "")


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    whole_path: bool
    dir_only: bool


def _helmignore(path: Path) -> tuple[_Rule, ...]:
    try:
        return _helmignore_rules(safefile.read_text(path))
    except (OSError, UnicodeDecodeError):
        return ()


def _helmignore_rules(text: str) -> tuple[_Rule, ...]:
    """The rules, or none at all when one is beyond what is mirrored here for certain."""
    rules: list[_Rule] = []
    for line in text.splitlines():
        rule = line.strip()
        if not rule or rule.startswith("#"):
            continue
        if _GLOB_UNSURE.search(rule):
            return ()
        dir_only = rule.endswith("/")
        rule = rule.removesuffix("/")
        whole = "/" in rule
        rule = rule.removeprefix("/")
        if not rule:
            return ()
        rules.append(_Rule(_glob(rule), whole, dir_only))
    return tuple(rules)


def _glob(rule: str) -> re.Pattern[str]:
    """Go's filepath.Match for `*` and `?` (never across `/`); everything else literal."""
    out = []
    for char in rule:
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
    return re.compile("".join(out))


def _ignored(rules: tuple[_Rule, ...], rel: str, is_dir: bool) -> bool:
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        subject = rel if rule.whole_path else rel.rpartition("/")[2]
        if rule.pattern.fullmatch(subject):
            return True
    return False


def _file_dependencies(chart: Path) -> list[str]:
    """`file://` repositories of Chart.yaml dependencies (and a v1 chart's requirements)."""
    out: list[str] = []
    for name in ("Chart.yaml", "requirements.yaml"):
        try:
            meta = yamlload.load(safefile.read_text(chart / name))
        except (OSError, UnicodeDecodeError, yamlload.YAMLError):
            continue
        deps = meta.get("dependencies") if isinstance(meta, dict) else None
        for dep in deps if isinstance(deps, list) else []:
            repository = dep.get("repository") if isinstance(dep, dict) else None
            if isinstance(repository, str) and repository.startswith("file://"):
                out.append(repository)
    return out
