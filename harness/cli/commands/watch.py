"""`harness watch`: the diff against the base, answered again after every save.

The loop and what it keeps between answers live in cli/watching.py; this verb prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli import errors, shared
from harness.cli.commands import diff as diff_cmd

if TYPE_CHECKING:  # the loop and the reports load when watch runs, not when it is built
    from harness.cli.context import Common

app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def watch(
    base: shared.BaseOpt = None,
    use_goldens: shared.GoldensOpt = False,
    expect: Annotated[
        shared.Expect | None, shared.expect("As for diff: judged again on every answer.")
    ] = None,
    fail_on_diff: shared.FailOnDiffOpt = False,
    fail_on_hazard: shared.FailOnHazardOpt = None,
    unified: Annotated[
        int | None, shared.unified("Also show a unified diff, N context lines.")
    ] = None,
    once: Annotated[
        bool,
        typer.Option(
            "--once", metavar=shared.FLAG, help="Answer once and exit (what `diff` prints)."
        ),
    ] = False,
    poll: Annotated[
        bool,
        typer.Option(
            "--poll",
            metavar=shared.FLAG,
            help="Find changes by polling stats instead of file events.",
        ),
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
    """Stay resident: the diff against the base, answered again after every save.

    Ctrl-C stops it with the last answer's exit code (as diff's)."""
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
    options = diff_cmd.options_from(
        base, None, use_goldens, expect, fail_on_diff, fail_on_hazard, unified
    )
    errors.run(lambda: run(c, options, once=once, poll=poll), debug)


def run(
    common: Common, options: diff_cmd.DiffOptions, *, once: bool = False, poll: bool = False
) -> int:
    from harness.cli import watching
    from harness.report.console import stderr

    watcher = watching.Watcher(common, options)
    count = 0

    def show(answer: watching.Answer) -> None:
        nonlocal count
        count += 1
        diff_cmd.report(answer.run, options)
        err = stderr()
        same = (
            ""
            if answer.output_changed or count == 1
            else "; no output changed since the last answer"
        )
        err.print(f"watch: answer {count} in {answer.seconds:.2f} s ({answer.rendered}){same}")
        if not once:
            err.print("watch: waiting for changes (Ctrl-C to stop)")

    if once:
        answer = watcher.answer()
        watcher.show(answer, show)
        return answer.run.code
    return watching.loop(watcher, show, poll=poll)
