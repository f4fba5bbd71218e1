"""Charts from a real HTTP repository and a real OCI registry on 127.0.0.1, through the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cache import replay
from harness.flux.helm import sdk
from harness.flux.source.chartcache import ChartCache, Pinned
from harness.flux.source.charts import OciChart, RepoChart
from harness.flux.source.fetch import Fetcher, FetchError
from tests.conftest import write_tree
from tests.flux.helm.charts import (
    cluster_repo,
    helm_release,
    helm_repository,
    local_chart,
    repo_chart,
)
from tests.flux.helm.conftest import ChartRepo, package


def _tgz_requests(repo: ChartRepo) -> list[str]:
    return [r for r in repo.requests if r.endswith(".tgz")]


def test_http_pull_is_cached_by_digest(tmp_path: Path, chart_repo: ChartRepo) -> None:
    chart_repo.publish(package(tmp_path, "1.0.0"))
    cache = ChartCache(tmp_path / "c")
    loc = RepoChart(chart_repo.url, "demo", "1.0.0", "HelmRepository/flux-system/charts")
    path, pinned = Fetcher(cache, offline=False).archive(loc)
    assert pinned.version == "1.0.0" and len(pinned.digest) == 64
    assert sdk.digest(path) == f"sha256:{pinned.digest}"
    assert path.name == f"{ChartCache.key(chart_repo.url, 'demo', '1.0.0', pinned.digest)}.tgz"
    assert len(_tgz_requests(chart_repo)) == 1
    # a second run asks for the index only
    again, _ = Fetcher(cache, offline=False).archive(loc)
    assert again == path and len(_tgz_requests(chart_repo)) == 1
    # offline asks nothing at all
    before = len(chart_repo.requests)
    offline, _ = Fetcher(cache, offline=True).archive(loc)
    assert offline == path and len(chart_repo.requests) == before


def test_http_semver_range_resolves_to_the_newest_match(
    tmp_path: Path, chart_repo: ChartRepo
) -> None:
    for version in ("1.0.0", "1.2.0", "2.0.0"):
        chart_repo.publish(package(tmp_path, version))
    loc = RepoChart(chart_repo.url, "demo", "~1.0 || ^1.1", "HelmRepository/x/y")
    _, pinned = Fetcher(ChartCache(tmp_path / "c"), offline=False).archive(loc)
    assert pinned.version == "1.2.0"


def test_offline_miss_fails_clearly(tmp_path: Path) -> None:
    loc = RepoChart("http://127.0.0.1:9", "demo", "1.0.0", "HelmRepository/x/y")
    with pytest.raises(
        FetchError,
        match=r"--offline: chart demo 1\.0\.0 from http://127\.0\.0\.1:9 "
        r"is not in the chart cache .*run once without --offline",
    ):
        Fetcher(ChartCache(tmp_path / "c"), offline=True).archive(loc)


def test_unreachable_and_unknown_charts(tmp_path: Path, chart_repo: ChartRepo) -> None:
    chart_repo.publish(package(tmp_path, "1.0.0"))
    fetcher = Fetcher(ChartCache(tmp_path / "c"), offline=False)
    dead = RepoChart("http://127.0.0.1:9", "demo", "1.0.0", "HelmRepository/flux-system/dead")
    with pytest.raises(FetchError, match=r"^HelmRepository/flux-system/dead: .*127\.0\.0\.1:9"):
        fetcher.archive(dead)
    with pytest.raises(FetchError, match="chart 'other' is not in"):
        fetcher.archive(RepoChart(chart_repo.url, "other", "1.0.0", "HelmRepository/x/y"))
    with pytest.raises(FetchError, match=r"9\.9\.9"):
        fetcher.archive(RepoChart(chart_repo.url, "demo", "9.9.9", "HelmRepository/x/y"))


def test_corrupt_cache_digest_mismatch_is_refused(tmp_path: Path, chart_repo: ChartRepo) -> None:
    archive = package(tmp_path, "1.0.0")
    chart_repo.publish(archive)
    # the server now serves different bytes than its index promises
    other = package(tmp_path / "other", "1.0.0", gadget_crd=False)
    (chart_repo.root / archive.name).write_bytes(other.read_bytes())
    with pytest.raises(FetchError, match="does not match the digest"):
        Fetcher(ChartCache(tmp_path / "c"), offline=False).archive(
            RepoChart(chart_repo.url, "demo", "1.0.0", "HelmRepository/x/y")
        )
    assert not list((tmp_path / "c").glob("*.tgz"))


def test_cache_writes_are_atomic_and_pointers_recall(tmp_path: Path) -> None:
    cache = ChartCache(tmp_path / "c")
    src = tmp_path / "a.tgz"
    src.write_bytes(b"chart")
    pinned = Pinned("1.0.0", "ab" * 32)
    entry = cache.put("http://x", "demo", pinned, src)
    cache.remember("http://x", "demo", "1.x", pinned)
    assert cache.recall("http://x", "demo", "1.x") == pinned
    assert cache.recall("http://x", "demo", "2.x") is None
    assert cache.get("http://x", "demo", pinned) == entry
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [entry.name, "refs"]


def test_oci_pull_tag_and_range(tmp_path: Path, oci_registry: str) -> None:
    for version in ("1.0.0", "1.1.0"):
        sdk.module().push(
            str(package(tmp_path, version)), f"oci://{oci_registry}/charts", plain_http=True
        )
    cache = ChartCache(tmp_path / "c")
    url = f"oci://{oci_registry}/charts/demo"
    path, pinned = Fetcher(cache, offline=False).archive(OciChart(url, "1.0.0", "", True, "x"))
    assert pinned.version == "1.0.0" and pinned.digest.startswith("sha256:")
    assert sdk.archive_version(path) == "1.0.0"
    _, newest = Fetcher(cache, offline=False).archive(OciChart(url, ">=1.0.0", "", True, "x"))
    assert newest.version == "1.1.0"
    offline, _ = Fetcher(cache, offline=True).archive(OciChart(url, "1.0.0", "", True, "x"))
    assert offline == path
    by_digest, pin = Fetcher(cache, offline=False).archive(
        OciChart(url, "", pinned.digest, True, "x")
    )
    assert pin.digest == pinned.digest and sdk.archive_version(by_digest) == "1.0.0"
    with pytest.raises(FetchError, match=r"^x: oci://127\.0\.0\.1:9/charts/demo: "):
        Fetcher(cache, offline=False).archive(
            OciChart("oci://127.0.0.1:9/charts/demo", "1.0.0", "", True, "x")
        )


def test_a_chart_from_a_helm_repository_is_never_replayed(
    tmp_path: Path, chart_repo: ChartRepo
) -> None:
    """The repository may publish a new chart under the same version: a `check` that pulled
    one runs for real every time, while a local chart's check is replayed."""
    chart_repo.publish(package(tmp_path / "v1", "1.0.0"))
    log = tmp_path / "replay.log"
    env = {**os.environ, "NO_COLOR": "1", replay.ENV_LOG: str(log)}
    parent = {  # a local chart whose dependency comes from the repository
        "charts/parent/Chart.yaml": "apiVersion: v2\nname: parent\nversion: 0.1.0\n"
        f"dependencies:\n  - name: demo\n    version: 1.0.0\n    repository: {chart_repo.url}\n",
        "charts/parent/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\n"
        "metadata:\n  name: parent\n",
    }
    for chart, extra, expected in (
        (repo_chart("1.0.0"), {}, "not recorded: a chart comes from"),
        (local_chart("./charts/parent"), parent, "not recorded: a chart dependency comes from"),
        (local_chart(), {}, "recorded: exit 0"),
    ):
        files = cluster_repo(helm_release(chart=chart), sources=[helm_repository(chart_repo.url)])
        repo = write_tree(tmp_path / expected.replace(" ", "-"), {**files, **extra})
        (repo / ".git").mkdir()
        for verb in ("update", "check", "check"):
            proc = subprocess.run(
                [sys.executable, "-m", "harness", verb, "--repo", str(repo), "-q", "-j", "2"],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
            assert proc.returncode == 0, proc.stderr
        decisions = log.read_text()
        log.unlink()
        assert expected in decisions, decisions
        assert ("hit: exit 0" in decisions) == (expected == "recorded: exit 0"), decisions
