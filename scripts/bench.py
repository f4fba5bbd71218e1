#!/usr/bin/env python3
"""Benchmark harness against bare `kubectl kustomize` on the same targets, in one run.

    python scripts/bench.py [REPO ...] [--repeat 3] [--jobs N]

For each repo: the path targets harness finds are rendered (1) by bare kubectl one after
another, (2) by bare kubectl with N in parallel, (3) by `harness render`,
and (4) `harness check` (render + compare), both including Flux targets. Prints the
best wall time of each and ratios against bare sequential/parallel kubectl. Timing lives
here, never in tests.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from harness import config as config_mod  # noqa: E402
from harness import discover, render  # noqa: E402


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bare(kubectl: Path, flags: tuple[str, ...], dirs: list[Path], jobs: int) -> None:
    def one(d: Path) -> None:
        subprocess.run([str(kubectl), "kustomize", *flags, str(d)], capture_output=True)

    if jobs == 1:
        for d in dirs:
            one(d)
    else:
        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(one, dirs))


def harness_cli(*args: str) -> Callable[[], None]:
    def run() -> None:
        subprocess.run(
            [sys.executable, "-m", "harness", *args],
            capture_output=True,
            env={**os.environ, "CI": "1"},
            cwd=HERE,
        )

    return run


def bench(repo: Path, repeat: int, jobs: int) -> None:
    cfg = config_mod.load(repo)
    targets = discover.path_targets(cfg)
    dirs = [t.path for t in targets]
    kubectl = render.resolve().binary
    flags = cfg.kubectl_flags
    print(f"\n== {repo}  ({len(dirs)} path targets, jobs={jobs}, best of {repeat})")
    seq = best_of(repeat, lambda: bare(kubectl, flags, dirs, 1))
    par = best_of(repeat, lambda: bare(kubectl, flags, dirs, jobs))
    rows = [
        ("bare kubectl kustomize, sequential", seq),
        (f"bare kubectl kustomize, {jobs} parallel", par),
    ]
    j = str(jobs)
    with tempfile.TemporaryDirectory() as cfgdir:
        # Same config as the repo's, but goldens elsewhere so `check` never touches the repo.
        cfg_file = Path(cfgdir) / "harness.yaml"
        original = cfg.source_file.read_text() if cfg.source_file else ""
        lines = [ln for ln in original.splitlines() if not ln.startswith("goldens:")]
        cfg_file.write_text("\n".join([*lines, f"goldens: {cfgdir}/goldens", ""]))
        common = ["--repo", str(repo), "--config", str(cfg_file), "-j", j, "-q"]
        rows.append(
            (
                "harness render (path + flux targets)",
                best_of(repeat, harness_cli("render", *common, "-o", "json")),
            )
        )
        harness_cli("update", *common)()
        rows.append(
            ("harness check (render + compare)", best_of(repeat, harness_cli("check", *common)))
        )
    width = max(len(r[0]) for r in rows)
    for label, secs in rows:
        print(f"  {label:<{width}}  {secs:7.3f}s   x{secs / seq:5.2f} seq   x{secs / par:5.2f} par")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("repos", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    repos = args.repos or [HERE / "examples" / "homelab"]
    for repo in repos:
        bench(repo.resolve(), args.repeat, args.jobs)


if __name__ == "__main__":
    main()
