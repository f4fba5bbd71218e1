"""The cache never changes an answer: cold == warm == --no-cache, changed-only diff == full diff.

Property-style: random edits to a git copy of examples/homelab (content, renames, deletions,
new directories, a changed substitution variable, a changed `.sourceignore`), then the
cached `diff` and `check` must print byte for byte what the uncached ones print. One cache
directory serves every example, so entries of earlier trees are there to be wrongly reused.
`HARNESS_PROPERTY_EXAMPLES` raises the example count for a deeper local run.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli.app import app
from tests.conftest import EXAMPLE, GOLDENS, configmap, kustomization
from tests.gitkit import commit_all, init

EXAMPLES = int(os.environ.get("HARNESS_PROPERTY_EXAMPLES", "2"))
OPS = (
    "append",
    "comment",
    "digit",
    "rename",
    "delete",
    "newdir",
    "variable",
    "sourceignore",
    "chart",
)
VARIABLES = ("LOG_LEVEL", "DOMAIN", "HA_REPLICAS", "STORAGE_CLASS", "TIMEZONE")


def harness(*args: str | Path) -> tuple[int, str]:
    res = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return res.exit_code, res.stdout


@pytest.fixture(scope="module")
def pristine() -> Iterator[Path]:
    """A committed git copy of the example with its goldens, made once per module."""
    root = Path(tempfile.mkdtemp(prefix="harness-prop-"))
    try:
        project = init(root / "project")
        shutil.copytree(EXAMPLE, project / "examples" / "homelab")
        shutil.copytree(GOLDENS, project / "goldens")
        commit_all(project, "example")
        yield project
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _manifests(repo: Path) -> list[Path]:
    return sorted(
        p
        for p in repo.rglob("*.yaml")
        if p.name not in ("kustomization.yaml", "harness.yaml") and ".git" not in p.parts
    )


def apply(repo: Path, op: str, seed: int) -> str:
    """One edit of the example; returns what it did (for the failure message)."""
    files = _manifests(repo)
    path = files[seed % len(files)]
    rel = path.relative_to(repo).as_posix()
    if op == "append":
        with path.open("a") as fh:
            fh.write("\n---\n" + configmap(f"prop-{seed}", "default", n=str(seed)))
    elif op == "comment":
        path.write_text(f"# edited {seed}\n" + path.read_text())
    elif op == "digit":
        text = path.read_text()
        digits = [m.start() for m in re.finditer(r"\d", text)]
        if digits:
            i = digits[seed % len(digits)]
            text = text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :]
            path.write_text(text)
    elif op == "rename":
        new = path.with_name(f"renamed-{seed}-{path.name}")
        path.rename(new)
        kfile = path.parent / "kustomization.yaml"
        if kfile.exists() and seed % 3:  # sometimes the reference is left dangling
            kfile.write_text(kfile.read_text().replace(path.name, new.name))
    elif op == "delete":
        path.unlink()
    elif op == "newdir":
        new_dir = path.parent / f"new-{seed}"
        new_dir.mkdir()
        (new_dir / "cm.yaml").write_text(configmap(f"new-{seed}", "default"))
        if seed % 2:
            (new_dir / "kustomization.yaml").write_text(kustomization("cm.yaml"))
        rel = new_dir.relative_to(repo).as_posix()
    elif op == "variable":
        name = VARIABLES[seed % len(VARIABLES)]
        target = repo / "clusters" / ("dev" if seed % 2 else "base")
        kfile = target / ("kustomization.yaml" if seed % 2 else "cluster-vars.yaml")
        text = kfile.read_text()
        text, n = re.subn(rf'({name}: )"([^"]*)"', rf'\1"\2-{seed % 7}"', text, count=1)
        assert n == 1, f"{kfile}: {name} not found"
        kfile.write_text(text)
        rel = f"{kfile.relative_to(repo).as_posix()} {name}"
    elif op == "sourceignore":
        patterns = [rel, "*.md", f"{Path(rel).parent.as_posix()}/", f"!{rel}", "**/secret*"]
        pattern = patterns[seed % len(patterns)]
        where = repo if seed % 2 else path.parent
        (where / ".sourceignore").write_text(f"# prop\n{pattern}\n")
        rel = f"{(where / '.sourceignore').relative_to(repo).as_posix()}: {pattern}"
    elif op == "chart":  # the in-repo chart of the helm targets (charts/whoami)
        chart = repo / "charts" / "whoami"
        kind = seed % 3
        if kind == 0:
            values = chart / "values.yaml"
            text = values.read_text()
            digits = [m.start() for m in re.finditer(r"\d", text)]
            i = digits[seed % len(digits)]
            values.write_text(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :])
            rel = "charts/whoami/values.yaml digit"
        elif kind == 1:
            extra = chart / "templates" / f"extra-{seed}.yaml"
            extra.write_text(configmap(f"chart-{seed}", "default"))
            rel = extra.relative_to(repo).as_posix()
        else:  # a .helmignore'd file, and a .helmignore (neither changes the render)
            (chart / ".helmignore").write_text("*.md\n")
            (chart / f"NOTES-{seed}.md").write_text(f"notes {seed}\n")
            rel = "charts/whoami/.helmignore + NOTES.md"
    return f"{op} {rel}"


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    edits=st.tuples(
        st.permutations(OPS),
        st.lists(st.integers(min_value=0, max_value=10**6), min_size=8, max_size=8),
        st.integers(min_value=2, max_value=4),
    ).map(lambda t: list(zip(t[0][: t[2]], t[1], strict=False)))
)
@example(edits=[(op, 7919 * (i + 1)) for i, op in enumerate(OPS)])  # every kind at once
def test_cached_answers_equal_uncached(
    pristine: Path, tmp_path: Path, edits: list[tuple[str, int]]
) -> None:
    with tempfile.TemporaryDirectory(prefix="harness-prop-case-") as tmp:
        project = Path(tmp) / "project"
        shutil.copytree(pristine, project, symlinks=True)
        repo = project / "examples" / "homelab"
        done = [apply(repo, op, seed) for op, seed in edits]
        shared = tmp_path / "shared-cache"  # one per test function: every example reuses it
        # diff first: its base side is the pristine tree (warm after the first example), its
        # head side the edited one; check then runs on the entries diff just wrote
        for args in (("diff", "--base", "HEAD"), ("check",)):
            full = harness(*args, "--repo", repo, "-o", "json", "--no-cache")
            cached = harness(*args, "--repo", repo, "-o", "json", "--cache-dir", shared)
            assert cached == full, (args, done)


LOGGING_KUBECTL = """#!/bin/sh
case "$1" in kustomize) echo "$@" >> {log};; esac
exec {real} "$@"
"""


@pytest.mark.slow
def test_cold_warm_and_no_cache_are_byte_identical(
    example_copy: Path, tmp_path: Path, kubectl: Path
) -> None:
    log = tmp_path / "kustomize.log"
    fake = tmp_path / "kubectl"
    fake.write_text(LOGGING_KUBECTL.format(log=log, real=kubectl))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    cache_dir = tmp_path / "cache"
    flux_target = "dev/flux-system/platform"
    outputs = []
    runs = []
    for extra in (("--cache-dir", cache_dir), ("--cache-dir", cache_dir), ("--no-cache",)):
        log.write_text("")
        common = ("--repo", example_copy, "--kubectl", fake, *extra)
        outputs.append(
            (
                harness("check", *common, "-o", "json"),
                harness("render", *common, "-o", "json"),
                harness("render", flux_target, *common),
            )
        )
        # helm post-renderer kustomize runs count too: a cached helm target runs none
        runs.append(len(log.read_text().splitlines()))
    cold, warm, uncached = outputs
    assert cold[0][0] == 0
    assert cold == warm == uncached
    assert runs[1] == 0  # warm: every build answered from the cache
    assert runs[0] > 0 and runs[2] > runs[0]  # cold renders once per run, --no-cache 3 times
