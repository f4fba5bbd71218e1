"""The `harness` command line: the root group, the registry of verbs, `--version`, `main`.

Each verb lives in its own module, `harness.cli.commands.<verb>`: its typer function (options
and all, as a one-command `app`) beside its `run`. The root group builds a verb's command
only when that verb runs, so `harness --version` loads no command module and `harness check`
only check's (and what it imports).
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer

from harness import __version__
from harness.cli import flags, shared

# verb -> the first paragraph of its help, which the root --help lists (without building the
# verb: tests/cli/test_app.py keeps each equal to its command's); in --help's order
VERBS = {
    "check": "Render all targets and compare them with the goldens (exit 0 match, 1 drift, 2 "
    "error).",
    "update": "Render all targets and rewrite the goldens atomically (exit 2 if any target "
    "failed).",
    "init": "Write a starter harness.yaml (clusters, TODO placeholders for objects outside "
    "git) and\nthe goldens, for a repo that has neither (exit 2 if a target still fails).",
    "get": "List every Flux Kustomization (ks) or HelmRelease (hr) of every cluster, with status.",
    "render": "List targets with document counts and sha256, or print one target's documents.",
    "images": "List every container image per cluster and workload (exit 0 ok, 2 render error).",
    "lint": "Render everything and report hazards: prune, ordering, substitution, parity; "
    "CRDs\ninstalled before Flux (bootstrap helmfiles, Talos/k3s, `preinstalled:`) are known "
    "(exit 0\nok, 1 findings at --fail-on or worse, 2 render error).",
    "diff": "Render two sides and explain every difference (exit 0 ok, 1 expectation failed, 2 "
    "error).",
    "watch": "Stay resident: the diff against the base, answered again after every save.",
    "comment": "Write the diff as a PR comment that fits GitHub's size limit (exit codes as diff).",
    "graph": "Draw each cluster's Flux Kustomization graph: dependsOn, substituteFrom and CRD "
    "edges,\nthe change against --base and hazards marked (exit 0 ok, 2 error).",
    "merge": "Combine the JSON outputs of `--shard K/N` runs of check, diff, render or update "
    "into\nthe unsharded run's result, verdict and exit code (or PR comment, or goldens).",
    "cache": "Inspect and trim the render cache (see docs/cache.md).",
}

LISTING = "harness.cli.app.listing"  # in ctx.meta while the root formats its help


def verb_app(verb: str) -> typer.Typer:
    """The typer app of `verb` (its module's `app`): imports that module."""
    module = importlib.import_module(f"harness.cli.commands.{verb}")
    found: typer.Typer = module.app
    return found


class Verbs(shared.Group):
    """The root group, lazy as click's docs show (`list_commands`/`get_command`): a verb's
    command is built from its module when asked for. Its `commands` are the verbs' summaries
    (what the root --help lists, and what a mistyped verb is matched against)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for verb, summary in VERBS.items():
            self.add_command(typer.core.TyperCommand(verb, help=summary), verb)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The verb's real command; its summary while the root's own help is formatted."""
        if cmd_name not in VERBS or ctx.meta.get(LISTING):
            return super().get_command(ctx, cmd_name)
        return typer.main.get_command(verb_app(cmd_name))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The root --help lists every verb by its summary, building none of them."""
        ctx.meta[LISTING] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            del ctx.meta[LISTING]


app = typer.Typer(
    name="harness",
    cls=Verbs,
    help=(
        "Render every kustomization path and Flux Kustomization of a GitOps repo and "
        "compare the result with committed goldens or a git ref.\n\n"
        "Exit codes: 0 ok, 1 difference found, 2 error."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": list(flags.HELP.names)},
)


def _version(value: bool) -> None:
    if value:
        with shared.closed_stdout_ends():
            typer.echo(f"harness {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            metavar=shared.FLAG,
            help="Show version.",
        ),
    ] = False,
) -> None:
    """Render-and-diff for Flux + kustomize GitOps repos."""


# the verbs whose plain command line cli/direct.py reads (their function is named as the verb)
DIRECT = frozenset(VERBS) - {"cache", "merge"}


def main() -> None:
    """Console-script entry; usage errors exit 2 as well.

    A verb's plain command line is read by cli/direct.py and its function called (typer
    would coerce each value through Pydantic: ~80 ms of CPU); anything else, --help and
    every usage error included, is typer's to read and say."""
    import sys

    args = sys.argv[1:]
    if args and args[0] in DIRECT:
        from harness.cli import direct

        verb_app(args[0])  # imports the verb's module
        module = sys.modules[f"harness.cli.commands.{args[0]}"]
        direct.call(getattr(module, args[0]), args[1:])  # exits, unless typer must read
    typer.main.get_command(app)(prog_name="harness")


if __name__ == "__main__":  # pragma: no cover
    main()
