"""`harness get ks|hr [NAME...]`: every Flux Kustomization or HelmRelease per cluster."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated

import typer

from harness.cli import errors, shared
from harness.cli.context import (
    EXIT_ERROR,
    EXIT_OK,
    Common,
    load_config,
    render_snapshot,
    renderer_for,
)
from harness.core.errors import HarnessError

app = typer.Typer(add_completion=False)


class Kind(enum.StrEnum):
    ks = "ks"
    hr = "hr"


@app.command(cls=shared.Command)
def get(
    kind: Annotated[
        Kind,
        typer.Argument(
            metavar="KIND",
            help="ks (Flux Kustomizations) or hr (HelmReleases), each with its path or chart, "
            "source, dependsOn, suspend, rendered documents and status: rendered, failed (exit "
            "2), skipped (on purpose) or not judged (-v says why).",
            show_default=False,
        ),
    ],
    names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="NAME",
            help="Only these: name, namespace/name or cluster/namespace/name, globs allowed.",
        ),
    ] = None,
    cluster: Annotated[
        list[str] | None,
        typer.Option("--cluster", metavar="NAME", help="Only this cluster (repeatable)."),
    ] = None,
    output: shared.OutputOpt = shared.Output.text,
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
    """List every Flux Kustomization (ks) or HelmRelease (hr) of every cluster, with status."""
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
    clusters = tuple(cluster or ())
    errors.run(lambda: run(c, kind.value, tuple(names or ()), clusters, output.value), debug)


def run(
    common: Common,
    kind: str,
    names: tuple[str, ...] = (),
    clusters: tuple[str, ...] = (),
    output: str = "text",
) -> int:
    from harness.compare.coverage import hidden
    from harness.flux import inventory
    from harness.report import listing

    cfg = load_config(common)
    if kind == "ks":
        cfg = replace(cfg, helm=False)  # HelmReleases' renders say nothing about a Kustomization
    renderer = renderer_for(common, cfg)
    snapshot = render_snapshot(common, cfg, renderer, skips=False)  # the table has them
    rows: Sequence[inventory.KsRow | inventory.HrRow]
    if kind == "ks":
        rows = inventory.kustomizations(snapshot, repo=cfg.repo, hidden=hidden(cfg.repo, snapshot))
    else:
        rows = inventory.helm_releases(snapshot, helm=cfg.helm)
    known = {r.target.cluster for r in snapshot.results.values() if r.target.cluster}
    unknown = [c for c in clusters if c not in known]
    if unknown:
        have = ", ".join(sorted(known)) or "none"
        raise HarnessError(f"--cluster {', '.join(unknown)}: no such cluster (clusters: {have})")
    shown = inventory.matching(rows, names, clusters)
    if names and not shown:
        raise HarnessError(
            f"no {'Kustomization' if kind == 'ks' else 'HelmRelease'} matches "
            f"{' '.join(names)} (try `harness get {kind}`)"
        )
    if output == "json":
        listing.print_json(shown, kind, snapshot.renderer)
    else:
        listing.print_table(shown, kind, common.verbose)
    return EXIT_ERROR if any(r.status == "failed" for r in shown) else EXIT_OK
