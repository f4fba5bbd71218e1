"""Chart archives on disk, content-addressed by (source URL, chart, version, digest).

The cache lives in `$HARNESS_CACHE_DIR/charts` (else `$XDG_CACHE_HOME/harness/charts`, else
`~/.cache/harness/charts`). An entry is the packaged `.tgz`, named by the sha256 of its key;
a small pointer file per (URL, chart, requested version) remembers which entry a request
resolved to last, which is all `--offline` has to go on. Every file is written by the
one atomic writer (core/atomic.py), so a crash never leaves a half-written chart behind.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from harness.cache import fileformat
from harness.core import atomic


def default_root() -> Path:
    """`charts/` in the render cache's directory (fileformat.default_dir)."""
    return Path(fileformat.default_dir()) / "charts"


@dataclass(frozen=True)
class Pinned:
    """What a request resolved to: an exact version and the digest of its content."""

    version: str
    digest: str


class ChartCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def key(url: str, chart: str, version: str, digest: str) -> str:
        return _hash(url, chart, version, digest)

    def entry(self, url: str, chart: str, pinned: Pinned) -> Path:
        return self.root / f"{self.key(url, chart, pinned.version, pinned.digest)}.tgz"

    def get(self, url: str, chart: str, pinned: Pinned) -> Path | None:
        path = self.entry(url, chart, pinned)
        return path if path.is_file() else None

    def put(self, url: str, chart: str, pinned: Pinned, archive: Path) -> Path:
        """Copy `archive` in atomically; returns the entry's path."""
        path = self.entry(url, chart, pinned)
        self.root.mkdir(parents=True, exist_ok=True)
        atomic.write(path, archive.read_bytes())  # charts are KiB to a few MiB
        return path

    def remember(self, url: str, chart: str, requested: str, pinned: Pinned) -> None:
        path = self._pointer(url, chart, requested)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "url": url,
            "chart": chart,
            "requested": requested,
            "version": pinned.version,
            "digest": pinned.digest,
        }
        atomic.write(path, json.dumps(payload, sort_keys=True).encode("utf-8"))

    def recall(self, url: str, chart: str, requested: str) -> Pinned | None:
        try:
            data = json.loads(self._pointer(url, chart, requested).read_text(encoding="utf-8"))
            return Pinned(str(data["version"]), str(data["digest"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _pointer(self, url: str, chart: str, requested: str) -> Path:
        return self.root / "refs" / f"{_hash(url, chart, requested)}.json"


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()
