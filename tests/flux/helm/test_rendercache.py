"""Helm targets in the render cache: a hit is the miss byte for byte and loads no Helm library;
every input of a release's render changes its key; Secrets never reach the cache dir."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cache import store as cache
from harness.core import config as config_mod
from harness.core.model import Snapshot
from harness.flux.helm import cached, sdk
from harness.flux.helm.engine import BinaryEngine
from harness.pipeline.repo import RenderOptions, render_repo
from harness.render import kustomize as render_mod
from tests.conftest import Result, fresh_python, write_tree
from tests.flux.helm.charts import (
    cluster_repo,
    configmap,
    dump,
    helm_release,
    helm_repository,
    local_chart,
    oci_repository,
    repo_chart,
)
from tests.flux.helm.conftest import ChartRepo, package
from tests.gitkit import commit_all, init

# Helm renders through the SDK in worker processes, a chart per test: the integration tier
pytestmark = pytest.mark.integration

CANARY = "canary-5d1c0a77-helm-never-on-disk"
TARGET = "prod/apps/web"
PATCH = {
    "target": {"kind": "Deployment"},
    "patch": "- op: add\n  path: /spec/paused\n  value: true\n",
}


def _render(
    repo: Path, store: cache.Store | None, **options: Any
) -> tuple[Snapshot, cache.RenderCache | None]:
    cfg = config_mod.load(repo)
    renderer = render_mod.resolve(flags=cfg.kubectl_flags)
    run_cache = cache.RenderCache(store) if store is not None else None
    snapshot = render_repo(
        cfg, renderer, RenderOptions(jobs=2, helm=True, cache=run_cache, **options)
    )
    return snapshot, run_cache


def _helm_text(snapshot: Snapshot) -> dict[str, tuple[str, str | None, tuple[str, ...], Any]]:
    return {
        name: (r.text(), r.error, r.notes, r.target.helm)
        for name, r in snapshot.results.items()
        if r.target.kind == "helm"
    }


def _secret(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "web-secret", "namespace": "apps"},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def _release(**spec: Any) -> dict[str, Any]:
    return helm_release(
        chart={
            **local_chart(),
            "valuesFiles": ["charts/demo/values.yaml", "charts/demo/values-prod.yaml"],
        },
        valuesFrom=[
            {"kind": "ConfigMap", "name": "web-values"},
            {"kind": "Secret", "name": "web-secret", "valuesKey": "token", "targetPath": "token"},
            {"kind": "Secret", "name": "web-secret", "valuesKey": "values.yaml"},
        ],
        postRenderers=[{"kustomize": {"patches": [PATCH]}}],
        **spec,
    )


def _files(**overrides: str) -> dict[str, str | bytes]:
    config = [
        configmap("web-values", "apps", {"values.yaml": "logLevel: debug\n"}),
        _secret(token=CANARY, **{"values.yaml": f"greeting: {CANARY}-greeting\n"}),
    ]
    files: dict[str, str | bytes] = dict(cluster_repo(_release(), config=config))
    files.update(overrides)
    return files


def test_hit_equals_miss_and_loads_no_helm_library(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", _files())
    store = cache.Store(tmp_path / "cache")
    cold, cold_cache = _render(repo, store)
    assert cold.results[TARGET].ok, cold.results[TARGET].error
    assert cold_cache is not None and cold_cache.misses > 0
    script = f"""
import sys
from pathlib import Path
from tests.flux.helm.test_rendercache import _render, _helm_text
from harness.cache import store as cache
snap, run_cache = _render(Path({str(repo)!r}), cache.Store(Path({str(tmp_path / "cache")!r})))
assert run_cache.misses == 0, run_cache.misses
print("loaded" if "helm_python" in sys.modules else "not loaded")
"""
    # a fresh interpreter: the Go library loads once per process and never unloads
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.strip() == "not loaded"
    warm, warm_cache = _render(repo, store)
    assert warm_cache is not None and warm_cache.misses == 0
    uncached, _ = _render(repo, None)
    assert _helm_text(cold) == _helm_text(warm) == _helm_text(uncached)
    for name, result in cold.results.items():
        assert result.documents == warm.results[name].documents == uncached.results[name].documents
        assert result.sha256 == warm.results[name].sha256
    text = cold.results[TARGET].text()
    assert "level: debug" in text and "paused: true" in text and "replicas: 5" in text


def test_canary_from_a_values_from_secret_never_reaches_the_cache(
    tmp_path: Path, cli: Callable[..., Result]
) -> None:
    repo = write_tree(tmp_path / "repo", _files())
    cache_dir = tmp_path / "cache"
    outputs = []
    for extra in ((), (), ("-o", "json"), ("-o", "json")):
        res = cli("render", TARGET, "--repo", repo, "--helm", "--cache-dir", cache_dir, *extra)
        assert res.code == 0, res.stderr
        assert CANARY not in res.stdout + res.stderr
        outputs.append(res.stdout)
    assert outputs[0] == outputs[1] and outputs[2] == outputs[3]
    assert "token: <redacted sha256:" in outputs[0]  # the Secret's value, rendered as a marker
    needles = [CANARY.encode(), base64.b64encode(CANARY.encode())]
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    helm_entries = [p for p in files if cached.SCHEMA.encode() in p.read_bytes()]
    assert helm_entries
    for path in files:
        data = path.read_bytes()
        assert not any(needle in data for needle in needles), path


def _helm_entries(store: cache.Store) -> list[Path]:
    return [p for p in store.entries.rglob("*.json") if cached.SCHEMA in p.read_text()]


def _key_of(repo: Path, store: cache.Store) -> str:
    """The text of the one helm entry a render leaves in an empty store."""
    snapshot, run_cache = _render(repo, store)
    assert snapshot.results[TARGET].ok, snapshot.results[TARGET].error
    assert run_cache is not None
    entries = sorted(
        p.name for p in store.entries.rglob("*.json") if cached.SCHEMA in p.read_text()
    )
    assert len(entries) == 1, entries
    return entries[0]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


EDITS: dict[str, Callable[[Path], None]] = {
    "values file": lambda r: _edit(r / "charts/demo/values-prod.yaml", "5", "6"),
    "valuesFrom ConfigMap": lambda r: _edit(r / "infra/config.yaml", "debug", "trace"),
    "valuesFrom Secret": lambda r: (r / "infra/config.yaml").write_text(
        dump(
            configmap("web-values", "apps", {"values.yaml": "logLevel: debug\n"}),
            _secret(token="other", **{"values.yaml": f"greeting: {CANARY}-greeting\n"}),
        )
    ),
    "chart template": lambda r: _edit(
        r / "charts/demo/templates/configmap.yaml", "level:", "extra: x\n  level:"
    ),
    "chart version": lambda r: _edit(r / "charts/demo/Chart.yaml", "n: 1.0.0", "n: 1.0.1"),
    "new chart file": lambda r: (r / "charts/demo/templates/extra.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
    ),
    "post-renderer patch": lambda r: _edit(r / "apps/release.yaml", "value: true", "value: false"),
    "release name": lambda r: _edit(r / "apps/release.yaml", "interval: 10m", "releaseName: other"),
    "target namespace": lambda r: _edit(
        r / "apps/release.yaml", "interval: 10m", "targetNamespace: apps2"
    ),
    "install crds": lambda r: _edit(
        r / "apps/release.yaml", "interval: 10m", "install:\n    crds: Skip"
    ),
    "hooks": lambda r: _edit(
        r / "apps/release.yaml", "interval: 10m", "install:\n    disableHooks: true"
    ),
    "tests": lambda r: _edit(r / "apps/release.yaml", "interval: 10m", "test:\n    enable: true"),
    "kube version": lambda r: (r / "harness.yaml").write_text("helm: {kube_version: v1.30.2}\n"),
    "config API versions": lambda r: (r / "harness.yaml").write_text(
        "helm: {api_versions: [example.com/v1]}\n"
    ),
    "a custom resource the cluster applies": lambda r: (r / "infra/sources.yaml").write_text(
        dump({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}})
    ),
    "cluster CRD scope": lambda r: (r / "infra/sources.yaml").write_text(
        dump(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "things.example.com"},
                "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Thing"}},
            }
        )
    ),
}


@pytest.mark.slow
def test_every_ingredient_changes_the_key(tmp_path: Path) -> None:
    base = _files()
    keys = {"": _key_of(write_tree(tmp_path / "base", base), cache.Store(tmp_path / "c-base"))}
    again = _key_of(write_tree(tmp_path / "again", base), cache.Store(tmp_path / "c-again"))
    assert again == keys[""]  # another checkout of the same tree: the same key
    for i, (what, edit) in enumerate(EDITS.items()):
        repo = write_tree(tmp_path / f"r{i}", base)
        edit(repo)
        keys[what] = _key_of(repo, cache.Store(tmp_path / f"c{i}"))
    assert len(set(keys.values())) == len(keys), keys


def test_helmignored_files_do_not_change_the_key(tmp_path: Path) -> None:
    ignore = "# comment\n*.md\ndocs/\n/ci/\ntemplates/skip-*.txt\n"
    files = _files(**{"charts/demo/.helmignore": ignore})
    key = _key_of(write_tree(tmp_path / "a", files), cache.Store(tmp_path / "ca"))
    ignored = {
        "charts/demo/README.md": "# readme\n",
        "charts/demo/docs/guide.txt": "guide\n",
        "charts/demo/ci/values.yaml": "replicas: 9\n",
        "charts/demo/templates/skip-me.txt": "{{ fail }}\n",
    }
    same = _key_of(write_tree(tmp_path / "b", {**files, **ignored}), cache.Store(tmp_path / "cb"))
    assert same == key
    # a file the rules do not cover, and rules beyond what is mirrored, both change it
    assert (
        _key_of(
            write_tree(tmp_path / "f", {**files, "charts/demo/templates/docs/x.txt": "x\n"}),
            cache.Store(tmp_path / "cf"),
        )
        == key
    )  # `docs/` matches a directory of that name anywhere, as in Helm
    other = {**files, "charts/demo/files/x.txt": "x\n"}
    assert _key_of(write_tree(tmp_path / "c", other), cache.Store(tmp_path / "cc")) != key
    # a character class is not mirrored here: nothing is left out, the ignored files count
    classes = ignore + "notes[0-9].txt\n"
    unsure = {**files, **ignored, "charts/demo/.helmignore": classes}
    plain = {**files, "charts/demo/.helmignore": classes}
    assert _key_of(write_tree(tmp_path / "d", unsure), cache.Store(tmp_path / "cd")) != _key_of(
        write_tree(tmp_path / "e", plain), cache.Store(tmp_path / "ce")
    )


def test_helmignore_rules() -> None:
    rules = cached._helmignore_rules("*.md\ndocs/\n/ci/\ntemplates/skip-*.txt\na?c\n")
    assert cached._ignored(rules, "README.md", False)
    assert cached._ignored(rules, "templates/x/NOTES.md", False)  # base name
    assert cached._ignored(rules, "docs", True)
    assert not cached._ignored(rules, "docs", False)  # only directories
    assert cached._ignored(rules, "ci", True)
    assert cached._ignored(rules, "templates/skip-1.txt", False)
    assert not cached._ignored(rules, "templates/sub/skip-1.txt", False)  # * stops at /
    assert cached._ignored(rules, "abc", False) and not cached._ignored(rules, "abbc", False)
    for unsure in ("!keep.md", "**/x", "[ab].txt", "a\\*b"):
        assert cached._helmignore_rules(f"*.md\n{unsure}\n") == ()


def test_no_cache_and_corrupt_entries_render_again(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", _files())
    store = cache.Store(tmp_path / "cache")
    cold, _ = _render(repo, store)
    for entry in store.entries.rglob("*.json"):
        if cached.SCHEMA in entry.read_text():
            raw = entry.read_bytes()
            entry.write_bytes(raw[: len(raw) // 2])
    again, run_cache = _render(repo, store)
    assert run_cache is not None and run_cache.misses == 1  # the helm entry, rendered again
    assert _helm_text(again) == _helm_text(cold)
    assert any(cached.SCHEMA in p.read_text() for p in store.entries.rglob("*.json"))
    uncached, none = _render(repo, None)
    assert none is None and _helm_text(uncached) == _helm_text(cold)


def test_engine_switch_changes_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helm_binary: Path
) -> None:
    repo = write_tree(tmp_path / "repo", _files())
    store = cache.Store(tmp_path / "cache")
    sdk_run, _ = _render(repo, store)
    fake = tmp_path / "helm"  # the real helm, each process logged
    fake.write_text(
        f'#!/bin/sh\necho "\\"$1\\"" >> {tmp_path / "argv.log"}\nexec {helm_binary} "$@"\n'
    )
    fake.chmod(0o755)
    binary_run, binary_cache = _render(repo, store, helm_binary=str(fake))
    assert binary_cache is not None and binary_cache.misses == 1  # not the SDK's entry
    assert (tmp_path / "argv.log").read_text().count('"template"') == 1
    again, again_cache = _render(repo, store, helm_binary=str(fake))
    assert again_cache is not None and again_cache.misses == 0
    assert (tmp_path / "argv.log").read_text().count('"template"') == 1  # no second process
    assert _helm_text(binary_run) == _helm_text(again)
    assert binary_run.results[TARGET].text() == sdk_run.results[TARGET].text()
    # $HARNESS_HELM_ARGS (e.g. --kube-version) is part of the binary's identity
    monkeypatch.setenv("HARNESS_HELM_ARGS", "--kube-version 1.30.0")
    _, args_cache = _render(repo, store, helm_binary=str(fake))
    assert args_cache is not None and args_cache.misses == 1


def test_remote_chart_keyed_by_archive_digest(tmp_path: Path, chart_repo: ChartRepo) -> None:
    chart_repo.publish(package(tmp_path, "1.0.0"))
    chart_repo.publish(package(tmp_path, "1.1.0"))
    release = helm_release(chart=repo_chart("1.0.0"))
    files = cluster_repo(release, sources=[helm_repository(chart_repo.url)])
    repo = write_tree(tmp_path / "repo", files)
    store = cache.Store(tmp_path / "cache")
    cold, _ = _render(repo, store)
    assert cold.results[TARGET].ok, cold.results[TARGET].error
    warm, warm_cache = _render(repo, store)
    assert warm_cache is not None and warm_cache.misses == 0
    assert _helm_text(cold) == _helm_text(warm)
    helm = warm.results[TARGET].target.helm
    assert helm is not None and helm.version == "1.0.0" and helm.digest
    _edit(repo / "apps/release.yaml", "version: 1.0.0", "version: 1.1.0")  # a version bump
    bumped, _ = _render(repo, store)
    assert len(_helm_entries(store)) == 2  # the new version's render, beside the old one
    assert "ghcr.io/example/web:1.1.0" in bumped.results[TARGET].text()
    offline, offline_cache = _render(repo, store, offline=True)  # from the chart cache
    assert offline_cache is not None and offline_cache.misses == 0
    assert _helm_text(offline) == _helm_text(bumped)


def _git_repo(tmp_path: Path) -> Path:
    root = init(tmp_path / "git")
    write_tree(root, _files())
    commit_all(root, "init")
    return root


@pytest.mark.slow
def test_cached_diff_equals_uncached_diff(tmp_path: Path, cli: Callable[..., Result]) -> None:
    repo = _git_repo(tmp_path)
    _edit(repo / "charts/demo/templates/configmap.yaml", "level:", "extra: x\n  level:")
    _edit(repo / "infra/config.yaml", "debug", "trace")
    cache_dir = tmp_path / "cache"
    for output in ("text", "json"):
        full = cli("diff", "--repo", repo, "--helm", "--no-cache", "-o", output)
        cold = cli("diff", "--repo", repo, "--helm", "--cache-dir", cache_dir, "-o", output)
        warm = cli("diff", "--repo", repo, "--helm", "--cache-dir", cache_dir, "-o", output)
        assert full.code == cold.code == warm.code == 0, full.stderr
        assert full.stdout == cold.stdout == warm.stdout
        assert TARGET in full.stdout and CANARY not in full.stdout
    if output == "json":
        assert json.loads(full.stdout)
    for output in ("text", "json"):
        check = [
            cli("check", "--repo", repo, "--helm", *extra, "-o", output)
            for extra in (("--no-cache",), ("--cache-dir", cache_dir), ("--cache-dir", cache_dir))
        ]
        assert len({(c.code, c.stdout) for c in check}) == 1, check


def test_flux_hit_with_a_helm_miss_reads_the_real_secret_values(tmp_path: Path) -> None:
    """A Flux cache hit holds a plaintext Secret redacted; a helm render that misses (its chart
    changed) still reads the Secret's values, so it answers what an uncached render does."""
    repo = write_tree(tmp_path / "repo", _files())
    store = cache.Store(tmp_path / "cache")
    _render(repo, store)
    _edit(repo / "charts/demo/templates/configmap.yaml", "level:", "extra: x\n  level:")
    warm, warm_cache = _render(repo, store)
    assert warm_cache is not None and warm_cache.misses == 1  # the helm target alone
    uncached, _ = _render(repo, None)
    assert warm.results[TARGET].ok, warm.results[TARGET].error
    assert _helm_text(warm) == _helm_text(uncached)
    assert "extra: x" in warm.results[TARGET].text()


def test_a_binary_version_is_remembered_per_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like kubectl's: a warm run asks a `helm` binary (not a script) for no version."""
    binary = tmp_path / "helm"
    binary.write_bytes(Path(sys.executable).resolve().read_bytes()[:4096] + b"\0not a script")
    binary.chmod(0o755)
    store = cache.Store(tmp_path / "cache")
    renderer = render_mod.resolve(flags=config_mod.DEFAULT_KUBECTL_FLAGS)

    def identity() -> str:
        engine = BinaryEngine(binary, 60)
        return cached.ReleaseCache(cache.RenderCache(store), engine, renderer).engine_identity()

    asked: list[list[str]] = []

    def answer(self: BinaryEngine, argv: list[str], chart: Path | None) -> str:
        asked.append(argv)
        return "v4.2.3+gtest\n"

    monkeypatch.setattr(BinaryEngine, "_run", answer)
    first = identity()
    assert asked and "helm v4.2.3+gtest" in first
    asked.clear()
    assert identity() == first and not asked  # remembered under the binary's identity
    binary.write_bytes(binary.read_bytes() + b"\0rebuilt")  # another binary: asked again
    identity()
    assert asked


def test_sdk_identity_is_read_without_loading_the_library(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from harness.flux.helm import sdk\n"
        "assert sdk.installed()\n"
        "identity = sdk.identity()\n"
        "assert 'helm_python' not in sys.modules\n"
        "print(identity)\n"
    )
    out = fresh_python(script)
    assert out.startswith("helm-python-sdk ") and "helm_python/lib/" in out
    lib = tmp_path / "libhelm_c.so"
    lib.write_bytes(b"a library the user built")
    env_script = script.replace("print(identity)", "print(identity.splitlines()[-1])")
    other = fresh_python(env_script, env={**os.environ, "HELM_C_LIB": str(lib)})
    assert other.startswith("libhelm_c.so:")  # $HELM_C_LIB's file is part of it


@pytest.mark.slow
def test_oci_chart_resolved_each_run_rendered_once_per_digest(
    tmp_path: Path, oci_registry: str
) -> None:
    """A semver range is resolved against the registry every run; a new matching version
    is a new archive digest, so a new entry, and the old one is never served for it."""
    push = sdk.module().push
    push(str(package(tmp_path, "1.2.0")), f"oci://{oci_registry}/charts", plain_http=True)
    artifact = oci_repository(oci_registry)
    release = helm_release(chartRef={"kind": "OCIRepository", "name": "demo"})
    repo = write_tree(tmp_path / "repo", cluster_repo(release, sources=[artifact]))
    store = cache.Store(tmp_path / "cache")
    cold, _ = _render(repo, store)
    warm, warm_cache = _render(repo, store)
    uncached, _ = _render(repo, None)
    assert cold.results[TARGET].ok, cold.results[TARGET].error
    assert warm_cache is not None and warm_cache.misses == 0
    assert _helm_text(cold) == _helm_text(warm) == _helm_text(uncached)
    push(str(package(tmp_path, "1.3.0")), f"oci://{oci_registry}/charts", plain_http=True)
    newer, newer_cache = _render(repo, store)
    assert newer_cache is not None and newer_cache.misses == 1
    assert "ghcr.io/example/web:1.3.0" in newer.results[TARGET].text()
    assert len(_helm_entries(store)) == 2
