"""Where a write may go: the checkout, or an absolute path the user typed (issue 28 item 4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.core import confine


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "apps").mkdir()
    return root


def test_a_relative_cli_path_inside_the_repo_is_taken(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo / "apps")
    found = confine.from_cli(Path("out/report.html"), "--html", repo)
    assert found == repo / "apps/out/report.html"


def test_a_relative_cli_path_outside_the_repo_says_pass_an_absolute_one(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(confine.OutsideError) as info:
        confine.from_cli(Path("report.html"), "--html", repo)
    assert str(info.value) == (
        f"--html report.html: resolves to {tmp_path / 'report.html'}, outside the repository "
        f"({repo}); pass an absolute path to write there"
    )


def test_a_relative_cli_path_through_a_planted_symlink_is_refused(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PR commits `report.html -> ~/.bashrc`; CI runs `--html report.html` in the repo."""
    os.symlink(tmp_path / "bashrc", repo / "report.html")
    monkeypatch.chdir(repo)
    with pytest.raises(confine.OutsideError, match=r"^--html report.html: resolves to .*bashrc"):
        confine.from_cli(Path("report.html"), "--html", repo)


def test_an_absolute_cli_path_is_the_users_word(repo: Path, tmp_path: Path) -> None:
    assert confine.from_cli(tmp_path / "x/out.html", "--out", repo) == tmp_path / "x/out.html"


def test_an_absolute_cli_path_into_the_repo_may_not_leave_it_by_a_symlink(
    repo: Path, tmp_path: Path
) -> None:
    os.symlink(tmp_path, repo / "apps/escape")
    with pytest.raises(confine.OutsideError) as info:
        confine.from_cli(repo / "apps/escape/parts", "--output-dir", repo)
    assert str(info.value) == (
        f"--output-dir {repo / 'apps/escape/parts'}: a symlink in the repository carries it "
        f"to {tmp_path / 'parts'}, outside the repository ({repo})"
    )


def test_a_config_path_must_stay_in_the_checkout_even_absolute(repo: Path, tmp_path: Path) -> None:
    assert confine.from_config("g", repo / "apps", "goldens", "harness.yaml") == repo / "apps/g"
    for raw in ("../../x", str(tmp_path / "x")):
        with pytest.raises(confine.OutsideError, match=r"outside the checkout"):
            confine.from_config(raw, repo / "apps", "goldens", "harness.yaml")


def test_inside_refuses_a_symlinked_directory_out_of_the_root(repo: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path, repo / "apps/flux")
    assert confine.inside(repo / "apps/path/a.yaml", repo) == repo / "apps/path/a.yaml"
    with pytest.raises(confine.OutsideError) as info:
        confine.inside(repo / "apps/flux/a.yaml", repo)
    assert str(info.value) == (
        f"{repo / 'apps/flux/a.yaml'}: resolves through a symlink to {tmp_path / 'a.yaml'}, "
        f"outside {repo}; not written"
    )
