"""How much of the machine one run may use: the bounds a hostile tree cannot push past.

A pull request's tree is untrusted input: a symlink to /dev/zero, a multi-GiB file, a
kustomization that expands without end or a renderer that prints without end must fail
its target with one line, never take the run (or the CI machine) down. The bounds:

- `file_bytes`: the largest repo file harness reads itself (safefile.py), default 16 MiB;
- `output_bytes`: the largest stdout or stderr of one renderer run (kubectl, kustomize,
  helm, the Helm SDK worker), and the largest render cache entry, default 256 MiB;
- `memory_bytes`: the address space (RLIMIT_AS) of each renderer process, default 4 GiB;
  0 turns it off;
- `archive_bytes` and `archive_entries`: what one tarball harness opens itself (an
  ArtifactGenerator's Extract, a chart archive) may unpack to, default 100 MiB (the
  default of Flux's own untar) and 10,000 entries.

They come from `limits:` in harness.yaml (config.py); `apply` makes one run's bounds the
ones every reader and renderer sees. Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.core import run

MiB = 1024 * 1024
GiB = 1024 * MiB
KEYS = ("file_bytes", "output_bytes", "memory_bytes", "archive_bytes", "archive_entries")
_SIZE = re.compile(r"^\s*(\d+)\s*(|k|ki|kib|m|mi|mib|g|gi|gib)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": MiB, "g": GiB}


@dataclass(frozen=True)
class Limits:
    """One run's bounds, in bytes (`memory_bytes` 0: no address-space limit)."""

    file_bytes: int = 16 * MiB
    output_bytes: int = 256 * MiB
    memory_bytes: int = 4 * GiB
    archive_bytes: int = 100 * MiB
    archive_entries: int = 10_000


DEFAULT = Limits()


def apply(limits: Limits) -> None:
    """Make these the bounds of the current run (set once per run, before any read)."""
    owner = run.current()
    if owner is not None:
        owner.table(Limits)[Limits] = limits


def current() -> Limits:
    """The current run's bounds; the defaults outside a run or before `apply`."""
    owner = run.current()
    found = owner.existing(Limits) if owner is not None else None
    return found.get(Limits, DEFAULT) if found is not None else DEFAULT


def parse_size(value: object) -> int | None:
    """Bytes from an integer or a string such as `16MiB`, `512k`, `4G` (powers of 1024);
    None when the value is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str):
        match = _SIZE.match(value)
        if match:
            return int(match.group(1)) * _UNITS[match.group(2)[:1].lower()]
    return None


def human(size: int) -> str:
    """`16 MiB`, `300 KiB`, `12 bytes`: how an error line states a bound."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    if size >= MiB:
        return f"{size / MiB:.1f} MiB"
    return f"{size} bytes"
