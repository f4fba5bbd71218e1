"""The render seam with the real kubectl: confinement, cache hits, canary, changed-only diff."""

from __future__ import annotations

import base64
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cache import replay
from harness.cache import store as cache
from harness.core import config as config_mod
from harness.core import documents
from harness.core.model import DocId, Snapshot
from harness.pipeline.repo import RenderOptions, render_repo
from harness.render import kustomize as render
from tests.conftest import Result, configmap, kustomization, run_harness, write_tree
from tests.flux.conftest import cm, flux_ks, ks_file
from tests.gitkit import commit_all, init

CANARY = "canary-7f3e9b21-never-on-disk"
TOKEN = "token-substituted-into-a-configmap"
TOKEN_MARKER = documents.redaction_marker(
    DocId("", "Secret", "flux-system", "vars"), "stringData.TOKEN", TOKEN
)


def fresh_renderer() -> render.Renderer:
    cfg_flags = config_mod.DEFAULT_KUBECTL_FLAGS
    return render.resolve(flags=cfg_flags, timeout=300)


def rendered(repo: Path, store: cache.Store | None) -> tuple[Snapshot, render.Renderer, int]:
    """One render through a fresh renderer; (snapshot, renderer, cache hits)."""
    renderer = fresh_renderer()
    run_cache = cache.RenderCache(store) if store is not None else None
    snapshot = render_repo(config_mod.load(repo), renderer, RenderOptions(jobs=2, cache=run_cache))
    if run_cache is not None:
        run_cache.close()
    return snapshot, renderer, run_cache.hits if run_cache is not None else 0


def same(one: Snapshot, two: Snapshot) -> None:
    assert list(one.results) == list(two.results)
    for name, result in one.results.items():
        other = two.results[name]
        assert result.text() == other.text(), name
        assert (result.error, result.notes, result.sha256, result.duplicates) == (
            other.error,
            other.notes,
            other.sha256,
            other.duplicates,
        ), name
        assert result.documents == other.documents, name


FLUX_REPO: dict[str, str | bytes] = {
    "clusters/dev/kustomization.yaml": ks_file("apps.yaml", "vars.yaml"),
    "clusters/dev/apps.yaml": flux_ks(
        "apps",
        "./apps",
        targetNamespace="apps",
        postBuild={"substituteFrom": [{"kind": "Secret", "name": "vars"}]},
    ),
    "clusters/dev/vars.yaml": flux_ks("vars", "./vars"),
    # a plain Secret in git: its value feeds the apps Kustomization's substitution
    "vars/secret.yaml": (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: vars\n  namespace: flux-system\n"
        f"stringData:\n  TOKEN: {TOKEN}\n  PASSWORD: {CANARY}\n"
        f"data:\n  ENCODED: {base64.b64encode(CANARY.encode()).decode()}\n"
    ),
    "apps/cm.yaml": cm("app", token="${TOKEN}"),
    "apps/sub/cm2.yaml": cm("other"),
    "gen/kustomization.yaml": (
        f"secretGenerator:\n  - name: generated\n    literals:\n      - password={CANARY}\n"
    ),
}


def test_warm_render_runs_no_kustomize_and_matches_cold(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", FLUX_REPO)
    store = cache.Store(tmp_path / "cache")
    cold, cold_renderer, cold_hits = rendered(repo, store)
    assert cold_renderer.runs > 0
    assert cold_hits == 1  # the cluster entry is built twice (entry scan, root node): once
    assert not cold.errors(), [r.error for r in cold.errors()]
    app = cold.results["dev/flux-system/apps"]
    # substituted from the plain Secret: as the marker of its value, never the value
    assert TOKEN not in app.text()
    assert f"token: {TOKEN_MARKER}" in app.text()
    warm, warm_renderer, warm_hits = rendered(repo, store)
    assert warm_renderer.runs == 1  # only the Secret-bearing build, to feed substitution
    assert warm_hits == len(warm.results) + 1  # every build, the entry twice
    same(cold, warm)
    uncached, _, _ = rendered(repo, None)
    same(cold, uncached)


def test_canary_secret_value_never_reaches_the_cache(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", FLUX_REPO)
    cache_dir = tmp_path / "cache"
    for _ in range(2):  # cold, then warm (the Secret is rendered again for substitution)
        res = run_harness("render", "--repo", repo, "--cache-dir", cache_dir, "-o", "json")
        assert res.code == 0, res.stderr
        assert CANARY not in res.stdout
        res = run_harness(
            "render", "dev/flux-system/apps", "--repo", repo, "--cache-dir", cache_dir
        )
        assert TOKEN not in res.stdout and f"token: {TOKEN_MARKER}" in res.stdout
    # check and lint are recorded for replay (their output, in the cache) and then replayed
    assert run_harness("update", "--repo", repo, "--cache-dir", cache_dir).code == 0
    for argv in (("check",), ("check", "-o", "json"), ("lint", "-o", "json")) * 2:
        res = run_harness(*argv, "--repo", repo, "--cache-dir", cache_dir)
        assert res.code in (0, 1) and CANARY not in res.stdout + res.stderr, res.stderr
    needles = [CANARY.encode(), base64.b64encode(CANARY.encode())]
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    records = [p for p in files if replay.KIND.encode() in p.read_bytes()]
    assert len(records) == 3
    # two path targets, three Flux builds, kubectl's version, three run records, three
    # api-reject verdict entries (one per validated target), the store's size estimate; and
    # the facts about unchanged files (paths, blob ids, flags: no content), once any is old
    # enough
    facts = [p for p in files if p.parent.name == "meta" and b'"columns"' in p.read_bytes()]
    assert len(facts) <= 1
    # and the preinstalled scan's record (hazards/preinstalled.py), written once the tree it
    # walked is older than the racy window: on a loaded machine the test outlasts it
    scans = [p for p in files if b'"provisions"' in p.read_bytes()]
    assert len(scans) <= 1
    assert len(files) - len(facts) - len(scans) == 13
    for path in files:
        data = path.read_bytes()
        assert not any(needle in data for needle in needles), path


def test_corrupt_entries_are_rendered_again(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", FLUX_REPO)
    store = cache.Store(tmp_path / "cache")
    cold, _, _ = rendered(repo, store)
    for entry in (tmp_path / "cache").rglob("*.json"):
        raw = entry.read_bytes()
        entry.write_bytes(raw[: len(raw) - 7])
    again, renderer, hits = rendered(repo, store)
    assert hits == 1 and renderer.runs > 0  # the in-run reuse only
    same(cold, again)


def test_an_edit_misses_only_the_targets_that_read_the_file(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "repo",
        {
            "a/kustomization.yaml": kustomization("cm.yaml", "../shared"),
            "a/cm.yaml": configmap("a"),
            "b/kustomization.yaml": kustomization("cm.yaml"),
            "b/cm.yaml": configmap("b"),
            "shared/kustomization.yaml": kustomization("cm.yaml"),
            "shared/cm.yaml": configmap("s"),
        },
    )
    store = cache.Store(tmp_path / "cache")
    rendered(repo, store)
    (repo / "shared" / "cm.yaml").write_text(configmap("s", extra="1"))
    snapshot, renderer, hits = rendered(repo, store)
    assert hits == 1  # b only; a and shared read the edited file
    assert renderer.runs == 2
    assert "extra" in snapshot.results["a"].text()


def test_remote_resources_are_never_cached(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "repo",
        {
            "remote/kustomization.yaml": kustomization("cm.yaml", "https://127.0.0.1:1/x.yaml"),
            "remote/cm.yaml": configmap("r"),
        },
    )
    store = cache.Store(tmp_path / "cache")
    run_cache = cache.RenderCache(store)
    render_repo(config_mod.load(repo), fresh_renderer(), RenderOptions(cache=run_cache))
    assert run_cache.uncacheable == 1
    assert store.info().entries == 0


# -- confinement -----------------------------------------------------------------------------


def test_path_targets_are_confined_to_the_repo(tmp_path: Path, cli: Callable[..., Result]) -> None:
    outside = write_tree(tmp_path / "outside", {"x.yaml": configmap("stolen")})
    repo = write_tree(
        tmp_path / "repo",
        {
            "good/kustomization.yaml": kustomization("cm.yaml"),
            "good/cm.yaml": configmap("good"),
            "dotdot/kustomization.yaml": kustomization("../../outside/x.yaml"),
            "link/kustomization.yaml": kustomization("cm.yaml"),
        },
    )
    os.symlink(outside / "x.yaml", repo / "link" / "cm.yaml")
    for no_cache in ((), ("--no-cache",)):
        res = cli("render", "--repo", repo, "-o", "json", *no_cache)
        assert res.code == 2
        errors = {e["target"]: e["message"] for e in json.loads(res.stdout)["errors"]}
        assert "good" not in errors
        assert errors["dotdot"] == (
            "dotdot/kustomization.yaml: resources '../../outside/x.yaml' is outside the "
            f"source root ({tmp_path / 'outside' / 'x.yaml'})"
        )
        assert errors["link"].startswith(
            "link/kustomization.yaml: resources 'cm.yaml': link/cm.yaml resolves through a "
            f"symlink to {outside / 'x.yaml'}, outside the source root"
        )
        assert "stolen" not in res.stdout


def test_flux_targets_are_confined_to_their_source_root(
    tmp_path: Path, cli: Callable[..., Result]
) -> None:
    outside = write_tree(tmp_path / "outside", {"x.yaml": cm("stolen", "default")})
    repo = write_tree(
        tmp_path / "repo",
        {
            "clusters/dev/kustomization.yaml": ks_file("good.yaml", "scan.yaml", "patch.yaml"),
            "clusters/dev/good.yaml": flux_ks("good", "./good"),
            "clusters/dev/scan.yaml": flux_ks("scan", "./scan"),
            "clusters/dev/patch.yaml": flux_ks("patch", "./patch"),
            "good/cm.yaml": cm("good", "default"),
            "scan/cm.yaml": cm("scan", "default"),
            "patch/kustomization.yaml": ks_file(
                "cm.yaml", patches=[{"path": "../../outside/x.yaml"}]
            ),
            "patch/cm.yaml": cm("patch", "default"),
        },
    )
    # a directory Flux scans (no kustomization file) holding a symlink out of the repo
    os.symlink(outside / "x.yaml", repo / "scan" / "leak.yaml")
    res = cli("render", "--repo", repo, "-o", "json")
    assert res.code == 2
    errors = {e["target"]: e["message"] for e in json.loads(res.stdout)["errors"]}
    assert "dev/flux-system/good" not in errors
    scan_error = errors["dev/flux-system/scan"]
    assert "scan/leak.yaml resolves through a symlink to" in scan_error
    assert "outside the source root" in scan_error
    assert errors["dev/flux-system/patch"].startswith(
        "patch/kustomization.yaml: patches '../../outside/x.yaml' is outside the source root"
    )
    assert "stolen" not in res.stdout


# -- changed-only diff -----------------------------------------------------------------------

LOGGING_KUBECTL = """#!/bin/sh
echo "$@" >> {log}
exec {real} "$@"
"""


@pytest.mark.slow
def test_diff_renders_unchanged_targets_once(tmp_path: Path, kubectl: Path) -> None:
    root = init(tmp_path / "git")
    repo = write_tree(
        root,
        {
            **{f"apps/{n}/kustomization.yaml": kustomization("cm.yaml") for n in "abcd"},
            **{f"apps/{n}/cm.yaml": configmap(n) for n in "abcd"},
        },
    )
    commit_all(root, "init")
    (repo / "apps" / "b" / "cm.yaml").write_text(configmap("b", changed="yes"))
    log = tmp_path / "calls.log"
    fake = tmp_path / "kubectl"
    fake.write_text(LOGGING_KUBECTL.format(log=log, real=kubectl))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)

    def diff(*extra: str) -> tuple[Result, int]:
        log.write_text("")
        res = run_harness(
            "diff", "--repo", repo, "--kubectl", fake, "-o", "json",
            "--cache-dir", tmp_path / f"cache{len(extra)}", *extra,
        )  # fmt: skip
        runs = [line for line in log.read_text().splitlines() if line.startswith("kustomize")]
        return res, len(runs)

    changed_only, runs = diff()
    full, full_runs = diff("--no-cache")
    assert full_runs == 8
    assert runs == 5  # the base's four, then only b again
    assert changed_only.code == full.code == 0
    assert changed_only.stdout == full.stdout
    assert '"apps/b"' in full.stdout


def test_no_cache_touches_no_cache_dir_and_the_default_is_the_environment(
    tmp_path: Path, cli: Callable[..., Result]
) -> None:
    repo = write_tree(
        tmp_path / "repo",
        {"a/kustomization.yaml": kustomization("cm.yaml"), "a/cm.yaml": configmap("a")},
    )
    explicit = tmp_path / "explicit"
    res = cli("render", "--repo", repo, "--no-cache", "--cache-dir", explicit)
    assert res.code == 0
    assert not explicit.exists()
    assert cache.Store(Path(os.environ["HARNESS_CACHE_DIR"])).info().entries == 0
    res = cli("render", "--repo", repo)
    assert res.code == 0
    assert cache.Store(Path(os.environ["HARNESS_CACHE_DIR"])).info().entries == 1
    res = cli("render", "--repo", repo, "--cache-dir", explicit)
    assert cache.Store(explicit).info().entries == 1


def test_the_renderer_version_is_asked_once_per_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm run takes kubectl's version from the cache (keyed by the binary's identity); a
    corrupt entry or a script (a shim may pick another binary per directory) asks again."""
    from harness.render.seam import known_version

    store = cache.Store(tmp_path / "cache")
    first = fresh_renderer()
    memo = known_version(first, store)
    asked = first.info()
    assert memo is not None
    memo.join()
    (entry,) = (tmp_path / "cache" / cache.META).iterdir()

    def refuse(self: render.Renderer) -> str:
        raise AssertionError("version asked again")

    with monkeypatch.context() as m:
        m.setattr(render.Renderer, "_version", refuse)
        second = fresh_renderer()
        assert known_version(second, store) is None  # known: no thread, no process
        assert second.info() == asked
    entry.write_bytes(entry.read_bytes()[:-3])  # truncated: not believed, asked and rewritten
    third = fresh_renderer()
    memo = known_version(third, store)
    assert memo is not None
    memo.join()
    assert third.info() == asked and cache.Store(tmp_path / "cache").get_meta(entry.stem)
    shim = tmp_path / "kubectl"
    shim.write_text(f'#!/bin/sh\nexec {first.binary} "$@"\n')
    shim.chmod(0o755)
    scripted = render.Renderer("kubectl", shim, first.flags, first.timeout)
    known_version(scripted, cache.Store(tmp_path / "other"))
    assert not (tmp_path / "other").exists() and scripted.info().version == asked.version
    cache.Store(tmp_path / "cache").clear()
    assert list((tmp_path / "cache" / cache.META).iterdir()) == []
