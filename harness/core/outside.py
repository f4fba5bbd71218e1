"""Objects a cluster has that git does not: the `outside_git:` section of harness.yaml.

Real repos read some objects that are never committed: a Secret created at bootstrap or by
External Secrets and named by `postBuild.substituteFrom`, the GitRepository of another
repo. harness never invents their content, so without a declaration such a target fails.
A declaration says "this exists in the cluster; here are placeholder values":

    outside_git:
      staging:                  # a cluster name, or "*" for every cluster
        objects:
          - kind: Secret
            namespace: flux-system
            name: cluster-secrets
            keys: {SECRET_DOMAIN: placeholder-secret-domain}
          - kind: ConfigMap
            namespace: flux-system
            name: cluster-settings
            any_key: placeholder    # every variable it is asked for reads as this
        sources:
          GitRepository/flux-system/other-repo: ../other-repo   # a local checkout
          GitRepository/apps/dev-team: external                 # skip its targets

An object rendered from git wins over a declaration of the same object. An `any_key`
object answers only variables no other source of the Kustomization defines. Sources map
by `Kind/namespace/name`, `namespace/name` or `name`; a cluster's own entry wins over
`"*"`, which wins over the top-level `sources:` key. The snippets in error messages and
`harness init` are built here, so they always parse back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.core.errors import ConfigError
from harness.core.model import ObjectRef

SECTION = "outside_git"
ANY_CLUSTER = "*"
EXTERNAL = "external"
OBJECT_KINDS = ("ConfigMap", "Secret")
DEFAULT_ANY_KEY = "placeholder"
_OBJECT_KEYS = {"kind", "namespace", "name", "keys", "any_key"}
_CLUSTER_KEYS = {"objects", "sources"}
_SAFE = re.compile(r"^[A-Za-z0-9_./@-]+$")


@dataclass(frozen=True)
class DeclaredObject:
    """A ConfigMap or Secret that exists in the cluster with placeholder values."""

    ref: ObjectRef
    keys: Mapping[str, str] = field(default_factory=dict)
    any_key: str | None = None


@dataclass(frozen=True)
class ClusterDecl:
    """One cluster's (or `*`'s) declarations; a source maps to a directory or None (external)."""

    objects: tuple[DeclaredObject, ...] = ()
    sources: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Resolved:
    """The declarations that apply to one cluster: its own over `*`."""

    objects: Mapping[ObjectRef, DeclaredObject] = field(default_factory=dict)
    # source maps, most specific first: the cluster's own, then `*`
    sources: tuple[Mapping[str, str | None], ...] = ()

    def source(self, ref: ObjectRef, fallback: Mapping[str, str]) -> tuple[bool, str | None]:
        """(found, directory or None for external); the top-level `sources:` comes last."""
        keys = (str(ref), f"{ref.namespace}/{ref.name}", ref.name)
        for layer in (*self.sources, fallback):
            for key in keys:
                if key in layer:
                    return True, layer[key]
        return False, None


def parse(value: Any, where: str) -> dict[str, ClusterDecl]:
    """The `outside_git:` mapping, validated; every problem names the exact key."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f'{where}: {SECTION} must map cluster names (or "*") to declarations')
    out: dict[str, ClusterDecl] = {}
    for cluster, body in value.items():
        at = f"{SECTION}.{cluster}"
        if not isinstance(cluster, str) or not cluster:
            raise ConfigError(f"{where}: {SECTION}: cluster names must be strings")
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise ConfigError(f"{where}: {at} must be a mapping with objects and/or sources")
        unknown = sorted(set(body) - _CLUSTER_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown {at} key(s): {', '.join(map(str, unknown))}")
        objects = _objects(body.get("objects"), f"{at}.objects", where)
        out[cluster] = ClusterDecl(objects, _sources(body.get("sources"), f"{at}.sources", where))
    return out


def _objects(value: Any, at: str, where: str) -> tuple[DeclaredObject, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {at} must be a list")
    seen: set[ObjectRef] = set()
    out = []
    for i, item in enumerate(value):
        here = f"{at}[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: {here} must be a mapping")
        unknown = sorted(set(item) - _OBJECT_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown {here} key(s): {', '.join(map(str, unknown))}")
        kind = item.get("kind")
        if kind not in OBJECT_KINDS:
            raise ConfigError(f"{where}: {here}.kind must be ConfigMap or Secret")
        for key in ("namespace", "name"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise ConfigError(f"{where}: {here}.{key} must be a non-empty string")
        keys = item.get("keys")
        if keys is None:
            keys = {}
        if not isinstance(keys, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in keys.items()
        ):
            raise ConfigError(
                f"{where}: {here}.keys must map variable names to placeholder strings "
                "(quote numbers and booleans)"
            )
        any_key = item.get("any_key")
        if any_key is not None and (not isinstance(any_key, str) or not any_key):
            raise ConfigError(f"{where}: {here}.any_key must be a non-empty placeholder string")
        if "keys" not in item and any_key is None:
            raise ConfigError(f"{where}: {here} needs keys (placeholder values) or any_key")
        ref = ObjectRef(kind, item["namespace"], item["name"])
        if ref in seen:
            raise ConfigError(f"{where}: {here}: {ref} is declared twice")
        seen.add(ref)
        out.append(DeclaredObject(ref, dict(keys), any_key))
    return tuple(out)


def _sources(value: Any, at: str, where: str) -> dict[str, str | None]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {at} must map sources to a directory or {EXTERNAL!r}")
    out: dict[str, str | None] = {}
    for key, target in value.items():
        if not isinstance(key, str) or not isinstance(target, str) or not target:
            raise ConfigError(
                f"{where}: {at}: {key} must be a directory (a local checkout) or {EXTERNAL!r}"
            )
        out[key] = None if target == EXTERNAL else target
    return out


def resolve(decls: Mapping[str, ClusterDecl], names: Iterable[str]) -> Resolved:
    """What applies to a cluster known by any of `names`: its own entry over `*`."""
    objects: dict[ObjectRef, DeclaredObject] = {}
    sources: list[Mapping[str, str | None]] = []
    keys = [ANY_CLUSTER, *dict.fromkeys(n for n in names if n != ANY_CLUSTER)]
    for key in keys:
        decl = decls.get(key)
        if decl is None:
            continue
        objects.update({o.ref: o for o in decl.objects})
        sources.insert(0, decl.sources)
    return Resolved(objects, tuple(sources))


@dataclass(frozen=True)
class SourceRoot:
    """Where a Kustomization's source files are, as the renderer and the hazards see them:
    `repo` (the bootstrap source), `mapped` (a local checkout; `directory` as written in
    harness.yaml, relative to the repo), `external` (not rendered: its targets are skipped)
    or `unmapped` (another repo nobody declared: its targets fail)."""

    kind: Literal["repo", "mapped", "external", "unmapped"]
    directory: str | None = None


def source_root(
    resolved: Resolved, ref: ObjectRef, bootstrap: ObjectRef, fallback: Mapping[str, str]
) -> SourceRoot:
    """The one resolution of a source: the cluster's bootstrap source is the repo; any other
    comes from `outside_git` (the cluster's entry, then `*`), then the top-level `sources:`."""
    if ref == bootstrap:
        return SourceRoot("repo")
    found, mapped = resolved.source(ref, fallback)
    if not found:
        return SourceRoot("unmapped")
    if mapped is None:
        return SourceRoot("external")
    return SourceRoot("mapped", mapped)


def aliases(path: Path, repo: Path) -> tuple[str, ...]:
    """Names a cluster directory answers to in harness.yaml: its basename and its path."""
    if path == repo:
        return (repo.name, ".")
    if path.is_relative_to(repo):
        return (path.name, path.relative_to(repo).as_posix())
    return (path.name, str(path))


def check_clusters(decls: Mapping[str, ClusterDecl], known: Iterable[str], where: str) -> None:
    """A declaration for a cluster that does not exist is a typo: say which ones do."""
    known = sorted(set(known))
    for cluster in decls:
        if cluster != ANY_CLUSTER and cluster not in known:
            names = ", ".join(known) or "none"
            raise ConfigError(
                f"{where}: {SECTION}.{cluster}: no such cluster (clusters: {names}; "
                f'"*" applies to every cluster)'
            )


# -- snippets for messages and `harness init` -------------------------------------------


def placeholder(variable: str) -> str:
    """A value nobody mistakes for a real one, and that is still a valid DNS label part."""
    slug = re.sub(r"[^a-z0-9]+", "-", variable.lower()).strip("-")
    return f"placeholder-{slug}" if slug else DEFAULT_ANY_KEY


def scalar(text: str) -> str:
    """A YAML flow scalar: plain when that reads back as the same string, else quoted."""
    if _SAFE.match(text) and text.lower() not in {
        "true",
        "false",
        "null",
        "yes",
        "no",
        "on",
        "off",
        "~",
    }:
        try:
            float(text)
        except ValueError:
            return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def object_flow(ref: ObjectRef, variables: Iterable[str]) -> str:
    """`{kind: Secret, namespace: ..., name: ..., keys: {VAR: placeholder-var}}`."""
    keys = ", ".join(f"{scalar(v)}: {placeholder(v)}" for v in dict.fromkeys(variables))
    return (
        f"{{kind: {ref.kind}, namespace: {scalar(ref.namespace)}, name: {scalar(ref.name)}, "
        f"keys: {{{keys}}}}}"
    )


@dataclass(frozen=True)
class Gap:
    """Something a cluster reads that is neither in git nor declared (for `harness init`).

    `what` is "object" (a substituteFrom ConfigMap/Secret; `variables` are the keys its
    Kustomization needs), "key" (a declared object lacks `variables`; `detail` is the
    substitution error) or "source" (a source of another repo).
    """

    cluster: str
    what: str
    ref: ObjectRef
    variables: tuple[str, ...] = ()
    detail: str = ""

    def message(self, existing: Mapping[str, ClusterDecl] | None = None) -> str:
        """The target's one-line error: what is missing and the harness.yaml text to add.

        Where `outside_git` (or this cluster's entry) already exists, the text goes into it:
        a second top-level key would silently replace the first.
        """
        existing = existing or {}
        if self.what == "key":
            keys = ", ".join(f"{scalar(v)}: {placeholder(v)}" for v in self.variables)
            return (
                f"{self.detail}; harness.yaml declares {self.ref} outside git without "
                f"{_and(self.variables)}: if the object in the cluster has it, add "
                f"`{keys}` to the keys of {self.ref} under {SECTION}.{self.cluster} "
                "(or the entry that declares it)"
            )
        if self.what == "source":
            entry = f"{scalar(str(self.ref))}: {EXTERNAL}"
            where = _placement(existing, self.cluster, "sources", entry, f"{{{entry}}}")
            return (
                f"source {self.ref} is not this repo and harness.yaml does not map it; "
                f"{where} (or put the path of a local checkout in place of {EXTERNAL})"
            )
        entry = object_flow(self.ref, self.variables)
        where = _placement(existing, self.cluster, "objects", entry, f"[{entry}]")
        return (
            f"substituteFrom {self.ref} is not rendered from git in cluster {self.cluster}; "
            f"if it is created outside git, {where}"
        )


def _placement(
    existing: Mapping[str, ClusterDecl], cluster: str, key: str, entry: str, value: str
) -> str:
    """`add ... to harness.yaml`, nested into what the file already has."""
    if cluster in existing:
        return f"add `{entry}` to {SECTION}.{cluster}.{key} in harness.yaml"
    if existing:
        return f"add `{scalar(cluster)}: {{{key}: {value}}}` under {SECTION}: in harness.yaml"
    return f"add `{SECTION}: {{{scalar(cluster)}: {{{key}: {value}}}}}` to harness.yaml"


def _and(names: Iterable[str]) -> str:
    items = list(names)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
