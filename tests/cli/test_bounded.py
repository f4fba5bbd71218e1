"""A hostile tree cannot take a run down (issue 28): every scenario is a real git repo, the
real CLI in a subprocess under an address-space limit, and a generous hang guard.

Each bad file or tool either is skipped with one warning naming it, or fails its own target
with one line naming target and file; the good targets still render and match."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from harness.render import kustomize as render
from tests.conftest import Result, configmap, kustomization, write_tree
from tests.flux.conftest import flux_ks, ks_file
from tests.gitkit import commit_all, init

HANG_GUARD = 300  # seconds: a run that blocks in open() or reads without end hits this
ULIMIT_V = 4_000_000 * 1024  # `ulimit -v 4000000`, as CI would run harness
GOOD = "render-golden: 3/3 path targets, 2/2 flux targets match"


def files() -> dict[str, str | bytes]:
    """Two path targets and a cluster whose Flux Kustomization builds apps/good."""
    return {
        "apps/good/kustomization.yaml": kustomization("cm.yaml"),
        "apps/good/cm.yaml": configmap("good", v="1"),
        "apps/bad/kustomization.yaml": kustomization("cm.yaml"),
        "apps/bad/cm.yaml": configmap("bad", v="2"),
        "clusters/dev/kustomization.yaml": ks_file("apps.yaml"),
        "clusters/dev/apps.yaml": flux_ks("apps", "./apps/good", targetNamespace="apps"),
        "harness.yaml": "clusters: [clusters/dev]\n",
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = write_tree(init(tmp_path / "repo"), files())
    assert harness("update", "--repo", root, "-q").code == 0
    commit_all(root, "base")
    return root


def harness(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    """The CLI under `ulimit -v 4000000` (set in the child before it executes)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ULIMIT_V, ULIMIT_V))

    proc = subprocess.run(
        [sys.executable, "-m", "harness", *[str(a) for a in args]],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        preexec_fn=limit,
        env={**os.environ, "NO_COLOR": "1", "HARNESS_NO_REPLAY": "1", **(env or {})},
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def lines(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def reference(root: Path, rel: str) -> None:
    """Make apps/bad's kustomization list `rel` too."""
    (root / "apps/bad/kustomization.yaml").write_text(kustomization("cm.yaml", rel))


def test_a_dev_zero_symlink_referenced_by_nothing_is_skipped(repo: Path) -> None:
    """Before: the cluster scan read it to the end (24 GB, or MemoryError and no target)."""
    os.symlink("/dev/zero", repo / "apps/good/zero.yaml")
    res = harness("check", "--repo", repo, "--no-cache")
    assert res.code == 0, res.stderr
    assert lines(res.stderr, "warning: skipped") == [
        "warning: skipped apps/good/zero.yaml: not a regular file (a character device)"
    ]
    assert lines(res.stdout, "render-golden") == [GOOD]
    commit_all(repo, "a symlink to /dev/zero")  # git stores it: the PR's own tree
    res = harness("diff", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "--no-cache")
    assert res.code == 0, res.stderr
    assert lines(res.stderr, "warning: skipped") == [
        "warning: skipped apps/good/zero.yaml: not a regular file (a character device)"
    ]


def test_a_fifo_never_hangs_the_run(repo: Path) -> None:
    """Before: `open()` of the FIFO blocked harness itself, whatever --timeout said."""
    os.mkfifo(repo / "apps/good/pipe.yaml")  # read by the scan only
    os.mkfifo(repo / "apps/bad/fifo.yaml")
    reference(repo, "fifo.yaml")  # read by kustomize: it would block there
    res = harness("check", "--repo", repo, "--no-cache")
    assert res.code == 2, res.stderr
    assert lines(res.stderr, "error:") == [
        "error: apps/bad: apps/bad/kustomization.yaml: resources 'fifo.yaml': "
        "apps/bad/fifo.yaml is a FIFO"
    ]
    assert lines(res.stderr, "warning: skipped") == [
        "warning: skipped apps/bad/fifo.yaml: not a regular file (a FIFO)",
        "warning: skipped apps/good/pipe.yaml: not a regular file (a FIFO)",
    ]
    assert lines(res.stdout, "render-golden") == [
        "render-golden: 2/3 path targets, 2/2 flux targets match (1 error: apps/bad)"
    ]
    res = harness("render", "--repo", repo, "--no-cache", "apps/good")
    assert res.code == 0, res.stderr
    assert "name: good" in res.stdout


def test_a_file_over_the_cap_is_skipped_or_fails_its_target(repo: Path) -> None:
    huge = b"# padding\n" * (17 * 1024 * 1024 // 10)  # 17 MiB: over the 16 MiB default
    (repo / "apps/good/huge.yaml").write_bytes(huge)
    (repo / "apps/bad/big.yaml").write_bytes(huge)
    reference(repo, "big.yaml")
    res = harness("check", "--repo", repo, "--no-cache")
    assert res.code == 2, res.stderr
    cap = "17.0 MiB, over the 16 MiB file size cap (limits.file_bytes in harness.yaml)"
    assert lines(res.stderr, "error:") == [
        f"error: apps/bad: apps/bad/kustomization.yaml: resources 'big.yaml': "
        f"apps/bad/big.yaml is {cap}"
    ]
    assert lines(res.stderr, "warning: skipped") == [
        f"warning: skipped apps/bad/big.yaml: {cap}",
        f"warning: skipped apps/good/huge.yaml: {cap}",
    ]
    assert lines(res.stdout, "render-golden") == [
        "render-golden: 2/3 path targets, 2/2 flux targets match (1 error: apps/bad)"
    ]
    (repo / "harness.yaml").write_text("clusters: [clusters/dev]\nlimits: {file_bytes: 32MiB}\n")
    res = harness("check", "--repo", repo, "--no-cache")  # the cap is configurable
    assert lines(res.stderr, "warning: skipped") == []
    assert lines(res.stderr, "error:") == [], res.stderr


def test_a_symlink_out_of_the_root_is_not_followed(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.yaml").write_text(configmap("elsewhere"))
    os.symlink(tmp_path / "elsewhere.yaml", repo / "apps/good/outside.yaml")
    res = harness("check", "--repo", repo, "--no-cache")
    assert res.code == 0, res.stderr
    assert lines(res.stderr, "warning: skipped") == [
        f"warning: skipped apps/good/outside.yaml: resolves through a symlink to "
        f"{tmp_path / 'elsewhere.yaml'}, outside the source root"
    ]
    assert lines(res.stdout, "render-golden") == [GOOD]


def test_a_renderer_printing_without_end_fails_only_its_target(repo: Path, tmp_path: Path) -> None:
    """Before: harness read the stream into memory until the machine (or ulimit) stopped it."""
    real = render.resolve().binary
    fake = tmp_path / "kubectl"
    fake.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *apps/bad*) exec yes "data: {"a" * 60}" ;; esac\n'
        f'exec {real} "$@"\n'
    )
    fake.chmod(0o755)
    res = harness("check", "--repo", repo, "--no-cache", "--kubectl", fake)
    assert res.code == 2, res.stderr
    assert lines(res.stderr, "error:") == [
        "error: apps/bad: apps/bad/kustomization.yaml: kustomize: stdout over the 256 MiB "
        "output cap, killed (limits.output_bytes in harness.yaml)"
    ]
    assert lines(res.stdout, "render-golden") == [
        "render-golden: 2/3 path targets, 2/2 flux targets match (1 error: apps/bad)"
    ]


def test_a_billion_laughs_stops_at_the_memory_limit(repo: Path) -> None:
    """Before: kustomize expanded it to 4.6 GB; no limit was set on it."""
    laughs = ["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: lol", "data:"]
    laughs.append('  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]')
    for previous, name in zip("abcdefghi", "bcdefghij", strict=True):
        laughs.append(f"  {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    (repo / "apps/bad/cm.yaml").write_text("\n".join(laughs) + "\n")
    (repo / "harness.yaml").write_text("clusters: [clusters/dev]\nlimits: {memory_bytes: 1GiB}\n")
    res = harness("check", "--repo", repo, "--no-cache")
    assert res.code == 2, res.stderr
    assert lines(res.stderr, "error:") == [
        "error: apps/bad: apps/bad/kustomization.yaml: kustomize: out of memory under the "
        "1 GiB limit, killed (limits.memory_bytes in harness.yaml)"
    ]
    assert lines(res.stdout, "render-golden") == [
        "render-golden: 2/3 path targets, 2/2 flux targets match (1 error: apps/bad)"
    ]


def test_a_poisoned_cache_entry_is_dropped(repo: Path, tmp_path: Path) -> None:
    """Before: an entry that is a symlink to /dev/zero was `internal error: MemoryError`."""
    cache = tmp_path / "cache"
    env = {"HARNESS_CACHE_DIR": str(cache)}
    assert harness("check", "--repo", repo, env=env).code == 0
    entries = sorted((cache / "v1").rglob("*.json"))
    assert entries
    for entry in entries:
        entry.unlink()
        entry.symlink_to("/dev/zero")
    res = harness("check", "--repo", repo, env=env)
    assert res.code == 0, res.stderr
    (warning,) = lines(res.stderr, "warning: render cache")
    assert warning.startswith("warning: render cache entry dropped as corrupt: ")
    assert warning.endswith(".json: not a regular file")
    assert lines(res.stdout, "render-golden") == [GOOD]
    assert not any(p.is_symlink() for p in (cache / "v1").rglob("*.json"))
