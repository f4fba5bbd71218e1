"""errors.run maps what a verb raises to the exit codes users and shells expect."""

from __future__ import annotations

import os
import signal
import time

import pytest
import typer

from harness.cli import errors
from harness.core.errors import HarnessError
from harness.pipeline import gitref


def _exit(exc: BaseException, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    def verb() -> int:
        raise exc

    with pytest.raises(typer.Exit) as done:
        errors.run(verb)
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
        errors.run(verb)
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
            errors.run(bug, debug)
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
        errors.run(rule)
    err = capsys.readouterr().err
    assert 'raise ValueError("boom")' in err and err.endswith(
        "error: hazard rule x failed: ValueError: boom\n"
    )


def test_a_verbs_own_exit_code_passes_through() -> None:
    with pytest.raises(typer.Exit) as done:
        errors.run(lambda: 1)
    assert done.value.exit_code == 1
