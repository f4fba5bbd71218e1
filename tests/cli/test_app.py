"""The root group builds only the verb being run and lists every verb from its registry;
docs/cli.md's option tables are each command's real options."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import typer

from harness.cli import app as cli
from harness.cli import flags, shared
from tests.conftest import modules_after, run_harness

VERBS = ("check", "update", "init", "render", "lint", "diff", "comment", "graph", "merge")
COMMON_OPTIONS = {name for flag in flags.COMMON for name in flag.names}


def _root() -> tuple[Any, typer.Context]:
    """The root group as the console script builds it, and a context to ask it in."""
    root = typer.main.get_command(cli.app)
    return root, typer.Context(root, info_name="harness", **root.context_settings)


def test_the_registry_names_every_verb_with_its_real_summary() -> None:
    """The root --help lists VERBS without building any verb: each summary is the first
    paragraph of its command's help, and every module in commands/ is registered."""
    commands = Path(cli.__file__).parent / "commands"
    modules = sorted(p.stem for p in commands.glob("*.py") if p.stem != "__init__")
    assert sorted(cli.VERBS) == modules
    root, ctx = _root()
    assert root.list_commands(ctx) == list(cli.VERBS)
    for verb, summary in cli.VERBS.items():
        command = root.get_command(ctx, verb)
        assert isinstance(command, shared.Command | shared.Group), verb  # not its summary
        assert inspect.cleandoc(command.help).split("\n\n")[0] == summary, verb


@pytest.mark.parametrize(
    ("args", "loaded"),
    [
        (["--version"], set()),
        ([], set()),
        (["--help"], set()),
        (["chek"], set()),
        (["check", "--help"], {"check"}),
        (["diff", "--help"], {"diff"}),
        (["watch", "--help"], {"watch", "diff"}),
        (["cache", "info", "--help"], {"cache"}),
    ],
)
def test_a_run_imports_only_its_own_verbs_module(
    args: list[str], loaded: set[str], tmp_path: Path
) -> None:
    res, modules = modules_after(*args, cwd=tmp_path)
    assert res.code == (2 if args in ([], ["chek"]) else 0), res.stderr
    prefix = "harness.cli.commands."
    assert {m.removeprefix(prefix) for m in modules if m.startswith(prefix)} == loaded


def test_a_mistyped_verb_is_matched_against_every_verb() -> None:
    res = run_harness("chek")
    assert res.code == 2
    assert "No such command 'chek'. Did you mean 'check', 'cache'?" in res.stderr


# -- help == docs/cli.md -------------------------------------------------------------------

CLI_REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_CODE = re.compile(r"`([^`]+)`(?: \(([^)]*)\))?")


def _commands() -> dict[str, Any]:
    """Every command as the console script builds it, by its full name."""
    root, ctx = _root()
    out: dict[str, Any] = {}
    stack = [("", root, ctx)]
    while stack:
        prefix, group, group_ctx = stack.pop()
        for name in group.list_commands(group_ctx):
            sub = group.get_command(group_ctx, name)
            full = f"{prefix} {name}".strip()
            if hasattr(sub, "commands"):
                stack.append((full, sub, typer.Context(sub, parent=group_ctx, info_name=name)))
            else:
                out[full] = sub
    return out


def _is_common(param: Any) -> bool:
    """One of the options every verb shares (flags.COMMON)."""
    return bool(param.opts) and param.opts[0] in COMMON_OPTIONS


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
        actual_common = {_shown(p)[0] for p in params if shared and _is_common(p)}
        actual_own = dict(_shown(p) for p in params if not (shared and _is_common(p)))
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
