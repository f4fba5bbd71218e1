"""Shared fixtures: real kubectl from the wheel, repos written into tmp dirs, a CLI runner."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

from harness.cli.app import app
from harness.render import kustomize as render
from tests import tiers

PROJECT = Path(__file__).resolve().parent.parent
EXAMPLE = PROJECT / "examples" / "homelab"
GOLDENS = PROJECT / "goldens"


# Hypothesis judges nothing by the clock: no per-example deadline, no "too slow" health check
# (both fail on a loaded machine, not on a wrong answer); a test's own @settings add to this.
settings.register_profile("harness", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("harness")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by the marks added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test is `unit` or `integration` (tests/tiers.py says which and why)."""
    reach = tiers.Reach(real_repos=(EXAMPLE, GOLDENS))
    plugins = config.pluginmanager.get_plugins()
    conftests: dict[Path, list[ModuleType]] = {}
    for item in items:
        directory = item.path.parent
        if directory not in conftests:
            conftests[directory] = tiers.conftests_for(item.path, plugins)
        function = item if isinstance(item, pytest.Function) else None
        places = [*([function.module] if function else []), *conftests[directory]]
        name, why = tiers.tier(
            (m.name for m in item.iter_markers()),
            function.function if function else None,
            item.fixturenames if function else (),
            lambda fixture, places=places: tiers.fixture_function(fixture, places),
            reach,
        )
        item.add_marker(getattr(pytest.mark, name)(why=why) if why else name)


@pytest.fixture(autouse=True)
def _no_ambient_renderer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests use the wheel's kubectl unless they choose otherwise; CI may set CI=true."""
    monkeypatch.delenv("HARNESS_KUBECTL", raising=False)


@pytest.fixture(autouse=True)
def _private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test starts cold with its own render cache, never the user's."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.mktemp("harness-cache")))


@pytest.fixture(scope="session")
def kubectl() -> Path:
    return render.resolve().binary


@pytest.fixture
def renderer() -> render.Renderer:
    return render.resolve(flags=("--load-restrictor", "LoadRestrictionsNone"), timeout=300)


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    def make(files: dict[str, str | bytes]) -> Path:
        return write_tree(tmp_path / "repo", files)

    return make


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli() -> Callable[..., Result]:
    """Invoke the real CLI in-process (typer's runner), stdout and stderr separate."""

    def invoke(*args: str | Path) -> Result:
        runner = CliRunner()
        res = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
        return Result(res.exit_code, res.stdout, res.stderr)

    return invoke


def run_harness(
    *args: str | Path,
    cwd: Path | None = None,
    timeout: float = 300,
    env: Mapping[str, str] | None = None,
) -> Result:
    """The installed console script in a subprocess, as a user runs it (`env` on top)."""
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *[str(a) for a in args]],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def fresh_python(script: str, env: dict[str, str] | None = None) -> str:
    """Stdout of `script` in a new interpreter: what a module loads or leaves loaded on first
    use is only visible in a process that has not imported it yet."""
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    ).stdout


def modules_after(*args: str | Path, cwd: Path) -> tuple[Result, set[str]]:
    """Run the console entry in a subprocess (no replay, no step summary) and name every
    module it imported: start-up cost is guarded by what a run loads, never by a timing."""
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sys.modules)))\n"
        "from harness.cli.entry import main\n"
        f"sys.argv = ['harness', *{[str(a) for a in args]!r}]\n"
        "main()\n"
    )
    env = {**os.environ, "NO_COLOR": "1", "CI": "1", "HARNESS_NO_REPLAY": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd, env=env
    )
    err, _, modules = proc.stderr.rpartition("\nMODULES ")
    return Result(proc.returncode, proc.stdout, err), set(modules.split())


@pytest.fixture
def example_copy(tmp_path: Path) -> Iterator[Path]:
    """A writable copy of examples/homelab with its goldens beside it (as in the project),
    in a checkout (a `.git` at its top) that holds both: goldens stay inside the checkout."""
    root = tmp_path / "project"
    shutil.copytree(EXAMPLE, root / "examples" / "homelab")
    shutil.copytree(GOLDENS, root / "goldens")
    (root / ".git").mkdir()
    yield root / "examples" / "homelab"


KS = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
{resources}
"""


def kustomization(*resources: str) -> str:
    return KS.format(resources="\n".join(f"  - {r}" for r in resources))


def configmap(name: str, namespace: str = "default", **data: str) -> str:
    lines = "".join(f"  {k}: {v!r}\n" for k, v in data.items()) or "  k: v\n"
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        f"  name: {name}\n  namespace: {namespace}\ndata:\n{lines}"
    )
