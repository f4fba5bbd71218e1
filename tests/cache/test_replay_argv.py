"""The replay's reading of argv is the real CLI's: its table matches the typer app's options,
every option has a policy, and a command line it cannot read exactly is never replayed."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from harness.cache import replay, replay_argv
from harness.cli.app import app

POLICIES = {"key", "root", "tool", "cache-dir", "output", "off"}


def real_options(verb: str) -> dict[str, bool]:
    """Every option string of `verb` in the real app -> whether it takes a value."""
    command = typer.main.get_command(app)
    sub = command.commands[verb]  # type: ignore[attr-defined]
    root = typer.Context(command, info_name="harness", **command.context_settings)
    ctx = typer.Context(sub, parent=root, info_name=verb)  # -h/--help, as the app sets them
    params = [*sub.params, sub.get_help_option(ctx)]
    out: dict[str, bool] = {}
    for param in params:
        assert param.param_type_name == "option", f"{verb} takes an argument: {param.name}"
        for name in (*param.opts, *param.secondary_opts):
            out[name] = not param.is_flag
    return out


@pytest.mark.parametrize("verb", sorted(replay.VERBS))
def test_the_table_is_the_real_options(verb: str) -> None:
    """A new option of check or lint fails here until replay_argv.py lists it with a policy."""
    table = replay_argv.OPTIONS[verb]
    assert {name: spec[0] for name, spec in table.items()} == real_options(verb)
    assert {spec[1] for spec in table.values()} <= POLICIES


def test_inputs_and_side_effects_have_their_policies() -> None:
    for table in replay_argv.OPTIONS.values():
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
    ],
)
def test_read_argv(argv: list[str], expected: dict[str, str] | None) -> None:
    assert replay.read_argv(argv) == expected


def test_a_read_no_fingerprint_covers_is_never_recorded(tmp_path: Path) -> None:
    """The audit hook sees every file the run opens: one outside the run's roots, the code
    and the cache (here a file a hypothetical new input reader opens) keeps it unrecorded,
    whichever module reads it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "inside.yaml").write_text("a: 1\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("an input nothing fingerprints\n")
    log = tmp_path / "log"
    cache_dir = tmp_path / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(replay.ENV_LOG, str(log))
        for extra_read, outcome in ((False, "recorded: exit 0"), (True, "not recorded: read")):
            run = replay.Plan(["check", str(extra_read)], str(cache_dir), f"{int(extra_read)}" * 64)
            with pytest.raises(SystemExit), replay.recording(run) as recorder:
                recorder.start([str(repo)])
                (repo / "inside.yaml").read_text()
                if extra_read:
                    outside.read_text()
                raise SystemExit(0)
            assert outcome in log.read_text().splitlines()[-1]
    assert f"read {outside}, which no fingerprint covers" in log.read_text()


def test_the_network_and_an_unknown_program_are_never_recorded(tmp_path: Path) -> None:
    import socket
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    log = tmp_path / "log"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(replay.ENV_LOG, str(log))
        for n, act in enumerate(
            (
                lambda: socket.getaddrinfo("127.0.0.1", 9),
                lambda: subprocess.run(["true"], check=False),
            )
        ):
            run = replay.Plan(["check", str(n)], str(tmp_path / "cache"), f"{n + 2}" * 64)
            with pytest.raises(SystemExit), replay.recording(run) as recorder:
                recorder.start([str(repo)])
                act()
                raise SystemExit(0)
    lines = log.read_text().splitlines()
    assert lines[0].endswith("not recorded: the run used the network")
    assert "not recorded: ran true, which no fingerprint covers" in lines[1]
