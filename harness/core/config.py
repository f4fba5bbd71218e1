"""`harness.yaml` at the repo root: optional; every key has a default."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core import yamlload
from harness.core.errors import ConfigError
from harness.flux.source import outside

CONFIG_NAMES = ("harness.yaml", "harness.yml", ".harness.yaml")
DEFAULT_KUBECTL_FLAGS = ("--load-restrictor", "LoadRestrictionsNone")


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
    # objects and sources that exist in the cluster but not in git (flux/source/outside.py)
    outside_git: dict[str, outside.ClusterDecl] = field(default_factory=dict)
    helm: bool = False
    helm_targets: tuple[str, ...] = ()  # `helm: [globs]`: only these helm targets
    preinstalled: tuple[Preinstalled, ...] = ()


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
            loaded = yamlload.load(source.read_text(encoding="utf-8"))
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
    return Config(
        repo=repo,
        goldens=goldens if goldens.is_absolute() else (repo / goldens).resolve(),
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
        helm=raw.get("helm") not in (None, False, []),
        helm_targets=_helm_targets(raw, where),
        preinstalled=_preinstalled(raw, where),
    )


def default_jobs(config: Config) -> int:
    return config.jobs or os.cpu_count() or 2


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


def _helm_targets(raw: dict[str, Any], where: str) -> tuple[str, ...]:
    """`helm: true|false` or a list of helm target name globs (enables only those)."""
    value = raw.get("helm", False)
    if isinstance(value, bool):
        return ()
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ConfigError(f"{where}: helm must be true, false or a list of helm target globs")


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
