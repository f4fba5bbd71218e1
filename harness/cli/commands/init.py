"""`harness init`: a starter harness.yaml and goldens for a repo that has neither.

Rendering the repo the way `check` would finds what it cannot render from git alone:
substituteFrom objects created outside git and sources of other repos (core/outside.py
`Gap`s). Each round declares them with visible placeholders and renders again, since a
Kustomization that now builds may render children with gaps of their own; it stops when
a round finds nothing new. The result is written as a commented harness.yaml (atomically,
never over an existing one without --force), then the goldens, exactly as `update` would.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli import errors, shared
from harness.cli.context import EXIT_ERROR, EXIT_OK, Common, render_snapshot, renderer_for
from harness.core import atomic, outside, scratch, yamlload
from harness.core import config as config_mod
from harness.core.config import Config
from harness.core.errors import ConfigError
from harness.core.model import Snapshot, TargetResult
from harness.flux.api import KUSTOMIZE_GROUP, ObjectRef
from harness.flux.includes import Includes
from harness.flux.targets import render_flux
from harness.pipeline import goldens
from harness.render.discover import find_repo_root
from harness.report import text
from harness.report.console import escape, render_progress, stderr, stdout

CONFIG_NAME = "harness.yaml"
MAX_ROUNDS = 10


@dataclass
class _Object:
    ref: ObjectRef
    keys: dict[str, None] = field(default_factory=dict)  # ordered set


@dataclass
class _Cluster:
    objects: dict[ObjectRef, _Object] = field(default_factory=dict)
    sources: dict[str, None] = field(default_factory=dict)


@dataclass
class Starter:
    """What init found: cluster entry paths and the declarations it had to add."""

    clusters: dict[str, str] = field(default_factory=dict)  # name -> repo-relative path
    declared: dict[str, _Cluster] = field(default_factory=dict)
    # path targets no Flux Kustomization builds that fail to render here -> their error
    excluded: dict[str, str] = field(default_factory=dict)

    def add(self, gap: outside.Gap, provides: Provides | None = None) -> bool:
        """Record a gap; False when it adds nothing new (the loop has converged).

        `provides` names the keys the git repo says an object will get (its ExternalSecret or
        SealedSecret): such an object is declared with those of the gap's variables only,
        never with another object's keys."""
        cluster = self.declared.setdefault(gap.cluster, _Cluster())
        if gap.what == "source":
            if str(gap.ref) in cluster.sources:
                return False
            cluster.sources[str(gap.ref)] = None
            return True
        known = (provides or {}).get((gap.cluster, gap.ref.kind, gap.ref.namespace, gap.ref.name))
        variables = [v for v in gap.variables if known is None or v in known]
        obj = cluster.objects.get(gap.ref)
        if obj is None:
            cluster.objects[gap.ref] = _Object(gap.ref, dict.fromkeys(variables))
            return True
        new = [v for v in variables if v and v not in obj.keys]
        obj.keys.update(dict.fromkeys(new))
        return bool(new)

    def counts(self) -> tuple[int, int]:
        objects = sum(len(c.objects) for c in self.declared.values())
        sources = sum(len(c.sources) for c in self.declared.values())
        return objects, sources


app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def init(
    force: Annotated[
        bool,
        typer.Option("--force", metavar=shared.FLAG, help="Replace an existing harness.yaml."),
    ] = False,
    repo: shared.RepoOpt = None,
    config: shared.ConfigOpt = None,
    kubectl: shared.KubectlOpt = None,
    kustomize: shared.KustomizeOpt = None,
    jobs: shared.JobsOpt = 0,
    timeout: shared.TimeoutOpt = None,
    strict: shared.StrictOpt = None,
    quiet: shared.QuietOpt = False,
    verbose: shared.VerboseOpt = False,
    helm: shared.HelmOpt = None,
    helm_binary: shared.HelmBinaryOpt = None,
    offline: shared.OfflineOpt = False,
    no_cache: shared.NoCacheOpt = False,
    cache_dir: shared.CacheDirOpt = None,
    debug: shared.DebugOpt = False,
) -> None:
    """Write a starter harness.yaml (clusters, TODO placeholders for objects outside git) and
    the goldens, for a repo that has neither (exit 2 if a target still fails)."""
    c = shared.common(
        repo=repo,
        config=config,
        kubectl=kubectl,
        kustomize=kustomize,
        jobs=jobs,
        timeout=timeout,
        strict=strict,
        quiet=quiet,
        verbose=verbose,
        helm=helm,
        helm_binary=helm_binary,
        offline=offline,
        no_cache=no_cache,
        cache_dir=cache_dir,
    )
    errors.run(lambda: run(c, force), debug)


def run(common: Common, force: bool = False) -> int:
    repo = (common.repo if common.repo is not None else find_repo_root(Path.cwd())).resolve()
    if not repo.is_dir():
        raise ConfigError(f"--repo {repo}: not a directory")
    target = Path(common.config) if common.config is not None else repo / CONFIG_NAME
    existing = [p for p in (target, *(repo / n for n in config_mod.CONFIG_NAMES)) if p.exists()]
    if existing and not force:
        raise ConfigError(
            f"{existing[0]} already exists; harness init writes a new one only with --force "
            "(use `harness update` to refresh the goldens)"
        )
    if existing and common.config is None:
        target = existing[0]  # --force replaces the file harness would read, not a sibling
    starter = Starter()
    cfg = _config(repo, target, starter, common)
    renderer = renderer_for(common, cfg)
    err = stderr()
    for round_ in range(1, MAX_ROUNDS + 1):
        gaps: list[outside.Gap] = []
        with render_progress(common.quiet, f"init: round {round_}") as (on_plan, on_done):
            results = render_flux(
                cfg,
                renderer,
                jobs=config_mod.default_jobs(cfg),
                strict=cfg.strict,
                gaps=gaps,
                on_plan=on_plan,
                on_done=on_done,
            )
        starter.clusters = _cluster_paths(results.values(), repo)
        provides = secret_keys(results.values())
        new = [g for g in gaps if starter.add(g, provides)]
        if not new:
            break
        if not common.quiet:  # progress: the written harness.yaml lists what was declared
            err.print(f"init: round {round_}: {len(new)} missing object(s) or source(s) declared")
        cfg = _config(repo, target, starter, common)
    snapshot = render_snapshot(common, cfg, renderer)
    starter.excluded = unbuilt_failures(snapshot)
    snapshot = replace(
        snapshot,
        results={k: v for k, v in snapshot.results.items() if k not in starter.excluded},
    )
    content = starter_yaml(starter)
    atomic.write(target, content.encode("utf-8"))
    cfg = _apply(config_mod.load(repo, target), common)
    report = goldens.write(cfg.goldens, snapshot)
    text.print_update(snapshot, report, cfg)
    _summary(repo, target, starter, snapshot)
    return EXIT_ERROR if snapshot.errors() else EXIT_OK


def unbuilt_failures(snapshot: Snapshot) -> dict[str, str]:
    """Path targets that fail to render and that no Flux Kustomization builds (neither its
    directory nor one its build reaches): a Talos or bootstrap directory inflating charts
    with `helmCharts:`, a kustomization for another tool. What the cluster receives does not
    depend on them, so init leaves them out (`exclude:`) and says why, instead of making the
    first `check` fail on them. In a repo without Flux clusters the path targets are what
    is judged: nothing is left out."""
    flux = [r.target.path for r in snapshot.results.values() if r.target.kind == "flux"]
    if not flux:
        return {}
    reached = Includes().closure(flux)
    return {
        name: result.error or "render failed"
        for name, result in sorted(snapshot.results.items())
        if result.target.kind == "path"
        and not result.ok
        and Path(os.path.normpath(result.target.path)) not in reached
    }


# (cluster, kind, namespace, name) -> the keys the object will have (None: not known)
Provides = dict[tuple[str, str, str, str], frozenset[str] | None]
EXTERNAL_SECRET = ("external-secrets.io", "ExternalSecret")
SEALED_SECRET = ("bitnami.com", "SealedSecret")


def secret_keys(results: Iterable[TargetResult]) -> Provides:
    """The Secrets the rendered objects create and the keys they will hold: an ExternalSecret
    gives its target (`spec.target.name`, else its own name) the `secretKey` of each
    `spec.data` entry and the keys of `spec.target.template.data` (a `dataFrom` makes the
    keys unknown); a SealedSecret gives its own name the keys of `spec.encryptedData` and
    of its template's data."""
    out: Provides = {}
    for result in results:
        cluster = result.target.cluster
        if not result.ok or cluster is None:
            continue
        for doc in result.documents:
            kind = (doc.id.group, doc.id.kind)
            if kind not in (EXTERNAL_SECRET, SEALED_SECRET):
                continue
            obj = yamlload.load(doc.text)
            spec = obj.get("spec") if isinstance(obj, dict) else None
            if not isinstance(spec, dict):
                continue
            name, keys = _provided(doc.id.name, spec, kind == EXTERNAL_SECRET)
            slot = (cluster, "Secret", doc.id.namespace, name)
            before = out.get(slot, frozenset())
            out[slot] = None if before is None or keys is None else before | keys
    return out


def _provided(own: str, spec: dict[str, Any], external: bool) -> tuple[str, frozenset[str] | None]:
    target = spec.get("target") if isinstance(spec.get("target"), dict) else {}
    template = (target or {}).get("template") if external else spec.get("template")
    template_data = template.get("data") if isinstance(template, dict) else None
    keys = set(template_data) if isinstance(template_data, dict) else set()
    if external:
        name = str((target or {}).get("name") or own)
        if spec.get("dataFrom"):
            return name, None  # extracted or found keys: not known from git
        for item in spec.get("data") or []:
            if isinstance(item, dict) and item.get("secretKey"):
                keys.add(str(item["secretKey"]))
        return name, frozenset(keys)
    encrypted = spec.get("encryptedData")
    keys |= set(encrypted) if isinstance(encrypted, dict) else set()
    return own, frozenset(keys)


def _apply(cfg: Config, common: Common) -> Config:
    """Command-line settings over the file's, as every verb applies them."""
    if common.timeout is not None:
        cfg = replace(cfg, timeout=common.timeout)
    if common.jobs:
        cfg = replace(cfg, jobs=common.jobs)
    if common.strict is not None:
        cfg = replace(cfg, strict=common.strict)
    return cfg


def _config(repo: Path, target: Path, starter: Starter, common: Common) -> Config:
    """The config the starter file will hold, loaded through the real parser."""
    fd, name = tempfile.mkstemp(prefix=scratch.prefix("init"), suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(starter_yaml(starter))
        cfg = config_mod.load(repo, Path(name))
    finally:
        os.unlink(name)
    return _apply(replace(cfg, source_file=target), common)


def _cluster_paths(results: Iterable[TargetResult], repo: Path) -> dict[str, str]:
    """Cluster name -> entry directory: the path of each cluster's root Kustomization, the
    one flux target no other target of its cluster renders (`flux-system` first)."""
    by_cluster: dict[str, list[TargetResult]] = {}
    for result in results:
        if result.target.kind == "flux" and result.target.cluster is not None:
            by_cluster.setdefault(result.target.cluster, []).append(result)
    found: dict[str, str] = {}
    for cluster, members in by_cluster.items():
        renderers: dict[tuple[str, str], set[str]] = {}
        for result in members:
            for doc in result.documents:
                if doc.id.group == KUSTOMIZE_GROUP and doc.id.kind == "Kustomization":
                    key = (doc.id.namespace or "default", doc.id.name)
                    renderers.setdefault(key, set()).add(result.name)
        roots = []
        for result in members:
            _, namespace, name = result.name.rsplit("/", 2)
            if renderers.get((namespace, name), set()) <= {result.name}:
                roots.append((name != "flux-system", len(result.name), result))
        if not roots:
            continue
        path = min(roots, key=lambda r: r[:2])[2].target.path
        found[cluster] = (
            path.relative_to(repo).as_posix() if path.is_relative_to(repo) else str(path)
        )
    return dict(sorted(found.items()))


def starter_yaml(starter: Starter) -> str:
    """The commented harness.yaml; every value a placeholder reads as one."""
    lines = [
        "# harness.yaml, written by `harness init`. Every key is optional; docs/config.md",
        "# in harness's repository lists them all. Run `harness check` after each change.",
        "",
        "# Committed render output that `harness check` compares with; `harness update`",
        "# rewrites it.",
        "goldens: goldens",
    ]
    if starter.clusters:
        lines += [
            "",
            "# Clusters were found automatically (the directories their root Kustomization",
            "# builds: flux bootstrap files, a FluxInstance's sync). Uncomment to pin the list:",
            "# clusters:",
            *(f"#   - {path}" for path in starter.clusters.values()),
        ]
    if starter.excluded:
        lines += [
            "",
            "# Directories no Flux Kustomization builds that kustomize cannot build here, left",
            "# out so that `harness check` judges what the clusters receive (delete a line to",
            "# render that directory again):",
            "exclude:",
            *(
                f"  - {outside.scalar(name)}  # {_short_error(error)}"
                for name, error in starter.excluded.items()
            ),
        ]
    if not any(c.objects or c.sources for c in starter.declared.values()):
        lines += [
            "",
            "# Objects a cluster reads that are not in git (a Secret made at bootstrap, another",
            "# repo's GitRepository) are declared under `outside_git:`; none were needed.",
        ]
        return "\n".join(lines) + "\n"
    lines += [
        "",
        "# What each cluster has that this repo does not. harness never invents real",
        "# values: declared objects give placeholders, and the output shows them as such.",
        f"{outside.SECTION}:",
    ]
    for cluster, decl in sorted(starter.declared.items()):
        if not decl.objects and not decl.sources:
            continue
        lines.append(f"  {outside.scalar(cluster)}:")
        if decl.objects:
            lines += [
                "    objects:",
                "      # TODO: read by postBuild.substituteFrom, not rendered from git. If it is",
                "      # created outside git (bootstrap, External Secrets, ...) keep this entry;",
                "      # values are placeholders (`any_key: placeholder` answers every key).",
                "      # If it belongs in git, commit it there and delete this entry.",
            ]
            for obj in sorted(decl.objects.values(), key=lambda o: o.ref):
                lines += [
                    f"      - kind: {obj.ref.kind}",
                    f"        namespace: {outside.scalar(obj.ref.namespace)}",
                    f"        name: {outside.scalar(obj.ref.name)}",
                ]
                if obj.keys:
                    lines.append("        keys:")
                    lines += [
                        f"          {outside.scalar(k)}: {outside.placeholder(k)}" for k in obj.keys
                    ]
                else:
                    lines.append("        keys: {}  # no variable of it is used yet")
        if decl.sources:
            lines += [
                "    sources:",
                "      # TODO: another repo's source. `external` skips the Kustomizations built",
                "      # from it; put the path of a local checkout instead to render them.",
            ]
            lines += [
                f"      {outside.scalar(ref)}: {outside.EXTERNAL}" for ref in sorted(decl.sources)
            ]
    return "\n".join(lines) + "\n"


def _short_error(error: str, limit: int = 90) -> str:
    """An error for a YAML comment: one line, the cause after the file name, cut with `...`."""
    line = error.split(": kustomize: ", 1)[-1].replace("\n", " ")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _summary(repo: Path, target: Path, starter: Starter, snapshot: Snapshot) -> None:
    out = stdout()
    paths = sum(1 for r in snapshot.results.values() if r.target.kind == "path")
    flux = len(snapshot.results) - paths
    objects, sources = starter.counts()
    clusters = ", ".join(starter.clusters) or "none"
    shown = target.relative_to(repo).as_posix() if target.is_relative_to(repo) else str(target)
    out.print(
        f"init: {paths} path targets, {flux} flux targets "
        f"({len(snapshot.skipped)} skipped), clusters: {escape(clusters)}"
    )
    out.print(
        f"init: wrote {escape(shown)} with {objects} placeholder object(s) and "
        f"{sources} external source(s) marked TODO"
    )
    if starter.excluded:
        names = list(starter.excluded)
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        out.print(
            f"init: left out {len(names)} director{'y' if len(names) == 1 else 'ies'} no Flux "
            f"Kustomization builds, which fail to render here (exclude: in {escape(shown)}): "
            f"{escape(', '.join(names[:5]))}{more}"
        )
    if snapshot.errors():
        out.print("next: fix the errors above, then run `harness update`")
    elif objects or sources:
        out.print(f"next: review the TODO entries in {escape(shown)}, then run `harness check`")
    else:
        out.print("next: commit harness.yaml and goldens/, then run `harness check`")
