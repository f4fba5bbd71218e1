#!/usr/bin/env python3
"""Benchmark harness against bare `kubectl kustomize` on the same targets, in one run.

    python scripts/bench.py [REPO ...] [--repeat 3] [--jobs N] [--synthetic N]

For each repo, best wall time of `--repeat` runs of:
  1. bare `kubectl kustomize` over the path-target directories, one after another;
  2. the same with N in parallel (what a careful shell script would do);
  3. harness rendering the same path targets in-process (renderer + document split + sha256);
  4. harness rendering path and Flux targets in-process (kustomize runs counted);
  5. `harness check` as a user runs it (process start, render, compare, hazards).
Ratios are against (1) and (2). `--helm` adds the helm section (bench_helm): per-release cost
of the in-process Helm SDK against a `helm template` process (`--helm-binary PATH` or
$HARNESS_HELM; skipped without one), and the example with and without helm targets.
`--synthetic N` adds a generated repo of N app directories
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
from harness.flux.targets import render_flux  # noqa: E402
from harness.helm import stage  # noqa: E402
from harness.helm.targets import ClusterObjects  # noqa: E402
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


# -- helm targets -------------------------------------------------------------------------------


def bench_helm(repo: Path, repeat: int, jobs: int, binary: str | None) -> None:
    """Per-release cost: in-process SDK vs one `helm template` process; then the repo's render
    with and without its helm targets (both in-process, fresh renderer each run)."""
    from harness.helm import engine as engine_mod

    chart = repo / "charts" / "whoami"
    request = engine_mod.RenderRequest("whoami", "media", {"replicas": 3})
    releases = 50
    sdk_engine = engine_mod.SdkEngine()

    def many(engine: engine_mod.Engine, n: int) -> Callable[[], None]:
        return lambda: [engine.render(chart, request) for _ in range(n)] and None

    print(f"\n== helm: {chart.relative_to(repo)} (best of {repeat})")
    per_sdk = best_of(repeat, many(sdk_engine, releases)) / releases
    print(f"  in-process SDK, per release        {per_sdk * 1000:8.2f} ms")
    chosen = binary or os.environ.get("HARNESS_HELM")
    if chosen:
        proc_engine = engine_mod.resolve(chosen, 60)
        per_proc = best_of(repeat, many(proc_engine, 10)) / 10
        print(
            f"  `helm template` process, per release {per_proc * 1000:6.2f} ms   "
            f"x{per_proc / per_sdk:6.1f} the SDK"
        )
    else:
        print("  `helm template` process: no helm binary (pass --helm-binary PATH); skipped")
        # A lower bound for any per-release process: starting a Go CLI of helm's size.
        kubectl = str(render.resolve().binary)
        start_secs = best_of(
            repeat,
            lambda: [
                subprocess.run([kubectl, "version", "--client"], capture_output=True)
                for _ in range(10)
            ],
        )
        print(
            f"  Go CLI process start (kubectl version --client), a floor for a helm process: "
            f"{start_secs / 10 * 1000:.1f} ms   x{start_secs / 10 / per_sdk:.1f} the SDK"
        )
    cfg = config_mod.load(repo)
    renderer = render.resolve(flags=cfg.kubectl_flags, timeout=cfg.timeout)
    clusters: list[ClusterObjects] = []
    start = time.perf_counter()
    render_flux(
        cfg,
        renderer,
        jobs=jobs,
        strict=cfg.strict,
        on_cluster=lambda c, b, o: clusters.append(ClusterObjects(c, b, o)),
    )
    flux_secs = time.perf_counter() - start
    results: dict[str, object] = {}

    def helm_stage() -> None:
        fresh = render.resolve(flags=cfg.kubectl_flags, timeout=cfg.timeout)
        results.update(
            stage.render(cfg, fresh, clusters, stage.HelmOptions(), jobs=jobs, taken=set())
        )

    stage_secs = best_of(repeat, helm_stage)
    count = max(len(results), 1)
    print(f"  {repo.name}: Flux targets (one run)        {flux_secs:8.3f}s")
    print(
        f"  {repo.name}: helm stage, {len(results)} targets       {stage_secs:8.3f}s   "
        f"({stage_secs / count * 1000:.0f} ms per release, post-renderer kustomize run included)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("repos", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--synthetic", type=int, default=0, metavar="N")
    parser.add_argument("--helm", action="store_true", help="also the helm section")
    parser.add_argument("--helm-binary", default=None, help="a helm binary to compare with")
    args = parser.parse_args()
    repos = args.repos or ([] if args.synthetic else [HERE / "examples" / "homelab"])
    for repo in repos:
        bench(repo.resolve(), args.repeat, args.jobs)
    if args.synthetic:
        with tempfile.TemporaryDirectory() as tmp:
            bench(synthetic_repo(Path(tmp), args.synthetic), args.repeat, args.jobs)
    if args.helm:
        example = HERE / "examples" / "homelab"
        bench_helm(example, args.repeat, args.jobs, args.helm_binary)


if __name__ == "__main__":
    main()
