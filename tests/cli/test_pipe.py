"""A closed stdout (`harness ... | head -1`) ends every verb as other command-line tools end:
exit 141 (128 + SIGPIPE), nothing on stderr; through a real pipe whose reader is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import pipe
from tests.conftest import configmap, kustomization
from tests.gitkit import commit_all, init


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = init(tmp_path / "git")
    for name in ("a", "b"):
        (root / name).mkdir()
        (root / name / "kustomization.yaml").write_text(kustomization("cm.yaml"))
        (root / name / "cm.yaml").write_text(configmap(name, v="1"))
    commit_all(root, "base")
    (root / "a" / "cm.yaml").write_text(configmap("a", v="2"))  # diff has a difference to say
    return root


def _closed(*args: str, cwd: Path, replay: bool = False) -> subprocess.CompletedProcess[bytes]:
    """`harness ARGS` with stdout a pipe whose read end is closed before it starts."""
    read, write = os.pipe()
    os.close(read)
    env = {**os.environ, "NO_COLOR": "1"}
    if not replay:
        env["HARNESS_NO_REPLAY"] = "1"
    try:
        return subprocess.run(
            [sys.executable, "-m", "harness", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            timeout=300,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("-h",),
        ("diff", "--help"),
        ("render", "-q"),  # a verb typer reads (it takes arguments)
        ("render", "-q", "a"),  # one target's documents
        ("diff", "-q"),  # a verb cli/direct.py reads
        ("diff", "-q", "-o", "json"),
        ("check", "-q"),  # no goldens yet: every target is new
        ("cache", "info"),
    ],
)
def test_a_closed_stdout_ends_quietly_with_141(project: Path, args: tuple[str, ...]) -> None:
    done = _closed(*args, cwd=project)
    assert done.returncode == pipe.EXIT_CLOSED, done.stderr
    assert b"Traceback" not in done.stderr
    assert b"error" not in done.stderr
    assert b"Broken pipe" not in done.stderr


def test_a_replayed_run_ends_so_too(project: Path) -> None:
    """The replay (no typer at all) writes the recorded output: a closed stdout, 141 too."""
    first = subprocess.run(
        [sys.executable, "-m", "harness", "diff", "-q"],
        capture_output=True,
        cwd=project,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=300,
    )
    assert first.returncode == 0, first.stderr
    done = _closed("diff", "-q", cwd=project, replay=True)
    assert done.returncode == pipe.EXIT_CLOSED, done.stderr
    assert b"Traceback" not in done.stderr


def test_an_open_stdout_is_not_closed(project: Path) -> None:
    """The exit codes of a run whose reader stays are the verb's own."""
    done = subprocess.run(
        [sys.executable, "-m", "harness", "diff", "-q", "--expect", "no-change"],
        capture_output=True,
        cwd=project,
        env={**os.environ, "NO_COLOR": "1", "HARNESS_NO_REPLAY": "1"},
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert b"data.v: 1 -> 2" in done.stdout
