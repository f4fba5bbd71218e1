"""One atomic writer: a temp file beside the destination, then a rename.

Readers see the old file or the new one, never half of either. The temp name is unique per
process and call (pid + random), so two runs writing the same file never clobber each
other's temp file; a failed write removes its temp file. Standard library only and no
`tempfile`/`contextlib`: the cache's file format (and so the replay fast path) uses it.
"""

from __future__ import annotations

import os

TMP_SUFFIX = ".tmp"


def temp_beside(path: str) -> str:
    """A fresh temp name in `path`'s directory: `.<name>.<pid>-<random>.tmp`."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.{os.getpid()}-{os.urandom(6).hex()}{TMP_SUFFIX}")


def abandoned(name: str) -> bool:
    """Whether `name` is a temp file (`temp_beside`) whose writing process is gone: a killed
    run's leftover, which the next run may delete; a live writer's is never touched."""
    if not (name.startswith(".") and name.endswith(TMP_SUFFIX)):
        return False
    tag = name[: -len(TMP_SUFFIX)].rpartition(".")[2]
    pid_text = tag.partition("-")[0]
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def write(path: str | os.PathLike[str], data: bytes, *, durable: bool = False) -> None:
    """Write `data` to `path` atomically (creating its directory); `durable` also fsyncs the
    file and its directory. Raises OSError; the temp file is gone either way."""
    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    os.makedirs(directory, exist_ok=True)
    tmp = temp_beside(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    if durable:
        _fsync_dir(directory)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        return


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        return
    finally:
        os.close(fd)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """`write` for a file the user named (`--out`, `--html`): a failure is one clear line."""
    from harness.core.errors import HarnessError

    try:
        write(path, text.encode("utf-8"))
    except OSError as exc:
        raise HarnessError(f"{os.fspath(path)}: cannot write: {exc.strerror or exc}") from None
