"""The input closure of a kustomize build: every local file it may read, confined to a root.

Two uses, one walk. The render cache keys a build by a digest of these files (relative
paths and contents), so the walk must over-approximate what kustomize reads: resources,
bases, components, crds, every patch form, generator `files`/`envs`/`env`,
`configurations`, `openapi`, `replacements`, Helm values files and chart homes, and plugin
config files. And every build is confined to its source root the way kustomize-controller's
secure filesystem confines it: a `..` that climbs out of the root, or a symlink that
resolves outside it, is an error naming the file, before kustomize runs. So is a file the
build names that kustomize could not finish reading: a device, FIFO or socket (a symlink
to /dev/zero), or a file over `limits.file_bytes` (core/limits.py).

A reference that is not local (a URL, a git or scp-like address, `host.tld/org/repo`, a
Helm chart pulled from a repository) makes the closure *remote*: its content is not in
the tree, so such a build is never cached.

Digests use git's blob ids (`sha1("blob <len>\\0" + content)`), so a checkout of a ref can
take them from `git ls-tree` instead of reading the files, and the working tree and a ref
share cache entries for files that did not change.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import (
    documents,
    filefacts,
    limits,
    memo,
    parsed,
    redaction,
    run,
    safefile,
    secretflow,
    yamlload,
)
from harness.render.discover import KUSTOMIZATION_FILES

PATH_FIELDS = ("crds", "configurations", "patchesStrategicMerge")
DIR_FIELDS = ("resources", "bases", "components")
PLUGIN_FIELDS = ("generators", "transformers", "validators")
GENERATOR_FIELDS = ("configMapGenerator", "secretGenerator", "helmChartInflationGenerator")
# keys of plugin configs (and helmCharts entries) that name files relative to the build root
PLUGIN_FILE_KEYS = ("path", "valuesFile", "envs", "files", "additionalValuesFiles")
DEFAULT_CHART_HOME = "charts"
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")
_HOST_LIKE = re.compile(r"^[\w-]+(\.[\w-]+)+(:\d+)?/")


class EscapeError(Exception):
    """A build would read outside its source root, or a file that is not a regular one or
    is over the size cap (it would hang kustomize or fill memory); the message names it."""


def is_remote(ref: str) -> bool:
    """Whether kustomize would fetch `ref` rather than read it from the tree.

    URLs of any scheme (`file://` too: it is outside the source by construction), git and
    scp-like addresses (`git@host:org/repo`), `github.com/org/repo`-style host paths, and
    anything carrying a `?ref=` query.
    """
    return bool(
        "://" in ref
        or ref.startswith(("git@", "git::", "github.com/", "gitlab.com/", "bitbucket.org/"))
        or _SCP_LIKE.match(ref)
        or "?ref=" in ref
        or "?version=" in ref
    )


def _host_like(ref: str) -> bool:
    """`example.com/org/repo`: remote when no such local path exists (kustomize's order)."""
    return bool(_HOST_LIKE.match(ref))


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class Blobs:
    """Content ids of files for one run, from a `git ls-tree` index where one is given.

    `index` maps absolute paths of regular files to their blob ids (a checkout of a ref);
    everything else is read and hashed once (and not again in a later run while its stat
    is unchanged: the run's file facts, core/filefacts.py). A missing or unreadable file has
    no id.
    """

    def __init__(self, index: Mapping[str, str] | None = None) -> None:
        self._index = dict(index or {})
        self._memo: dict[str, str | None] = {}
        self.read = 0

    def of(self, path: Path | str) -> str | None:
        key = str(path)
        if key in self._memo:
            return self._memo[key]
        found: str | None = self._index.get(key)
        if found is None:
            files = run.files()
            at, found = files.get(key, "blob")
            if found is None and at is not None:
                try:
                    found = git_blob_id(safefile.read_bytes(key))
                    self.read += 1
                except OSError:
                    found = None
                else:
                    files.put(key, "blob", at, found)
        self._memo[key] = found
        return found

    def forget(self, paths: Iterable[str]) -> None:
        """Files whose content changed: their ids are read again (a resident run)."""
        for path in paths:
            self._memo.pop(path, None)


@dataclass(frozen=True)
class Closure:
    """What one build reads, relative to its root; `remote` refs make it uncacheable.

    `entries` are `(kind, relative path)` pairs: `file` (content counts), `missing` (its
    appearance would change the build), `kfiles` (which kustomization file names a
    directory holds, `name|name`), `start` (the built directory).
    """

    root: Path
    entries: tuple[tuple[str, str], ...]
    remote: tuple[str, ...] = ()
    generated: tuple[tuple[str, str], ...] = ()
    # replacements and vars the build declares: where Secret values may be copied to
    flows: secretflow.Flows = secretflow.NONE
    # what its secretGenerators take values from: (`literal`, value), (`env`|`file`, rel)
    secrets: tuple[tuple[str, str], ...] = ()

    @property
    def cacheable(self) -> bool:
        return not self.remote

    def files(self) -> list[str]:
        return [rel for kind, rel in self.entries if kind == "file"]

    def digest(self, blobs: Blobs) -> str:
        """sha256 over relative paths and contents (git blob ids), in a fixed order."""
        h = hashlib.sha256()
        root = str(self.root)
        for kind, rel in self.entries:
            h.update(f"{kind}\0{rel}\0".encode())
            if kind == "file":  # str(root / rel), without building the Path
                h.update((blobs.of(os.path.join(root, rel)) or "unreadable").encode())
            h.update(b"\n")
        for rel, content in self.generated:
            h.update(f"generated\0{rel}\0".encode())
            h.update(hashlib.sha256(content.encode()).digest())
        for ref in self.remote:
            h.update(f"remote\0{ref}\n".encode())
        return h.hexdigest()


class Walker:
    """Closures of many builds in one run; parsed kustomization files are shared.

    Files may change between runs, so a Walker lives for one run only.
    """

    def __init__(self) -> None:
        self._parsed: dict[Path, Any] = {}
        self._real: dict[str, str] = {}
        self._parts: dict[tuple[Path, Path], _Part] = {}
        self._kinds: dict[Path, str | None] = {}
        self._unsafe: dict[Path, str] = {}  # why a file a build names must not be read
        # parts of directories built with a generated kustomization file (Flux's)
        self._generated: dict[tuple[Path, Path, tuple[str, str]], _Part] = {}

    def closure(
        self,
        directory: Path,
        root: Path,
        *,
        generated: tuple[str, str] | None = None,
    ) -> Closure:
        """The closure of building `directory`, confined to `root`.

        `generated` is `(file name, content)` of a kustomization file Flux writes into
        `directory` in place of the one on disk. Raises EscapeError.
        """
        root = Path(os.path.abspath(root))
        start = Path(os.path.abspath(directory))
        top = _Walk(self, root, start, None)
        top.confine(start, None, top.rel(start))
        entries: set[tuple[str, str]] = {("start", top.rel(start))}
        remote: set[str] = set()
        gen: list[tuple[str, str]] = []
        flows: list[secretflow.Flows] = []
        secrets: list[tuple[str, str]] = []
        queue, seen = [start], set()
        while queue:
            here = queue.pop(0)
            if here in seen:
                continue
            seen.add(here)
            if here == start and generated is not None:
                gen_key = (root, here, generated)
                found = self._generated.get(gen_key)
                part = found if found is not None else self._part(root, here, generated)
                self._generated[gen_key] = part
            else:
                memo = self._parts.get((root, here))
                part = memo if memo is not None else self._part(root, here, None)
                self._parts[(root, here)] = part
            if part.error is not None:
                raise EscapeError(part.error)
            entries |= part.entries
            remote.update(part.remote)
            gen.extend(part.generated)
            flows.append(part.flows)
            secrets.extend(part.secrets)
            queue.extend(part.children)
        return Closure(
            root,
            tuple(sorted(entries)),
            tuple(sorted(remote)),
            tuple(gen),
            secretflow.Flows.join(flows),
            tuple(dict.fromkeys(secrets)),
        )

    def _part(self, root: Path, directory: Path, generated: tuple[str, str] | None) -> _Part:
        """What one kustomization directory reads itself (memoised: bases are shared)."""
        walk = _Walk(self, root, directory, generated)
        try:
            walk.kustomization(directory)
        except EscapeError as exc:
            return _Part(frozenset(), (), (), (), str(exc))
        return _Part(
            frozenset(walk.entries),
            tuple(walk.remote),
            tuple(walk.children),
            tuple(walk.gen),
            flows=secretflow.Flows.join(walk.flows),
            secrets=tuple(walk.secrets),
        )

    def forget(self, paths: Iterable[str]) -> None:
        """Forget what depends on the content of these files (absolute paths), for a
        resident process whose files were modified in place (not created, deleted or
        renamed: a path's kind and real path stay as they were). A directory's part depends
        on its kustomization file and the plugin configs it reads, which are entries of the
        part, so a part is dropped when one of its entries names a changed file."""
        changed = {Path(p) for p in paths}
        for path in changed:
            self._parsed.pop(path, None)
        for parts in (self._parts, self._generated):
            for key, part in list(parts.items()):
                prefix = str(key[0]).rstrip("/") + "/"
                rels = {str(p)[len(prefix) :] for p in changed if str(p).startswith(prefix)}
                if rels and any(rel in rels for _kind, rel in part.entries):
                    del parts[key]  # type: ignore[arg-type]

    def parsed(self, path: Path) -> Any:
        found = self._parsed.get(path, _UNSET)
        if found is _UNSET:
            try:
                found = parsed.load(safefile.read_text(path))
            except (OSError, UnicodeDecodeError, yamlload.YAMLError):
                found = None
            self._parsed[path] = found
        return found

    def kind(self, path: Path) -> str | None:
        """`file`, `dir`, `other` or None (absent), following symlinks, one stat per path:
        `Path.is_file`/`is_dir`/`exists` in one call, errors treated as they treat them."""
        if path in self._kinds:
            return self._kinds[path]
        found: str | None
        try:
            st = os.stat(path)
            mode = st.st_mode
        except OSError as exc:
            if exc.errno not in _ABSENT:
                raise
            found = None
        else:
            found = "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"
            if found == "other":
                self._unsafe[path] = safefile.kind(mode)
            elif found == "file" and st.st_size > limits.current().file_bytes:
                cap = limits.human(limits.current().file_bytes)
                self._unsafe[path] = (
                    f"{limits.human(st.st_size)}, over the {cap} file size cap "
                    "(limits.file_bytes in harness.yaml)"
                )
        self._kinds[path] = found
        return found

    def unsafe(self, path: Path) -> str | None:
        """Why kustomize must not be let read `path` (a device, a FIFO, a socket, a file
        over the cap: it would hang or fill memory); None for an ordinary path. After
        `kind`."""
        return self._unsafe.get(path)

    def real(self, path: Path) -> Path:
        """`os.path.realpath` for normalised absolute paths, one lstat per new component."""
        return Path(self.real_str(str(path)))

    def real_str(self, path: str) -> str:
        """`real` on strings (what confinement compares)."""
        found = self._real.get(path)
        if found is None:
            parent = os.path.dirname(path)
            if parent == path:
                found = path
            else:
                candidate = os.path.join(self.real_str(parent), os.path.basename(path))
                found = os.path.realpath(candidate) if os.path.islink(candidate) else candidate
            self._real[path] = found
        return found


_UNSET: Any = object()
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _under(path: str, root: str) -> bool:
    """`Path(path).is_relative_to(root)` for normalised absolute paths, on strings."""
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclass(frozen=True)
class _Part:
    entries: frozenset[tuple[str, str]]
    remote: tuple[str, ...]
    children: tuple[Path, ...]
    generated: tuple[tuple[str, str], ...]
    error: str | None = None
    flows: secretflow.Flows = secretflow.NONE
    secrets: tuple[tuple[str, str], ...] = ()


class _Walk:
    def __init__(
        self,
        walker: Walker,
        root: Path,
        directory: Path,
        generated: tuple[str, str] | None,
    ) -> None:
        self.w = walker
        self.root = root
        self.real_root = walker.real(root)
        self._root = str(root)
        self._real_root = str(self.real_root)
        self._prefix = self._root.rstrip("/") + "/"
        self.start = directory
        self.generated = generated
        self.entries: set[tuple[str, str]] = set()
        self.remote: list[str] = []
        self.gen: list[tuple[str, str]] = []
        self.children: list[Path] = []  # kustomization directories this one reads
        self.flows: list[secretflow.Flows] = []
        self.secrets: list[tuple[str, str]] = []  # secretGenerator inputs (Closure.secrets)

    # -- paths ----------------------------------------------------------------------------

    def rel(self, path: Path) -> str:
        """`path.relative_to(root).as_posix()`, or the path itself outside the root."""
        text = str(path)
        if text == self._root:
            return "."
        if text.startswith(self._prefix):
            return text[len(self._prefix) :]
        return text

    def confine(self, path: Path, via: Path | None, ref: str, field: str = "") -> None:
        """`path` (already normalised) must stay inside the root, symlinks resolved."""
        if not _under(str(path), self._root):
            raise EscapeError(f"{self._what(via, ref, field)} is outside the source root ({path})")
        real = self.w.real_str(str(path))
        if not _under(real, self._real_root):
            raise EscapeError(
                f"{self._what(via, ref, field)}: {self.rel(path)} resolves through a symlink "
                f"to {real}, outside the source root"
            )

    def _what(self, via: Path | None, ref: str, field: str) -> str:
        where = f"{self.rel(via)}: " if via is not None else ""
        return f"{where}{field} '{ref}'" if field else f"{where}'{ref}'"

    def resolve(self, base: Path, ref: str, via: Path, field: str) -> Path | None:
        """The local path `ref` names, confined; None (and recorded) when it is remote."""
        if is_remote(ref):
            self.remote.append(ref)
            return None
        path = Path(os.path.normpath(os.path.join(base, ref)))
        if self.w.kind(path) is None and _host_like(ref):
            self.remote.append(ref)
            return None
        self.confine(path, via, ref, field)
        self.regular(path, via, ref, field)
        return path

    def regular(self, path: Path, via: Path | None, ref: str, field: str = "") -> None:
        """A file the build names must be one kustomize can read and finish: the build
        fails here, naming it, rather than hang on a FIFO or read /dev/zero to the end."""
        why = self.w.unsafe(path) if self.w.kind(path) != "dir" else None
        if why is not None:
            raise EscapeError(f"{self._what(via, ref, field)}: {self.rel(path)} is {why}")

    def file(self, path: Path) -> None:
        kind = self.w.kind(path)
        self.entries.add((kind if kind in ("file", "dir") else "missing", self.rel(path)))

    def tree(self, path: Path, via: Path) -> None:
        """Every file under a directory (a Helm chart home), confined."""
        if self.w.kind(path) != "dir":
            self.entries.add(("missing", self.rel(path)))
            return
        for dirpath, dirnames, filenames in os.walk(path):
            here = Path(dirpath)
            dirnames.sort()
            for name in sorted(filenames):
                child = here / name
                self.confine(child, via, self.rel(child))
                self.regular(child, via, self.rel(child))
                self.entries.add(("file", self.rel(child)))

    # -- kustomization files ---------------------------------------------------------------

    def kustomization(self, directory: Path) -> None:
        rel = self.rel(directory)
        data: Any
        if directory == self.start and self.generated is not None:
            name, content = self.generated
            kfile = directory / name
            self.gen.append((self.rel(kfile), content))
            try:
                data = parsed.load(content)
            except yamlload.YAMLError:
                data = None
        else:
            names = [n for n in KUSTOMIZATION_FILES if self.w.kind(directory / n) == "file"]
            self.entries.add(("kfiles", f"{rel}|{'|'.join(names)}"))
            if not names:
                return  # kustomize fails here; nothing more is read
            kfile = directory / names[0]
            self.confine(kfile, None, self.rel(kfile))
            self.regular(kfile, None, self.rel(kfile))
            self.entries.add(("file", self.rel(kfile)))
            data = self.w.parsed(kfile)
        if isinstance(data, dict):
            self.fields(directory, kfile, data)

    def fields(self, directory: Path, kfile: Path, data: dict[str, Any]) -> None:
        for field in DIR_FIELDS:
            for ref in yamlload.strings(data.get(field)):
                path = self.resolve(directory, ref, kfile, field)
                if path is None:
                    continue
                if self.w.kind(path) == "dir":
                    self.children.append(path)
                else:
                    self.file(path)
        for field in PATH_FIELDS:
            for ref in yamlload.strings(data.get(field)):
                if "\n" in ref:
                    continue  # an inline patch
                path = self.resolve(directory, ref, kfile, field)
                if path is not None:
                    self.file(path)
                    if field == "configurations":
                        self.flows.append(secretflow.from_configuration(_documents(path)))
        if data.get("replacements") or data.get("vars"):
            self.flows.append(secretflow.from_kustomization(data, self._reader(directory, kfile)))
        for field in ("patches", "patchesJson6902", "replacements"):
            for entry in yamlload.mappings(data.get(field)):
                named = entry.get("path")
                if isinstance(named, str) and named:
                    path = self.resolve(directory, named, kfile, field)
                    if path is not None:
                        self.file(path)
        for field in GENERATOR_FIELDS:
            for entry in yamlload.mappings(data.get(field)):
                self.generator_entry(directory, kfile, field, entry)
        openapi = data.get("openapi")
        if isinstance(openapi, dict) and isinstance(openapi.get("path"), str):
            path = self.resolve(directory, openapi["path"], kfile, "openapi")
            if path is not None:
                self.file(path)
        self.helm(directory, kfile, data)
        for field in PLUGIN_FIELDS:
            for ref in yamlload.strings(data.get(field)):
                if "\n" in ref:
                    continue  # an inline plugin config
                path = self.resolve(directory, ref, kfile, field)
                if path is None:
                    continue
                if self.w.kind(path) == "dir":
                    self.children.append(path)
                    continue
                self.file(path)
                self.plugin_config(directory, path)

    def generator_entry(
        self, directory: Path, kfile: Path, field: str, entry: dict[str, Any]
    ) -> None:
        files = [f.partition("=")[2] or f for f in yamlload.strings(entry.get("files"))]
        envs = yamlload.strings(entry.get("envs")) + yamlload.strings([entry.get("env")])
        secret = field == "secretGenerator"
        if secret:
            for literal in yamlload.strings(entry.get("literals")):
                self.secrets.append(("literal", literal.partition("=")[2]))
        for how, refs in (("file", files), ("env", envs)):
            for ref in refs:
                path = self.resolve(directory, ref, kfile, field)
                if path is not None:
                    self.file(path)
                    if secret:
                        self.secrets.append((how, self.rel(path)))

    def helm(self, directory: Path, kfile: Path, data: dict[str, Any]) -> None:
        charts = yamlload.mappings(data.get("helmCharts"))
        if not charts:
            return
        globals_ = data.get("helmGlobals")
        home = DEFAULT_CHART_HOME
        if isinstance(globals_, dict) and isinstance(globals_.get("chartHome"), str):
            home = globals_["chartHome"]
        home_path = self.resolve(directory, home, kfile, "helmGlobals.chartHome")
        for chart in charts:
            # inflated by the `helm` binary kustomize runs, whose version is not in the key
            self.remote.append(f"helm:{chart.get('repo') or home}/{chart.get('name')}")
            refs = yamlload.strings([chart.get("valuesFile")]) + yamlload.strings(
                chart.get("additionalValuesFiles")
            )
            for ref in refs:
                path = self.resolve(directory, ref, kfile, "helmCharts")
                if path is not None:
                    self.file(path)
        if home_path is not None:
            self.tree(home_path, kfile)

    def _reader(self, directory: Path, via: Path) -> Callable[[str], list[Any]]:
        """Documents of a file a replacement names (confined like every read)."""

        def read(ref: str) -> list[Any]:
            path = self.resolve(directory, ref, via, "replacements")  # EscapeError fails it
            if path is None:
                return []
            self.file(path)  # its content is an input of the build
            return _documents(path)

        return read

    def plugin_config(self, directory: Path, config: Path) -> None:
        """Files a generator/transformer config names (HelmChartInflationGenerator, ...)."""
        for doc in _documents(config):
            if not isinstance(doc, dict):
                continue
            for key in PLUGIN_FILE_KEYS:
                value = doc.get(key)
                refs = [value] if isinstance(value, str) else yamlload.strings(value)
                for ref in refs:
                    if "\n" in ref:
                        continue
                    ref = ref.partition("=")[2] or ref
                    path = self.resolve(directory, ref, config, f"{config.name} {key}")
                    if path is not None:
                        self.file(path)
            home = doc.get("chartHome")
            if isinstance(home, str):
                path = self.resolve(directory, home, config, f"{config.name} chartHome")
                if path is not None:
                    self.tree(path, config)
            if doc.get("kind") == "ReplacementTransformer":
                self.flows.append(secretflow.from_transformer(doc, self._reader(directory, config)))
            if doc.get("kind") == "HelmChartInflationGenerator":
                self.remote.append(f"helm:{doc.get('repo') or 'local'}/{doc.get('name')}")
            if _is_function(doc):
                self.remote.append(f"function:{config.name}")


# -- Secret values a build's inputs hold (the run's scrub) -----------------------------------

_LEARNED: memo.Memo[tuple[str, filefacts.Stamp], bool] = memo.Memo("closure-secret-files", 200_000)
# A file that may declare a Secret (or a Flux Kustomization patching one): it names the
# kind, or it escapes characters (`"\x53ecret"` in YAML), which only a parse can read
_MAY_HOLD = (b"Secret", b"\\")
# the fact of a file that holds neither: the scrub's search reads it, if it is ever searched
_PLAIN = ""


def learn_secrets(closure: Closure) -> None:
    """Teach the run's scrub (redaction.known()) every Secret value the build's input files
    hold: the Secrets they declare (plain and base64), the values a Flux Kustomization's
    `spec.patches` writes into one, and its secretGenerators' literals, env files and files;
    and the words those files show outside any Secret, which are names, not secrets.

    Read every run, cached or not, so what is scrubbed never depends on the cache; a file
    is read once per run however many builds share it."""
    learn_inputs(str(closure.root), closure.entries, closure.secrets)


def learn_inputs(
    root: str,
    entries: Iterable[tuple[str, str]],
    secrets: Iterable[tuple[str, str]],
    files: Iterable[str] | None = None,
) -> None:
    """`learn_secrets` of a closure's parts (a build the dependency index remembers);
    `files`: the entries' files as absolute paths, when the caller holds them joined."""
    generated = {ref for how, ref in secrets if how != "literal"}
    learning = _Learning()
    if files is not None and not generated:
        for path in files:
            learning.file(path)
    else:
        for kind, rel in entries:
            if kind == "file" and rel not in generated:
                learning.file(os.path.join(root, rel))
    known = learning.known
    for how, ref in secrets:
        if how == "literal":
            known.add(ref)
            continue
        text = _text(os.path.join(root, ref))
        if text is None:
            continue
        if how == "file":
            known.add(text)
            known.add(text.strip())
            continue
        for line in text.splitlines():  # an env file: KEY=VALUE lines
            key, eq, value = line.strip().partition("=")
            if eq and key and not key.startswith("#"):
                known.add(value)


class _Learning:
    """What one `learn_secrets` call looks up once, not per file: the run's scrub, its file
    facts, the fact's name (it holds the marker mode) and the run's table of learnt files."""

    __slots__ = ("fact", "facts", "known", "learned")

    def __init__(self) -> None:
        self.known = redaction.known()
        self.facts = run.files()
        self.fact = f"shown:{redaction.mode()}"
        current = run.current()
        self.learned = current.table(_LEARNED) if current is not None else None

    def file(self, path: str) -> None:
        at = self.facts.stamp(path)
        if at is None:
            return
        learned = self.learned
        if learned is not None:
            if learned.get((path, at)):
                return
            if len(learned) >= _LEARNED.limit:
                learned.clear()
            learned[(path, at)] = True
        known = self.known
        remembered = self.facts.at(path, self.fact, at)
        if remembered == _PLAIN:  # names no Secret: what it shows is its own text
            known.shown_later(functools.partial(_own_text, path, at))
            return
        if remembered is not None:  # a file with no Secret value: only the names it shows
            known.shown_later(functools.partial(_kept_texts, remembered))
            return
        try:
            data = safefile.read_bytes(path)
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return
        # a kustomization file's secretGenerator literals are values, not names
        kfile = os.path.basename(path) in KUSTOMIZATION_FILES and b"secretGenerator" in data
        if not kfile and not any(needle in data for needle in _MAY_HOLD):
            known.shown(text)
            self.facts.put(path, self.fact, at, _PLAIN)
            return
        try:
            docs = yamlload.load_all(text)
        except yamlload.YAMLError:
            return  # unreadable: its words may be a Secret's, so none is taken as a name
        texts: list[str] = []
        for doc in docs:
            documents.learn(doc)
            if not isinstance(doc, dict):
                continue
            shown = documents.redact(doc) or doc
            if kfile:  # a secretGenerator's literals are values, not names
                shown = {k: v for k, v in shown.items() if k != "secretGenerator"}
            texts.append(yamlload.dump(shown))
            known.shown(texts[-1])
        if not kfile and not any(documents.holds_secret_values(d) for d in docs):
            # what this file teaches the scrub is only these (redacted) texts: kept by its
            # stat (core/filefacts.py), so a later run parses it only when it changes
            self.facts.put(path, self.fact, at, json.dumps(texts))


def _kept_texts(raw: str) -> list[str]:
    """The redacted texts a file fact keeps (JSON); nothing from a malformed one."""
    try:
        texts = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(texts, list):
        return []
    return [t for t in texts if isinstance(t, str)]


def _own_text(path: str, at: filefacts.Stamp) -> list[str]:
    """A plain file's text for the scrub's search (`Known.shown_later`), read only then;
    nothing when it is no longer the file its stat `at` vouched for."""
    if filefacts.stamp(path) != at:
        return []
    text = _text(path)
    return [] if text is None else [text]


def _text(path: str) -> str | None:
    try:
        return safefile.read_text(path)
    except (OSError, UnicodeDecodeError):
        return None


def _documents(path: Path) -> list[Any]:
    try:
        return yamlload.load_all(safefile.read_text(path))
    except (OSError, UnicodeDecodeError, yamlload.YAMLError):
        return []


def _is_function(doc: dict[str, Any]) -> bool:
    """A KRM function (container or exec plugin): its output is not a function of the tree."""
    meta = doc.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if isinstance(annotations, dict) and any(
        k in annotations for k in ("config.kubernetes.io/function", "config.k8s.io/function")
    ):
        return True
    api = str(doc.get("apiVersion") or "")
    return bool(api) and api != "builtin" and not api.startswith("builtin/")
