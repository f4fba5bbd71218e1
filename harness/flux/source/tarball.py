"""The one way harness opens a gzip tarball itself: bounded, and nothing in it escapes.

A tarball in a pull request's tree (an ArtifactGenerator's `Extract` input, a chart
archive) is hostile input: a few KiB of gzip can unpack to many GiB, hold a million empty
entries, a GNU long-name header claiming gigabytes, a `../../` path, a device node, or a
copy of itself among its charts. So:

- the archive file is read through safefile (a regular file, under the file size cap);
- it is decompressed into memory up to `limits.archive_bytes` and no further: past it
  the archive fails, whatever its headers claim (a long-name or pax header included),
  and the members' sizes together may not pass it either;
- past `limits.archive_entries` entries it fails;
- a member name is cleaned as Go's `filepath.Clean` cleans it, and one climbing out of the
  root (`..`) fails; a leading `/` is dropped;
- regular files and directories are yielded; symbolic links are skipped (Flux's published
  artifacts hold none); hard links, devices, FIFOs and other types fail the archive;
- `MAX_DEPTH` bounds archives nested in archives.

`TarballError`'s message is one line, naming the archive as its caller names it.
"""

from __future__ import annotations

import gzip
import io
import posixpath
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.core import limits, safefile

MAX_DEPTH = 4  # archives within archives (a chart's charts/*.tgz), beyond which one fails


class TarballError(Exception):
    """The archive cannot be opened within the bounds; the message is one line."""


@dataclass(frozen=True)
class Member:
    """A regular file or a directory of the archive; `name` cleaned, relative."""

    name: str
    is_dir: bool
    mode: int
    size: int


def members(data: bytes, *, depth: int = 0) -> Iterator[tuple[Member, IO[bytes] | None]]:
    """The members of a gzip tarball's bytes, in order, each with its content's reader (None
    for a directory); TarballError past a bound or on a member that may not be extracted."""
    if depth > MAX_DEPTH:
        raise TarballError(f"archives nested deeper than {MAX_DEPTH} levels")
    bounds = limits.current()
    try:
        plain = gzip.GzipFile(fileobj=io.BytesIO(data)).read(bounds.archive_bytes + 1)
    except (EOFError, OSError, zlib.error) as exc:
        raise TarballError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if len(plain) > bounds.archive_bytes:
        raise _over(bounds.archive_bytes)
    count = 0
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(plain), mode="r:") as archive:
            for info in archive:
                count += 1
                if count > bounds.archive_entries:
                    raise TarballError(
                        f"more than {bounds.archive_entries:,} entries, over the archive cap "
                        "(limits.archive_entries in harness.yaml)"
                    )
                name = clean(info.name)
                if info.issym():
                    continue
                if info.isdir():
                    yield Member(name, True, info.mode, 0), None
                    continue
                if not info.isfile():
                    raise TarballError(f"entry '{info.name}' is {_kind(info)}, not extracted")
                total += info.size
                if total > bounds.archive_bytes:
                    raise _over(bounds.archive_bytes)
                yield Member(name, False, info.mode, info.size), archive.extractfile(info)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise TarballError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def read(path: Path | str) -> bytes:
    """An archive file's bytes, as every repo file is read (safefile: regular, capped)."""
    try:
        return safefile.read_bytes(path)
    except OSError as exc:
        raise TarballError(exc.strerror or str(exc)) from None


def clean(name: str) -> str:
    """A member name as a relative, clean path; TarballError when it climbs out."""
    cleaned = posixpath.normpath(name.lstrip("/")) if name.lstrip("/") else "."
    if cleaned == ".." or cleaned.startswith("../"):
        raise TarballError(f"entry '{name}' escapes the archive root")
    return cleaned


def _over(cap: int) -> TarballError:
    return TarballError(
        f"unpacks to more than {limits.human(cap)}, over the archive cap "
        "(limits.archive_bytes in harness.yaml)"
    )


def _kind(info: tarfile.TarInfo) -> str:
    if info.islnk():
        return "a hard link"
    if info.ischr():
        return "a character device"
    if info.isblk():
        return "a block device"
    if info.isfifo():
        return "a FIFO"
    return "not a regular file"
