"""A hostile tree cannot take a run down (issue 28): every scenario is a real git repo, the
real CLI in a subprocess under an address-space limit, and a generous hang guard.

Each bad file or tool either is skipped with one warning naming it, or fails its own target
with one line naming target and file; the good targets still render and match."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import resource
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from harness.render import kustomize as render
from tests.cli.commands.test_canaries import LATE, dump, late_files, scan, secret
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


def harness(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Result:
    """The CLI under `ulimit -v 4000000` (set in the child before it executes)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ULIMIT_V, ULIMIT_V))

    environ = {**os.environ, "NO_COLOR": "1", "HARNESS_NO_REPLAY": "1", **(env or {})}
    environ.pop("GITHUB_STEP_SUMMARY", None)  # CI's own: no run here writes to it
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *[str(a) for a in args]],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        preexec_fn=limit,
        env=environ,
        cwd=cwd,
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
    res = harness("check", "--repo", repo, "--no-cache")  # the tree cannot raise its cap
    assert lines(res.stderr, "warning: skipped") == [
        f"warning: skipped apps/bad/big.yaml: {cap}",
        f"warning: skipped apps/good/huge.yaml: {cap}",
    ]
    assert lines(res.stderr, "warning: " + str(repo)) == [
        f"warning: {repo / 'harness.yaml'}: limits.file_bytes 32MiB is looser than 16 MiB, "
        "which applies: a tree cannot loosen its own bounds (set HARNESS_LIMITS=file_bytes=... "
        "where harness runs to allow it)"
    ]
    env = {"HARNESS_LIMITS": "file_bytes=32MiB"}  # whoever runs harness can
    res = harness("check", "--repo", repo, "--no-cache", env=env)
    assert lines(res.stderr, "warning:") == []
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


def test_a_memory_limit_too_low_to_start_kubectl_says_so(repo: Path) -> None:
    """Before: `version check failed: -11` (Go dies with SIGSEGV reserving its heap)."""
    (repo / "harness.yaml").write_text("clusters: [clusters/dev]\nlimits: {memory_bytes: 64MiB}\n")
    res = harness("check", "--repo", repo, "--no-cache")
    assert res.code == 2, res.stderr
    assert (
        res.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "kubectl: cannot start under the 64 MiB address-space limit (limits.memory_bytes in "
            "harness.yaml; kubectl needs about 1 GiB to start)"
        )
    )


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


def test_writes_stay_in_the_repo_unless_the_user_typed_an_absolute_path(
    repo: Path, tmp_path: Path
) -> None:
    """Before: `--html` wrote wherever a relative path or a planted symlink led, and `update`
    wrote through a symlinked goldens directory (and deleted files there). An absolute path
    outside (the hostile suite's `--html`) is the user's word."""
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    res = harness("check", "--html", "../report.html", "--no-cache", cwd=repo)
    assert res.code == 2
    assert res.stderr.splitlines() == [
        f"error: --html ../report.html: resolves to {tmp_path / 'report.html'}, outside the "
        f"repository ({repo}); pass an absolute path to write there"
    ]
    os.symlink(victim, repo / "report.html")  # committed by the pull request
    res = harness("check", "--html", "report.html", "--no-cache", cwd=repo)
    assert res.code == 2 and "outside the repository" in res.stderr, res.stderr
    (tmp_path / "elsewhere").mkdir()
    (repo / "goldens/flux").rename(repo / "goldens/flux-old")
    os.symlink(tmp_path / "elsewhere", repo / "goldens/flux")
    res = harness("update", "--repo", repo, "--no-cache")
    assert res.code == 2
    assert lines(res.stderr, "error:") == [
        f"error: {repo / 'goldens/flux/dev/flux-system'}: resolves through a symlink to "
        f"{tmp_path / 'elsewhere/dev/flux-system'}, outside {repo / 'goldens'}; not written"
    ]
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert victim.read_text() == "mine\n"


# -- the hostile pull request (issue 28 item 6): every hostile input at once, every verb ------

BIDI = "apps/bidi\u202egpj.txt"  # a right-to-left override in a target's name
CANARIES = {
    **LATE,
    "substitute-from": "canary-substfrom-r1-3a9c07",
    "rotated": "canary-rotated-r2-58e1d4",
}


def laughs() -> str:
    """A billion laughs: nine levels of nine aliases, for kustomize and harness's loader."""
    out = ["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: lol", "data:"]
    out.append('  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]')
    for previous, name in zip("abcdefghi", "bcdefghij", strict=True):
        out.append(f"  {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    return "\n".join(out) + "\n"


def bomb() -> bytes:
    """A tarball of 101 MiB of zeros in about 100 KiB: over the 100 MiB archive cap."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("zeros.yaml")
        info.size = 101 * 1024 * 1024
        tar.addfile(info, io.BytesIO(b"\0" * info.size))
    return gzip.compress(raw.getvalue(), compresslevel=1)


def hostile_base() -> dict[str, str | bytes]:
    """The trusted base: good targets, the canary routes of test_canaries (their Secrets,
    patches, substitutions), and a substituteFrom Secret."""
    late = late_files(CANARIES)
    late.pop("harness.yaml")
    return {
        **late,
        "harness.yaml": (
            "clusters: [clusters/dev, clusters/prod]\n"
            "limits: {memory_bytes: 1GiB, output_bytes: 32MiB}\n"  # each fails sooner
        ),
        "apps/good/kustomization.yaml": kustomization("cm.yaml"),
        "apps/good/cm.yaml": configmap("good", v="1"),
        "apps/vars/kustomization.yaml": kustomization("vars.yaml"),
        "apps/vars/vars.yaml": dump(
            secret("vars", "flux-system", stringData={"TOKEN": CANARIES["substitute-from"]})
        ),
        "apps/subst/kustomization.yaml": kustomization("cm.yaml"),
        "apps/subst/cm.yaml": configmap("subst", namespace="subst", token="${TOKEN}"),
        "clusters/dev/kustomization.yaml": ks_file("apps.yaml"),
        "clusters/dev/apps.yaml": "---\n".join(
            [
                flux_ks("apps", "./apps/good", targetNamespace="apps"),
                flux_ks("vars", "./apps/vars"),
                flux_ks(
                    "subst",
                    "./apps/subst",
                    dependsOn=[{"name": "vars"}],
                    postBuild={"substituteFrom": [{"kind": "Secret", "name": "vars"}]},
                ),
            ]
        ),
    }


def hostile_head(root: Path) -> None:
    """What the pull request adds: every hostile input of issue 28."""
    files: dict[str, str | bytes] = {
        "apps/big/kustomization.yaml": kustomization("huge.yaml"),
        "apps/big/huge.yaml": b"# padding\n" * (17 * 1024 * 1024 // 10),  # over 16 MiB
        "apps/endless/kustomization.yaml": kustomization("cm.yaml"),  # the fake kubectl
        "apps/endless/cm.yaml": configmap("endless"),
        "apps/laughs/kustomization.yaml": kustomization("cm.yaml"),
        "apps/laughs/cm.yaml": laughs(),
        f"{BIDI}/kustomization.yaml": kustomization("cm.yaml"),
        f"{BIDI}/cm.yaml": configmap("bidi"),
        "tarballs/bomb.tgz": bomb(),
        "clusters/dev/future.yaml": flux_ks("future", "./apps/good").replace(
            "kustomize.toolkit.fluxcd.io/v1", "kustomize.toolkit.fluxcd.io/v9"
        ),
        "clusters/dev/bombed.yaml": "---\n".join(
            [
                dump(
                    {
                        "apiVersion": "source.extensions.fluxcd.io/v1beta1",
                        "kind": "ArtifactGenerator",
                        "metadata": {"name": "bomb", "namespace": "flux-system"},
                        "spec": {
                            "sources": [
                                {"alias": "repo", "kind": "GitRepository", "name": "flux-system"}
                            ],
                            "artifacts": [
                                {
                                    "name": "bomb",
                                    "copy": [
                                        {
                                            "from": "@repo/tarballs/bomb.tgz",
                                            "to": "@artifact/",
                                            "strategy": "Extract",
                                        }
                                    ],
                                }
                            ],
                        },
                    }
                ),
                flux_ks("bombed", "./", source="bomb").replace(
                    "kind: GitRepository", "kind: ExternalArtifact"
                ),
            ]
        ),
        "clusters/dev/kustomization.yaml": ks_file("apps.yaml", "future.yaml", "bombed.yaml"),
        # a rotated canary: the change shows, masked
        "apps/vars/vars.yaml": dump(
            secret("vars", "flux-system", stringData={"TOKEN": CANARIES["rotated"]})
        ),
    }
    write_tree(root, files)
    os.symlink("/dev/zero", root / "apps/good/zero.yaml")  # git stores it


def endless_kubectl(tmp_path: Path) -> Path:
    """kubectl, except that building apps/endless prints without end."""
    fake = tmp_path / "kubectl"
    fake.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *apps/endless*) exec yes "data: {"a" * 60}" ;; esac\n'
        f'exec {render.resolve().binary} "$@"\n'
    )
    fake.chmod(0o755)
    return fake


def one_line_errors(res: Result) -> list[str]:
    """The error lines; every one names a target or a file, and none is a traceback."""
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    return lines(res.stderr, "error:")


@pytest.mark.slow
def test_a_hostile_pull_request_through_every_verb(tmp_path: Path) -> None:
    """Every hostile input of issue 28 in one tree, each verb under `ulimit -v 4000000` and
    the hang guard, from a poisoned cache: no hang, no internal error, one line per bad
    target, the good targets rendered, and no planted value (plain or base64) in any
    output, golden, comment part or cache entry."""
    root = write_tree(init(tmp_path / "repo"), hostile_base())
    cache = tmp_path / "cache"
    env = {"HARNESS_CACHE_DIR": str(cache)}
    kubectl = endless_kubectl(tmp_path)
    blobs: dict[str, bytes] = {}

    def verb(name: str, *args: str | Path, codes: tuple[int, ...] = (1, 2)) -> Result:
        res = harness(*args, "--repo", root, "--kubectl", kubectl, env=env)
        assert res.code in codes, (name, res.code, res.stdout[-3000:], res.stderr[-3000:])
        one_line_errors(res)
        blobs[f"{name} stdout"] = res.stdout.encode()
        blobs[f"{name} stderr"] = res.stderr.encode()
        return res

    verb("update base", "update", codes=(2,))  # `a` quotes a Secret value in its error
    commit_all(root, "base")
    hostile_head(root)
    commit_all(root, "the pull request")
    os.mkfifo(root / "apps/good/pipe.yaml")  # git cannot store a FIFO: the working tree's
    verb("check warm", "check")
    for entry in sorted((cache / "v1").rglob("*.json")):  # a poisoned CI cache
        entry.unlink()
        entry.symlink_to("/dev/zero")
    out = tmp_path / "out"
    check = verb("check", "check", "--html", out / "check.html")
    diff = verb("diff", "diff", "--base", "HEAD~1", "--head", "HEAD", "-o", "json")
    verb("diff text", "diff", "--base", "HEAD~1", "--head", "HEAD", "--html", out / "diff.html")
    parts = root / "parts"  # in the repo, a planted symlink among the parts
    parts.mkdir()
    os.symlink(tmp_path / "victim", parts / "comment-part-1.md")
    comment = ("comment", "--base", "HEAD~1", "--head", "HEAD", "--split", "--output-dir")
    verb("comment", *comment, parts)
    assert not (tmp_path / "victim").exists() and not (parts / "comment-part-1.md").is_symlink()
    render_all = verb("render", "render")
    verb("lint", "lint", codes=(1, 2))
    verb("update", "update", codes=(2,))
    # the verdicts: the bad targets fail with one line each, the good ones still render
    bad = {
        "a": "cannot decode !!str `<redacted sha256:",  # a Secret value, masked
        "apps/big": "over the 16 MiB file size cap",
        "apps/endless": "stdout over the 32 MiB output cap, killed",
        "apps/laughs": "out of memory under the 1 GiB limit, killed",
        "dev/flux-system/bombed": "unpacks to more than 100 MiB, over the archive cap",
        "dev/flux-system/future": "v9",
    }
    errors = one_line_errors(check)
    assert sorted(line.split(":")[1].strip() for line in errors) == sorted(bad), errors
    for line in errors:
        target = line.split(":")[1].strip()
        assert bad[target] in line, line
    assert "warning: skipped apps/good/zero.yaml: not a regular file (a character device)" in (
        check.stderr
    )
    assert "warning: skipped apps/good/pipe.yaml: not a regular file (a FIFO)" in check.stderr
    assert "warning: render cache entry dropped as corrupt: " in blobs["check stderr"].decode()
    for good in ("apps/good", "dev/flux-system/apps", "prod/flux-system/substituted"):
        assert re.search(rf"^{re.escape(good)} +\S+ +[1-9]", render_all.stdout, re.M), good
    assert "\u202e" not in check.stdout + check.stderr + render_all.stdout
    assert "apps/bidi\\u202egpj.txt" in render_all.stdout
    assert json.loads(diff.stdout)["verdict"]
    files = [p for d in (out, parts, root / "goldens", cache) for p in d.rglob("*") if p.is_file()]
    assert len(files) > 10
    blobs.update({str(p): p.read_bytes() for p in files})
    assert scan(blobs, CANARIES) == []
