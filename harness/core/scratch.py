"""Temp dirs named for the process that made them, and the sweep of those a killed run left.

A run removes its temp dirs (Flux mirrors in /dev/shm, git checkouts, chart downloads) in
`finally` blocks, on Ctrl-C and SIGTERM too; a SIGKILL (an OOM kill, a cancelled CI job's
last resort) skips them. Each name carries its maker's pid, `harness-<kind>-<pid>-<random>`,
so the next run can tell a dead run's leftovers from a live run's work and remove only
those. The atomic writer's `.tmp` files carry the pid the same way (atomic.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile

_NAME = re.compile(r"harness-[a-z]+-(\d+)-")
SHM = "/dev/shm"


def prefix(kind: str) -> str:
    """`harness-<kind>-<pid>-`: for tempfile.mkdtemp / TemporaryDirectory."""
    return f"harness-{kind}-{os.getpid()}-"


def roots() -> list[str]:
    """Where harness makes temp dirs: $TMPDIR (or the system's) and /dev/shm."""
    found = [tempfile.gettempdir()]
    if os.path.isdir(SHM) and SHM not in found:
        found.append(SHM)
    return found


def alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def sweep() -> int:
    """Remove temp dirs and files a dead harness run left in `roots()`; how many."""
    removed = 0
    uid = os.getuid()
    for root in roots():
        try:
            with os.scandir(root) as entries:
                names = [(e.path, e.name) for e in entries if e.name.startswith("harness-")]
        except OSError:
            continue
        for path, name in names:
            match = _NAME.match(name)
            if match is None or alive(int(match.group(1))):
                continue
            try:
                if os.lstat(path).st_uid != uid:
                    continue
            except OSError:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            removed += 1
    return removed
