"""The replay reads argv as the real CLI does: flags.py's table is the typer commands' options,
every option has a policy, and a command line it cannot read exactly is never replayed."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from harness.cache import replay
from harness.cli import flags
from harness.cli.app import app

POLICIES = {"key", "root", "tool", "cache-dir", "output", "off"}


def _command(verb: str) -> tuple[Any, typer.Context]:
    """`verb`'s click command as the console script builds it, and a context for it."""
    root = typer.main.get_command(app)
    parent = typer.Context(root, info_name="harness", **root.context_settings)
    sub = root.get_command(parent, verb)
    return sub, typer.Context(sub, parent=parent, info_name=verb)


def real_options(verb: str) -> dict[str, bool]:
    """Every option string of `verb` in the real app -> whether it takes a value."""
    sub, ctx = _command(verb)
    params = [*sub.params, sub.get_help_option(ctx)]  # -h/--help, as the app names them
    out: dict[str, bool] = {}
    for param in params:
        assert param.param_type_name == "option", f"{verb} takes an argument: {param.name}"
        for name in (*param.opts, *param.secondary_opts):
            out[name] = not param.is_flag
    return out


@pytest.mark.parametrize("verb", sorted(flags.REPLAYED))
def test_the_table_is_the_real_options(verb: str) -> None:
    """A new option of check or lint fails here until flags.py declares it with a policy."""
    table = flags.REPLAYED[verb]
    assert {name: spec[0] for name, spec in table.items()} == real_options(verb)
    assert {spec[1] for spec in table.values()} <= POLICIES


@pytest.mark.parametrize("verb", [*sorted(flags.OWN), "diff", "update"])
def test_the_typer_options_show_what_flags_declares(verb: str) -> None:
    """Each declared option is the click parameter typer builds: its names, whether it takes
    a value, its help and its value name in --help."""
    sub, ctx = _command(verb)
    params = {
        frozenset((*p.opts, *p.secondary_opts)): p for p in [*sub.params, sub.get_help_option(ctx)]
    }
    for flag in (*flags.OWN.get(verb, ()), *flags.COMMON, flags.HELP):
        param = params[frozenset(flag.names)]
        assert (param.is_flag, param.help, param.metavar) == (
            not flag.value,
            flag.help,
            flag.metavar,
        ), flag.names


def test_inputs_and_side_effects_have_their_policies() -> None:
    for table in flags.REPLAYED.values():
        assert table["--repo"][1] == table["--config"][1] == "root"
        assert {table[o][1] for o in ("--kubectl", "--kustomize", "--helm-binary")} == {"tool"}
        assert {table[o][1] for o in ("--no-cache", "--html", "--help", "-h")} == {"off"}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["check", "-q", "-j2", "--repo", "r"], {}),
        (["check", "-qj", "2", "--cache-dir=/c"], {"--cache-dir": "/c"}),
        (["lint", "-o", "json", "--cache-dir", "/c", "--fail-on", "info"], {"--cache-dir": "/c"}),
        (["check", "-qo", "junit"], None),
        (["check", "--output=junit"], None),
        (["check", "-ojunit"], None),
        (["check", "--html", "x.html"], None),
        (["check", "--no-cache"], None),
        (["check", "-h"], None),
        (["check", "--new-option"], None),
        (["check", "-x"], None),
        (["check", "stray"], None),
        (["check", "--repo"], None),
        (["check", "--quiet=yes"], None),
        (["lint", "--shard", "1/2"], None),  # lint has no --shard
        (["diff", "--base", "main", "--head=v1", "-U3", "--fail-on-diff"], {}),
        (["diff", "--goldens", "--expect", "no-change", "-o", "json"], {}),
        (["diff", "--html", "d.html"], None),
        (["diff", "-o", "junit"], None),
        (["diff", "main"], None),  # no positional argument: the CLI says so
    ],
)
def test_read_argv(argv: list[str], expected: dict[str, str] | None) -> None:
    assert replay.read_argv(argv, flags.REPLAYED[argv[0]]) == expected
