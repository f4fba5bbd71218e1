"""The one way harness reads a file of the repo: a pull request's tree is hostile input.

`open()` on a FIFO blocks until a writer comes (forever, and `--timeout` cannot stop it);
reading `/dev/zero`, or a symlink to it that git stores, never ends; a 30 GiB file is read
whole into memory. So a repo file is read only when it is a regular file: stat'ed before it
is opened (a device is never opened), opened with O_NONBLOCK (a FIFO swapped in after the
stat cannot block), fstat'ed again after the open, and read up to `limits.file_bytes`.
Given a `root`, a symlink is followed only to a file inside it, as kustomize-controller's
secure filesystem follows it.

What is refused raises `Refused`, an OSError, so every reader's "cannot read" path takes
it; each refused path is also noted once per run (`refusals`), and the run says it in
one warning line, so a file skipped by a scan (the cluster scan reads every YAML file) is
not skipped silently. Standard library only: the cache's light modules import it.
"""

from __future__ import annotations

import os
import stat
import threading

from harness.core import limits, memo, run
from harness.core.errors import HarnessError

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_CHUNK = 1 << 20
# directories' real paths; a memo, so a run (and `harness watch` starting afresh) resets it
_real_dirs: memo.Memo[str, str] = memo.Memo("real paths of directories", 20_000)
_lock = threading.Lock()


class Refused(OSError, HarnessError):
    """A file harness will not read; the message names it and says why, in one line.

    An OSError, so every reader's "cannot read" path takes it (a target fails, a scan skips
    the file); a HarnessError, so where nothing catches it the command ends with that line
    and exit 2, not an internal error."""


class TooLarge(Refused):
    """A regular file over the size cap."""


def kind(mode: int) -> str:
    """What a non-regular file is, as a reviewer would call it."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, cap: int = 0
) -> bytes:
    """The bytes of a regular file, at most `cap` (default `limits.file_bytes`); `Refused`
    for anything else, OSError as `open` raises it (a missing file stays FileNotFoundError)."""
    name = os.fspath(path)
    limit = cap or limits.current().file_bytes
    st = os.stat(name)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(Refused, name, _not_regular(st.st_mode))
    if root is not None:
        _confine(name, os.fspath(root))
    if st.st_size > limit:
        raise _too_large(name, st.st_size, limit)
    fd = os.open(name, _FLAGS)
    try:
        st = os.fstat(fd)  # what was opened, not what was stat'ed: it may have been swapped
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(Refused, name, _not_regular(st.st_mode))
        chunks = []
        left = limit + 1
        want = min(st.st_size + 1, left)
        while left > 0:
            chunk = os.read(fd, max(want, 1))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
            want = min(_CHUNK, left)
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(data) > limit:  # it grew after the stat
        raise _too_large(name, len(data), limit)
    return data


def read_text(
    path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    errors: str = "strict",
    cap: int = 0,
) -> str:
    """`read_bytes` decoded as `Path.read_text(encoding="utf-8")` decodes it: UTF-8 with
    universal newlines (`\\r\\n` and `\\r` read as `\\n`)."""
    text = read_bytes(path, root=root, cap=cap).decode("utf-8", errors)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def is_regular(path: str | os.PathLike[str]) -> bool:
    """Whether `path` (symlinks followed) is a regular file: what a scan may open."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def special_names(directory: str | os.PathLike[str], names: list[str]) -> set[str]:
    """The entries of `directory` that are neither regular files nor directories (symlinks
    followed), each noted as refused: `shutil.copytree`'s `ignore`, so copying a tree (a
    chart) never copies /dev/zero to the end or blocks on a FIFO."""
    out = set()
    for name in names:
        path = os.path.join(directory, name)
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue  # a dangling link: copytree says so itself
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            _refuse(Refused, path, _not_regular(mode))
            out.add(name)
    return out


def refusals(root: str | os.PathLike[str]) -> list[str]:
    """The files under `root` this run refused, one line each, named relative to it
    (sorted): what a run warns about once (both sides of a diff name them alike)."""
    prefix = os.fspath(root).rstrip("/") + "/"
    with _lock:
        found = [(n, why) for n, why in _refused().items() if n.startswith(prefix)]
    return sorted(f"skipped {n[len(prefix) :]}: {why}" for n, why in found)


def _refused() -> dict[str, str]:
    """Path -> why refused, the current run's (a new run has none); outside a run, none kept."""
    owner = run.current()
    return owner.table(_refused) if owner is not None else {}


def _not_regular(mode: int) -> str:
    found = kind(mode)
    return found if found.startswith("not ") else f"not a regular file ({found})"


def _confine(name: str, root: str) -> None:
    """A symlink (anywhere on the path) must resolve inside `root`. Directories' real paths
    are remembered for the run (a scan reads many files of one directory): one lstat of the
    file itself, and a full resolve only when it is a symlink."""
    parent, base = os.path.split(name)
    real_parent = _real(parent)
    if stat.S_ISLNK(os.lstat(name).st_mode):
        real = os.path.realpath(name)
    else:
        real = os.path.join(real_parent, base)
    real_root = _real(root)
    if real != real_root and not real.startswith(real_root.rstrip("/") + "/"):
        why = f"resolves through a symlink to {real}, outside the source root"
        raise _refuse(Refused, name, why)


def _real(directory: str) -> str:
    found = _real_dirs.get(directory)
    if found is None:
        found = os.path.realpath(directory)
        _real_dirs.put(directory, found)
    return found


def _too_large(name: str, size: int, limit: int) -> Refused:
    return _refuse(
        TooLarge,
        name,
        f"{limits.human(size)}, over the {limits.human(limit)} file size cap "
        "(limits.file_bytes in harness.yaml)",
    )


def _refuse(cls: type[Refused], name: str, why: str) -> Refused:
    with _lock:
        _refused().setdefault(name, why)
    return cls(f"{name}: {why}")
