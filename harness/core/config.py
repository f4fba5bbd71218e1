"""`harness.yaml` at the repo root: optional; every key has a default."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.core import confine, limits, outside, safefile, yamlload
from harness.core.errors import ConfigError

CONFIG_NAMES = ("harness.yaml", "harness.yml", ".harness.yaml")
DEFAULT_KUBECTL_FLAGS = ("--load-restrictor", "LoadRestrictionsNone")
# `helm.kube_version`'s default: helm-python-sdk 0.2.2's own client-only KubeVersion (Helm
# takes it from the client-go it was built with), so both engines agree out of the box
DEFAULT_KUBE_VERSION = "v1.36.0"
_KUBE_VERSION = re.compile(r"^v?\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
_API_VERSION = re.compile(r"^(?:[a-z0-9.-]+/)?v[0-9a-z]+(?:/[A-Za-z][A-Za-z0-9]*)?$")
HELM_KEYS = ("enabled", "targets", "kube_version", "api_versions", "chart_metadata")
# labels and annotations (globs) of a chart's own metadata, said once per release when a
# chart bump changes them (compare/chartmeta.py)
DEFAULT_CHART_METADATA = ("helm.sh/chart", "app.kubernetes.io/version", "chart", "checksum/*")


@dataclass(frozen=True)
class Suppression:
    rule: str
    reason: str
    id: str = ""
    target: str = ""


@dataclass(frozen=True)
class Preinstalled:
    """A `preinstalled:` entry: CRDs (`group` or `group/Kind`), Helm releases
    (`namespace/name`) and Namespaces that exist before Flux's first reconcile."""

    reason: str
    crds: tuple[str, ...] = ()
    helmreleases: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()


@dataclass(frozen=True)
class Config:
    """Resolved settings; paths are absolute."""

    repo: Path
    goldens: Path
    include: tuple[str, ...] = ("**",)
    exclude: tuple[str, ...] = ()
    kubectl_flags: tuple[str, ...] = DEFAULT_KUBECTL_FLAGS
    timeout: float = 60.0
    jobs: int = 0
    clusters: tuple[str, ...] = ()
    sources: dict[str, str] = field(default_factory=dict)
    strict: bool = True
    ignore_fields: tuple[str, ...] = ()
    suppress: tuple[Suppression, ...] = ()
    comment_id: str = "harness:comment"
    comment_budget: int = 65536
    source_file: Path | None = None
    # objects and sources that exist in the cluster but not in git (core/outside.py)
    outside_git: dict[str, outside.ClusterDecl] = field(default_factory=dict)
    helm: bool = False
    helm_targets: tuple[str, ...] = ()  # `helm: [globs]`: only these helm targets
    # `.Capabilities` of every chart (flux/helm/capabilities.py)
    helm_kube_version: str = DEFAULT_KUBE_VERSION
    # `helm.kube_version: {cluster: version}`: per cluster, over helm_kube_version ("*")
    helm_kube_versions: dict[str, str] = field(default_factory=dict)
    helm_api_versions: tuple[str, ...] = ()
    helm_chart_metadata: tuple[str, ...] = DEFAULT_CHART_METADATA
    preinstalled: tuple[Preinstalled, ...] = ()
    # what one run may use: file and output sizes, renderer memory (core/limits.py)
    limits: limits.Limits = limits.DEFAULT
    # one line each, for a warning: what the config said and was not taken (a limit held)
    notes: tuple[str, ...] = ()

    def kube_version_of(self, cluster: str) -> str:
        """The Kubernetes version of `cluster`: its Helm capabilities and api-reject's schemas."""
        return self.helm_kube_versions.get(cluster, self.helm_kube_version)


_KNOWN = {
    "goldens",
    "include",
    "exclude",
    "kubectl_flags",
    "timeout",
    "jobs",
    "clusters",
    "sources",
    "strict",
    "ignore_fields",
    "suppress",
    "comment",
    "outside_git",
    "helm",
    "preinstalled",
    "limits",
}


def find_config(repo: Path) -> Path | None:
    for name in CONFIG_NAMES:
        candidate = repo / name
        if candidate.is_file():
            return candidate
    return None


def load(repo: Path, path: Path | None = None) -> Config:
    """Read the config file (if any) and validate every key; unknown keys are errors."""
    repo = repo.resolve()
    source = path or find_config(repo)
    raw: dict[str, Any] = {}
    if source is not None:
        try:
            loaded = yamlload.load(safefile.read_text(source))
        except (OSError, UnicodeDecodeError, yamlload.YAMLError) as exc:
            raise ConfigError(f"{source}: cannot read config: {_first_line(exc)}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{source}: config must be a mapping")
        raw = loaded
        unknown = sorted(set(raw) - _KNOWN)
        if unknown:
            raise ConfigError(f"{source}: unknown config key(s): {', '.join(unknown)}")
    where = str(source) if source else "config"
    goldens = Path(_str(raw, "goldens", "goldens", where))
    comment = raw.get("comment") or {}
    if not isinstance(comment, dict):
        raise ConfigError(f"{where}: comment must be a mapping")
    unknown_comment = sorted(set(comment) - {"id", "budget"})
    if unknown_comment:
        raise ConfigError(f"{where}: unknown comment key(s): {', '.join(unknown_comment)}")
    budget = comment.get("budget", 65536)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1024:
        raise ConfigError(f"{where}: comment.budget must be an integer >= 1024")
    if not isinstance(comment.get("id", ""), str):
        raise ConfigError(f"{where}: comment.id must be a string")
    helm = _helm(raw.get("helm", False), where)
    bounds, notes = _limits(raw.get("limits"), where)
    return Config(
        repo=repo,
        goldens=_goldens(repo, goldens, where),
        include=_strs(raw, "include", ("**",), where),
        exclude=_strs(raw, "exclude", (), where),
        kubectl_flags=_strs(raw, "kubectl_flags", DEFAULT_KUBECTL_FLAGS, where),
        timeout=_number(raw, "timeout", 60.0, where),
        jobs=int(_number(raw, "jobs", 0, where)),
        clusters=_strs(raw, "clusters", (), where),
        sources=_str_map(raw, "sources", where),
        strict=bool(raw.get("strict", True)),
        ignore_fields=_strs(raw, "ignore_fields", (), where),
        suppress=_suppressions(raw, where),
        comment_id=str(comment.get("id", "harness:comment")),
        comment_budget=budget,
        source_file=source,
        outside_git=outside.parse(raw.get("outside_git"), where),
        helm=helm.enabled,
        helm_targets=helm.targets,
        helm_kube_version=helm.kube_version,
        helm_kube_versions=dict(helm.kube_versions),
        helm_api_versions=helm.api_versions,
        helm_chart_metadata=helm.chart_metadata,
        preinstalled=_preinstalled(raw, where),
        limits=bounds,
        notes=notes,
    )


def overridden(
    config: Config,
    *,
    timeout: float | None = None,
    jobs: int = 0,
    strict: bool | None = None,
    helm: bool | None = None,
) -> Config:
    """The config with a command's (or an API call's) options over it: one rule for the CLI
    and `harness.api`, so a flag and a keyword mean the same."""
    if timeout is not None:
        config = replace(config, timeout=timeout)
    if jobs:
        config = replace(config, jobs=jobs)
    if strict is not None:
        config = replace(config, strict=strict)
    if helm is not None:
        config = replace(config, helm=helm)
    return config


def default_jobs(config: Config) -> int:
    return config.jobs or os.cpu_count() or 2


def checkout(repo: Path) -> Path:
    """The checkout `repo` lies in (confine.py): what a repo's config may name for harness
    to write stays in it."""
    return confine.checkout(repo)


def _goldens(repo: Path, raw: Path, where: str) -> Path:
    """`goldens:` resolved; it must stay inside the checkout (symlinks resolved) and be a
    directory if it exists. The config comes with the tree, a pull request's too: a path
    it names must never let `update` create or write files elsewhere on the machine."""
    try:
        path = confine.from_config(raw, repo, "goldens", where)
    except confine.OutsideError as exc:
        raise ConfigError(str(exc)) from None
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{where}: goldens {str(raw)!r} ({path}) is not a directory")
    return path


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _str(raw: dict[str, Any], key: str, default: str, where: str) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {key} must be a non-empty string")
    return value


def _strs(raw: dict[str, Any], key: str, default: tuple[str, ...], where: str) -> tuple[str, ...]:
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    return tuple(value)


@dataclass(frozen=True)
class _Helm:
    enabled: bool = False
    targets: tuple[str, ...] = ()
    kube_version: str = DEFAULT_KUBE_VERSION
    kube_versions: tuple[tuple[str, str], ...] = ()  # (cluster, version), "*" not among them
    api_versions: tuple[str, ...] = ()
    chart_metadata: tuple[str, ...] = DEFAULT_CHART_METADATA


def _helm(value: Any, where: str) -> _Helm:
    """`helm: true|false`, a list of helm target globs (enables only those), or a mapping
    `{enabled, targets, kube_version, api_versions, chart_metadata}` (enabled by default)."""
    if value is None or isinstance(value, bool):
        return _Helm(enabled=bool(value))
    if isinstance(value, list) and value:
        return _Helm(enabled=True, targets=_globs(value, f"{where}: helm"))
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where}: helm must be true, false, a list of helm target globs or a mapping"
        )
    unknown = sorted(set(value) - set(HELM_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown helm key(s): {', '.join(unknown)}")
    enabled = value.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: helm.enabled must be true or false")
    targets = value.get("targets") or []
    kube_version = value.get("kube_version", DEFAULT_KUBE_VERSION)
    per_cluster: dict[str, str] = {}
    if isinstance(kube_version, dict):
        # per cluster: {staging: v1.33.4+k3s1, "*": v1.36.0}; "*" (else the default) for others
        for cluster, version in kube_version.items():
            if not isinstance(cluster, str) or not cluster:
                raise ConfigError(f'{where}: helm.kube_version keys must be cluster names or "*"')
            per_cluster[cluster] = _kube_version(version, f"helm.kube_version.{cluster}", where)
        kube_version = per_cluster.pop("*", DEFAULT_KUBE_VERSION)
    else:
        kube_version = _kube_version(kube_version, "helm.kube_version", where)
    apis = _strs(value, "api_versions", (), f"{where}: helm")
    for api in apis:
        if not _API_VERSION.match(api):
            raise ConfigError(
                f"{where}: helm.api_versions entry {api!r} must be group/version or "
                "group/version/Kind (monitoring.coreos.com/v1/ServiceMonitor)"
            )
    chart_metadata = _strs(value, "chart_metadata", DEFAULT_CHART_METADATA, f"{where}: helm")
    return _Helm(
        enabled=enabled,
        targets=_globs(targets, f"{where}: helm.targets") if targets else (),
        kube_version=kube_version,
        kube_versions=tuple(sorted(per_cluster.items())),
        api_versions=apis,
        chart_metadata=chart_metadata,
    )


def _kube_version(value: Any, key: str, where: str) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ConfigError(  # YAML reads 1.30 as the number 1.3
            f"{where}: {key} must be a string: quote it ('{value}')"
        )
    if not isinstance(value, str) or not _KUBE_VERSION.match(value.strip()):
        raise ConfigError(
            f"{where}: {key} {value!r} is not a Kubernetes version like "
            "v1.33.0 (or 1.33, v1.33.4+k3s1)"
        )
    return value.strip()


def _limits(value: Any, where: str) -> tuple[limits.Limits, tuple[str, ...]]:
    """`limits:` (limits.KEYS): bytes, or sizes like `64MiB`; `archive_entries` a count.
    Held to the ceiling (limits.ceiling: the defaults, or `$HARNESS_LIMITS`): the tree may
    tighten its bounds, never loosen them; each value held is one warning."""
    try:
        top = limits.ceiling()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if value is None:
        return top, ()
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: limits must be a mapping")
    unknown = sorted(set(value) - set(limits.KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown limits key(s): {', '.join(map(str, unknown))}")
    sizes: dict[str, int] = {}
    notes: list[str] = []
    for key, raw in value.items():
        if key == "archive_entries" and (isinstance(raw, str) or not limits.parse_size(raw)):
            raise ConfigError(f"{where}: limits.{key} must be a positive integer")
        size = limits.parse_size(raw)
        if size is None or (size == 0 and key != "memory_bytes"):
            raise ConfigError(
                f"{where}: limits.{key} must be a size in bytes (an integer, or like 64MiB)"
                + (", or 0 for none" if key == "memory_bytes" else "")
            )
        bound = getattr(top, key)
        if limits.looser(key, size, bound):
            shown = "0 (none)" if size == 0 else str(raw)
            notes.append(
                f"{where}: limits.{key} {shown} is looser than {_bound(key, bound)}, which "
                f"applies: a tree cannot loosen its own bounds (set {limits.ENV}={key}=... "
                "where harness runs to allow it)"
            )
            size = bound
        sizes[key] = size
    return limits.Limits(**{**vars(top), **sizes}), tuple(notes)


def _bound(key: str, bound: int) -> str:
    return f"{bound:,}" if key == "archive_entries" else limits.human(bound)


def _globs(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ConfigError(f"{where} must be a list of helm target globs")


def _number(raw: dict[str, Any], key: str, default: float, where: str) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"{where}: {key} must be a non-negative number")
    return float(value)


def _str_map(raw: dict[str, Any], key: str, where: str) -> dict[str, str]:
    value = raw.get(key) or {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f"{where}: {key} must map names to directories")
    return dict(value)


def _suppressions(raw: dict[str, Any], where: str) -> tuple[Suppression, ...]:
    items = raw.get("suppress") or []
    if not isinstance(items, list):
        raise ConfigError(f"{where}: suppress must be a list")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or (not item.get("rule") and not item.get("id")):
            raise ConfigError(f"{where}: suppress[{i}] needs a rule or an id")
        reason = item.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f"{where}: suppress[{i}] needs a reason")
        out.append(
            Suppression(
                rule=str(item.get("rule", "")),
                reason=reason,
                id=str(item.get("id", "")),
                target=str(item.get("target", "")),
            )
        )
    return tuple(out)


_PREINSTALLED_KEYS = ("crds", "helmreleases", "namespaces")


def _preinstalled(raw: dict[str, Any], where: str) -> tuple[Preinstalled, ...]:
    """`preinstalled: [{crds|helmreleases|namespaces: [...], reason, clusters?}]`."""
    items = raw.get("preinstalled") or []
    if not isinstance(items, list):
        raise ConfigError(f"{where}: preinstalled must be a list")
    out = []
    for i, item in enumerate(items):
        here = f"{where}: preinstalled[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{here} must be a mapping")
        unknown = sorted(set(item) - {*_PREINSTALLED_KEYS, "reason", "clusters"})
        if unknown:
            raise ConfigError(f"{here}: unknown key(s): {', '.join(unknown)}")
        reason = item.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f"{here} needs a reason")
        values = {k: _strs(item, k, (), here) for k in (*_PREINSTALLED_KEYS, "clusters")}
        if not any(values[k] for k in _PREINSTALLED_KEYS):
            raise ConfigError(f"{here} needs crds, helmreleases or namespaces")
        for crd in values["crds"]:
            group, _sep, kind = crd.partition("/")
            if not group or "." not in group or (_sep and not kind) or "/" in kind:
                raise ConfigError(
                    f"{here}: crds entry {crd!r} must be an API group (cert-manager.io) "
                    "or group/Kind (cert-manager.io/ClusterIssuer)"
                )
        for release in values["helmreleases"]:
            namespace, _sep, name = release.partition("/")
            if not namespace or not name or "/" in name:
                raise ConfigError(f"{here}: helmreleases entry {release!r} must be namespace/name")
        out.append(
            Preinstalled(
                reason=reason.strip(),
                crds=values["crds"],
                helmreleases=values["helmreleases"],
                namespaces=values["namespaces"],
                clusters=values["clusters"],
            )
        )
    return tuple(out)
