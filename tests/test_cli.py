"""cli._run maps what a verb raises to the exit codes users and shells expect."""

from __future__ import annotations

import pytest
import typer

from harness import cli, gitref
from harness.errors import HarnessError


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
