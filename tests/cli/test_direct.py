"""cli/direct.py reads a plain command line into exactly the arguments typer would pass, and
leaves every other command line to typer (which then says what is wrong, in its words)."""

from __future__ import annotations

import enum
import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import direct
from harness.cli.app import DIRECT, verb_app

READ = sorted(
    verb
    for verb in DIRECT
    if direct.spec(getattr(importlib.import_module(f"harness.cli.commands.{verb}"), verb))
)


def _spec(verb: str) -> direct.Spec:
    found = direct.spec(getattr(importlib.import_module(f"harness.cli.commands.{verb}"), verb))
    assert found is not None
    return found


def _typer(verb: str, words: list[str]) -> dict[str, Any] | None:
    """What typer's own context holds for `words` (None: typer refuses them)."""
    command = typer.main.get_command(verb_app(verb))
    try:
        with command.make_context(verb, list(words)) as ctx:
            return dict(ctx.params)
    except (typer.Exit, typer.Abort, Exception):  # a usage error (click's, inside typer)
        return None


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    root = tmp_path_factory.mktemp("direct")
    (root / "dir").mkdir()
    (root / "file").write_text("x")
    (root / "secret").write_text("x")
    os.chmod(root / "secret", 0)
    yield {
        "dir": str(root / "dir"),
        "file": str(root / "file"),
        "missing": str(root / "missing"),
        "secret": str(root / "secret"),
        "under-file": str(root / "file" / "x"),
    }
    os.chmod(root / "secret", 0o600)


STRS = ["HEAD", "", "main~1", "x y", "-x", "é", "1/3", "=", "--quiet"]
INTS = ["0", "2", "17", "-1", "x", "007", "1.0", " 3", "+4", "1_0", "", "99999999999"]
JUNK = ["--", "extra", "-qv", "-qj2", "-j2", "-vq", "--bogus", "-", "-=", "--help"]
FLOATS = ["0.1", "2", "0.05", "1.5", "0", "x", "1e3", "-2", ".5", "3.", "nan", "inf", ""]


def _values(option: direct.Option, places: dict[str, str]) -> list[str]:
    if option.kind is str:
        return STRS
    if option.kind is int:
        return INTS
    if option.kind is float:
        return FLOATS
    if option.kind is Path:
        return [*places.values(), "", "-"]
    assert issubclass(option.kind, enum.Enum)
    values = [str(m.value) for m in option.kind]
    return [*values, *(v.upper() for v in values), "bogus", ""]


@st.composite
def command_lines(draw: st.DrawFn, verb: str, places: dict[str, str], plain: bool) -> list[str]:
    """A command line of `verb`; `plain`: only forms and values typer takes unchanged."""
    found = _spec(verb)
    names = sorted(found.options)
    words: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        name = draw(st.sampled_from(names))
        option = found.options[name]
        if option.value is not None:
            words.append(name if plain or draw(st.booleans()) else f"{name}=1")
            continue
        pool = _values(option, places)
        value = draw(st.sampled_from(pool))
        if plain:
            value = _plain(option, places)
        if name.startswith("--") and draw(st.booleans()):
            words.append(f"{name}={value}")
        elif not name.startswith("--") and value and draw(st.booleans()):
            words.append(f"{name}{value}")  # -j2
        else:
            words.extend([name, value])
    if not plain and draw(st.integers(0, 4)) == 0:
        junk = draw(st.sampled_from(JUNK))
        words.insert(draw(st.integers(0, len(words))), junk)
    return words


def _plain(option: direct.Option, places: dict[str, str]) -> str:
    if option.kind is str:
        return "HEAD"
    if option.kind is int or option.kind is float:
        return "2"
    if option.kind is Path:
        return places["missing"] if not option.dir_okay else places["dir"]
    return str(next(iter(option.kind)).value)  # type: ignore[call-overload]


@pytest.mark.parametrize("verb", READ)
def test_a_command_line_read_here_is_what_typer_reads(verb: str, places: dict[str, str]) -> None:
    """Whatever this module accepts, typer accepts with the same values (and types)."""

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(words=command_lines(verb, places, plain=False))
    def check(words: list[str]) -> None:
        read = direct.arguments(_spec(verb), words)
        if read is None:
            return
        typed = _typer(verb, words)
        assert typed is not None, words
        assert read == typed, words
        assert {k: type(v) for k, v in read.items()} == {k: type(v) for k, v in typed.items()}

    check()


@pytest.mark.parametrize("verb", READ)
def test_a_plain_command_line_is_read_here(verb: str, places: dict[str, str]) -> None:
    """The common command lines (each option once or more, `--name value` or `--name=value`)
    are read here, and as typer reads them."""

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(words=command_lines(verb, places, plain=True))
    def check(words: list[str]) -> None:
        read = direct.arguments(_spec(verb), words)
        assert read is not None, words
        assert read == _typer(verb, words), words

    check()


@pytest.mark.parametrize(
    "words",
    [
        ["-h"],
        ["--help"],
        ["--"],
        ["extra"],
        ["-qh"],
        ["-j-1"],
        ["-j=2"],
        ["--jobs", "-1"],
        ["--jobs"],
        ["--quiet=1"],
        ["--base", "-x"],
        ["--expect", "NO-CHANGE"],
        ["--timeout", "0"],
        ["--repo", "pyproject.toml"],
        ["--bas", "HEAD"],
    ],
)
def test_what_typer_must_say_is_left_to_it(words: list[str]) -> None:
    assert direct.arguments(_spec("diff"), words) is None


def test_a_verb_with_arguments_or_callbacks_is_left_to_typer() -> None:
    from harness.cli.commands import render

    assert direct.spec(render.render) is None  # TARGET... is an argument

    def verb(
        quiet: typer.Annotated[bool, typer.Option("--quiet", callback=lambda v: v)] = False,
    ) -> None:
        """A flag with a callback: typer runs it."""

    assert direct.spec(verb) is None


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100", "HARNESS_NO_REPLAY": "1"}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


def test_usage_errors_and_help_are_typers(tmp_path: Path) -> None:
    """Declined command lines reach typer: its messages and exit code 2, its --help."""
    bad = _run("diff", "--jobs", "-1", cwd=tmp_path)
    assert bad.returncode == 2
    assert "Invalid value for '--jobs'" in bad.stderr
    helped = _run("diff", "--help", cwd=tmp_path)
    assert helped.returncode == 0
    assert "Render two sides and explain every difference" in helped.stdout
