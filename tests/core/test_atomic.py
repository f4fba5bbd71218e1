"""The atomic writer: the old file or the new one, never half; a dead writer's temp file."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from harness.core import atomic
from harness.core.errors import HarnessError


def test_write_creates_the_directory_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "golden.yaml"
    atomic.write(target, b"one\n")
    atomic.write(target, b"two\n", durable=True)
    assert target.read_bytes() == b"two\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["golden.yaml"]


def test_temp_name_is_hidden_beside_the_file_with_this_pid(tmp_path: Path) -> None:
    name = os.path.basename(atomic.temp_beside(str(tmp_path / "index.json")))
    assert re.fullmatch(rf"\.index\.json\.{os.getpid()}-[0-9a-f]{{12}}\.tmp", name)
    assert not atomic.abandoned(name)  # this process is writing it


def test_abandoned_only_when_the_writer_is_gone() -> None:
    dead = int(Path("/proc/sys/kernel/pid_max").read_text())  # no process has this pid
    assert atomic.abandoned(f".apps%2Fa.yaml.{dead}-0123456789ab.tmp")
    assert not atomic.abandoned(f".apps%2Fa.yaml.{os.getppid()}-0123456789ab.tmp")
    assert not atomic.abandoned(f"apps.yaml.{dead}-0123456789ab.tmp")  # not hidden
    assert not atomic.abandoned(f".apps.yaml.{dead}-0123456789ab")  # no .tmp
    assert not atomic.abandoned(".apps.yaml.x-0123456789ab.tmp")  # no pid


def test_a_failed_write_removes_its_temp_file_and_keeps_the_old(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()  # a directory where the file should go: the rename fails
    with pytest.raises(OSError):
        atomic.write(target, b"data")
    assert list(tmp_path.iterdir()) == [target] and list(target.iterdir()) == []


def test_write_text_failure_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(HarnessError) as raised:
        atomic.write_text(blocker / "report.html", "<html>")  # its directory is a file
    assert str(raised.value) == f"{blocker}/report.html: cannot write: File exists"
