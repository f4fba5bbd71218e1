"""The renderer with the real kubectl from the wheel, and injected failures it won't produce."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core.errors import RendererError
from harness.core.model import DocId, Target
from harness.render import kustomize as render
from tests.conftest import configmap, kustomization

Repo = Callable[[dict[str, str | bytes]], Path]


def _render(renderer: render.Renderer, repo: Path, *names: str) -> dict[str, render.TargetResult]:
    targets = [Target(n, "path", repo / n) for n in names]
    return render.render_paths(renderer, targets, repo, jobs=2)


def test_bundled_kubectl_is_found_and_versioned(renderer: render.Renderer) -> None:
    info = renderer.info()
    assert info.name == "kubectl"
    assert info.version.startswith("v1.") and "kustomize v5" in info.version
    assert Path(renderer.binary).name == "kubectl"


def test_documents_match_kubectl_by_hand(
    renderer: render.Renderer, kubectl: Path, make_repo: Repo
) -> None:
    repo = make_repo(
        {
            "app/kustomization.yaml": kustomization("a.yaml", "b.yaml") + "namePrefix: p-\n",
            "app/a.yaml": configmap("one", x="1"),
            "app/b.yaml": configmap("two", y="2"),
        }
    )
    result = _render(renderer, repo, "app")["app"]
    by_hand = subprocess.run(
        [kubectl, "kustomize", repo / "app"], capture_output=True, check=True
    ).stdout
    assert result.ok
    assert result.sha256 == hashlib.sha256(by_hand).hexdigest()
    chunks = by_hand.decode().split("---\n")
    assert [d.sha256 for d in result.documents] == [
        hashlib.sha256(c.encode()).hexdigest() for c in chunks
    ]
    assert [str(d.id) for d in result.documents] == [
        "ConfigMap/default/p-one",
        "ConfigMap/default/p-two",
    ]


def test_one_bad_target_does_not_stop_the_others(
    renderer: render.Renderer, make_repo: Repo
) -> None:
    repo = make_repo(
        {
            "good/kustomization.yaml": kustomization("cm.yaml"),
            "good/cm.yaml": configmap("ok"),
            "missing/kustomization.yaml": kustomization("helmrelease.yaml"),
            "malformed/kustomization.yaml": "resources: [a.yaml\n",
            "notk8s/kustomization.yaml": kustomization("x.yaml"),
            "notk8s/x.yaml": "foo: bar\n",
            "binary/kustomization.yaml": kustomization("x.yaml"),
            "binary/x.yaml": (
                b'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: "\xff\xfe"\n'
            ),
        }
    )
    results = _render(renderer, repo, "good", "missing", "malformed", "notk8s", "binary")
    assert results["good"].ok and len(results["good"].documents) == 1
    for name in ("missing", "malformed", "notk8s", "binary"):
        error = results[name].error
        assert error is not None, name
        assert error.startswith(f"{name}/kustomization.yaml: kustomize: "), error
        assert "\n" not in error
        assert str(repo) not in error, "paths are made repo-relative"
    assert "helmrelease.yaml" in (results["missing"].error or "")
    assert "UTF-8" in (results["binary"].error or "")


def test_duplicate_anchors_in_sources_render(renderer: render.Renderer, make_repo: Repo) -> None:
    repo = make_repo(
        {
            "a/kustomization.yaml": kustomization("x.yaml"),
            "a/x.yaml": (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: &m\n  name: c\ndata: &m\n  k: v\n"
            ),
        }
    )
    result = _render(renderer, repo, "a")["a"]
    assert result.ok and [str(d.id) for d in result.documents] == ["ConfigMap/c"]


def test_empty_output_is_zero_documents(renderer: render.Renderer, make_repo: Repo) -> None:
    repo = make_repo({"e/kustomization.yaml": "resources: []\n"})
    result = _render(renderer, repo, "e")["e"]
    assert result.ok and result.documents == ()
    assert result.sha256 == hashlib.sha256(b"").hexdigest()


def test_duplicate_identities_are_reported_not_dropped(
    renderer: render.Renderer, make_repo: Repo
) -> None:
    deploy = "apiVersion: {v}\nkind: Deployment\nmetadata:\n  name: w\n"
    repo = make_repo(
        {
            "d/kustomization.yaml": kustomization("x.yaml", "y.yaml"),
            "d/x.yaml": deploy.format(v="apps/v1"),
            "d/y.yaml": deploy.format(v="apps/v1beta1"),
        }
    )
    result = _render(renderer, repo, "d")["d"]
    assert len(result.documents) == 2
    assert result.duplicates == (DocId("apps", "Deployment", "", "w"),)


def test_identical_builds_run_kustomize_once(renderer: render.Renderer, make_repo: Repo) -> None:
    repo = make_repo({"a/kustomization.yaml": kustomization("c.yaml"), "a/c.yaml": configmap("c")})
    first = renderer.build(repo / "a")
    second = renderer.build(repo / "a" / ".." / "a")
    assert first == second and renderer.runs == 1


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fake-kubectl"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_hung_render_is_killed_with_its_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    fake = _script(tmp_path, f"sleep 300 &\necho $! > {pidfile}\nwait\n")
    # 2 s: time for the script to start its child and write the pid even on a loaded machine
    renderer = render.resolve(kubectl=str(fake), timeout=2)
    started = time.monotonic()
    output = renderer.build(tmp_path)
    assert time.monotonic() - started < 150  # killed, not waited for (the child sleeps 300 s)
    assert output.error == "kustomize: timed out after 2s (killed)"
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 300  # SIGKILL is asynchronous: init reaps the child soon
    while True:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        if time.monotonic() > deadline:
            pytest.fail("the renderer's child process survived the timeout")
        time.sleep(0.05)


def test_missing_binary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RendererError, match="--kubectl: /nonexistent/kubectl: not found"):
        render.resolve(kubectl="/nonexistent/kubectl")
    with pytest.raises(RendererError, match="HARNESS_KUBECTL"):
        os.environ["HARNESS_KUBECTL"] = "/nonexistent/kubectl"
        try:
            render.resolve()
        finally:
            del os.environ["HARNESS_KUBECTL"]


def test_binary_vanishing_after_resolution(tmp_path: Path) -> None:
    fake = _script(tmp_path, "exit 0\n")
    renderer = render.resolve(kubectl=str(fake))
    fake.unlink()
    assert renderer.build(tmp_path).error == f"renderer not found: {fake}"


def test_crash_with_nonzero_exit_keeps_first_error_line(fp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    renderer = render.Renderer("kubectl", Path("/opt/kubectl"), (), 5)
    fp.register(
        ["/opt/kubectl", "kustomize", str(tmp_path)],
        stderr=["", "Error: panic: runtime error: index out of range", "goroutine 1 [running]:"],
        returncode=2,
    )
    assert renderer.build(tmp_path).error == "kustomize: panic: runtime error: index out of range"


def test_killed_by_signal_without_message(fp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    renderer = render.Renderer("kubectl", Path("/opt/kubectl"), (), 5)
    fp.register(["/opt/kubectl", "kustomize", str(tmp_path)], returncode=-9)
    assert renderer.build(tmp_path).error == "kustomize: killed by signal 9"


def test_garbage_output_is_a_target_error(fp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    renderer = render.Renderer("kubectl", Path("/opt/kubectl"), (), 5)
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    fp.register(
        ["/opt/kubectl", "kustomize", str(tmp_path)],
        stdout="\x1b[31mWARNING: something\nnot: [yaml\n",
    )
    result = render.render_paths(renderer, [Target("t", "path", tmp_path)], tmp_path, 1)["t"]
    assert result.error is not None
    assert result.error.startswith("kustomization.yaml: document 1: invalid YAML")


def test_kustomize_output_with_equals_and_anchors_parses(fp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    renderer = render.Renderer("kubectl", Path("/opt/kubectl"), (), 5)
    out = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  matchType: =\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: &m\n  name: b\ndata: &m\n  k: v\n"
    )
    fp.register(["/opt/kubectl", "kustomize", str(tmp_path)], stdout=out)
    result = render.render_paths(renderer, [Target("t", "path", tmp_path)], tmp_path, 1)["t"]
    assert result.ok, result.error
    assert [str(d.id) for d in result.documents] == ["ConfigMap/a", "ConfigMap/b"]


def test_standalone_kustomize_binary(
    tmp_path: Path, kubectl: Path, make_repo: Repo, cli: Callable[..., object]
) -> None:
    """`--kustomize PATH` runs `kustomize build FLAGS DIR`; here a wrapper over kubectl's."""
    log = tmp_path / "argv.log"
    fake = tmp_path / "kustomize"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {log}\n'
        'if [ "$1" = version ]; then echo v5.8.1; exit 0; fi\n'
        "shift\n"
        f'exec {kubectl} kustomize "$@"\n'
    )
    fake.chmod(0o755)
    repo = make_repo({"a/kustomization.yaml": kustomization("c.yaml"), "a/c.yaml": configmap("c")})
    res = cli("render", "--repo", repo, "--kustomize", fake, "-o", "json")
    payload = json.loads(res.stdout)  # type: ignore[attr-defined]
    assert payload["renderer"] == {"name": "kustomize", "version": "v5.8.1"}
    assert payload["targets"][0]["documents"] == 1
    calls = log.read_text().splitlines()
    assert f"build --load-restrictor LoadRestrictionsNone {repo / 'a'}" in calls


# -- process slots: overlapping stages keep to `jobs` kustomize processes -------------------


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 300  # a hang guard: the wait ends on the condition
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the slot holders"
        time.sleep(0.005)


def test_slots_serve_urgent_waiters_before_background_ones() -> None:
    import threading

    slots = render.Slots(1)
    order: list[str] = []
    release = threading.Event()

    def hold() -> None:
        with slots.slot(background=True):
            release.wait(10)

    def take(name: str, background: bool) -> None:
        with slots.slot(background):
            order.append(name)

    holder = threading.Thread(target=hold)
    holder.start()
    _wait_until(lambda: slots._free == 0)
    late = threading.Thread(target=take, args=("background", True))
    late.start()
    time.sleep(0.05)  # the background waiter queues first
    urgent = threading.Thread(target=take, args=("urgent", False))
    urgent.start()
    _wait_until(lambda: slots._urgent_waiting == 1)
    release.set()
    for t in (holder, late, urgent):
        t.join(10)
    assert order == ["urgent", "background"]


def test_limited_renderer_never_runs_more_processes_than_jobs(
    tmp_path: Path, kubectl: Path, make_repo: Repo
) -> None:
    """Path targets and other stages together: the wrapper logs each run's start and end."""
    log = tmp_path / "runs.log"
    wrapper = _script(
        tmp_path,
        f'echo S >> {log}\nsleep 0.05\n"{kubectl}" "$@"\nrc=$?\necho E >> {log}\nexit $rc\n',
    )
    names = [f"app{i}" for i in range(8)]
    repo = make_repo(
        {
            **{f"{n}/kustomization.yaml": kustomization("cm.yaml") for n in names},
            **{f"{n}/cm.yaml": configmap(n, k=n) for n in names},
        }
    )
    renderer = render.resolve(kubectl=str(wrapper))
    targets = [Target(n, "path", repo / n) for n in names]
    with renderer.limited(2):
        results = render.render_paths(renderer, targets, repo, jobs=6)
    assert all(r.ok for r in results.values())
    running = peak = 0
    for line in log.read_text().split():
        running += 1 if line == "S" else -1
        peak = max(peak, running)
    assert peak == 2 and renderer.runs == 8
    assert renderer._slots is None  # the limit ends with its block


def test_version_check_runs_once_for_concurrent_askers(tmp_path: Path, kubectl: Path) -> None:
    import threading

    log = tmp_path / "versions.log"
    wrapper = _script(
        tmp_path,
        f'if [ "$1" = version ]; then echo V >> {log}; sleep 0.2; fi\nexec "{kubectl}" "$@"\n',
    )
    renderer = render.resolve(kubectl=str(wrapper))
    seen: list[render.RendererInfo] = []
    askers = [threading.Thread(target=lambda: seen.append(renderer.info())) for _ in range(4)]
    for t in askers:
        t.start()
    for t in askers:
        t.join(30)
    assert len(seen) == 4 and len(set(seen)) == 1
    assert seen[0].version.startswith("v1.")
    assert log.read_text().split() == ["V"]


def test_version_known_says_whether_info_would_wait(tmp_path: Path, kubectl: Path) -> None:
    renderer = render.resolve(kubectl=str(kubectl))
    assert not renderer.version_known()  # not asked yet
    renderer.info()
    assert renderer.version_known()
    assumed = render.resolve(kubectl=str(kubectl))
    assumed.assume_version("v1.2.3 (kustomize v5)")
    assert assumed.version_known() and assumed.info().version == "v1.2.3 (kustomize v5)"


def test_failed_version_check_fails_every_asker(tmp_path: Path) -> None:
    fake = _script(tmp_path, 'echo "boom" >&2\nexit 3\n')
    renderer = render.resolve(kubectl=str(fake))
    for _ in range(2):
        with pytest.raises(RendererError, match="version check failed: boom"):
            renderer.info()


def test_render_repo_reports_a_failed_version_check(tmp_path: Path, make_repo: Repo) -> None:
    """The check starts in the background; its error still ends the render as before."""
    from harness.core import config as config_mod
    from harness.pipeline.repo import RenderOptions, render_repo

    fake = _script(tmp_path, 'if [ "$1" = version ]; then echo nope >&2; exit 3; fi\nexit 0\n')
    repo = make_repo({"app/kustomization.yaml": kustomization("cm.yaml"), "app/cm.yaml": ""})
    with pytest.raises(RendererError, match="version check failed: nope"):
        render_repo(config_mod.load(repo), render.resolve(kubectl=str(fake)), RenderOptions(jobs=2))


def test_kustomize_runs_with_a_short_lived_go_runtime(
    tmp_path: Path, kubectl: Path, make_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GOGC/GOMEMLIMIT for a ~50 ms process, unless the user chose their own."""
    log = tmp_path / "env.log"
    wrapper = _script(tmp_path, f'echo "$GOGC $GOMEMLIMIT" >> {log}\nexec "{kubectl}" "$@"\n')
    repo = make_repo(
        {"app/kustomization.yaml": kustomization("cm.yaml"), "app/cm.yaml": configmap("a")}
    )
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    renderer = render.resolve(kubectl=str(wrapper))
    plain = render.resolve().build(repo / "app")
    assert renderer.build(repo / "app") == plain and plain.error is None
    renderer.info()
    assert log.read_text().splitlines() == ["400 1GiB", "400 1GiB"]
    log.unlink()
    monkeypatch.setenv("GOMEMLIMIT", "300MiB")
    render.resolve(kubectl=str(wrapper)).build(repo / "app")
    assert log.read_text().splitlines() == [" 300MiB"]
