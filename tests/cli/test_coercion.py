"""The direct option coercion answers exactly as typer's own, and spares Pydantic's import."""

from __future__ import annotations

import enum
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer import _click

from harness.cli import coercion
from harness.cli.app import app
from tests.conftest import EXAMPLE, PROJECT

typer_coercion = pytest.importorskip("typer._coercion")


def _params(command: Any, ctx: Any = None) -> list[tuple[Any, Any]]:
    """Every (parameter, context) of the command tree, --help options included."""
    ctx = _click.Context(command, parent=ctx, info_name=command.name)
    out = [(p, ctx) for p in command.params]
    help_option = command.get_help_option(ctx)
    if help_option is not None:
        out.append((help_option, ctx))
    for sub in getattr(command, "commands", {}).values():
        out.extend(_params(sub, ctx))
    return out


def _outcome(runtime: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        return "ok", runtime.coerce(value, param=param, ctx=ctx)
    except _click.exceptions.BadParameter as exc:
        return "error", exc.format_message()


def _samples(annotation: Any, tmp: Path) -> list[Any]:
    existing_file = tmp / "file.txt"
    existing_file.write_text("x")
    paths = ["", ".", "-", str(tmp), str(existing_file), str(tmp / "missing" / "x"), tmp]
    numbers = ["0", "2", "12", "-1", "007", "abc", " 3", "1_0", "0.5", "1e3", "", 0, 3, 0.5]
    by_kind: dict[Any, list[Any]] = {
        str: ["x", "", "--", "a b"],
        bool: [True, False],
        int: numbers,
        float: [*numbers, "0.05", "10.25", 1.5],
        Path: paths,
    }
    origin = getattr(annotation, "__origin__", None)
    if origin is list:
        (item,) = annotation.__args__
        return [[], [*(_samples(item, tmp)[:3])], ("a",), "not-a-list"]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        members = list(annotation)
        return [*members, *(m.value for m in members), "NOPE", members[0].value.upper(), 3]
    return [*by_kind.get(annotation, []), None]


def test_every_option_coerces_as_typer_does(tmp_path: Path) -> None:
    command = typer.main.get_command(app)
    assert coercion.install(command) > 50
    checked = 0
    for param, ctx in _params(command):
        direct = param._runtime_param
        assert direct is not None, f"{param.name} kept typer's Pydantic coercion"
        reference = typer_coercion.build_runtime_param(param.type_descriptor)
        for value in _samples(param.type_descriptor.annotation, tmp_path):
            if (param.multiple or param.nargs == -1) and isinstance(value, str):
                continue  # click never hands a list option a bare string
            expected = _outcome(reference, value, param, ctx)
            assert _outcome(direct, value, param, ctx) == expected, (param.name, value)
            checked += 1
    assert checked > 300


def test_install_leaves_a_given_coercion_alone() -> None:
    command = typer.main.get_command(app)
    first = coercion.install(command)
    assert first > 0
    assert coercion.install(command) == 0  # already direct: nothing replaced twice


def _modules_after(argv: list[str], cwd: Path) -> tuple[int, set[str]]:
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('MODULES ' + ' '.join(sys.modules) + '\\n'))\n"
        "from harness.cli.app import main\n"
        f"sys.argv = ['harness', *{argv!r}]\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd, check=False
    )
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES "))
    return proc.returncode, set(line.split()[1:])


def test_check_runs_without_importing_pydantic(tmp_path: Path) -> None:
    code, modules = _modules_after(
        ["check", "-q", "-j", "2", "--repo", str(EXAMPLE), "--cache-dir", str(tmp_path)],
        PROJECT,
    )
    assert code == 0
    assert not {m for m in modules if m.split(".")[0] == "pydantic"}
    # a quiet text check loads no other output format, no progress bar, no shard planner
    unused = {"harness.report.junit", "harness.report.github", "harness.report.json_out"}
    unused |= {"harness.shard", "harness.compare.gate", "rich.progress", "rich.table"}
    assert not modules & unused


def test_version_imports_no_command_module() -> None:
    code, modules = _modules_after(["--version"], PROJECT)
    assert code == 0
    assert not {m for m in modules if m.startswith(("harness.cli.commands", "harness.pipeline"))}
    assert "rich.console" not in modules


def test_bad_values_keep_typers_errors() -> None:
    code, modules = _modules_after(["check", "-q", "-j", "-1", "--repo", str(EXAMPLE)], PROJECT)
    assert code == 2
    assert "pydantic" in modules  # the error is typer's own, worded by its coercion
