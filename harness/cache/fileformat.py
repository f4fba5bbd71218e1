"""The cache directory's file format, with nothing but the standard library's light modules.

Split out of store.py so that the replay fast path (replay.py), which must answer in a few
milliseconds before any heavy import, reads and writes the very same checksummed entries
that the render cache keeps, prunes and clears.
"""

from __future__ import annotations

import os
import stat

# The replay fast path imports this module: typing (~2.5 ms) and json (~5 ms with re) would
# be much of a replay's own cost, so neither is imported here at module level (the render
# cache's JSON entries import them when first used). hashlib is (~4 ms, OpenSSL): the
# interpreter's private `_sha256` would be faster, but it is not an API.
from hashlib import sha256 as sha256

from harness.core import atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

ENV_DIR = "HARNESS_CACHE_DIR"
FORMAT = "harness-cache-v1"
ENTRIES = "v1"
TMP_SUFFIX = atomic.TMP_SUFFIX


def default_dir() -> str:
    """`$HARNESS_CACHE_DIR`, else `$XDG_CACHE_HOME/harness`, else `~/.cache/harness`."""
    explicit = os.environ.get(ENV_DIR)
    if explicit:
        return os.path.expanduser(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(os.path.expanduser(xdg)):
        base = os.path.expanduser(xdg)
    else:
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "harness")


def entry_path(directory: str, digest: str) -> str:
    """Entries live under `directory/v1/<2 hex>/<62 hex>.json`."""
    return os.path.join(directory, ENTRIES, digest[:2], f"{digest[2:]}.json")


def encode(payload: dict[str, Any], digest: str) -> bytes:
    """The sha256 of the body, a newline, then the body: truncation and bit rot show."""
    import hashlib
    import json

    body = json.dumps(
        {"format": FORMAT, "key": digest, "payload": payload},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")
    return hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def decode(raw: bytes, digest: str) -> dict[str, Any] | None:
    """The payload of a whole, uncorrupted entry stored under `digest`; else None."""
    import hashlib
    import json

    head, sep, body = raw.partition(b"\n")
    if not sep or hashlib.sha256(body).hexdigest().encode() != head:
        return None
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != digest:
        return None
    payload = doc.get("payload")
    return payload if isinstance(payload, dict) else None


def encode_raw(body: bytes, digest: str) -> bytes:
    """An entry whose body is bytes the caller encodes (replay records: marshal, which needs no
    import): the sha256 of a header and the body, the header, the body."""
    header = f"{FORMAT} {digest} raw\n".encode()
    return sha256(header + body).hexdigest().encode() + b"\n" + header + body


def decode_raw(raw: bytes, digest: str) -> bytes | None:
    """The body of a whole, uncorrupted raw entry stored under `digest`; else None."""
    head, sep, rest = raw.partition(b"\n")
    if not sep or sha256(rest).hexdigest().encode() != head:
        return None
    header, sep, body = rest.partition(b"\n")
    if not sep or header != f"{FORMAT} {digest} raw".encode():
        return None
    return body


# Packed entries: a JSON payload and a table of strings kept out of it, for the whole-render
# entries (the dependency index, a ref's remembered render: several MB of document texts and
# their objects as JSON) that JSON took ~0.2 s each way to escape or unescape. The body is
# the payload (compact JSON has no newline byte), a newline, then every string's UTF-8
# bytes one after another; the payload's "strings" lists their sizes. Not marshal: a few
# bytes of marshal data can make it allocate gigabytes (a list's declared length), and it
# builds code objects; JSON and slicing are bounded by the entry's own size.
_STRINGS = "strings"


def encode_packed(payload: dict[str, Any], strings: list[str], digest: str) -> bytes:
    """An entry of `payload` (JSON types; its own "strings" key is the table's) and
    `strings`, which the payload refers to by index (its caller's convention)."""
    import hashlib
    import json

    blobs = [s.encode("utf-8", "surrogatepass") for s in strings]
    head = json.dumps(
        {**payload, _STRINGS: [len(b) for b in blobs]},
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8", "surrogatepass")
    body = b"".join([f"{FORMAT} {digest} packed\n".encode(), head, b"\n", *blobs])
    return hashlib.sha256(body).hexdigest().encode() + b"\n" + body


class paused_gc:
    """No cyclic garbage collection while a whole render is decoded into objects: the ~100k
    containers it makes at once trigger collections that find no garbage (up to a third of
    the decode's time on a 250-Kustomization repo). Process-wide, so held only for the
    decode; restores the state it found (nested, or a caller that had disabled it)."""

    def __enter__(self) -> None:
        import gc

        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *_exc: object) -> None:
        import gc

        if self.was:
            gc.enable()


def decode_packed(raw: bytes, digest: str) -> tuple[dict[str, Any], list[str]] | None:
    """The payload and strings of a whole, uncorrupted packed entry stored under `digest`;
    else None (truncated, corrupt, another format, sizes that do not add up)."""
    import hashlib
    import json

    view = memoryview(raw)  # sliced, not copied: whole-render entries are MBs
    cut = raw.find(b"\n")
    if cut < 0 or hashlib.sha256(view[cut + 1 :]).hexdigest().encode() != raw[:cut]:
        return None
    header = f"{FORMAT} {digest} packed\n".encode()
    start = cut + 1 + len(header)
    end = raw.find(b"\n", start)
    if view[cut + 1 : start] != header or end < 0:
        return None
    try:
        payload = json.loads(view[start:end].tobytes())
    except (ValueError, RecursionError):
        return None
    sizes = payload.pop(_STRINGS, None) if isinstance(payload, dict) else None
    if type(sizes) is not list or not {int}.issuperset(map(type, sizes)):
        return None
    if (sizes and min(sizes) < 0) or sum(sizes) != len(raw) - end - 1:
        return None
    strings: list[str] = []
    at = end + 1
    try:
        for size in sizes:
            strings.append(str(view[at : at + size], "utf-8", "surrogatepass"))
            at += size
    except UnicodeDecodeError:
        return None
    return payload, strings


# An entry holds one renderer output (core/limits.py's default output cap) and its framing:
# a file beyond that was not written by harness, and is not read into memory to find out.
MAX_ENTRY_BYTES = 256 * 1024 * 1024
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class NotAnEntry(OSError):
    """A file where an entry should be that harness never wrote: not a regular file (a
    poisoned CI cache's symlink to /dev/zero, a FIFO) or over the cap; dropped as corrupt."""


def read_entry(path: str, cap: int = MAX_ENTRY_BYTES) -> bytes:
    """An entry's bytes, read only from a regular file of at most `cap` bytes (stat'ed
    before the open, opened non-blocking, fstat'ed after it); `NotAnEntry` otherwise,
    OSError as `open` raises it (FileNotFoundError: no such entry). core/safefile.py's rule,
    kept here without its imports for the replay fast path."""
    st = os.stat(path)
    _entry_file(path, st, cap)
    fd = os.open(path, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        _entry_file(path, st, cap)
        chunks = []
        left = cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, max(st.st_size + 1, 1 << 16)))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > cap:
        raise NotAnEntry(f"{path}: over {cap} bytes")
    return data


def _entry_file(path: str, st: os.stat_result, cap: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise NotAnEntry(f"{path}: not a regular file")
    if st.st_size > cap:
        raise NotAnEntry(f"{path}: {st.st_size} bytes, over the {cap} byte cap")


def write_atomic(path: str, data: bytes) -> bool:
    """Write `path` atomically (core/atomic.py); False when it could not be written
    (read-only dir, full disk): the caller loses only the entry."""
    try:
        atomic.write(path, data)
    except OSError:
        return False
    return True


def quietly(operation: Callable[[str], object], path: str) -> None:
    """`operation(path)` (os.unlink, os.utime) where failing loses nothing; contextlib would
    be one more import for the replay fast path."""
    try:
        operation(path)
    except OSError:
        return
