"""`render`, `diff`, `lint`: the CLI's verbs as calls returning the API's data (model.py).

Each call is one run (core/run.py), as one command is: its own memos and Secret values, the
same render cache the CLI uses (`$HARNESS_CACHE_DIR`, else `~/.cache/harness`, or
`cache_dir`), so a policy test after `harness check` renders nothing again. Nothing prints;
the run's warnings are in `Snapshot.warnings`. A failed target is data (`Target.error`);
only a call that cannot start raises `model.HarnessError`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.api import convert, model
from harness.cache import store as cache_mod
from harness.compare import gate, images, inputs
from harness.compare.analyze import analyze, ignore_patterns
from harness.compare.groups import group, verdict_reasons
from harness.core import config as config_mod
from harness.core import limits, redaction, scratch
from harness.core.config import Config
from harness.core.errors import ConfigError
from harness.core.errors import HarnessError as CoreError
from harness.core.model import Snapshot
from harness.core.run import Run
from harness.hazards import engine
from harness.pipeline import gitref
from harness.pipeline.repo import RenderOptions, render_repo
from harness.render import kustomize
from harness.render.discover import find_repo_root
from harness.report.diff_text import verdict_line

Repo = str | os.PathLike[str]


@dataclass(frozen=True)
class _Settings:
    """The options every call takes, as the CLI's shared options."""

    config: Path | None = None
    kubectl: str | None = None
    kustomize: str | None = None
    jobs: int = 0
    timeout: float | None = None
    strict: bool | None = None
    helm: bool | None = None
    helm_binary: str | None = None
    offline: bool = False
    cache: bool = True
    cache_dir: Path | None = None


@contextlib.contextmanager
def _run() -> Iterator[None]:
    """One run; what stops it is one `model.HarnessError` line, Secret values scrubbed."""
    scratch.sweep()  # temp dirs a killed run left behind, as every command does
    with Run().entered():
        try:
            yield
        except CoreError as exc:
            raise model.HarnessError(redaction.known().scrub(str(exc))) from exc


def _config(repo: Repo | None, s: _Settings) -> Config:
    """The repo's config with the call's options applied; no repo: as the CLI finds it (the
    current directory with a harness.yaml, else the enclosing git root, else it)."""
    root = Path(repo) if repo is not None else find_repo_root(Path.cwd())
    if not root.is_dir():
        raise ConfigError(f"repo {root}: not a directory")
    cfg = config_mod.overridden(
        config_mod.load(root, s.config),
        timeout=s.timeout,
        jobs=s.jobs,
        strict=s.strict,
        helm=s.helm,
    )
    limits.apply(cfg.limits)
    return cfg


def _renderer(cfg: Config, s: _Settings) -> kustomize.Renderer:
    return kustomize.resolve(
        kubectl=s.kubectl, kustomize=s.kustomize, flags=cfg.kubectl_flags, timeout=cfg.timeout
    )


def _preinstalled(cfg: Config) -> Callable[[Snapshot], Mapping[str, frozenset[str]]]:
    """The API versions each cluster's preinstalled CRDs serve (charts' `.Capabilities`),
    as the CLI hands the pipeline."""

    def scan(snapshot: Snapshot) -> Mapping[str, frozenset[str]]:
        from harness.hazards.context import LintContext

        ctx = LintContext(
            snapshot,
            repo=cfg.repo,
            goldens=cfg.goldens,
            sources=cfg.sources,
            outside_git=cfg.outside_git,
            preinstalled_entries=cfg.preinstalled,
            config_file=str(cfg.source_file.name) if cfg.source_file else "harness.yaml",
        )
        return {cluster: ctx.preinstalled.apis(cluster) for cluster in ctx.graphs}

    return scan


def _render(
    cfg: Config,
    renderer: kustomize.Renderer,
    s: _Settings,
    cache: cache_mod.RenderCache | None,
    selection: Sequence[str] = (),
    blobs: Mapping[str, str] | None = None,
) -> Snapshot:
    options = RenderOptions(
        jobs=cfg.jobs,
        strict=cfg.strict,
        selection=tuple(selection),
        helm=cfg.helm,
        helm_binary=s.helm_binary,
        offline=s.offline,
        cache=cache,
        blob_index=blobs,
        preinstalled_apis=_preinstalled(cfg) if cfg.helm else None,
    )
    snapshot = render_repo(cfg, renderer, options)
    warning = cache.warning() if cache is not None else None
    if warning is not None:
        snapshot = replace(snapshot, warnings=(*snapshot.warnings, warning))
    return snapshot


@contextlib.contextmanager
def _cache(s: _Settings) -> Iterator[cache_mod.RenderCache | None]:
    cache = cache_mod.open_cache(cache_mod.Settings(enabled=s.cache, directory=s.cache_dir))
    try:
        yield cache
    finally:
        if cache is not None:
            cache.close()


def render(
    repo: Repo | None = None,
    *,
    targets: Sequence[str] = (),
    config: Path | None = None,
    kubectl: str | None = None,
    kustomize: str | None = None,
    jobs: int = 0,
    timeout: float | None = None,
    strict: bool | None = None,
    helm: bool | None = None,
    helm_binary: str | None = None,
    offline: bool = False,
    cache: bool = True,
    cache_dir: Path | None = None,
) -> model.Snapshot:
    """Render the working tree of `repo` as `harness render` does (every target, or those
    `targets` names or globs select)."""
    s = _Settings(
        config, kubectl, kustomize, jobs, timeout, strict, helm, helm_binary, offline, cache,
        cache_dir,
    )  # fmt: skip
    with _run():
        cfg = _config(repo, s)
        renderer = _renderer(cfg, s)
        with _cache(s) as store:
            snapshot = _render(cfg, renderer, s, store, targets)
        return convert.snapshot(snapshot, cfg.repo)


def _rebased(cfg: Config, root: Path) -> Config:
    """The same settings for a checkout of the repo at `root`."""
    try:
        goldens = root / cfg.goldens.relative_to(cfg.repo)
    except ValueError:
        goldens = cfg.goldens
    return replace(cfg, repo=root, goldens=goldens)


def _side(
    cfg: Config,
    renderer: kustomize.Renderer,
    s: _Settings,
    cache: cache_mod.RenderCache | None,
    ref: str | None,
    resolved: gitref.Resolved,
) -> tuple[Snapshot, model.Snapshot, dict[str, str]]:
    """A ref's render from a temp checkout (gone when this returns), or the working tree's;
    its public form and its failed targets' input digests, taken while the tree exists."""
    if ref is None:
        snapshot = _render(cfg, renderer, s, cache)
        digests = inputs.side_digests(cfg.repo, snapshot)
        return snapshot, convert.snapshot(snapshot, cfg.repo), digests
    with gitref.checkout_ahead(
        cfg.repo, ref, blobs=cache is not None, background=False, resolved=resolved
    ) as pending:
        exported = pending()
        at = _rebased(cfg, exported.checkout.repo)
        snapshot = _render(at, renderer, s, cache, blobs=exported.blobs)
        digests = inputs.side_digests(at.repo, snapshot)
        return snapshot, convert.snapshot(snapshot, at.repo, cfg.repo), digests


def diff(
    repo: Repo | None = None,
    *,
    base: str = "HEAD",
    head: str | None = None,
    config: Path | None = None,
    kubectl: str | None = None,
    kustomize: str | None = None,
    jobs: int = 0,
    timeout: float | None = None,
    strict: bool | None = None,
    helm: bool | None = None,
    helm_binary: str | None = None,
    offline: bool = False,
    cache: bool = True,
    cache_dir: Path | None = None,
) -> model.Diff:
    """Render the git ref `base` and `head` (None: the working tree, uncommitted changes
    included) and judge the difference as `harness diff` does; the repo is never touched."""
    s = _Settings(
        config, kubectl, kustomize, jobs, timeout, strict, helm, helm_binary, offline, cache,
        cache_dir,
    )  # fmt: skip
    with _run():
        cfg = _config(repo, s)
        ignore = ignore_patterns(cfg)
        resolved = gitref.resolve_refs(cfg.repo, [r for r in (base, head) if r is not None])
        renderer = _renderer(cfg, s)
        with _cache(s) as store:
            old, old_public, old_digests = _side(cfg, renderer, s, store, base, resolved)
            new, new_public, new_digests = _side(cfg, renderer, s, store, head, resolved)
        same = inputs.same_inputs(old_digests, new_digests)
        analysis = analyze(old, new, ignore=ignore, same_inputs=same)
        verdict = gate.judge(analysis)
        hazards = engine.diff_for(cfg, old, new, cfg.repo if head is None else None)
        return model.Diff(
            verdict=verdict.verdict,
            summary=redaction.known().scrub(verdict_line(analysis, verdict)),
            base=old_public,
            head=new_public,
            changes=tuple(convert.change(g) for g in group(analysis, verdict_reasons(verdict))),
            images=tuple(convert.image_change(c) for c in images.changes(old, new)),
            errors=tuple((e.target, e.side, e.message) for e in analysis.errors),
            findings=convert.findings(hazards.findings),
        )


def lint(
    repo: Repo | None = None,
    *,
    config: Path | None = None,
    kubectl: str | None = None,
    kustomize: str | None = None,
    jobs: int = 0,
    timeout: float | None = None,
    strict: bool | None = None,
    helm: bool | None = None,
    helm_binary: str | None = None,
    offline: bool = False,
    cache: bool = True,
    cache_dir: Path | None = None,
) -> model.Lint:
    """Render the working tree and run `harness lint`'s hazard rules over it (the config's
    suppressions applied)."""
    s = _Settings(
        config, kubectl, kustomize, jobs, timeout, strict, helm, helm_binary, offline, cache,
        cache_dir,
    )  # fmt: skip
    with _run():
        cfg = _config(repo, s)
        renderer = _renderer(cfg, s)
        with _cache(s) as store:
            snapshot = _render(cfg, renderer, s, store)
        report = engine.lint_for(cfg, snapshot, cfg.repo)
        return model.Lint(
            snapshot=convert.snapshot(snapshot, cfg.repo),
            findings=convert.findings(report.findings),
            suppressed=len(report.suppressed),
        )
