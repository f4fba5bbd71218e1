"""Chart archives from HTTP repositories and OCI registries, through the chart cache.

Online, the repository is asked what the request resolves to (the index entry's version and
digest, or the OCI tag's manifest digest) and only a cache miss downloads. `--offline` asks
nothing: the request's last resolution (chartcache.py pointer) must be in the cache, else the
target fails saying so. Every failure is a `FetchError` naming the source and URL; it fails
that target only.
"""

from __future__ import annotations

import re
import tempfile
import threading
from pathlib import Path
from typing import Any

from harness.cache import replay
from harness.core import scratch
from harness.flux.helm import sdk
from harness.flux.source.chartcache import ChartCache, Pinned
from harness.flux.source.charts import OciChart, RepoChart

_EXACT = re.compile(r"^v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?$")


class FetchError(Exception):
    """The chart cannot be had; the message is the target's one-line error."""


class Fetcher:
    """Resolves and downloads charts once per run (indexes are memoised per URL)."""

    def __init__(self, cache: ChartCache, *, offline: bool) -> None:
        self.cache = cache
        self.offline = offline
        self._indexes: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.downloads = 0

    def archive(self, location: RepoChart | OciChart) -> tuple[Path, Pinned]:
        url = location.url
        chart = location.chart
        requested = (
            location.digest
            if isinstance(location, OciChart) and location.digest
            else (location.version)
        )
        replay.taint("a chart comes from a Helm repository")
        if self.offline:
            pinned = self.cache.recall(url, chart, requested)
            path = self.cache.get(url, chart, pinned) if pinned is not None else None
            if path is None or pinned is None:
                raise FetchError(
                    f"--offline: chart {chart} {requested} from {url} is not in the chart cache "
                    f"({self.cache.root}); run once without --offline to fill it"
                )
            return path, pinned
        with self._lock:
            if isinstance(location, RepoChart):
                return self._http(location)
            return self._oci(location)

    # -- HTTP repositories -------------------------------------------------------------

    def _http(self, loc: RepoChart) -> tuple[Path, Pinned]:
        index = self._index(loc)
        entries = (index.get("entries") or {}).get(loc.chart) or []
        if not entries:
            raise FetchError(f"{loc.source}: chart {loc.chart!r} is not in {loc.url}/index.yaml")
        entry = _exact_entry(entries, loc.version)
        with tempfile.TemporaryDirectory(prefix=scratch.prefix("chart")) as tmp:
            downloaded: Path | None = None
            if entry is None:
                # a semver constraint: Helm resolves it against the same index
                downloaded = self._pull_http(loc, loc.version, Path(tmp))
                entry = _exact_entry(entries, sdk.archive_version(downloaded))
                if entry is None:
                    raise FetchError(f"{loc.source}: {loc.chart} {loc.version}: not in the index")
            pinned = Pinned(str(entry.get("version")), str(entry.get("digest") or ""))
            hit = self.cache.get(loc.url, loc.chart, pinned)
            if hit is None:
                if downloaded is None:
                    downloaded = self._pull_http(loc, pinned.version, Path(tmp))
                if pinned.digest and sdk.digest(downloaded) != f"sha256:{pinned.digest}":
                    raise FetchError(
                        f"{loc.source}: {loc.chart}-{pinned.version}.tgz does not match the "
                        f"digest in {loc.url}/index.yaml"
                    )
                hit = self.cache.put(loc.url, loc.chart, pinned, downloaded)
                self.downloads += 1
            self.cache.remember(loc.url, loc.chart, loc.version, pinned)
            return hit, pinned

    def _index(self, loc: RepoChart) -> dict[str, Any]:
        index = self._indexes.get(loc.url)
        if index is None:
            try:
                index = sdk.repo_index(loc.url)
            except sdk.SdkError as exc:
                raise FetchError(f"{loc.source}: {_line(exc)}") from None
            self._indexes[loc.url] = index
        return index

    def _pull_http(self, loc: RepoChart, version: str, into: Path) -> Path:
        try:
            return sdk.pull(loc.chart, into, version=version, repo_url=loc.url)
        except sdk.SdkError as exc:
            raise FetchError(f"{loc.source}: {loc.url}: {_line(exc)}") from None

    # -- OCI registries ------------------------------------------------------------------

    def _oci(self, loc: OciChart) -> tuple[Path, Pinned]:
        with tempfile.TemporaryDirectory(prefix=scratch.prefix("chart")) as tmp:
            downloaded: Path | None = None
            try:
                if loc.digest:
                    pinned = Pinned(loc.version, loc.digest)
                    reference = f"{loc.url}@{loc.digest}"
                else:
                    tag = loc.version
                    if not _EXACT.match(tag) and tag != "latest":
                        downloaded = sdk.pull(
                            loc.url, Path(tmp), version=tag, plain_http=loc.plain_http
                        )
                        tag = sdk.archive_version(downloaded)
                    digest = sdk.oci_digest(f"{loc.url}:{tag}", plain_http=loc.plain_http)
                    pinned = Pinned(tag, digest)
                    reference = loc.url
                hit = self.cache.get(loc.url, loc.chart, pinned)
                if hit is None:
                    if downloaded is None:
                        version = None if loc.digest else pinned.version
                        downloaded = sdk.pull(
                            reference, Path(tmp), version=version, plain_http=loc.plain_http
                        )
                    hit = self.cache.put(loc.url, loc.chart, pinned, downloaded)
                    self.downloads += 1
            except sdk.SdkError as exc:
                raise FetchError(f"{loc.source}: {loc.url}: {_line(exc)}") from None
            requested = loc.digest or loc.version
            self.cache.remember(loc.url, loc.chart, requested, pinned)
            return hit, pinned


def _exact_entry(entries: list[dict[str, Any]], version: str) -> dict[str, Any] | None:
    if not _EXACT.match(version):
        return None
    wanted = version.removeprefix("v")
    for entry in entries:
        if str(entry.get("version", "")).removeprefix("v") == wanted:
            return entry
    return None


def _line(exc: BaseException) -> str:
    text = " ".join(p.strip() for p in str(exc).strip().splitlines() if p.strip())
    return text or type(exc).__name__
