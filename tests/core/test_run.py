"""run: one run's state in one object; two runs in one process share nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core import parsed, run
from harness.core.memo import IdentityMemo, Memo
from harness.core.run import Run
from tests.conftest import Result
from tests.flux.conftest import cm, flux_ks

TEXT = "resources:\n  - a.yaml\n"


def test_a_new_run_sees_none_of_what_an_earlier_run_remembered() -> None:
    declared: Memo[str, int] = Memo("test", 8)
    objects: IdentityMemo[str] = IdentityMemo("test identity", 8)
    key = ["shared"]
    first = Run()
    with first.entered():
        obj = parsed.load(TEXT)
        assert parsed.load(TEXT) is obj  # run 1 remembers the parse
        declared.put("k", 1)
        objects.put(key, "walked")
        assert (declared.get("k"), objects.get(key)) == (1, "walked")
    with Run().entered():
        again = parsed.load(TEXT)
        assert again == obj and again is not obj  # parsed anew: nothing of run 1
        assert (declared.get("k"), objects.get(key), len(declared)) == (None, None, 0)
    assert first.existing(declared) == {"k": 1}  # run 1's data stayed in run 1


def test_the_current_run_is_scoped_to_its_block_even_on_error() -> None:
    outer, inner = Run(), Run()
    assert run.current() is None
    with outer.entered():
        with pytest.raises(ValueError), inner.entered():
            assert run.current() is inner
            raise ValueError
        assert run.current() is outer is run.required()
    assert run.current() is None
    with pytest.raises(RuntimeError, match="no current run"):
        run.required()


def test_an_interrupted_run_does_not_stop_the_next_one() -> None:
    first = Run()
    first.stop()
    assert first.stopped and not Run().stopped


def test_each_command_of_one_process_is_a_run_of_its_own(
    make_repo: Callable[[dict[str, str | bytes]], Path], cli: Callable[..., Result]
) -> None:
    """The verb runner (cli/app.py) enters a new run per command: a warning the first
    command printed (a per-run memo says it once per run) is printed by the second too,
    and no run is left current after a command."""
    repo = make_repo({"clusters/dev/apps.yaml": flux_ks("apps", "./apps"), "apps/a.yaml": cm("a")})
    first = cli("render", "--repo", repo, "-q")
    second = cli("render", "--repo", repo, "-q")
    warning = "warning: no bootstrap evidence"
    assert first.code == second.code == 0
    assert first.stderr.count(warning) == second.stderr.count(warning) == 1
    assert run.current() is None


def test_what_a_run_started_ends_with_it_last_first() -> None:
    """`on_exit` closers run when the run is left, even on error, in reverse order."""
    order: list[str] = []
    owner = Run()
    with pytest.raises(ValueError), owner.entered():
        owner.on_exit(lambda: order.append("pool"))
        owner.on_exit(lambda: order.append("scratch"))
        raise ValueError("boom")
    assert order == ["scratch", "pool"]
    with owner.entered():
        pass
    assert order == ["scratch", "pool"]  # once: a closer is not kept for the next entry
