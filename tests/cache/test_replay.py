"""Whole-run replay through the console script, as a user runs it: a hit prints exactly what a
real run prints, and every kind of input change, however small, is a miss."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.cache import fileformat, replay
from harness.cli import flags
from tests import gitkit
from tests.conftest import Result, configmap, fresh_python, kustomization, write_tree

Run = Callable[..., tuple[Result, str]]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repo whose goldens live beside it, outside the repo root (as in the example)."""
    repo = write_tree(
        tmp_path / "project" / "repo",
        {
            "harness.yaml": "goldens: ../goldens\n",
            "apps/a/kustomization.yaml": kustomization("cm.yaml"),
            "apps/a/cm.yaml": configmap("a", data1="one"),
            "apps/b/kustomization.yaml": kustomization("cm.yaml"),
            "apps/b/cm.yaml": configmap("b", data1="two"),
        },
    )
    # the checkout's top, which holds the goldens; .git itself is never fingerprinted
    (repo.parent / ".git").mkdir()
    return repo


@pytest.fixture
def run(tmp_path: Path) -> Run:
    """Run `harness ARGS` in a subprocess; returns the result and the replay log's new lines."""
    log = tmp_path / "replay.log"

    def invoke(*args: str | Path, env: dict[str, str] | None = None) -> tuple[Result, str]:
        before = log.read_text() if log.exists() else ""
        proc = subprocess.run(
            [sys.executable, "-m", "harness", *[str(a) for a in args]],
            capture_output=True,
            env={**os.environ, "NO_COLOR": "1", replay.ENV_LOG: str(log), **(env or {})},
            timeout=300,
        )
        after = log.read_text() if log.exists() else ""
        res = Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
        return res, after[len(before) :]

    return invoke


def _check(
    run: Run, repo: Path, *extra: str | Path, env: dict[str, str] | None = None
) -> tuple[Result, str]:
    return run("check", "--repo", repo, "-j", "2", *extra, env=env)


def _truth(run: Run, repo: Path, *extra: str) -> Result:
    """What a real run prints: replay off."""
    res, log = run("check", "--repo", repo, "-j", "2", *extra, env={replay.ENV_OFF: "1"})
    assert log == ""
    return res


def test_unchanged_check_replays_exactly(project: Path, run: Run) -> None:
    res, _ = run("update", "--repo", project, "-j", "2")
    assert res.code == 0, res.stderr
    first, log = _check(run, project)
    assert first.code == 0 and "miss: no record" in log and "recorded: exit 0" in log
    second, log = _check(run, project)
    assert "hit: exit 0" in log
    assert (second.code, second.stdout, second.stderr) == (first.code, first.stdout, first.stderr)

    # a difference replays too, with its exit code and both streams
    (project / "apps" / "a" / "cm.yaml").write_text(configmap("a", data1="uno"))
    differs, log = _check(run, project)
    assert differs.code == 1 and "recorded: exit 1" in log
    again, log = _check(run, project)
    assert "hit: exit 1" in log
    assert (again.code, again.stdout, again.stderr) == (1, differs.stdout, differs.stderr)
    assert again.stdout == _truth(run, project).stdout


def _same_size_edit(repo: Path) -> None:
    path = repo / "apps" / "a" / "cm.yaml"
    st = path.stat()
    path.write_text(path.read_text().replace("one", "uno"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the old mtime back


def _symlink(repo: Path) -> None:
    (repo / "apps" / "a" / "link.yaml").symlink_to("cm.yaml")


EDITS: dict[str, Callable[[Path], None]] = {
    "same-size content edit, mtime kept": _same_size_edit,
    "new file": lambda r: (r / "apps" / "a" / "extra.yaml").write_text(configmap("x")),
    "new target": lambda r: write_tree(
        r, {"apps/c/kustomization.yaml": kustomization("cm.yaml"), "apps/c/cm.yaml": configmap("c")}
    ),
    "new empty directory": lambda r: (r / "apps" / "a" / "empty").mkdir(),
    "deleted file": lambda r: (r / "apps" / "b" / "cm.yaml").unlink(),
    "renamed directory": lambda r: (r / "apps" / "b").rename(r / "apps" / "bee"),
    "config edit": lambda r: (r / "harness.yaml").write_text("goldens: ../goldens\njobs: 1\n"),
    "golden outside the repo": lambda r: next((r.parent / "goldens").rglob("*.yaml")).write_text(
        "# edited\n"
    ),
    "mode change": lambda r: (r / "apps" / "a" / "cm.yaml").chmod(0o600),
    "symlink": _symlink,
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_every_input_change_is_a_miss(project: Path, run: Run, edit: str) -> None:
    assert run("update", "--repo", project, "-j", "2")[0].code == 0
    assert "recorded" in _check(run, project)[1]
    EDITS[edit](project)
    res, log = _check(run, project)
    assert "miss: inputs changed" in log, edit
    truth = _truth(run, project)
    assert (res.code, res.stdout, res.stderr) == (truth.code, truth.stdout, truth.stderr)


def test_invocation_is_the_key(project: Path, run: Run) -> None:
    assert run("update", "--repo", project, "-j", "2")[0].code == 0
    assert "recorded" in _check(run, project)[1]
    assert "miss: no record" in _check(run, project, "-o", "json")[1]
    assert "miss: no record" in run("check", "--repo", project, "-j", "2", env={"COLUMNS": "7"})[1]
    assert "hit" in _check(run, project)[1]


def test_a_replaced_renderer_is_a_miss(project: Path, run: Run, tmp_path: Path) -> None:
    from harness.render import kustomize as render

    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.parent.mkdir()
    shutil.copy2(render.resolve().binary, kubectl)
    assert run("update", "--repo", project, "-j", "2")[0].code == 0
    assert "recorded" in _check(run, project, "--kubectl", kubectl)[1]
    assert "hit" in _check(run, project, "--kubectl", kubectl)[1]
    os.utime(kubectl, ns=(0, 10**18))
    assert "miss: inputs changed" in _check(run, project, "--kubectl", kubectl)[1]


def _stand_in(path: Path, action: str) -> Path:
    """A kubectl that answers `version` as the real one does and then fails its build."""
    from harness.render import kustomize as render

    path.parent.mkdir(parents=True, exist_ok=True)
    real = render.resolve().binary
    path.write_text(f'#!/bin/sh\n[ "$1" = version ] && exec {real} "$@"\n{action}\n')
    path.chmod(0o755)
    return path


def test_errors_replay_but_transient_failures_never_record(
    project: Path, run: Run, tmp_path: Path
) -> None:
    # a missing file is a function of the inputs: its error replays like any answer
    (project / "apps" / "b" / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    res, log = _check(run, project)
    assert res.code == 2 and "recorded: exit 2" in log
    again, log = _check(run, project)
    assert "hit: exit 2" in log and (again.stdout, again.stderr) == (res.stdout, res.stderr)
    # a renderer killed by a signal or timed out may succeed next time: never recorded
    killed = _stand_in(tmp_path / "k" / "kubectl", "kill -9 $$")
    res, log = _check(run, project, "--kubectl", killed)
    assert res.code == 2 and "not recorded: a renderer was killed" in log
    slow = _stand_in(tmp_path / "s" / "kubectl", "sleep 30")
    res, log = _check(run, project, "--kubectl", slow, "--timeout", "0.5")
    assert res.code == 2 and "not recorded: a render timed out" in log


def test_runs_that_are_never_recorded(project: Path, run: Run, tmp_path: Path) -> None:
    assert run("update", "--repo", project, "-j", "2")[0].code == 0
    # opted out, or a side effect a replay would skip: no decision at all
    summary = tmp_path / "summary.md"
    for extra, env in (
        (("--no-cache",), {}),
        (("--html", str(tmp_path / "r.html")), {}),
        ((), {"GITHUB_STEP_SUMMARY": str(summary)}),
        (("-o", "junit"), {}),  # its XML holds the run's duration
        (("--output=junit",), {}),
        (("-ojunit",), {}),
        (("-qo", "junit"), {}),
        ((), {replay.ENV_OFF: "1"}),
    ):
        assert _check(run, project, *extra, env=env)[1] == ""
    # other verbs are not replayed
    assert run("render", "--repo", project, "-q")[1] == ""


def _records(cache: Path) -> list[Path]:
    return [
        p
        for p in (cache / fileformat.ENTRIES).rglob("*.json")
        if replay.KIND.encode() in p.read_bytes()
    ]


def test_a_corrupt_record_is_never_trusted(project: Path, run: Run) -> None:
    cache = Path(os.environ["HARNESS_CACHE_DIR"])
    assert run("update", "--repo", project, "-j", "2")[0].code == 0
    first, log = _check(run, project)
    [record] = _records(cache)
    record.write_bytes(record.read_bytes()[:-20])
    res, log = _check(run, project)
    assert "miss: unreadable record" in log and "recorded: exit 0" in log
    assert res.stdout == first.stdout
    assert "hit" in _check(run, project)[1]
    # records are cache entries: cleared with the cache
    assert run("cache", "clear")[0].code == 0
    assert _records(cache) == []
    assert "miss: no record" in _check(run, project)[1]


@pytest.mark.parametrize(
    "body",
    [
        b"[\xff\xff\xff\x7f",  # marshal: a list of 2**31 items, allocated before reading
        b"[" * 200_000,  # deeper than the parser's recursion limit
        b'{"kind": "harness-run-v2", "argv": 1}',
        b"\xff\xfe not utf-8",
    ],
)
def test_a_hostile_record_with_a_valid_checksum_is_a_quick_miss(
    project: Path, run: Run, body: bytes
) -> None:
    """Whoever writes the cache (a CI cache a pull request's run saved) can checksum any body:
    reading one must be bounded by its size, and a miss."""
    cache = Path(os.environ["HARNESS_CACHE_DIR"])
    assert run("update", "--repo", project, "-j", "2")[0].code == 0
    first, _ = _check(run, project)
    [record] = _records(cache)
    record.write_bytes(fileformat.encode_raw(body, record.stem))
    assert replay._load(record.read_bytes(), record.stem) is None or body.startswith(b"{")
    res, log = _check(run, project)
    assert "miss: unreadable record" in log and "recorded: exit 0" in log
    assert res.stdout == first.stdout


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 serving one manifest a kustomization names by URL."""
    root = tmp_path / "served"
    root.mkdir()
    (root / "remote.yaml").write_text(configmap("remote", data1="v1"))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined, method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/remote.yaml", root
    finally:
        server.shutdown()
        server.server_close()


def test_a_remote_resource_is_never_replayed(
    project: Path, run: Run, served: tuple[str, Path]
) -> None:
    url, root = served
    (project / "apps" / "a" / "kustomization.yaml").write_text(kustomization("cm.yaml", url))
    assert run("update", "--repo", project, "-j", "2")[0].code == 0
    res, log = _check(run, project)
    assert res.code == 0 and "not recorded: a target reads remote inputs" in log
    (root / "remote.yaml").write_text(configmap("remote", data1="v2"))
    res, log = _check(run, project)
    assert res.code == 1 and "hit" not in log
    assert "v1 -> v2" in res.stdout


def test_fingerprint_hashes_racily_clean_files(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a.yaml": "a: 1\n", "d/b.yaml": "b: 2\n", ".git/HEAD": "x"})
    old = replay.fingerprint([str(tmp_path)], [], "", racy_after=2**62)
    racy = replay.fingerprint([str(tmp_path)], [], "", racy_after=0)
    assert old.digests == {}
    assert sorted(racy.digests) == [str(tmp_path / "a.yaml"), str(tmp_path / "d" / "b.yaml")]
    assert racy.signature == old.signature  # the stat walk is the same; .git is not in it
    (tmp_path / "a.yaml").write_text("a: 3\n")
    st = (tmp_path / "a.yaml").stat()
    again = replay.fingerprint([str(tmp_path)], [], "", racy_after=0)
    assert again.digests != racy.digests and st.st_size == 5


def test_fingerprint_never_opens_a_fifo_or_a_device(tmp_path: Path) -> None:
    """A FIFO modified just now is racy: hashing it would block in open() for a writer."""
    write_tree(tmp_path, {"a.yaml": "a: 1\n"})
    os.mkfifo(tmp_path / "pipe.yaml")
    os.mkfifo(tmp_path / "root-fifo")
    found: list[replay.Fingerprint] = []

    def walk() -> None:
        roots = [str(tmp_path), str(tmp_path / "root-fifo")]
        found.append(replay.fingerprint(roots, [], "", racy_after=0))

    walker = threading.Thread(target=walk, daemon=True)
    walker.start()
    walker.join(30)
    assert len(found) == 1
    assert sorted(found[0].digests) == [str(tmp_path / "a.yaml")]


def test_a_record_that_is_a_symlink_to_dev_zero_is_a_miss(tmp_path: Path) -> None:
    run = replay.Plan(["check"], str(tmp_path), "ab" * 32)
    os.makedirs(os.path.dirname(run.path))
    os.symlink("/dev/zero", run.path)
    assert replay.replay(run) is None
    assert not os.path.lexists(run.path)  # dropped, never read


def test_recording_keeps_stream_order_and_skips_paused_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    out, err = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="utf-8"))
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding="utf-8"))
    run = replay.plan(["check", "--repo", str(tmp_path)], flags.REPLAYED)
    assert run is not None
    with pytest.raises(SystemExit), replay.recording(run) as recorder:
        print("one")
        sys.stderr.write("two\n")
        with replay.paused():
            sys.stderr.write("progress\n")
        print("three")
        raise SystemExit(0)
    assert recorder is not None
    assert [(fd, bytes(data)) for fd, data in recorder.chunks] == [
        (1, b"one\n"),
        (2, b"two\n"),
        (1, b"three\n"),
    ]
    assert recorder.tainted is None and recorder.roots is None  # no config: nothing stored


def test_recording_restores_the_streams_even_on_error_and_never_nests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    out, err = io.TextIOWrapper(io.BytesIO()), io.TextIOWrapper(io.BytesIO())
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    run = replay.plan(["check", "--repo", str(tmp_path)], flags.REPLAYED)
    assert run is not None
    with pytest.raises(RuntimeError, match="boom"), replay.recording(run):
        assert sys.stdout is not out and sys.stderr is not err  # the tees
        with pytest.raises(RuntimeError, match="already under way"), replay.recording(run):
            pass
        raise RuntimeError("boom")
    assert (sys.stdout, sys.stderr) == (out, err)
    with replay.recording(run):  # a later recording in the process starts cleanly
        print("again")
    assert (sys.stdout, sys.stderr) == (out, err)


def test_the_audit_hook_is_added_once_and_is_inert_outside_a_recording(tmp_path: Path) -> None:
    """`sys.addaudithook` cannot be undone: two recordings add one hook (counted by the
    `sys.addaudithook` audit event, which hooks already installed hear), and a file read
    after a recording ends is not the finished recorder's business."""
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    script = f"""
import io, os, sys
added = []
sys.addaudithook(lambda event, args: added.append(1) if event == "sys.addaudithook" else None)
from harness.cache import replay
from harness.cli import flags
sys.stdout = io.TextIOWrapper(io.BytesIO())
run = replay.plan(["check", "--repo", {str(tmp_path)!r}], flags.REPLAYED)
recorders = []
for _ in range(2):
    with replay.recording(run) as recorder:
        recorders.append(recorder)
open({str(outside)!r}).close()
sys.stdout = sys.__stdout__
print(len(added), [sorted(r.unseen) for r in recorders])
"""
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    assert fresh_python(script, env=env) == "1 [[], []]\n"


def test_lint_replays_too(project: Path, run: Run) -> None:
    first, log = run("lint", "--repo", project, "-o", "json")
    assert first.code == 0 and "recorded: exit 0" in log
    second, log = run("lint", "--repo", project, "-o", "json")
    assert "hit: exit 0" in log and second.stdout == first.stdout
    (project / "apps" / "b" / "cm.yaml").write_text(configmap("b", data1="${UNSET}"))
    third, log = run("lint", "--repo", project, "-o", "json")
    assert "miss: inputs changed" in log
    assert (
        third.stdout
        == run("lint", "--repo", project, "-o", "json", env={replay.ENV_OFF: "1"})[0].stdout
    )


def test_code_files_see_an_added_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An upgrade that only adds a module still changes the fingerprint (today's list is walked
    at replay time, not the recorded one); bytecode caches are not code."""
    package = write_tree(tmp_path / "pkg", {"a.py": "x = 1\n", "sub/b.py": "y = 2\n"})
    monkeypatch.setattr(replay, "PACKAGE_DIR", str(package))
    before = replay.fingerprint([], replay.code_files(), "", racy_after=2**62)
    write_tree(package, {"__pycache__/a.cpython-311.pyc": b"\0"})
    assert replay.fingerprint([], replay.code_files(), "", racy_after=2**62) == before
    write_tree(package, {"sub/c.py": "z = 3\n"})
    assert replay.fingerprint([], replay.code_files(), "", racy_after=2**62) != before


def test_a_read_no_fingerprint_covers_is_never_recorded(tmp_path: Path) -> None:
    """The audit hook sees every file the run opens: one outside the run's roots, the code
    and the cache (here a file a hypothetical new input reader opens) keeps it unrecorded,
    whichever module reads it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "inside.yaml").write_text("a: 1\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("an input nothing fingerprints\n")
    log = tmp_path / "log"
    cache_dir = tmp_path / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(replay.ENV_LOG, str(log))
        for extra_read, outcome in ((False, "recorded: exit 0"), (True, "not recorded: read")):
            run = replay.Plan(["check", str(extra_read)], str(cache_dir), f"{int(extra_read)}" * 64)
            with pytest.raises(SystemExit), replay.recording(run) as recorder:
                recorder.start([str(repo)])
                (repo / "inside.yaml").read_text()
                if extra_read:
                    outside.read_text()
                raise SystemExit(0)
            assert outcome in log.read_text().splitlines()[-1]
    assert f"read {outside}, which no fingerprint covers" in log.read_text()
    # inside a root, but in `.git`, which no walk enters
    write_tree(repo, {".git/HEAD": "ref: refs/heads/main\n"})
    run = replay.Plan(["check", "git"], str(cache_dir), "7" * 64)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(replay.ENV_LOG, str(log))
        with pytest.raises(SystemExit), replay.recording(run) as recorder:
            recorder.start([str(repo)])
            (repo / ".git" / "HEAD").read_text()
            raise SystemExit(0)
    assert (
        log.read_text()
        .splitlines()[-1]
        .endswith(f"not recorded: read {repo / '.git' / 'HEAD'}, which no fingerprint covers")
    )


def test_the_network_and_an_unknown_program_are_never_recorded(tmp_path: Path) -> None:
    import socket
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    log = tmp_path / "log"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(replay.ENV_LOG, str(log))
        for n, act in enumerate(
            (
                lambda: socket.getaddrinfo("127.0.0.1", 9),
                lambda: subprocess.run(["true"], check=False),
            )
        ):
            run = replay.Plan(["check", str(n)], str(tmp_path / "cache"), f"{n + 2}" * 64)
            with pytest.raises(SystemExit), replay.recording(run) as recorder:
                recorder.start([str(repo)])
                act()
                raise SystemExit(0)
    lines = log.read_text().splitlines()
    assert lines[0].endswith("not recorded: the run used the network")
    assert "not recorded: ran true, which no fingerprint covers" in lines[1]


# -- diff: the refs, git's files and the working tree ---------------------------------------


def _diff(run: Run, repo: Path, *extra: str, env: dict[str, str] | None = None) -> Result:
    res, log = run("diff", "--repo", repo, "-j", "2", "--fail-on-diff", *extra, env=env)
    return Result(res.code, res.stdout, res.stderr + "\0" + log)  # the log after a NUL


def _replay_log(res: Result) -> str:
    return res.stderr.partition("\0")[2]


def _same(a: Result, b: Result) -> bool:
    return (a.code, a.stdout, a.stderr.partition("\0")[0]) == (
        b.code,
        b.stdout,
        b.stderr.partition("\0")[0],
    )


def test_unchanged_diff_replays_exactly_and_a_commit_is_a_miss(tmp_path: Path, run: Run) -> None:
    """A diff against a ref, then a diff of two refs: each replays byte for byte with its
    exit code, equal to a fresh run; a commit moves HEAD, so the first is a miss."""
    repo = gitkit.init(tmp_path / "gitops")
    write_tree(
        repo,
        {
            "apps/a/kustomization.yaml": kustomization("cm.yaml"),
            "apps/a/cm.yaml": configmap("a", data1="one"),
        },
    )
    gitkit.commit_all(repo, "one")
    (repo / "apps" / "a" / "cm.yaml").write_text(configmap("a", data1="uno"))
    first = _diff(run, repo, "--base", "HEAD")
    assert first.code == 1 and "recorded: exit 1" in _replay_log(first)
    again = _diff(run, repo, "--base", "HEAD")
    assert "hit: exit 1" in _replay_log(again) and _same(again, first)
    assert "data1: one -> uno" in first.stdout

    gitkit.commit_all(repo, "two")  # the edit is HEAD now: nothing differs
    moved = _diff(run, repo, "--base", "HEAD")
    assert moved.code == 0 and "miss: git state changed" in _replay_log(moved)

    refs = ("--base", "HEAD~1", "--head", "main")
    two = _diff(run, repo, *refs)
    assert two.code == 1 and "recorded: exit 1" in _replay_log(two)
    replayed = _diff(run, repo, *refs)
    assert "hit: exit 1" in _replay_log(replayed) and _same(replayed, two)
    assert _same(two, _diff(run, repo, *refs, env={replay.ENV_OFF: "1"}))


def test_a_diffs_arguments_and_environment_are_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another ref string, option or variable (GIT_DIR, HOME: where git looks) is another
    record; what a ref names is checked by the record itself."""
    plans = [replay.plan(["diff", "--base", "main"], flags.REPLAYED)]
    plans.append(replay.plan(["diff", "--base", "main", "-U", "1"], flags.REPLAYED))
    plans.append(replay.plan(["diff", "--base", "v1"], flags.REPLAYED))
    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")
    plans.append(replay.plan(["diff", "--base", "main"], flags.REPLAYED))
    assert len({p.digest for p in plans if p is not None}) == 4


def _git_project(tmp_path: Path) -> tuple[Path, Path]:
    """A work tree whose harness repo is its subdirectory `deploy`: main at one commit, a tag
    and a branch on it."""
    root = gitkit.init(tmp_path / "root")
    write_tree(root, {"deploy/a.yaml": "a: 1\n", "README": "read me\n"})
    gitkit.commit_all(root, "one")
    gitkit.git(root, "tag", "v1")
    gitkit.git(root, "branch", "feature")
    return root.resolve(), root.resolve() / "deploy"


def _record_diff(tmp_path: Path, root: Path, repo: Path, ref: str) -> replay.Plan:
    """A recording that, like `harness diff --base REF`, resolved `ref` and printed its answer."""
    name = f"{tmp_path}:{ref}"
    run = replay.Plan(
        ["diff", name], str(tmp_path / "cache"), hashlib.sha256(name.encode()).hexdigest()
    )
    sha = gitkit.git(root, "rev-parse", f"{ref}^{{commit}}").strip()
    with pytest.raises(SystemExit), replay.recording(run) as recorder:
        recorder.start([str(repo)])
        subprocess.run(["git", "--version"], capture_output=True, check=True)  # as a diff does
        replay.note_git(repo, root, {ref: sha})
        print("the answer")
        raise SystemExit(1)
    return run


def _commit_elsewhere(root: Path) -> None:
    """A new commit on `feature` only (HEAD, the index and the files stay)."""
    sha = gitkit.git(root, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "two").strip()
    gitkit.git(root, "update-ref", "refs/heads/feature", sha)


def _stage_outside_the_repo(root: Path) -> None:
    (root / "README").write_text("read me again\n")
    gitkit.git(root, "add", "README")


def _same_size_config_edit(root: Path) -> None:
    config = root / ".git" / "config"
    st = config.stat()
    config.write_text(config.read_text().replace("bare = false", "bare = FALSE"))
    os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns))


GIT_CHANGES: dict[str, tuple[str, Callable[[Path], object]]] = {
    "a new commit on the base ref": (
        "main",
        lambda r: gitkit.git(r, "commit", "-q", "--allow-empty", "-m", "two"),
    ),
    "a moved branch": ("feature", _commit_elsewhere),
    "HEAD moving (a commit) past a fixed tag": (
        "v1",
        lambda r: gitkit.git(r, "commit", "-q", "--allow-empty", "-m", "two"),
    ),
    "a deleted branch": ("feature", lambda r: gitkit.git(r, "branch", "-q", "-D", "feature")),
    "a staged file (the index)": ("main", _stage_outside_the_repo),
    "git config": ("main", lambda r: gitkit.git(r, "config", "core.autocrlf", "true")),
    "a same-size edit of git's config, mtime kept": ("main", _same_size_config_edit),
    "info/exclude": ("main", lambda r: (r / ".git" / "info" / "exclude").write_text("*.tmp\n")),
    "a .gitignore above the repo": ("main", lambda r: (r / ".gitignore").write_text("*.tmp\n")),
}


@pytest.mark.parametrize("change", sorted(GIT_CHANGES))
def test_every_git_change_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """What a diff reads through git is the refs' commits and git's own files: each change of
    one is a miss, though no file of the repo changed."""
    log = tmp_path / "log"
    monkeypatch.setenv(replay.ENV_LOG, str(log))
    out = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="utf-8"))
    root, repo = _git_project(tmp_path)
    ref, edit = GIT_CHANGES[change]
    run = _record_diff(tmp_path, root, repo, ref)
    assert log.read_text().splitlines()[-1].endswith("recorded: exit 1")
    assert replay.replay(run) == 1  # unchanged: replayed
    assert out.getvalue() == b"the answer\nthe answer\n"
    edit(root)
    assert replay.replay(run) is None
    assert log.read_text().splitlines()[-1].endswith("miss: git state changed")


def test_git_housekeeping_that_changes_no_answer_still_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refs are asked of git, not read from files: packing them, or a branch the diff does not
    name, is no change."""
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    root, repo = _git_project(tmp_path)
    run = _record_diff(tmp_path, root, repo, "feature")
    gitkit.git(root, "pack-refs", "--all")
    gitkit.git(root, "branch", "other")
    assert replay.replay(run) == 1


def test_git_without_its_note_or_over_a_nested_repository_is_never_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log"
    monkeypatch.setenv(replay.ENV_LOG, str(log))
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    root, repo = _git_project(tmp_path)
    run = replay.Plan(["diff", "unnoted"], str(tmp_path / "cache"), "9" * 64)
    with pytest.raises(SystemExit), replay.recording(run) as recorder:
        recorder.start([str(repo)])
        subprocess.run(["git", "--version"], capture_output=True, check=True)
        raise SystemExit(0)
    assert (
        log.read_text()
        .splitlines()[-1]
        .endswith("not recorded: ran git, which no fingerprint covers")
    )
    gitkit.init(repo / "vendored")  # a submodule's HEAD and index are not the recorded ones
    _record_diff(tmp_path, root, repo, "main")
    assert (
        log.read_text()
        .splitlines()[-1]
        .endswith(f"not recorded: {repo / 'vendored' / '.git'} is a git repository inside the repo")
    )


def _fake_git(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-git"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


def _running(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting for its reaper, init, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_the_replays_git_call_is_bounded(tmp_path: Path) -> None:
    """A git that hangs is killed with its group (a child it started too) after the timeout;
    one that prints without end is cut at the cap; a failing one is no answer."""
    pids = tmp_path / "pids"
    hangs = _fake_git(tmp_path, f"sleep 60 & echo $$ $! > {pids}; wait")
    # 2 s: the shell writes the pids first even on a loaded machine
    assert replay.run_git(hangs, str(tmp_path), ["rev-parse"], timeout=2.0) is None
    for pid in map(int, pids.read_text().split()):
        # SIGKILL is delivered, not awaited: the orphaned `sleep` dies (and init reaps it)
        # a moment after run_git returns; alive 10 s later, it was never killed
        deadline = time.monotonic() + 10
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _running(pid)
    assert replay.run_git(_fake_git(tmp_path, "yes"), str(tmp_path), ["x"]) is None
    assert replay.run_git(_fake_git(tmp_path, "echo no; exit 3"), str(tmp_path), ["x"]) is None
    assert replay.run_git(_fake_git(tmp_path, 'echo "$@"'), "/d", ["a"]) == b"-C /d a\n"
    assert replay.run_git(str(tmp_path / "missing"), str(tmp_path), ["x"]) is None


def test_a_recording_starts_from_the_walk_of_the_replay_it_missed(tmp_path: Path) -> None:
    """The listing a missed replay made is taken once by the recording's start (no second
    walk a few milliseconds later); a file saved in between shows in the after-run walk,
    which is always the recording's own, so such a run is never recorded."""
    root = tmp_path / "repo"
    write_tree(root, {"a/cm.yaml": configmap("a"), "kustomization.yaml": "resources: []\n"})
    walked: dict[tuple[str, str], replay.Listing] = {}
    racy = 0  # every file racy: content hashes too
    missed = replay.fingerprint([str(root)], [], "", racy, walked)
    assert list(walked) == [(str(root), "")]
    (root / "a/cm.yaml").write_text(configmap("a", v="2"))
    started = replay.fingerprint([str(root)], [], "", racy, walked)
    assert walked == {}
    assert started.signature == missed.signature  # the same listing: no walk of its own
    after = replay.fingerprint([str(root)], [], "", racy)
    assert after != started  # the saved file: the recording is refused
    assert after == replay.fingerprint([str(root)], [], "", racy)


def test_a_racy_file_is_hashed_to_the_cap_and_a_fifo_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashing a file modified just before a run reads at most CONTENT_CAP bytes; a larger
    one is OVER_CAP. A FIFO (say one swapped in after the walk's stat) is opened without
    blocking and refused, never read."""
    monkeypatch.setattr(replay, "CONTENT_CAP", 8)
    at_cap, over = tmp_path / "at-cap", tmp_path / "over"
    at_cap.write_bytes(b"x" * 8)
    over.write_bytes(b"x" * 9)
    assert replay._content(str(at_cap)) == hashlib.sha256(b"x" * 8).hexdigest()
    assert replay._content(str(over)) == replay.OVER_CAP
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert replay._content(str(fifo)) == "unreadable"


def test_a_run_that_hashed_a_file_over_the_cap_is_not_recorded(tmp_path: Path) -> None:
    """OVER_CAP would match itself at the next look whatever the file then holds: a
    recording that met one is refused, so its answer is never replayed."""
    recorder = replay.Recorder(replay.Plan(["check"], str(tmp_path), "0" * 64))
    recorder.roots = [str(tmp_path)]
    recorder.before = replay.Fingerprint("sig", {str(tmp_path / "big"): "sha"})
    assert recorder._refusal(0) is None
    recorder.before = replay.Fingerprint("sig", {str(tmp_path / "big"): replay.OVER_CAP})
    assert recorder._refusal(0) == "a file modified just before the run is over 64 MiB"
