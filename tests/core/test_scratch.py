"""Temp dirs carry their maker's pid; the next run sweeps only a dead run's leftovers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.core import scratch


def _dead_pid() -> int:
    """A pid no process can have: the kernel hands out pids below pid_max."""
    return int(Path("/proc/sys/kernel/pid_max").read_text())


def test_prefix_names_this_process() -> None:
    assert scratch.prefix("ref") == f"harness-ref-{os.getpid()}-"


def test_sweep_removes_only_what_dead_runs_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp, shm = tmp_path / "tmp", tmp_path / "shm"
    tmp.mkdir()
    shm.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setattr(scratch, "SHM", str(shm))
    dead = _dead_pid()
    (tmp / f"harness-ref-{dead}-abc").mkdir()
    (tmp / f"harness-ref-{dead}-abc" / "file").write_text("x")
    (shm / f"harness-flux-{dead}-def").mkdir()
    (tmp / f"harness-chart-{dead}-tgz").write_text("a file")
    mine = tmp / f"{scratch.prefix('ref')}live"
    mine.mkdir()
    (tmp / "harness-notes").mkdir()  # no pid: not ours to judge
    (tmp / "other-1-x").mkdir()
    assert scratch.roots() == [str(tmp), str(shm)]
    assert scratch.sweep() == 3
    assert sorted(p.name for p in tmp.iterdir()) == ["harness-notes", mine.name, "other-1-x"]
    assert list(shm.iterdir()) == []
    assert scratch.sweep() == 0


def test_alive() -> None:
    assert scratch.alive(os.getpid())
    assert not scratch.alive(_dead_pid())
