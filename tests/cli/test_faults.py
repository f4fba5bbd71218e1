"""The fault suite: concurrent updates, SIGTERM in every verb, SIGKILL leftovers, an unusable
cache. Real subprocesses, real signals, real mounts (issue 24: faults handled by design,
not survived by luck)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.render import kustomize as render
from tests.conftest import Result, configmap, kustomization, run_harness, write_tree
from tests.flux.conftest import flux_ks, ks_file
from tests.gitkit import commit_all, init

# A kubectl whose builds hang: `version` is the real one; a build starts a child (as helm's
# plugins or kustomize's exec plugins do), records both pids and waits.
SLOW_KUBECTL = """#!/bin/sh
if [ "$1" = "version" ]; then exec {real} "$@"; fi
sleep 300 &
echo "$$ $!" >> {pids}
wait
"""


def files() -> dict[str, str | bytes]:
    """Path targets and a Flux cluster (so a run makes a Flux workspace in TMPDIR)."""
    return {
        "apps/a/kustomization.yaml": kustomization("cm.yaml"),
        "apps/a/cm.yaml": configmap("a", v="1"),
        "apps/b/kustomization.yaml": kustomization("cm.yaml"),
        "apps/b/cm.yaml": configmap("b", v="2"),
        "clusters/dev/kustomization.yaml": ks_file("apps.yaml"),
        "clusters/dev/apps.yaml": flux_ks("apps", "./apps", targetNamespace="apps"),
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = write_tree(init(tmp_path / "repo"), files())
    assert run_harness("update", "--repo", root, "-q").code == 0
    commit_all(root, "base")
    return root


def harness(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *[str(a) for a in args]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "HARNESS_NO_REPLAY": "1", **(env or {})},
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # a zombie of ours
            return False
    return True


# Waits end on an event (a pid file written, a process gone, a line read); this bound only
# stops a hung run, and is generous for a loaded 2-core machine: never a verdict on speed.
HANG = 300.0


def gone(pid: int) -> bool:
    """The process has ended (a SIGKILLed orphan is reaped by init asynchronously)."""
    deadline = time.monotonic() + HANG
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_for(path: Path) -> list[int]:
    """The pids the fake kubectl writes once a build has started."""
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return [int(p) for p in path.read_text().split()]
        time.sleep(0.05)
    raise AssertionError(f"no build started within {HANG}s")


@pytest.fixture
def slow_kubectl(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    pids = tmp_path / "build.pids"
    fake = tmp_path / "bin" / "kubectl"
    fake.parent.mkdir()
    fake.write_text(SLOW_KUBECTL.format(real=render.resolve().binary, pids=pids))
    fake.chmod(0o755)
    yield fake, pids
    if pids.exists():  # whatever a failed test left running
        for pid in (int(p) for p in pids.read_text().split()):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("harness-"))


def test_two_updates_at_once_both_succeed_one_after_the_other(repo: Path) -> None:
    for round_ in range(3):
        (repo / "apps/a/cm.yaml").write_text(configmap("a", v=str(round_ + 10)))
        runs = [harness("update", "--repo", repo, "-q", "-j", "1") for _ in range(2)]
        results = [p.communicate(timeout=HANG) for p in runs]
        for proc, (_out, err) in zip(runs, results, strict=True):
            assert proc.returncode == 0, err
            assert "Traceback" not in err
        check = run_harness("check", "--repo", repo, "-q")
        assert check.code == 0, check.stdout + check.stderr
        goldens = repo / "goldens"
        assert not [p for p in goldens.rglob("*") if p.name.endswith(".tmp")]


def test_a_waiting_update_says_so(repo: Path, slow_kubectl: tuple[Path, Path]) -> None:
    """The goldens lock is held while one update writes; a second waits with one line."""
    import fcntl

    fd = os.open(repo / "goldens", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a writing update holds it
    proc = harness("update", "--repo", repo, "-q")
    guard = threading.Timer(HANG, proc.kill)  # a hung run ends the readline with EOF
    guard.start()
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line.startswith("warning: "):  # the run's own warnings come first
            line = proc.stderr.readline()
        assert line.startswith("waiting: another harness run is writing the goldens in "), line
        assert proc.poll() is None  # still waiting: the lock is held
    finally:
        os.close(fd)
        guard.cancel()
    proc.communicate(timeout=HANG)
    assert proc.returncode == 0


VERBS: dict[str, tuple[str, ...]] = {
    "check": ("check",),
    "update": ("update",),
    "render": ("render",),
    "lint": ("lint",),
    "diff": ("diff", "--base", "HEAD"),
    "comment": ("comment", "--base", "HEAD"),
    "graph": ("graph", "--base", "HEAD"),
    "init": ("init", "--force"),
}


@pytest.mark.slow
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_sigterm_in_every_verb_cleans_up(
    verb: str, repo: Path, tmp_path: Path, slow_kubectl: tuple[Path, Path]
) -> None:
    """SIGTERM (a cancelled CI job) mid-render: exit 143, the renderer and its children
    killed, every temp dir (Flux workspace, git checkout) removed, the goldens intact."""
    fake, pids = slow_kubectl
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    goldens = sorted((p.name, p.read_bytes()) for p in (repo / "goldens").rglob("*.yaml"))
    (repo / "apps/a/cm.yaml").write_text(configmap("a", v="changed"))  # diff has work
    proc = harness(
        *VERBS[verb],
        "--repo",
        repo,
        "--kubectl",
        fake,
        "-j",
        "1",
        "--no-cache",
        env={"TMPDIR": str(tmp)},
    )
    build, child = wait_for(pids)[:2]
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 143, err
    assert err.strip().endswith("terminated") and "Traceback" not in err, err
    assert gone(build) and gone(child), "the renderer's process group outlived SIGTERM"
    assert leftovers(tmp) == []
    assert sorted((p.name, p.read_bytes()) for p in (repo / "goldens").rglob("*.yaml")) == goldens


@pytest.mark.slow
def test_a_killed_runs_leftovers_are_swept_by_the_next_run(
    repo: Path, tmp_path: Path, slow_kubectl: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, pids = slow_kubectl
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}
    proc = harness(
        "diff",
        "--base",
        "HEAD",
        "--repo",
        repo,
        "--kubectl",
        fake,
        "-j",
        "1",
        "--no-cache",
        env=env,
    )
    wait_for(pids)
    proc.kill()  # SIGKILL: no cleanup runs
    proc.communicate(timeout=HANG)
    left = leftovers(tmp)
    assert left, "a SIGKILLed diff leaves its checkout and workspace"
    stale = repo / "goldens" / "path" / f".apps%2Fa.yaml.{proc.pid}-0123456789ab.tmp"
    stale.write_text("half a golden")  # as a killed update leaves one
    monkeypatch.setenv("TMPDIR", str(tmp))
    done = run_harness("render", "--repo", repo, "-q", "--no-cache", cwd=repo)
    assert done.code == 0, done.stderr
    assert leftovers(tmp) == []  # the dead run's checkout and workspace, and the new run's
    assert run_harness("update", "--repo", repo, "-q").code == 0
    assert not stale.exists()


def _tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    return proc.returncode == 0


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[list[Path]]:
    made: list[Path] = []
    yield made
    for path in made:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def _needs_mount(path: Path, size: str, made: list[Path]) -> None:
    if not _tmpfs(path, size):
        if os.environ.get("CI"):
            pytest.fail("CI runs as root and must be able to mount a tmpfs")
        pytest.skip("mounting a tmpfs needs root")
    made.append(path)


def _one_warning(res: Result) -> str:
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning: render")]
    assert len(warnings) == 1, res.stderr
    assert warnings[0].endswith(": running uncached"), warnings[0]
    return warnings[0]


@pytest.mark.slow
def test_an_unusable_cache_is_one_warning_and_the_run_goes_on(
    repo: Path, tmp_path: Path, mounts: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(a_file))
    res = run_harness("check", "--repo", repo, "-q")
    assert res.code == 0, res.stderr
    assert "Not a directory" in _one_warning(res)
    # read-only: a real read-only filesystem (root may write anywhere else)
    readonly = tmp_path / "ro"
    _needs_mount(readonly, "1m", mounts)
    subprocess.run(["mount", "-o", "remount,ro", str(readonly)], check=True)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(readonly / "cache"))
    res = run_harness("check", "--repo", repo, "-q")
    assert res.code == 0 and "Read-only file system" in _one_warning(res)
    # full: the probe fits, the entries do not (a 12 KiB filesystem)
    full = tmp_path / "full"
    _needs_mount(full, "12k", mounts)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(full / "cache"))
    (full / "filler").write_bytes(b"\0" * 8192)
    res = run_harness("check", "--repo", repo, "-q")
    assert res.code == 0, res.stderr
    assert "No space left on device" in _one_warning(res)


@pytest.mark.slow
def test_cache_clear_on_a_read_only_cache_fails(
    repo: Path, tmp_path: Path, mounts: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cachefs"
    _needs_mount(cache, "16m", mounts)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    assert run_harness("check", "--repo", repo, "-q").code == 0
    subprocess.run(["mount", "-o", "remount,ro", str(cache)], check=True)
    res = run_harness("cache", "clear")
    assert res.code == 2
    assert "error: could not remove" in res.stderr and "Read-only file system" in res.stderr
    subprocess.run(["mount", "-o", "remount,rw", str(cache)], check=True)
    cleared = run_harness("cache", "clear")
    assert cleared.code == 0 and "removed" in cleared.stdout


def test_multi_line_kustomize_errors_keep_file_line_and_cause_and_lose_nothing(
    repo: Path,
) -> None:
    """kustomize's errors run over several lines (a wrapped YAML error, a cycle's chain):
    each failing target still gets one line naming its file, the line and the cause (no
    first-line cut), the other targets render, `update` writes nothing it should not."""
    bare = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\n"
    write_tree(
        repo,
        {
            # a path target and the Flux target both read it: a duplicate key in a base
            "apps/dup/kustomization.yaml": kustomization("../../base"),
            "base/kustomization.yaml": kustomization("cm.yaml"),
            "base/cm.yaml": bare + "data:\n  x: '1'\n  x: '2'\n",
            "loop/one/kustomization.yaml": kustomization("../two"),
            "loop/two/kustomization.yaml": kustomization("../one"),
        },
    )
    goldens = {p: p.read_bytes() for p in (repo / "goldens").rglob("*") if p.is_file()}
    for verb in ("check", "update", "render"):
        res = run_harness(verb, "--repo", repo, "-q")
        assert res.code == 2, (verb, res.stdout, res.stderr)
        errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
        dup = [e for e in errors if "apps/dup" in e.split(":")[1]]
        assert len(dup) == 1, (verb, errors)
        assert 'base/cm.yaml:7: mapping key "x" already defined at line 6' in dup[0], dup
        loop = [e for e in errors if e.startswith(("error: loop/one:", "error: loop/two:"))]
        assert len(loop) == 2, (verb, errors)
        assert all("cycle detected" in e and "break the loop" in e for e in loop), loop
        flux = [e for e in errors if "dev/flux-system/apps" in e]
        assert len(flux) == 1, errors  # its targetNamespace moved kustomize's line numbers
        assert '../base/cm.yaml:7: mapping key "x" already defined at line 6' in flux[0], flux
        if verb != "update":
            assert "apps/a" in res.stdout or verb == "check"
    # update rendered what it could and left the failing targets' goldens as they were
    after = {p: p.read_bytes() for p in (repo / "goldens").rglob("*") if p.is_file()}
    assert after == goldens
