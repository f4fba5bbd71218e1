"""Progress for people (a bar on a terminal) and for logs (periodic lines in CI)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from harness.core.model import Target, TargetResult
from harness.report import console

DONE = TargetResult(Target("a", "path", Path("/a")))


def test_a_log_gets_periodic_lines_then_a_last_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(console.ENV_EVERY, "0.05")
    monkeypatch.setenv("CI", "true")
    err = ""
    with console.render_progress(what="rendering") as (on_plan, on_done):
        on_plan(3)
        on_done(DONE)
        deadline = time.monotonic() + 300  # a hang guard: the wait ends on two ticker lines
        while err.count("\n") < 2:
            assert time.monotonic() < deadline, err
            time.sleep(0.01)
            err += capsys.readouterr().err
        on_done(DONE)
        on_done(DONE)
    lines = (err + capsys.readouterr().err).splitlines()
    assert len(lines) >= 3
    # the clock is whatever a loaded machine took (0:00 when idle)
    ticks = r"rendering: [1-3]/3 targets, \d+:\d\d elapsed"
    assert all(re.fullmatch(ticks, ln) for ln in lines[:-1])
    assert re.fullmatch(r"rendering: 3/3 targets done in \d+:\d\d", lines[-1])


def test_a_quick_run_and_quiet_print_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with console.render_progress() as (on_plan, on_done):  # the default first line is at 10 s
        on_plan(1)
        on_done(DONE)
    with console.render_progress(quiet=True) as (on_plan, on_done):
        on_plan(1)
    assert capsys.readouterr().err == ""


def test_no_count_is_shown_before_one_is_known(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Flux fixed point plans its targets when it ends: until then the line is the clock
    alone, never `round 1: 0/0 targets`."""
    monkeypatch.setenv(console.ENV_EVERY, "0.05")
    monkeypatch.setenv("CI", "true")
    err = ""
    with console.render_progress(what="init: round 1"):
        deadline = time.monotonic() + 300  # a hang guard: the wait ends on one ticker line
        while not err:
            assert time.monotonic() < deadline
            time.sleep(0.01)
            err += capsys.readouterr().err
    lines = (err + capsys.readouterr().err).splitlines()
    assert all(re.fullmatch(r"init: round 1: \d+:\d\d elapsed", ln) for ln in lines[:-1])
    assert re.fullmatch(r"init: round 1: done in \d+:\d\d", lines[-1])
    assert "0/0" not in err
