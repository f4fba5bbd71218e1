"""cli._run maps what a verb raises to the exit codes users and shells expect."""

from __future__ import annotations

import os
import signal
import time

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


def test_sigterm_in_any_verb_is_cleaned_up_like_ctrl_c(capsys: pytest.CaptureFixture[str]) -> None:
    cleaned: list[str] = []

    def verb() -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises here
            return 0
        finally:
            cleaned.append("finally ran")

    with pytest.raises(typer.Exit) as done:
        cli._run(verb)
    assert (done.value.exit_code, capsys.readouterr().err.strip()) == (143, "terminated")
    assert cleaned == ["finally ran"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored after the verb


def test_an_internal_error_is_one_line_or_with_debug_its_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def bug() -> int:
        raise ValueError("boom")

    assert _exit(ValueError("boom"), capsys) == (
        2,
        "internal error: ValueError: boom (a bug in harness: please report it with the "
        "traceback --debug or HARNESS_DEBUG=1 prints)",
    )
    for debug, env in ((True, ""), (False, "1")):
        monkeypatch.setenv("HARNESS_DEBUG", env)
        with pytest.raises(typer.Exit):
            cli._run(bug, debug)
        err = capsys.readouterr().err
        assert (
            err.startswith("Traceback (most recent call last):")
            and 'raise ValueError("boom")' in err
        )
    monkeypatch.setenv("HARNESS_DEBUG", "1")  # a HarnessError wrapping a bug (a crashing rule)

    def rule() -> int:
        try:
            bug()
        except ValueError as exc:
            raise HarnessError("hazard rule x failed: ValueError: boom") from exc
        return 0

    with pytest.raises(typer.Exit):
        cli._run(rule)
    err = capsys.readouterr().err
    assert 'raise ValueError("boom")' in err and err.endswith(
        "error: hazard rule x failed: ValueError: boom\n"
    )


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
