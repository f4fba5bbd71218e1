"""`harness watch` as a user runs it: an answer, a save, a new answer, Ctrl-C, nothing left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import Result, configmap
from tests.gitkit import commit_all

STOP_AFTER = 300.0  # a hang guard only: every wait ends on a line of the watcher's


class Lines:
    """stderr of a running process, line by line, read in a thread."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        assert proc.stderr is not None
        self._thread = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()

    def wait_for(self, text: str, count: int = 1) -> None:
        deadline = time.monotonic() + STOP_AFTER
        with self._cond:
            while sum(text in ln for ln in self.lines) < count:
                left = deadline - time.monotonic()
                assert left > 0, f"no {text!r} x{count} in {self.lines}"
                self._cond.wait(left)


@pytest.mark.slow
@pytest.mark.parametrize("poll", [False, True], ids=["events", "polling"])
def test_watch_answers_each_save_and_ctrl_c_leaves_nothing(
    repo: Path, cli: object, poll: bool
) -> None:
    tmpdir = Path(os.environ["TMPDIR"])
    argv = [sys.executable, "-m", "harness", "watch", "--repo", str(repo), "--fail-on-diff"]
    proc = subprocess.Popen(
        [*argv, *(["--poll"] if poll else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CI": "1"},
    )
    err = Lines(proc)
    try:
        err.wait_for("waiting for changes")
        (repo / "a/cm.yaml").write_text(configmap("a", v="2", w="x"))
        err.wait_for("watch: answer 2")
        (repo / "a/cm.yaml").write_text(configmap("a", v="2", w="x") + "# only a comment\n")
        err.wait_for("watch: answer 3")
        assert any("no output changed since the last answer" in ln for ln in err.lines)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=STOP_AFTER)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1  # the last answer: a difference, with --fail-on-diff
    assert out.count("changed: 1 object changes in 1 target: 1 changed, 0 added, 0 removed") == 2
    assert out.startswith("no change: 2 targets")
    assert list(tmpdir.iterdir()) == []  # no checkout, workspace or temp file left


def test_watch_once_prints_what_diff_prints(repo: Path, cli: object) -> None:
    from collections.abc import Callable

    run: Callable[..., Result] = cli  # type: ignore[assignment]
    (repo / "b/cm.yaml").write_text(configmap("b", v="7"))
    commit_all(repo.parent, "second")
    (repo / "a/cm.yaml").write_text(configmap("a", v="3", w="x"))
    diff = run("diff", "--repo", repo, "--base", "HEAD~1", "--fail-on-diff")
    once = run("watch", "--repo", repo, "--base", "HEAD~1", "--fail-on-diff", "--once")
    assert once.code == diff.code == 1
    assert once.stdout == diff.stdout
    assert "watch: answer 1 in" in once.stderr
