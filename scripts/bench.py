#!/usr/bin/env python3
"""Benchmark harness against bare `kubectl kustomize` on the same targets, in one run.

    python scripts/bench.py [REPO ...] [--repeat 3] [--jobs N] [--synthetic N]

For each repo, best wall time of `--repeat` runs of:
  1. bare `kubectl kustomize` over the path-target directories, one after another;
  2. the same with N in parallel (what a careful shell script would do);
  3. harness rendering the same path targets in-process (renderer + document split + sha256);
  4. harness rendering path and Flux targets in-process (kustomize runs counted);
  5. `harness check` as a user runs it (process start, render, compare, hazards).
Ratios are against (1) and (2). `--synthetic N` adds a generated repo of N app directories
(8 ConfigMaps each) plus one directory listing them all. Timing lives here, never in tests.
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
from harness.pipeline import RenderOptions, render_repo  # noqa: E402

HARNESS = (sys.executable, "-m", "harness")


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

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, dirs))


def in_process(cfg: config_mod.Config, jobs: int, flux: bool) -> Callable[[], int]:
    """A fresh renderer each time, so no run is served from a previous one's memo."""

    def run() -> int:
        renderer = render.resolve(flags=cfg.kubectl_flags, timeout=cfg.timeout)
        render_repo(cfg, renderer, RenderOptions(jobs=jobs, flux=flux))
        return renderer.runs

    return run


def cli_check(repo: Path, config_file: Path, jobs: int) -> Callable[[], None]:
    cfg = str(config_file)

    def run() -> None:
        subprocess.run(
            [*HARNESS, "check", "-q", "-j", str(jobs), "--repo", str(repo), "--config", cfg],
            capture_output=True,
            env={**os.environ, "CI": "1"},
        )

    return run


def bench(repo: Path, repeat: int, jobs: int) -> None:
    cfg = config_mod.load(repo)
    dirs = [t.path for t in discover.path_targets(cfg)]
    kubectl = render.resolve().binary
    runs = in_process(cfg, jobs, flux=True)()
    print(
        f"\n== {repo}  ({len(dirs)} path targets; with Flux targets harness runs kustomize "
        f"{runs} times; jobs={jobs}; best of {repeat})"
    )
    seq = best_of(repeat, lambda: bare(kubectl, cfg.kubectl_flags, dirs, 1))
    par = best_of(repeat, lambda: bare(kubectl, cfg.kubectl_flags, dirs, jobs))
    rows = [
        ("bare kubectl kustomize, sequential", seq),
        (f"bare kubectl kustomize, {jobs} parallel", par),
        ("harness, path targets (in-process)", best_of(repeat, in_process(cfg, jobs, False))),
        ("harness, path + flux targets (in-process)", best_of(repeat, in_process(cfg, jobs, True))),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        # The repo's config with goldens elsewhere, so `check` never touches the repo.
        original = cfg.source_file.read_text() if cfg.source_file else ""
        lines = [ln for ln in original.splitlines() if not ln.startswith("goldens:")]
        config_file = Path(tmp) / "harness.yaml"
        config_file.write_text("\n".join([*lines, f"goldens: {tmp}/goldens", ""]))
        subprocess.run(
            [*HARNESS, "update", "--repo", str(repo), "--config", str(config_file), "-q"],
            capture_output=True,
        )
        rows.append(
            ("harness check, CLI end to end", best_of(repeat, cli_check(repo, config_file, jobs)))
        )
    width = max(len(r[0]) for r in rows)
    for label, secs in rows:
        print(f"  {label:<{width}}  {secs:7.3f}s   x{secs / seq:5.2f} seq   x{secs / par:5.2f} par")


def synthetic_repo(root: Path, apps: int) -> Path:
    """N small kustomization dirs and one that aggregates them: breadth, not Flux depth."""
    for i in range(apps):
        app = root / "apps" / f"app{i:04d}"
        app.mkdir(parents=True)
        data = "".join(f"  key{x}: value{x}\n" for x in range(30))
        for j in range(8):
            (app / f"cm{j}.yaml").write_text(
                f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{j}\n"
                f"  namespace: ns{i}\ndata:\n{data}"
            )
        (app / "kustomization.yaml").write_text(
            "resources:\n" + "".join(f"- cm{j}.yaml\n" for j in range(8))
        )
    (root / "apps" / "kustomization.yaml").write_text(
        "resources:\n" + "".join(f"- app{i:04d}\n" for i in range(apps))
    )
    return root


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("repos", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--synthetic", type=int, default=0, metavar="N")
    args = parser.parse_args()
    repos = args.repos or ([] if args.synthetic else [HERE / "examples" / "homelab"])
    for repo in repos:
        bench(repo.resolve(), args.repeat, args.jobs)
    if args.synthetic:
        with tempfile.TemporaryDirectory() as tmp:
            bench(synthetic_repo(Path(tmp), args.synthetic), args.repeat, args.jobs)


if __name__ == "__main__":
    main()
