"""The pytest plugin (entry point `pytest11`: `harness`): fixtures over the repo under test,
so a `tests/test_policy.py` asserts over rendered objects (docs/python-api.md).

pytest loads this module in every session of an environment where harness is installed, the
project's own test suite included, so it is inert until a test asks for a fixture: it adds
its options and imports nothing of harness but the lazy `harness.api` package. The
fixtures are session-scoped (one render per session, through the CLI's render cache):

- `harness_root`: the repo (`--harness-root DIR`, else the `harness_root` ini option
  relative to the ini file, else pytest's rootdir);
- `harness_snapshot`: `harness.api.render` of it (`harness_helm = true` renders
  HelmReleases too);
- `harness_lint`: `harness.api.lint` of it;
- `harness_diff`: `harness.api.diff` of it against `--harness-base REF` (ini
  `harness_base`, default `HEAD`).

A repo that cannot be rendered at all fails the test asking, with harness's one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from harness.api.model import Diff, Lint, Snapshot


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "harness: policy tests over a rendered GitOps repo")
    group.addoption(
        "--harness-root",
        dest="harness_root",
        metavar="DIR",
        default=None,
        help="the repo harness renders for the harness_* fixtures (default: the "
        "harness_root ini option, else the rootdir)",
    )
    group.addoption(
        "--harness-base",
        dest="harness_base",
        metavar="REF",
        default=None,
        help="the git ref harness_diff compares the working tree with (default: HEAD)",
    )
    parser.addini("harness_root", "the repo the harness_* fixtures render", default="")
    parser.addini("harness_base", "the git ref harness_diff compares with", default="HEAD")
    parser.addini("harness_helm", "render HelmReleases as helm targets", type="bool", default=False)


def _settings(config: pytest.Config) -> dict[str, Any]:
    return {"helm": True} if config.getini("harness_helm") else {}


def _fail(exc: Exception) -> NoReturn:
    pytest.fail(f"harness: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def harness_root(pytestconfig: pytest.Config) -> Path:
    """The repo under test."""
    given = pytestconfig.getoption("harness_root")
    if given:
        return (pytestconfig.invocation_params.dir / str(given)).resolve()
    ini = str(pytestconfig.getini("harness_root"))
    if ini:
        base = pytestconfig.inipath.parent if pytestconfig.inipath else pytestconfig.rootpath
        return (base / ini).resolve()
    return pytestconfig.rootpath


@pytest.fixture(scope="session")
def harness_snapshot(harness_root: Path, pytestconfig: pytest.Config) -> Snapshot:
    """Every target of the repo rendered once for the session."""
    from harness.api.calls import render
    from harness.api.model import HarnessError

    try:
        return render(harness_root, **_settings(pytestconfig))
    except HarnessError as exc:
        _fail(exc)


@pytest.fixture(scope="session")
def harness_lint(harness_root: Path, pytestconfig: pytest.Config) -> Lint:
    """The repo's hazard findings, as `harness lint` finds them."""
    from harness.api.calls import lint
    from harness.api.model import HarnessError

    try:
        return lint(harness_root, **_settings(pytestconfig))
    except HarnessError as exc:
        _fail(exc)


@pytest.fixture(scope="session")
def harness_diff(harness_root: Path, pytestconfig: pytest.Config) -> Diff:
    """The working tree against the base ref, as `harness diff` judges it."""
    from harness.api.calls import diff
    from harness.api.model import HarnessError

    base = pytestconfig.getoption("harness_base") or str(pytestconfig.getini("harness_base"))
    try:
        return diff(harness_root, base=base, **_settings(pytestconfig))
    except HarnessError as exc:
        _fail(exc)
