"""`harness render [TARGET...]`: the targets table, or one target's documents."""

from __future__ import annotations

from pathlib import Path
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
from harness.core.model import Snapshot
from harness.report import text

app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def render(
    targets: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TARGET", help="Target names or globs; one exact name prints its documents."
        ),
    ] = None,
    output: shared.OutputOpt = shared.Output.text,
    shard: shared.ShardOpt = None,
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
    """List targets with document counts and sha256, or print one target's documents."""
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
    errors.run(lambda: run(shared.sharded(c, shard), tuple(targets or ()), output.value), debug)


def run(common: Common, targets: tuple[str, ...] = (), output: str = "text") -> int:
    cfg = load_config(common)
    targets = tuple(target_name(t, cfg.repo) for t in targets)
    renderer = renderer_for(common, cfg)
    snapshot = render_snapshot(common, cfg, renderer, selection=targets)
    if targets and not snapshot.results:
        raise HarnessError(f"no target matches {' '.join(targets)} (try `harness render`)")
    plan = common.shard.current if common.shard is not None else None
    if output == "json" and plan is not None:
        from harness.pipeline import shard
        from harness.report import json_out

        block = shard.block(plan, "render", {"head": snapshot}, cfg.repo, {"targets": targets})
        json_out.emit({**json_out.render_payload(snapshot), "shard": block})
    else:
        return show(snapshot, targets, output)
    return EXIT_ERROR if snapshot.errors() else EXIT_OK


def target_name(arg: str, repo: Path) -> str:
    """A TARGET argument as a target name: a directory (`./platform/cilium/`, or a path from
    the current directory) inside the repo is its repo-relative path, the name of its path
    target; anything else (a name, a glob) stays as typed."""
    if any(c in arg for c in "*?["):
        return arg
    here = Path(arg)
    if here.is_dir():
        try:
            rel = here.resolve().relative_to(repo.resolve()).as_posix()
        except ValueError:
            return arg
        return arg if rel == "." else rel
    return arg


def show(snapshot: Snapshot, targets: tuple[str, ...], output: str) -> int:
    """Print a render (the targets table, or one target's documents); its exit code.
    Shared with `harness merge` of render shards."""
    if output == "json":
        # imported here: JSON output's module brings the hazard engine's types (~30 ms of
        # a cold render's start, before its first build); the table needs none of it
        from harness.report import json_out

        json_out.print_render(snapshot)
    elif len(targets) == 1 and targets[0] in snapshot.results:
        text.print_documents(snapshot.results[targets[0]])
    else:
        text.print_render(snapshot)
    return EXIT_ERROR if snapshot.errors() else EXIT_OK
