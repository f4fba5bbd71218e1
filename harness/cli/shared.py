"""What several verbs share: their options as typer `Annotated` aliases, declared once, and
the click classes every command is built with.

A verb lists the aliases in its own signature (commands/<verb>.py) and builds what the shared
ones say with `common`. The aliases of flags.py's options take their flags, help and value
name from there; a flag's value name is `FLAG` (none: typer would print `<bool>`). `Command`
and `Group` (typer's documented `cls=`) hand out a -h/--help option that is declared like
any other, so it shows no value name either.

Light on imports: app.py loads this for `harness --version`.
"""

from __future__ import annotations

import contextlib
import enum
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.cli import flags

if TYPE_CHECKING:
    from harness.cli.context import Common

FLAG = ""  # the value name of an option that takes none


def option(flag: flags.Flag, *, help: str | None = None, **settings: Any) -> Any:
    """typer's Option for `flag` (flags.py): its names, help and value name from there;
    `help` is a verb's own words for it, `settings` typer's checks (`min=0`, `file_okay=`)."""
    return typer.Option(
        *flag.decls, help=flag.help if help is None else help, metavar=flag.metavar, **settings
    )


# -- -h/--help -------------------------------------------------------------------------------


def _show_help(ctx: typer.Context, value: bool) -> None:
    """What click's own help option does: print the command's help and exit 0."""
    if value and not ctx.resilient_parsing:
        with closed_stdout_ends():
            typer.echo(ctx.get_help(), color=ctx.color)
        ctx.exit()


@contextlib.contextmanager
def closed_stdout_ends() -> Iterator[None]:
    """Output printed outside a verb's run (--help, --version) ends a closed stdout as a verb
    does (cli/pipe.py: quiet, exit 141), not as click (exit 1) or rich (exit 1) would."""
    from harness.cli import pipe

    try:
        yield
    except BrokenPipeError:
        if not pipe.stdout_closed():
            raise
        raise SystemExit(pipe.closed_stdout()) from None
    except SystemExit as exc:  # typer's help is printed by a rich console: its exit 1
        if exc.code != 1:
            raise
        raise SystemExit(pipe.EXIT_CLOSED) from None  # (rich pointed fd 1 at /dev/null)


HelpOpt = Annotated[
    bool,
    option(flags.HELP, is_eager=True, expose_value=False, callback=_show_help),
]


@functools.cache
def help_option() -> Any:
    """The -h/--help option, declared as any other typer option (so with no value name);
    one object for every command, as click requires of the one it hands out each time."""
    probe = typer.Typer(add_completion=False)

    @probe.command(add_help_option=False)
    def probe_command(help: HelpOpt = False) -> None:
        """Only here to have typer build the option."""

    (built,) = typer.main.get_command(probe).params
    return built


class Command(typer.core.TyperCommand):
    """A verb's click command: its help option is `help_option()`."""

    def get_help_option(self, ctx: Any) -> Any:
        """click's documented hook for the help option (names from `help_option_names`)."""
        if not self.add_help_option or not self.get_help_option_names(ctx):
            return None
        return help_option()


class Group(typer.core.TyperGroup):
    """A group of verbs (the root, `cache`): its help option is `help_option()`."""

    def get_help_option(self, ctx: Any) -> Any:
        """As Command's."""
        if not self.add_help_option or not self.get_help_option_names(ctx):
            return None
        return help_option()


# -- every verb's (except `cache`) ------------------------------------------------------------

RepoOpt = Annotated[Path | None, option(flags.REPO, file_okay=False)]
ConfigOpt = Annotated[Path | None, option(flags.CONFIG)]
KubectlOpt = Annotated[str | None, option(flags.KUBECTL)]
KustomizeOpt = Annotated[str | None, option(flags.KUSTOMIZE)]
JobsOpt = Annotated[int, option(flags.JOBS, min=0)]
TimeoutOpt = Annotated[float | None, option(flags.TIMEOUT, min=0.1)]
StrictOpt = Annotated[bool | None, option(flags.STRICT)]
QuietOpt = Annotated[bool, option(flags.QUIET)]
VerboseOpt = Annotated[bool, option(flags.VERBOSE)]
HelmOpt = Annotated[bool | None, option(flags.HELM)]
HelmBinaryOpt = Annotated[str | None, option(flags.HELM_BINARY)]
OfflineOpt = Annotated[bool, option(flags.OFFLINE)]
NoCacheOpt = Annotated[bool, option(flags.NO_CACHE)]
CacheDirOpt = Annotated[Path | None, option(flags.CACHE_DIR, file_okay=False)]
DebugOpt = Annotated[bool, option(flags.DEBUG)]


def common(
    *,
    repo: Path | None,
    config: Path | None,
    kubectl: str | None,
    kustomize: str | None,
    jobs: int,
    timeout: float | None,
    strict: bool | None,
    quiet: bool,
    verbose: bool,
    helm: bool | None,
    helm_binary: str | None,
    offline: bool,
    no_cache: bool,
    cache_dir: Path | None,
) -> Common:
    """The shared options (all but --debug, which `errors.run` takes) as one `Common`."""
    from harness.cli.context import Common

    return Common(
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


# -- several verbs' ---------------------------------------------------------------------------


class Output(enum.StrEnum):
    text = "text"
    json = "json"


class CiOutput(enum.StrEnum):
    """`check` and `diff` also speak CI: JUnit XML and GitHub workflow annotations."""

    text = "text"
    json = "json"
    junit = "junit"
    github = "github"
    html = "html"


class Severity(enum.StrEnum):
    error = "error"
    warning = "warning"
    info = "info"


class Expect(enum.StrEnum):
    no_change = "no-change"
    pure_move = "pure-move"


OutputOpt = Annotated[
    Output, typer.Option("--output", "-o", metavar="FORMAT", help="text or json.")
]
CiOutputOpt = Annotated[CiOutput, option(flags.CI_OUTPUT)]
HtmlOpt = Annotated[Path | None, option(flags.HTML, dir_okay=False)]
ShardOpt = Annotated[str | None, option(flags.SHARD)]
BaseOpt = Annotated[str | None, option(flags.BASE)]
HeadOpt = Annotated[str | None, option(flags.HEAD)]
GoldensOpt = Annotated[bool, option(flags.GOLDENS)]
FailOnDiffOpt = Annotated[bool, option(flags.FAIL_ON_DIFF)]
FailOnHazardOpt = Annotated[Severity | None, option(flags.DIFF_FAIL_ON_HAZARD)]
FailOnPreexistingOpt = Annotated[bool, option(flags.FAIL_ON_PREEXISTING)]


def expect(help: str | None = None) -> Any:
    """`--expect MODE` of diff, watch and comment, in each verb's words (diff's: flags.py)."""
    return option(flags.DIFF_EXPECT, help=help)


def unified(help: str | None = None) -> Any:
    """`--unified/-U N` of diff, watch and comment, in each verb's words (diff's: flags.py)."""
    return option(flags.DIFF_UNIFIED, help=help, min=0)


def sharded(c: Common, shard: str | None) -> Common:
    """`--shard K/N` as the Sharder the verb's renders share (harness/pipeline/shard.py)."""
    if shard is None:
        return c
    from dataclasses import replace

    from harness.pipeline.shard import Sharder, ShardSpec

    return replace(c, shard=Sharder(ShardSpec.parse(shard)))


def value(choice: enum.StrEnum | None) -> str | None:
    return choice.value if choice is not None else None
