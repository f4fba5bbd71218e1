"""`harness images`: every container image the working tree deploys, per cluster and workload."""

from __future__ import annotations

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
from harness.compare.images import images_of
from harness.core.errors import HarnessError
from harness.report import images as images_report

app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def images(
    cluster: Annotated[
        list[str] | None,
        typer.Option(
            "--cluster",
            metavar="NAME",
            help="Only this cluster's images (repeatable); path targets' have cluster `-`.",
        ),
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
    """List every container image per cluster and workload (exit 0 ok, 2 render error)."""
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
    errors.run(lambda: run(c, tuple(cluster or ()), output.value), debug)


def run(common: Common, clusters: tuple[str, ...] = (), output: str = "text") -> int:
    cfg = load_config(common)
    renderer = renderer_for(common, cfg)
    snapshot = render_snapshot(common, cfg, renderer, label="working tree")
    wanted = tuple("" if name == "-" else name for name in clusters)
    known = {r.target.cluster or "" for r in snapshot.results.values()}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        names = ", ".join(sorted(n for n in known if n)) or "none"
        raise HarnessError(f"--cluster {unknown[0] or '-'}: no such cluster (clusters: {names})")
    uses = images_of(snapshot, wanted)
    if output == "json":
        images_report.print_images_json(snapshot, uses)
    else:
        images_report.print_images(snapshot, uses)
    return EXIT_ERROR if snapshot.errors() else EXIT_OK
