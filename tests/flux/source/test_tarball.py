"""A hostile tarball is one clear line, never a full disk, a MemoryError or an escape
(issue 28): every bound of tarball.py, each on a real gzip tarball made here."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.core import limits
from harness.core.run import Run
from harness.flux.source import tarball


@pytest.fixture(autouse=True)
def small_caps() -> Iterator[None]:
    with Run().entered():
        limits.apply(limits.Limits(archive_bytes=64 * 1024, archive_entries=20))
        yield


def make(*entries: tarfile.TarInfo | tuple[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for entry in entries:
            if isinstance(entry, tarfile.TarInfo):
                tar.addfile(entry)
                continue
            name, data = entry
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


def special(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


def names(data: bytes) -> list[str]:
    return [m.name + ("/" if m.is_dir else "") for m, h in tarball.members(data)]


def error(data: bytes) -> str:
    with pytest.raises(tarball.TarballError) as info:
        names(data)
    return str(info.value)


def test_files_and_directories_come_out_cleaned() -> None:
    data = make(special("d", tarfile.DIRTYPE), ("/d/./a.yaml", b"a: 1\n"), ("b.yaml", b"b"))
    assert names(data) == ["d/", "d/a.yaml", "b.yaml"]
    ((member, handle),) = [(m, h) for m, h in tarball.members(data) if m.name == "b.yaml"]
    assert handle is not None and handle.read() == b"b" and member.size == 1


def test_symlinks_are_skipped_as_flux_publishes_none() -> None:
    data = make(special("evil", tarfile.SYMTYPE, "/etc/passwd"), ("ok.yaml", b"x"))
    assert names(data) == ["ok.yaml"]


@pytest.mark.parametrize(
    ("kind", "what"),
    [
        (tarfile.LNKTYPE, "a hard link"),
        (tarfile.CHRTYPE, "a character device"),
        (tarfile.BLKTYPE, "a block device"),
        (tarfile.FIFOTYPE, "a FIFO"),
    ],
)
def test_links_devices_and_fifos_fail_the_archive(kind: bytes, what: str) -> None:
    data = make(("ok.yaml", b"x"), special("dev", kind, "ok.yaml"))
    assert error(data) == f"entry 'dev' is {what}, not extracted"


def test_a_path_climbing_out_fails() -> None:
    assert (
        error(make(("a/../../x.yaml", b"x"))) == "entry 'a/../../x.yaml' escapes the archive root"
    )


def test_a_bomb_stops_at_the_byte_cap() -> None:
    """1 MiB of zeros gzips to about 1 KiB: the header's size is over the cap."""
    data = make(("zeros", b"\0" * (1024 * 1024)))
    assert len(data) < 4096
    assert error(data) == (
        "unpacks to more than 64 KiB, over the archive cap (limits.archive_bytes in harness.yaml)"
    )


def test_a_long_name_header_claiming_gigabytes_stops_at_the_stream_cap() -> None:
    """A GNU long-name entry is read whole by tarfile before any member: bounded anyway."""
    header = tarfile.TarInfo("././@LongLink")
    header.type = tarfile.GNUTYPE_LONGNAME
    header.size = 1024 * 1024
    raw = header.tobuf(format=tarfile.GNU_FORMAT) + b"a" * (1024 * 1024) + b"\0" * 1024
    assert error(gzip.compress(raw)).startswith("unpacks to more than 64 KiB")


def test_too_many_entries_fail() -> None:
    data = make(*[(f"f{n}", b"") for n in range(21)])
    assert error(data) == (
        "more than 20 entries, over the archive cap (limits.archive_entries in harness.yaml)"
    )


def test_nesting_is_bounded() -> None:
    with pytest.raises(tarball.TarballError, match="nested deeper than 4 levels"):
        list(tarball.members(make(), depth=5))


def test_not_gzip_is_one_line() -> None:
    assert error(b"not gzip") == "Not a gzipped file (b'no')"


def test_the_archive_file_is_read_as_every_repo_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.tgz")
    with pytest.raises(tarball.TarballError, match=r"fifo.tgz: not a regular file \(a FIFO\)"):
        tarball.read(tmp_path / "fifo.tgz")
