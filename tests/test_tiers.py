"""The tiers are derived from what a test's code reaches (tests/tiers.py): each rule seen."""

from __future__ import annotations

import subprocess
from pathlib import Path
from subprocess import run as run_process
from typing import Any

import pytest

from tests import gitkit
from tests.conftest import configmap, run_harness
from tests.tiers import Reach, tier

# stands for examples/homelab (the hook's real repos are EXAMPLE and GOLDENS)
REPO = Path("/nonexistent/real-repo")


def _reach() -> Reach:
    return Reach(real_repos=(REPO,))


def _tier(
    test: Any, *, marks: tuple[str, ...] = (), fixtures: dict[str, Any] | None = None
) -> tuple[str, str | None]:
    found = fixtures or {}
    return tier(
        marks, test, list(found), lambda name: [found[name]] if name in found else [], _reach()
    )


def pure() -> None:
    assert configmap("a").startswith("apiVersion: v1")


def through_the_cli() -> None:
    run_harness("check")


def through_a_helper_module(tmp_path: Path) -> None:
    gitkit.init(tmp_path)


def imported_by_name() -> None:
    run_process(["true"], check=True)


def imported_locally() -> None:
    import subprocess as sp

    sp.run(["true"], check=True)


def on_the_example() -> None:
    assert REPO.is_dir()


class Helper:
    def start(self) -> None:
        subprocess.run(["true"], check=True)


def through_a_helper_class() -> None:
    Helper().start()


def repo_fixture(tmp_path: Path) -> Path:
    return gitkit.init(tmp_path / "repo")


def layered_fixture(repo_fixture: Path) -> Path:
    return repo_fixture


# looked up by name, so that the tests below, which only classify them, stay unit themselves
SAMPLE: dict[str, Any] = {
    n: globals()[n]
    for n in (
        "pure",
        "through_the_cli",
        "through_a_helper_module",
        "imported_by_name",
        "imported_locally",
        "on_the_example",
        "through_a_helper_class",
        "repo_fixture",
        "layered_fixture",
    )
}


def test_pure_code_is_unit() -> None:
    assert _tier(SAMPLE["pure"]) == ("unit", None)
    assert _tier(SAMPLE["pure"], fixtures={"tmp_path": None}) == ("unit", None)


def test_a_process_of_the_tests_own_is_integration() -> None:
    assert _tier(SAMPLE["through_the_cli"]) == ("integration", "run_harness -> subprocess")
    assert _tier(SAMPLE["through_a_helper_module"]) == ("integration", "init -> git -> subprocess")
    assert _tier(SAMPLE["imported_by_name"]) == ("integration", "subprocess.run_process")
    assert _tier(SAMPLE["imported_locally"]) == ("integration", "subprocess")
    assert _tier(SAMPLE["through_a_helper_class"]) == ("integration", "subprocess")


def test_a_real_repo_is_integration() -> None:
    assert _tier(SAMPLE["on_the_example"]) == ("integration", "REPO")


def test_fixtures_count_and_the_fixtures_they_request() -> None:
    fixtures = {
        "layered_fixture": SAMPLE["layered_fixture"],
        "repo_fixture": SAMPLE["repo_fixture"],
    }
    assert _tier(SAMPLE["pure"], fixtures=fixtures) == (
        "integration",
        "fixture repo_fixture: init -> git -> subprocess",
    )


def test_a_mark_decides_first() -> None:
    assert _tier(SAMPLE["pure"], marks=("slow",)) == ("integration", "marked slow")
    assert _tier(SAMPLE["pure"], marks=("integration", "parametrize")) == (
        "integration",
        "marked integration",
    )


def test_the_hook_marked_this_test(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("unit") is not None
    assert request.node.get_closest_marker("integration") is None
