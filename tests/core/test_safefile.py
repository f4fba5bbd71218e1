"""The one way a repo file is read: regular files only, confined, non-blocking, capped."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.core import limits, safefile
from harness.core.run import Run


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    """Each test in a run of its own: its refusals, the default bounds."""
    with Run().entered():
        yield


def test_a_regular_file_reads_as_path_read_text_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_bytes(b"a: 1\r\nb: \xc3\xa9\rc: 3\n")
    assert safefile.read_text(path) == path.read_text(encoding="utf-8") == "a: 1\nb: é\nc: 3\n"
    assert safefile.read_bytes(path) == b"a: 1\r\nb: \xc3\xa9\rc: 3\n"
    assert safefile.refusals(tmp_path) == []


def test_a_symlink_to_dev_zero_is_refused_without_reading(tmp_path: Path) -> None:
    link = tmp_path / "zero.yaml"
    link.symlink_to("/dev/zero")
    with pytest.raises(safefile.Refused) as info:
        safefile.read_text(link, root=tmp_path)
    assert str(info.value) == f"{link}: not a regular file (a character device)"
    assert isinstance(info.value, OSError)  # every reader's "cannot read" path takes it
    assert safefile.refusals(tmp_path) == [
        "skipped zero.yaml: not a regular file (a character device)"
    ]


def test_a_fifo_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    outcome: list[str] = []

    def read() -> None:
        try:
            safefile.read_bytes(fifo)
        except safefile.Refused as exc:
            outcome.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)  # open() of a FIFO without O_NONBLOCK waits for a writer forever
    assert outcome == [f"{fifo}: not a regular file (a FIFO)"]


def test_a_file_over_the_cap_is_refused_with_the_cap_named(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"x" * (3 * 1024 * 1024))
    limits.apply(limits.Limits(file_bytes=2 * 1024 * 1024))
    with pytest.raises(safefile.TooLarge) as info:
        safefile.read_bytes(big)
    assert str(info.value) == (
        f"{big}: 3 MiB, over the 2 MiB file size cap (limits.file_bytes in harness.yaml)"
    )
    assert safefile.read_bytes(big, cap=4 * 1024 * 1024) == b"x" * (3 * 1024 * 1024)


def test_the_default_cap_is_16_mib(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:
        fh.truncate(16 * 1024 * 1024 + 1)  # sparse: no disk used
    with pytest.raises(safefile.TooLarge, match="over the 16 MiB file size cap"):
        safefile.read_bytes(big)


def test_a_symlink_is_followed_only_inside_the_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "base").mkdir(parents=True)
    (repo / "base" / "cm.yaml").write_text("a: 1\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    (repo / "inside.yaml").symlink_to("base/cm.yaml")
    (repo / "outside.yaml").symlink_to(tmp_path / "secret.txt")
    assert safefile.read_text(repo / "inside.yaml", root=repo) == "a: 1\n"
    with pytest.raises(safefile.Refused) as info:
        safefile.read_text(repo / "outside.yaml", root=repo)
    assert str(info.value) == (
        f"{repo / 'outside.yaml'}: resolves through a symlink to {tmp_path / 'secret.txt'}, "
        "outside the source root"
    )
    assert safefile.read_text(repo / "outside.yaml") == "outside\n"  # no root: not confined


def test_a_missing_file_stays_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        safefile.read_text(tmp_path / "absent.yaml")
    assert safefile.refusals(tmp_path) == []


def test_refusals_name_files_under_the_root_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    os.mkfifo(tmp_path / "a" / "f.yaml")
    (tmp_path / "z.yaml").symlink_to("/dev/null")
    for name in ("z.yaml", "a/f.yaml", "z.yaml"):
        with pytest.raises(safefile.Refused):
            safefile.read_bytes(tmp_path / name)
    assert safefile.refusals(tmp_path) == [
        "skipped a/f.yaml: not a regular file (a FIFO)",
        "skipped z.yaml: not a regular file (a character device)",
    ]
    assert safefile.refusals(tmp_path / "a") == ["skipped f.yaml: not a regular file (a FIFO)"]
    with Run().entered():  # a new run has refused nothing yet
        assert safefile.refusals(tmp_path) == []


def test_is_regular(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    (tmp_path / "z").symlink_to("/dev/zero")
    assert safefile.is_regular(tmp_path / "f")
    assert not safefile.is_regular(tmp_path / "z")
    assert not safefile.is_regular(tmp_path)
    assert not safefile.is_regular(tmp_path / "absent")
