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

They come from `limits:` in harness.yaml (config.py), which may tighten them and never
loosen them: the config comes with the tree, a pull request's too, and a tree that could
lift its own bounds (`memory_bytes: 0`) would not be bounded. Whoever runs harness raises
the ceiling (`HARNESS_LIMITS=file_bytes=32MiB,memory_bytes=0`, which also sets those
bounds); a config value looser than the ceiling is held to it, with one warning. `apply`
makes one run's bounds the ones every reader and renderer sees. Standard library only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from harness.core import run

ENV = "HARNESS_LIMITS"
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


def ceiling(environ: Mapping[str, str] = os.environ) -> Limits:
    """The loosest bounds a run may have: the defaults, or what `HARNESS_LIMITS` says
    (`key=size` pairs, comma-separated); ValueError, one line, for a malformed value."""
    text = environ.get(ENV, "").strip()
    found = DEFAULT
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, raw = item.partition("=")
        key = key.strip()
        size = parse_size(raw.strip()) if eq else None
        if key not in KEYS:
            raise ValueError(f"${ENV}: unknown limit {key!r} (one of {', '.join(KEYS)})")
        if size is None or (size == 0 and key != "memory_bytes"):
            raise ValueError(f"${ENV}: {item!r} is not `{key}=<size in bytes>`")
        found = replace(found, **{key: size})
    return found


def looser(key: str, value: int, bound: int) -> bool:
    """Whether `value` for limit `key` bounds less than `bound` (0 memory: no bound)."""
    if key == "memory_bytes":
        return bound != 0 and (value == 0 or value > bound)
    return value > bound


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
