"""cli._run maps what a verb raises to the exit codes users and shells expect."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import typer

from harness.cli import app as cli
from harness.core.errors import HarnessError
from harness.pipeline import gitref
from tests.conftest import run_harness


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


# -- help == docs/cli.md -------------------------------------------------------------------

CLI_REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_CODE = re.compile(r"`([^`]+)`(?: \(([^)]*)\))?")


def _commands() -> dict[str, Any]:
    """Every command as the console script builds it (readable metavars), by its full name."""
    root = cli.readable(typer.main.get_command(cli.app))
    out: dict[str, Any] = {}
    stack = [("", root)]
    while stack:
        prefix, cmd = stack.pop()
        for name, sub in cmd.commands.items():
            full = f"{prefix} {name}".strip()
            if hasattr(sub, "commands"):
                stack.append((full, sub))
            else:
                out[full] = sub
    return out


def _shown(param: Any) -> tuple[str, str]:
    """(`-o, --output FORMAT`, `text|json`): a parameter as docs/cli.md writes it."""
    if param.param_type_name == "argument":
        return (f"{param.metavar}..." if param.nargs == -1 else param.metavar), ""
    longs = [o for o in param.opts if o.startswith("--")]
    text = ", ".join([*(o for o in param.opts if not o.startswith("--")), *longs])
    if param.secondary_opts:
        text += " / " + ", ".join(param.secondary_opts)
    if param.metavar:
        text += f" {param.metavar}"
    desc = param.type_descriptor
    choices = ""
    if desc.is_choice:
        choices = "|".join(str(getattr(c, "value", c)) for c in desc.choices or ())
    return text, choices


def _reference_rows(start: str) -> list[list[str]]:
    """The rows of the first table after the line starting with `start`."""
    lines = CLI_REFERENCE.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(start))
    rows = []
    for line in lines[at + 1 :]:
        if line.startswith("|"):
            if not line.startswith("| ---"):
                rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
        elif rows:
            break
    return rows[1:]  # the header row


def _documented(cell: str) -> dict[str, str]:
    return {m.group(1): (m.group(2) or "").replace("\\|", "|") for m in _CODE.finditer(cell)}


def test_every_documented_option_is_in_help_and_every_option_is_documented() -> None:
    """docs/cli.md's option tables and each command's --help list the same options, with the
    same short aliases, value names and choices."""
    commands = _commands()
    common_names = {p.name for p in cli.COMMON_PARAMETERS}
    common = {
        key: ""
        for row in _reference_rows("Every command except `cache` takes these options")
        for key in _documented(row[0])
    }
    own = {
        row[0].strip("`"): _documented(row[1])
        for row in _reference_rows("Each command's own options")
    }
    assert set(own) == set(commands), "docs/cli.md lists other commands than the CLI has"
    for name, command in commands.items():
        shared = not name.startswith("cache ")
        params = [p for p in command.params]
        actual_common = {_shown(p)[0] for p in params if shared and p.name in common_names}
        actual_own = dict(_shown(p) for p in params if not (shared and p.name in common_names))
        if shared:
            assert actual_common == set(common), name
        assert actual_own == own[name], name


@pytest.mark.parametrize("verb", [*VERBS, "cache info", "cache prune"])
def test_help_reads_at_80_columns(verb: str) -> None:
    """No `<bool>` after a flag, and no value name broken across lines."""
    res = run_harness(*verb.split(), "--help", env={"COLUMNS": "80"})
    assert res.code == 0, res.stderr
    assert "<bool>" not in res.stdout
    command = _commands()[verb]
    for param in command.params:
        if param.param_type_name == "option" and param.metavar:
            assert param.metavar in res.stdout, (verb, param.metavar)
