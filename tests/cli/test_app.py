"""cli._run maps what a verb raises to the exit codes users and shells expect."""

from __future__ import annotations

import pytest
import typer

from harness import gitref
from harness.cli import app as cli
from harness.core.errors import HarnessError


def _exit(exc: BaseException, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    def verb() -> int:
        raise exc

    with pytest.raises(typer.Exit) as done:
        cli._run(verb)
    return done.value.exit_code, capsys.readouterr().err.strip()


def test_errors_interrupts_and_sigterm_exit_as_documented(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _exit(HarnessError("bad input"), capsys) == (2, "error: bad input")
    assert _exit(KeyboardInterrupt(), capsys) == (130, "interrupted")
    assert _exit(gitref.Terminated(), capsys) == (143, "terminated")


def test_a_verbs_own_exit_code_passes_through() -> None:
    with pytest.raises(typer.Exit) as done:
        cli._run(lambda: 1)
    assert done.value.exit_code == 1


VERBS = ("check", "update", "init", "render", "lint", "diff", "comment", "graph", "merge")


@pytest.mark.parametrize("args", [[v, "--help"] for v in VERBS] + [["cache", "info", "--help"]])
def test_a_verb_alone_reads_as_in_the_whole_app(args: list[str]) -> None:
    """main() builds only the verb being run: its help and usage are the whole app's."""
    from typer.testing import CliRunner

    trimmed = cli.for_verb(args)
    assert trimmed is not cli.app
    assert len(trimmed.registered_commands) + len(trimmed.registered_groups) == 1
    whole = CliRunner().invoke(cli.app, args, prog_name="harness")
    alone = CliRunner().invoke(trimmed, args, prog_name="harness")
    assert whole.exit_code == alone.exit_code == 0
    assert alone.output == whole.output
    assert "Usage: harness " in alone.output


@pytest.mark.parametrize("args", [[], ["--help"], ["--version", "diff"], ["chek"], ["-q"]])
def test_no_verb_first_builds_the_whole_app(args: list[str]) -> None:
    assert cli.for_verb(args) is cli.app
