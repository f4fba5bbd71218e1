#!/usr/bin/env python3
"""Benchmark harness against bare `kubectl kustomize` on the same targets, in one run.

    python scripts/bench.py [REPO ...] [--repeat 3] [--jobs N] [--homelab CxN] [--synthetic N]
                            [--no-inprocess] [--incremental | --floor | --accept]

A REPO may be a real public repo as fetched: it is copied into a fresh git repo, and one
without harness.yaml gets one from `harness init` first (untimed; the config and goldens
join the base commit), as a new user starts.

For each repo, the best wall time over `--repeat` interleaved rounds of:
  1. bare `kubectl kustomize` over the path-target directories, one after another;
  2. the same with N in parallel (what a careful shell script would do);
  3. harness rendering the same path targets in-process at -j1 (against 1);
  4. harness rendering path and Flux targets in-process (kustomize runs counted);
  5. cold `harness check` as a user runs it (process start, render, compare, hazards);
  6. warm no-change `check` (second run on a filled render cache, the tree still what the
     goldens hold; timed before the edit below; replayed whole by replay.py, and again with
     HARNESS_NO_REPLAY=1 so the render cache alone is timed), when this harness has `--cache-dir`;
     skipped otherwise; and a warm `check` after the edit (one target differs from goldens);
  7. `harness diff --base HEAD~1` after a commit that annotates one app's object: with nothing
     cached (a cold full diff), and (with the cache) the first run after the edit on a cache
     that holds the base commit (best of `--repeat` rounds, each a new edit of that file);
  8. peak RSS of the `check` process and of its largest child (a kubectl);
  9. the local loop: `diff --base HEAD` right after saving one file (the base remembered by
     the last such diff), and `harness watch`, from the save to its answer (with
     `--incremental`, also the import cost of such a diff);
 10. `comment --base HEAD~1` cold, and on a copy of the cache a `check` at the base commit
     left (what the base branch's CI run saves and the PR's run restores).
Then the goal ratios in one block (issue 23's, against bare parallel kustomize), and at the
end a markdown table, one row per repo, for docs/benchmark.md.
`--homelab CxN` adds a generated repo shaped like public
Flux homelab repos: C clusters x N apps, each app a Flux Kustomization with targetNamespace,
a component, postBuild substitution from a cluster ConfigMap, half of them on a
`${CLUSTER}` overlay path. `--synthetic N` adds a breadth repo (N small directories plus one
aggregating them). Timing lives here, never in tests: the machine may be shared, so repeat
and compare ratios taken in one run. `--helm` adds the helm section (bench_helm): per-release
cost of the in-process Helm SDK against a `helm template` process (`--helm-binary PATH` or
$HARNESS_HELM; skipped without one), and the example's helm stage. `--helm-chart DIR
--helm-values FILE` measures the CPU one release of a real chart costs (bench_chart: e.g.
bjw-s app-template with a typical release's values), in-process, as harness renders it.
`--accept` measures only api-reject (bench_accept): a cold in-process render of each REPO
(and the `--homelab` repo) against the rule's cold and warm validation of that render.
`--floor` measures only a cold `harness render` (the CLI, a fresh cache dir each round)
against its own floor (bench_floor): bare `kubectl kustomize`, `--jobs` in parallel, over
every distinct build the render needs (floor_builds: the path targets, plus each Flux
target's build whose generated kustomization differs from the path's own, materialised by
Flux's generator, generator.plan, in a workspace of the bench's; a plan that builds the path
in place is the path target's run and counts once), on a copy of each REPO, interleaved,
best of `--repeat`; it prints the floor build count, the cold in-process render's kustomize
runs as a cross-check, the floor with and without harness's Go runtime settings, the ratio
(against the stricter floor) and the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from harness.cli import entry  # noqa: E402
from harness.core import config as config_mod  # noqa: E402
from harness.core import parsed  # noqa: E402
from harness.core.errors import ConfigError  # noqa: E402
from harness.flux.api import (  # noqa: E402
    KUSTOMIZE_GROUP,
    FluxKustomization,
    parse_kustomization,
    secure_join,
)
from harness.flux.helm import stage  # noqa: E402
from harness.flux.helm.targets import ClusterObjects  # noqa: E402
from harness.flux.kustomize import generator  # noqa: E402
from harness.flux.source.ignore import SourceIgnores  # noqa: E402
from harness.flux.spec import SpecError  # noqa: E402
from harness.flux.targets import render_flux  # noqa: E402
from harness.pipeline.repo import RenderOptions, render_repo  # noqa: E402
from harness.render import closure, discover  # noqa: E402
from harness.render import kustomize as render  # noqa: E402
from harness.render.kustomize import UNRESTRICTED  # noqa: E402

HARNESS = (sys.executable, "-m", "harness")
# the CLI runs measure this checkout, as the in-process lines do
# An installed harness runs from compiled bytecode: the CLI runs keep theirs in a private
# prefix (set in main) even where PYTHONDONTWRITEBYTECODE is set, so no run times the compiler.
ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "CI": "1",
    "PYTHONPATH": os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p),
}
# Runs the CLI in-process and reports its own peak RSS and its largest child's, in KiB.
RSS_WRAPPER = (
    "import atexit, resource, sys\n"
    "def report():\n"
    "    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "    sys.stderr.write(f'\\nBENCH-RSS {me} {kids}\\n')\n"
    "atexit.register(report)\n"
    "from harness.cli.entry import main\n"
    "sys.argv = ['harness', *sys.argv[1:]]\n"
    "main()\n"
)


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


def bare_builds(
    kubectl: Path,
    flags: tuple[str, ...],
    builds: Sequence[FloorBuild],
    jobs: int,
    env: dict[str, str] | None = None,
) -> None:
    def one(build: FloorBuild) -> None:
        argv = [str(kubectl), "kustomize", *flags, *build.extra, str(build.directory)]
        subprocess.run(argv, capture_output=True, env=env)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, builds))


@dataclass(frozen=True)
class FloorBuild:
    """One kustomize build a cold render needs: where it runs and with which extra flags."""

    directory: Path
    extra: tuple[str, ...]
    flux: bool  # a Flux build whose generated kustomization differs from the path's own


def floor_builds(
    cfg: config_mod.Config, jobs: int, ws: generator.Workspace
) -> tuple[list[FloorBuild], int, list[str]]:
    """Every distinct build a cold render of path + Flux targets needs, made independently of
    the render's own memo: the path targets, plus for each Flux target the directory Flux's
    generator (generator.plan, its public entry) writes under `ws` for the Kustomization
    object the render found (a plan that builds the path in place is the path target's
    run, counted once). Also the kustomize runs a cold in-process render counted, as a cross
    check, and the Flux targets no Kustomization object was found for (synthesized roots)."""
    renderer = render.resolve(flags=cfg.kubectl_flags, timeout=cfg.timeout)
    snap = render_repo(cfg, renderer, RenderOptions(jobs=jobs, flux=True))
    path_dirs = [t.path.resolve() for t in discover.path_targets(cfg)]
    builds = {(str(d), ()): FloorBuild(d, (), False) for d in path_dirs}
    # every Flux Kustomization object any target rendered, by namespace/name
    objects: dict[tuple[str, str], list[tuple[str, dict[str, object]]]] = {}
    for result in snap.results.values():
        cluster = result.target.cluster or ""
        for doc in result.documents:
            if doc.id.kind == "Kustomization" and doc.id.group == KUSTOMIZE_GROUP:
                obj = parsed.load(doc.text)
                if isinstance(obj, dict):
                    objects.setdefault((doc.id.namespace, doc.id.name), []).append((cluster, obj))
    unrestricted = () if "LoadRestrictionsNone" in " ".join(cfg.kubectl_flags) else UNRESTRICTED
    ignores = SourceIgnores()
    synthesized: list[str] = []
    for result in snap.results.values():
        target = result.target
        if target.kind != "flux" or result.error is not None:
            continue
        cluster, namespace, name = target.name.split("/", 2)
        directory = target.path.resolve()
        ks = _kustomization_for(objects.get((namespace, name), []), cluster, namespace, directory)
        if ks is None:  # the root harness synthesizes for a bootstrap path: no overrides
            synthesized.append(target.name)
            ks = parse_kustomization(_root_object(name, namespace, directory, cfg.repo), namespace)
        rules = ignores.rules(cfg.repo.resolve(), ks.source.kind)
        plan = generator.plan(ks, directory, ws, rules)
        if plan.empty:
            continue
        if not plan.generated and (str(plan.directory.resolve()), ()) in builds:
            continue  # the path target's own build (the renderer shares it)
        where = plan.directory.resolve()
        builds.setdefault((str(where), unrestricted), FloorBuild(where, unrestricted, True))
    return list(builds.values()), renderer.runs, synthesized


def _kustomization_for(
    found: list[tuple[str, dict[str, object]]], cluster: str, namespace: str, directory: Path
) -> FluxKustomization | None:
    """The Kustomization object a Flux target was built from: of that name, its `spec.path`
    naming the target's directory under some source root, from its own cluster first."""
    matches: list[tuple[bool, FluxKustomization]] = []
    for where, obj in found:
        try:
            ks = parse_kustomization(obj, namespace)
        except (SpecError, ValueError):
            continue
        if any(secure_join(r, ks.path) == directory for r in (directory, *directory.parents)):
            matches.append((where != cluster, ks))
    matches.sort(key=lambda m: m[0])
    return matches[0][1] if matches else None


def _root_object(name: str, namespace: str, directory: Path, repo: Path) -> dict[str, object]:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "path": directory.relative_to(repo.resolve()).as_posix(),
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
        },
    }


def has_cache_options() -> bool:
    """Whether this harness has the persistent render cache (`--cache-dir`, `--no-cache`)."""
    proc = subprocess.run([*HARNESS, "check", "--help"], capture_output=True, text=True, env=ENV)
    return "--cache-dir" in proc.stdout and "--no-cache" in proc.stdout


@dataclass
class Cli:
    """`harness` as a user runs it, with the bench's config file and cache choice."""

    repo: Path
    config_file: Path
    jobs: int
    cache: bool
    rss: tuple[int, int] = (0, 0)
    failing: str = ""

    def args(self, verb: str, *extra: str, cache_dir: Path | None = None) -> list[str]:
        argv = [verb, "-q", "-j", str(self.jobs), "--repo", str(self.repo)]
        argv += ["--config", str(self.config_file), *extra]
        if self.cache:
            argv += ["--cache-dir", str(cache_dir)] if cache_dir else ["--no-cache"]
        return argv

    def run(
        self, argv: Sequence[str], env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-c", RSS_WRAPPER, *argv],
            capture_output=True,
            text=True,
            env={**ENV, **(env or {})},
            cwd=self.repo,
        )
        for line in proc.stderr.splitlines():
            if line.startswith("BENCH-RSS "):
                me, kids = (int(x) for x in line.split()[1:])
                self.rss = (max(self.rss[0], me), max(self.rss[1], kids))
        if proc.returncode not in (0, 1, 2) or "Traceback" in proc.stderr:
            tail = proc.stderr.strip().splitlines()[-3:]
            raise SystemExit(f"harness {' '.join(argv[:1])} failed: {' | '.join(tail)}")
        if proc.returncode == 2 and not self.failing:
            # a target that does not render (say an unmapped source) is timed like the others
            self.failing = next((ln for ln in proc.stderr.splitlines() if "error" in ln), "?")
        return proc


def bench_config(repo: Path, tmp: Path) -> Path:
    """The repo's config with goldens in a dot-directory git ignores, so `check` never
    touches the repo's files (goldens must stay inside the checkout: core/config.py)."""
    cfg = config_mod.load(repo)
    original = cfg.source_file.read_text() if cfg.source_file else ""
    lines = [ln for ln in original.splitlines() if not ln.startswith("goldens:")]
    info = repo / ".git" / "info"
    if not (repo / ".git").is_dir():
        raise SystemExit(f"bench: {repo} is not a git checkout (--incremental times one as it is)")
    info.mkdir(exist_ok=True)  # `git init` without templates makes none
    with (info / "exclude").open("a") as fh:
        fh.write("/.harness-bench/\n")
    config_file = tmp / "harness.yaml"
    goldens = repo / ".harness-bench" / "goldens"
    config_file.write_text("\n".join([*lines, f"goldens: {goldens}", ""]))
    return config_file


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def git_copy(repo: Path, dest: Path) -> Path:
    """The repo's files in a fresh git repo with one commit (the diff needs history)."""
    shutil.copytree(repo, dest, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "base")
    return dest


def edit_one_file(repo: Path, cfg: config_mod.Config, n: int = 0) -> Path:
    """Change one manifest of one app and commit it: the PR the diff line measures. Edit `n`
    of the same file differs from every other, so each is a new head to render."""
    synthetic = sorted(repo.glob("kubernetes/apps/*/app000/app/configmap.yaml"))
    if synthetic:
        target = synthetic[0]
        text = target.read_text()
        marker = "value-0-" if "value-0-" in text else f"edited{n - 1}-0-"
        target.write_text(text.replace(marker, f"edited{n}-0-", 1))
    else:
        files = [
            f
            for t in discover.path_targets(config_mod.load(repo, cfg.source_file))
            for f in sorted(t.path.iterdir())
            if (f.suffix in (".yaml", ".yml") or f.name == "Kustomization") and f.is_file()
        ]
        # a manifest beside a kustomization file, else (a repo of bare kustomizations) one
        # of those, edited by a comment (it re-renders to the same output)
        target = min(files, key=lambda f: f.name.lower().startswith("kustomization"))
        if target.name.lower().startswith("kustomization"):
            target.write_text(commented(target.read_text(), n))
        else:
            target.write_text(annotated(target.read_text(), n))
    git(repo, "commit", "-q", "-am", f"edit one file ({n})")
    return target


EDIT_MARK = "bench.harness.dev/edit"


def annotated(text: str, n: int) -> str:
    """`text` with an annotation added to its first object, as a real one-line PR would
    change a value (the rendered output changes, so the diff compares documents). Only the
    first `metadata:` block is touched, and only if it has no `annotations:` or `labels:`
    of its own; else a comment is appended (the file re-renders to the same output)."""
    if EDIT_MARK in text:  # an earlier round's edit: a new value
        return re.sub(rf'{EDIT_MARK}: "\d+"', f'{EDIT_MARK}: "{n}"', text)
    lines = text.split("\n")
    start = next((i for i, ln in enumerate(lines) if ln.rstrip() == "metadata:"), None)
    if start is not None:
        block = []
        for ln in lines[start + 1 :]:
            if ln.strip() and not ln.startswith((" ", "\t")):
                break
            block.append(ln)
        keys = {ln.strip().split(":")[0] for ln in block if ln.strip()}
        indent = next((ln[: len(ln) - len(ln.lstrip())] for ln in block if ln.strip()), "  ")
        for field in ("annotations", "labels"):
            if field not in keys:
                note = f'{indent}{field}: {{{EDIT_MARK}: "{n}"}}'
                return "\n".join([*lines[: start + 1], note, *lines[start + 1 :]])
    return commented(text, n)


def commented(text: str, n: int) -> str:
    text = text.split("\n# edited by scripts/bench.py")[0]
    return text + f"\n# edited by scripts/bench.py ({n})\n"


def touching(repo: Path, edited: Path) -> list[Path]:
    """The path targets whose input closure holds `edited`: what a diff must render again."""
    walker = closure.Walker()
    rel = edited.relative_to(repo).as_posix()
    found: list[Path] = []
    for target in discover.path_targets(config_mod.load(repo)):
        try:
            if rel in walker.closure(target.path, repo).files():
                found.append(target.path)
        except closure.EscapeError:
            continue
    return found


def interleaved(repeat: int, steps: Sequence[tuple[str, Callable[[], object]]]) -> dict[str, float]:
    """Best time of each step over `repeat` rounds of all steps: load that comes and goes on
    a shared machine hits every step alike, so the ratios stay fair."""
    best = {label: float("inf") for label, _ in steps}
    for _ in range(repeat):
        for label, fn in steps:
            start = time.perf_counter()
            fn()
            best[label] = min(best[label], time.perf_counter() - start)
    return best


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def prepared(repo: Path, tmp: Path) -> Path:
    """The repo's files in a fresh git repo in `tmp`; a repo without harness.yaml (a real
    public repo as fetched) gets one from `harness init` first (untimed, its own cache), as a
    new user would start; the config and goldens are part of the base commit."""
    work = git_copy(repo, tmp / "repo")
    if config_mod.find_config(work) is None:
        proc = subprocess.run(
            [*HARNESS, "init", "-q", "--repo", str(work), "--cache-dir", str(tmp / "init-cache")],
            capture_output=True,
            text=True,
            env=ENV,
            cwd=work,
        )
        if not (work / "harness.yaml").exists():
            raise SystemExit(f"harness init failed on {repo}: {proc.stderr.strip()[-300:]}")
        shutil.rmtree(tmp / "init-cache", ignore_errors=True)
        # the bench keeps its goldens in a dot-directory (bench_config): goldens left here
        # would be rendered as more directories (they hold Flux Kustomizations)
        shutil.rmtree(work / "goldens", ignore_errors=True)
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", "harness init")
    return work


@dataclass
class Row:
    """One repo's line of the table in docs/benchmark.md: the issue's ratios and their floors."""

    name: str
    shape: str
    par: float
    cold_check: float
    warm_check: float
    one_file: float
    watch: float
    comment_cold: float
    comment_restored: float
    rss: float
    floor: float
    no_change: float = 0.0
    render_floor: float = 0.0

    def cells(self) -> list[str]:
        p = self.par
        return [
            self.name,
            self.shape,
            f"{p:.1f} s",
            f"{self.cold_check / p:.2f} ({self.cold_check:.1f} s)",
            f"{self.warm_check / p:.3f} ({self.warm_check * 1000:.0f} ms)",
            f"{self.one_file / p:.3f} ({self.one_file:.2f} s; floor {self.floor / p:.3f})",
            f"{self.watch / p:.3f} ({self.watch * 1000:.0f} ms)",
            f"{self.comment_restored / self.comment_cold:.2f} "
            f"({self.comment_restored:.1f} of {self.comment_cold:.1f} s)",
            f"{self.no_change * 1000:.0f} ms",
            f"{self.cold_check / self.render_floor:.2f} (floor {self.render_floor:.1f} s)"
            if self.render_floor
            else "-",
            f"{self.rss:.0f} MiB",
        ]


HEADER = [
    "repo",
    "shape",
    "bare 2 par",
    "cold `check` (<= 2.0)",
    "warm no-change `check` (<= 0.05)",
    "one-file `diff --base HEAD` (<= 0.06, <= 0.5 s)",
    "`watch` save -> answer (<= 0.15 s)",
    "PR comment, base restored / cold (<= 0.5)",
    "no-change `diff --base HEAD` (<= 0.3 s)",
    "cold `check` / its floor (<= 1.15)",
    "peak RSS (< 300)",
]
ROWS: list[Row] = []


def watch_latency(cli: Cli, edited: Path, cache_dir: Path, rounds: int) -> float:
    """`harness watch` as a user keeps it open: the best time from a save to its answer."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *cli.args("watch", cache_dir=cache_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=cli.repo,
    )
    lines: list[tuple[float, str]] = []
    cond = threading.Condition()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with cond:
                lines.append((time.perf_counter(), line))
                cond.notify_all()

    threading.Thread(target=read, daemon=True).start()

    def wait_for(text: str, after: int) -> float:
        with cond:
            while True:
                hits = [t for t, ln in lines[after:] if text in ln]
                if hits:
                    return hits[0]
                if proc.poll() is not None or not cond.wait(600):
                    raise SystemExit(f"harness watch stopped: {''.join(ln for _, ln in lines)}")

    try:
        wait_for("waiting for changes", 0)
        best = float("inf")
        for n in range(1, rounds + 1):
            time.sleep(0.5)  # a separate save, not the tail of the last one
            with cond:
                seen = len(lines)
            start = time.perf_counter()
            edited.write_text(annotated(edited.read_text(), 100 + n))
            best = min(best, wait_for("watch: answer ", seen) - start)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    return best


def bench(repo: Path, repeat: int, jobs: int, cache: bool, inprocess: bool = True) -> None:
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp_name:
        tmp = Path(tmp_name)
        work = prepared(repo, tmp)
        _bench(repo.name, work, tmp, repeat, jobs, cache, inprocess)


def _bench(
    name: str, work: Path, tmp: Path, repeat: int, jobs: int, cache: bool, inprocess: bool
) -> None:
    cfg = config_mod.load(work)
    dirs = [t.path for t in discover.path_targets(cfg)]
    kubectl = render.resolve().binary
    flux_runs = in_process(cfg, jobs, flux=True)() if inprocess else 0
    ws = generator.Workspace(work)  # the floor's Flux builds (floor_builds), until the end
    builds = floor_builds(cfg, jobs, ws)[0]
    print(
        f"\n== {name}  ({len(dirs)} path targets; path + Flux targets need {flux_runs or '?'} "
        f"kustomize runs; jobs={jobs}; best of {repeat}, interleaved)",
        flush=True,
    )
    if True:  # one block: the CLI's temp dirs live until the table is printed
        cli = Cli(work, bench_config(work, tmp), jobs, cache)
        cache_dir = tmp / "cache"
        ci_base = tmp / "ci-base-cache"
        cli.run(cli.args("update"))
        warm_same = warm_cached = 0.0
        floor_note = ""
        if cache:  # what CI or the last local run left: the base commit, rendered
            cli.run(cli.args("check", cache_dir=cache_dir))
            # the base branch's CI run: a check at the base commit, its cache saved
            cli.run(cli.args("check", cache_dir=ci_base))
            # no change: the tree is what the goldens hold and every build is cached; the
            # second line is the same run with the whole-run replay off (render cache only)
            check_warm = cli.args("check", cache_dir=cache_dir)
            no_replay = {"HARNESS_NO_REPLAY": "1"}
            warm = interleaved(
                repeat,
                [
                    ("w", lambda: cli.run(check_warm)),
                    ("c", lambda: cli.run(check_warm, env=no_replay)),
                ],
            )
            warm_same, warm_cached = warm["w"], warm["c"]
        edited = edit_one_file(work, cfg)
        touched = touching(work, edited)
        diff = ("--base", "HEAD~1")
        comment_out = tmp / "comment"

        def comment(cache_from: Path | None) -> None:
            argv = ["comment", "--base", "HEAD~1", "--split", "--output-dir", str(comment_out)]
            if cache_from is None:
                cli.run(cli.args(*argv))
                return
            restored = tmp / "restored-cache"
            shutil.rmtree(restored, ignore_errors=True)
            shutil.copytree(cache_from, restored)  # untimed: actions/cache restores it
            start = time.perf_counter()
            cli.run(cli.args(*argv, cache_dir=restored))
            times_comment.append(time.perf_counter() - start)

        times_comment: list[float] = []
        steps: list[tuple[str, Callable[[], object]]] = [
            (
                "bare kubectl kustomize, sequential",
                lambda: bare(kubectl, cfg.kubectl_flags, dirs, 1),
            ),
            (
                f"bare kubectl kustomize, {jobs} parallel",
                lambda: bare(kubectl, cfg.kubectl_flags, dirs, jobs),
            ),
            (
                f"bare kubectl kustomize, the render's {len(builds)} distinct builds, {jobs} par",
                lambda: bare_builds(kubectl, cfg.kubectl_flags, builds, jobs),
            ),
        ]
        if inprocess:
            steps += [
                ("harness -j1, path targets (in-process)", in_process(cfg, 1, False)),
                (f"harness -j{jobs}, path targets (in-process)", in_process(cfg, jobs, False)),
                (f"harness -j{jobs}, path + flux (in-process)", in_process(cfg, jobs, True)),
            ]
        steps += [
            ("harness check, cold (CLI end to end)", lambda: cli.run(cli.args("check"))),
            ("harness diff --base HEAD~1, cold full", lambda: cli.run(cli.args("diff", *diff))),
            ("harness comment --base HEAD~1, cold", lambda: comment(None)),
            # the floor of any first run after an edit: start the CLI, render what it touched
            ("harness --version (process start and imports)", lambda: cli.run(["--version"])),
            (
                f"bare kubectl kustomize, {len(touched)} path targets the edit touches, {jobs} par",
                lambda: bare(kubectl, cfg.kubectl_flags, touched, jobs),
            ),
        ]
        times = interleaved(repeat, steps)
        floor_rows = list(times.items())[-2:]  # printed last
        rows = list(times.items())[:-2]
        seq, par, render_floor = rows[0][1], rows[1][1], rows[2][1]
        cold = times["harness check, cold (CLI end to end)"]
        full = times["harness diff --base HEAD~1, cold full"]
        comment_cold = times["harness comment --base HEAD~1, cold"]
        floor = sum(t for _label, t in floor_rows)
        goals = [
            ("cold check / bare parallel", cold / par, 2.0),
            ("cold check / its floor (every distinct build)", cold / render_floor, 1.15),
        ]
        if inprocess:
            goals.insert(0, ("-j1 path targets / bare sequential", rows[3][1] / seq, 1.10))
        one_wt = watch = restored = no_change = 0.0
        if cache:
            # the first diff after an edit: only what the edit touched is rendered. Each round
            # commits a new edit of the same file, so every timed diff is a first one, its base
            # (the commit before) cached as the last run left it; the best round counts
            cached_diff = cli.args("diff", *diff, cache_dir=cache_dir)
            one = timed(lambda: cli.run(cached_diff))
            for n in range(1, repeat):
                edit_one_file(work, cfg, n)
                one = min(one, timed(lambda: cli.run(cached_diff)))
            rows.append((f"  same, cached, after editing {edited.relative_to(work)}", one))
            # the local loop: `diff --base HEAD` after saving the file, the base remembered
            # from the last such diff (the clean tree's)
            wt_diff = cli.args("diff", "--base", "HEAD", cache_dir=cache_dir)
            cli.run(wt_diff)
            one_wt = float("inf")
            for n in range(repeat):
                edited.write_text(annotated(edited.read_text(), 50 + n))
                one_wt = min(one_wt, timed(lambda: cli.run(wt_diff)))
            rows.append(("harness diff --base HEAD, first after saving one file", one_wt))
            # no change: the clean tree against its own commit, the base remembered
            git(work, "checkout", "-q", "--", ".")
            cli.run(wt_diff)
            no_change = min(timed(lambda: cli.run(wt_diff)) for _ in range(repeat))
            rows.append(("harness diff --base HEAD, no change (clean tree)", no_change))
            edited.write_text(annotated(edited.read_text(), 90))
            cli.run(wt_diff)  # the saved file again: watch starts from this tree
            watch = watch_latency(cli, edited, cache_dir, max(repeat, 2))
            rows.append(("harness watch, save -> answer", watch))
            for _ in range(repeat):
                comment(ci_base)
            restored = min(times_comment)
            rows.append(("harness comment --base HEAD~1, base commit's CI cache", restored))
            git(work, "checkout", "-q", "--", ".")
            # the first check after the edit: a replay miss, the render cache answers the rest
            after_edit = timed(lambda: cli.run(cli.args("check", cache_dir=cache_dir)))
            rows.append(("harness check, warm no-change (tree == goldens)", warm_same))
            rows.append(("  same, replay off (render cache only)", warm_cached))
            rows.append(
                ("harness check, first after the edit (replay miss, render cache hits)", after_edit)
            )
            goals.append(("warm no-change check / bare parallel", warm_same / par, 0.05))
            goals.append(("one-file diff --base HEAD / bare parallel", one_wt / par, 0.06))
            goals.append(("one-file diff --base HEAD (s)", one_wt, 0.5))
            goals.append(("no-change diff --base HEAD (s)", no_change, 0.3))
            goals.append(("watch save -> answer (s)", watch, 0.15))
            goals.append(("watch save -> answer / bare parallel", watch / par, 0.03))
            goals.append(("PR comment, base restored / cold comment", restored / comment_cold, 0.5))
            goals.append(("one-file-change diff / cold full diff", one / full, 0.10))
            if cold < 2.0:
                goals.append(("small repo: one-file diff --base HEAD (s)", one_wt, 0.5))
            floor_note = (
                f"    (its floor, starting the CLI and rendering the touched path targets: "
                f"{floor / par:.3f} of bare parallel)"
            )
        rows += floor_rows
        me, kids = cli.rss
        failing = cli.failing
    width = max(len(r[0]) for r in rows)
    for label, secs in rows:
        print(f"  {label:<{width}}  {secs:7.3f}s   x{secs / seq:5.2f} seq   x{secs / par:5.3f} par")
    print(f"  peak RSS: harness process {me / 1024:.0f} MiB, largest child {kids / 1024:.0f} MiB")
    goals.append(("peak RSS of harness (MiB)", me / 1024, 300.0))
    if not cache:
        print("  (no --cache-dir in this harness: warm and one-file-change lines skipped)")
    if failing:
        print(f"  (some targets fail to render, e.g. {failing[:100]})")
    print("  goals:")
    for label, value, limit in goals:
        verdict = "ok" if value <= limit else "MISSED"
        print(f"    {label:<44} {value:7.3f}  (goal <= {limit:g})  {verdict}")
        if label.startswith("one-file diff --base") and floor_note:
            print(floor_note)
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    ws.close()
    if cache:
        shape = f"{len(dirs)} path dirs" + (f", {flux_runs} kustomize runs" if flux_runs else "")
        ROWS.append(
            Row(
                name,
                shape,
                par,
                cold,
                warm_same,
                one_wt,
                watch,
                comment_cold,
                restored,
                me / 1024,
                floor,
                no_change,
                render_floor,
            )
        )


def bench_incremental(work: Path, tmp: Path, repeat: int, jobs: int) -> None:
    """The local loop on a checkout as it is, in interleaved rounds: the bare parallel loop,
    `diff --base HEAD` right after saving one file (base and index remembered by the diff
    before), the no-change diff of the clean tree, then `watch` from a save to its answer,
    and what a one-file diff's imports cost (`import_cost`). The saved file is restored at
    the end."""
    cfg = config_mod.load(work)
    dirs = [t.path for t in discover.path_targets(cfg)]
    kubectl = render.resolve().binary
    cli = Cli(work, bench_config(work, tmp), jobs, True)
    cache_dir = tmp / "cache"
    wt_diff = cli.args("diff", "--base", "HEAD", cache_dir=cache_dir)
    edited = next(
        f
        for t in discover.path_targets(cfg)
        for f in sorted(t.path.iterdir())
        if f.suffix in (".yaml", ".yml") and not f.name.startswith("kustomization")
    )
    original = edited.read_text()
    print(f"\n== {work.name} (incremental; {len(dirs)} path targets; jobs={jobs})", flush=True)
    started = time.perf_counter()
    cli.run(wt_diff)  # cold: the cache, the base's render and the clean tree's index
    print(f"  first diff (cold cache)      {time.perf_counter() - started:7.2f}s", flush=True)
    best = {"bare": float("inf"), "one": float("inf"), "none": float("inf")}
    try:
        for n in range(repeat):
            best["bare"] = min(
                best["bare"], timed(lambda: bare(kubectl, cfg.kubectl_flags, dirs, jobs))
            )
            edited.write_text(annotated(original, 200 + n))
            best["one"] = min(best["one"], timed(lambda: cli.run(wt_diff)))
            edited.write_text(original)
            time.sleep(2.1)  # past the racy window: the clean tree's stat is trusted
            cli.run(wt_diff)  # the clean tree's index (as after any earlier local run)
            best["none"] = min(best["none"], timed(lambda: cli.run(wt_diff)))
        watch = watch_latency(cli, edited, cache_dir, max(repeat, 2))
        edited.write_text(annotated(original, 300))
        modules, imports = import_cost(cli, wt_diff, max(repeat, 3))
    finally:
        edited.write_text(original)
    par = best["bare"]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"  bare kubectl kustomize, {jobs} par  {par:7.3f}s")
    print(f"  one-file diff --base HEAD      {best['one']:7.3f}s   x{best['one'] / par:.3f} bare")
    print(f"  no-change diff --base HEAD     {best['none']:7.3f}s   x{best['none'] / par:.3f} bare")
    print(f"  watch save -> answer           {watch:7.3f}s   x{watch / par:.3f} bare")
    print(f"  imports of a one-file diff     {imports:7.3f}s   ({modules} modules of harness)")
    print(f"  (edited {edited.relative_to(work)}; load average after: {load})", flush=True)


def import_cost(cli: Cli, argv: list[str], rounds: int) -> tuple[int, float]:
    """What importing the modules a one-file diff loads costs (issue 31's start-up bound):
    the modules `python -X importtime` names for the diff just after a save, imported in a
    fresh interpreter, less a bare interpreter's start; the best of `rounds` each."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "harness", *argv],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cli.repo,
    )
    names = [
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    ]
    ours = sorted({n for n in names if n == "harness" or n.startswith("harness.")})
    # importtime also names what was only looked for (sitecustomize, another OS's modules);
    # the collector set as the console script sets it once the replay's modules are in
    # (cli/entry.py): the rest load with it, and at the default it would cost ~10% more
    first = [n for n in ("harness.cache.replay", "harness.cli.flags") if n in names]
    code = (
        "import gc, importlib\n"
        f"for n in {first!r}:\n    importlib.import_module(n)\n"
        f"gc.set_threshold(*{entry.GC_THRESHOLD!r})\n"
        f"for n in {names!r}:\n    try:\n        importlib.import_module(n)\n"
        "    except ImportError:\n        pass\n"
    )

    def start(*args: str) -> float:
        return timed(lambda: subprocess.run([sys.executable, *args], check=True, env=ENV))

    best = min(start("-c", code) - start("-c", "pass") for _ in range(rounds))
    return len(ours), max(best, 0.0)


def bench_floor(repo: Path, tmp: Path, repeat: int, jobs: int) -> None:
    """A cold `harness render` (the CLI, a fresh cache dir each round) against its own floor:
    bare `kubectl kustomize`, `jobs` in parallel, over every distinct build it needs
    (floor_builds), in interleaved rounds on a copy of the repo. The floor is timed twice:
    in the environment as it is, and with the Go runtime settings harness gives kustomize
    (render.GO_RUNTIME), the stricter floor the ratio is taken against."""
    work = prepared(repo, tmp)
    config_file = config_mod.find_config(work) or work / "harness.yaml"
    try:
        cfg = config_mod.load(work, config_file)
    except ConfigError:  # goldens outside the copy (an example's): put them inside it
        kept = [ln for ln in config_file.read_text().splitlines() if not ln.startswith("goldens:")]
        config_file = tmp / "harness.yaml"
        kept.append(f"goldens: {work / '.harness-bench' / 'goldens'}")
        config_file.write_text("\n".join([*kept, ""]))
        cfg = config_mod.load(work, config_file)
    kubectl = render.resolve().binary
    cli = Cli(work, config_file, jobs, True)
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with generator.workspace(work) as ws:
        builds, runs, synthesized = floor_builds(cfg, jobs, ws)
        flux = sum(1 for b in builds if b.flux)
        print(
            f"\n== {repo.name} (cold render vs its floor; jobs={jobs}; best of {repeat}, "
            f"interleaved)\n  floor builds: {len(builds) - flux} path targets + {flux} distinct "
            f"Flux builds = {len(builds)} (a cold in-process render ran {runs} kustomize)",
            flush=True,
        )
        if synthesized:
            print(f"  ({len(synthesized)} synthesized roots, e.g. {synthesized[0]})")
        go_env = render.child_env()
        n = 0

        def cold_render() -> None:
            nonlocal n
            n += 1
            cache_dir = tmp / f"cache-{n}"
            cli.run(cli.args("render", cache_dir=cache_dir))
            shutil.rmtree(cache_dir, ignore_errors=True)

        times = interleaved(
            repeat,
            [
                ("floor", lambda: bare_builds(kubectl, cfg.kubectl_flags, builds, jobs)),
                ("floor-go", lambda: bare_builds(kubectl, cfg.kubectl_flags, builds, jobs, go_env)),
                ("render", cold_render),
            ],
        )
    floor = min(times["floor"], times["floor-go"])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"  floor, bare kubectl kustomize, {jobs} par        {times['floor']:7.3f}s")
    print(f"  floor, same with harness's GOGC/GOMEMLIMIT     {times['floor-go']:7.3f}s")
    print(f"  harness render, cold (CLI, fresh cache dir)    {times['render']:7.3f}s")
    verdict = "ok" if times["render"] / floor <= 1.15 else "MISSED"
    print(f"  cold render / its floor  {times['render'] / floor:.3f}  (goal <= 1.15)  {verdict}")
    print(f"  (load average before: {load_before}; after: {load})", flush=True)


def print_table() -> None:
    """The table of docs/benchmark.md (markdown), one row per repo."""
    if not ROWS:
        return
    print("\n| " + " | ".join(HEADER) + " |")
    print("| " + " | ".join(["---"] * 2 + ["---:"] * (len(HEADER) - 2)) + " |")
    for row in ROWS:
        print("| " + " | ".join(row.cells()) + " |")


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


def bench_accept(repo: Path, repeat: int, jobs: int) -> None:
    """api-reject's cost (issue 30), in-process: a cold render of the repo's path and Flux
    targets (a fresh renderer, no cache), then the rule over that render cold (a new run: no
    memo, no cache entry, the built-in schemas loaded afresh) and warm (its verdicts from a
    render cache that holds them). Best of `repeat`; the ratios are what the bound is about."""
    from harness.cache.store import RenderCache
    from harness.core.run import Run
    from harness.flux.ksgraph import parse
    from harness.hazards.context import LintContext
    from harness.hazards.rules import api_reject

    cfg = config_mod.load(repo)
    holder: dict[str, object] = {}

    def cold_render() -> None:
        with Run().entered():
            renderer = render.resolve(flags=cfg.kubectl_flags, timeout=cfg.timeout)
            holder["snap"] = render_repo(cfg, renderer, RenderOptions(jobs=jobs, flux=True))

    cache = RenderCache(None)

    def validate(store: RenderCache | None) -> float:
        """The rule's own time in a new run whose graphs and parsed documents other lint
        rules already derived (as in `harness lint`, where every rule shares them)."""
        with Run().entered():
            ctx = LintContext(holder["snap"], kube_version=cfg.helm_kube_version, cache=store)  # type: ignore[arg-type]
            for graph in ctx.graphs.values():
                for owners in graph.index.values():
                    for _key, doc in owners:
                        parse(doc)
            start = time.perf_counter()
            holder["found"] = api_reject.RULE.check_snapshot(ctx)
            return time.perf_counter() - start

    t_render = best_of(repeat, cold_render)
    snap = holder["snap"]
    documents = sum(len(r.documents) for r in snap.results.values())  # type: ignore[attr-defined]
    t_cold = min(validate(None) for _ in range(repeat))
    validate(cache)  # fills the cache
    t_warm = min(validate(cache) for _ in range(repeat))
    errors = [f for f in holder["found"] if f.severity == "error"]  # type: ignore[attr-defined]
    print(
        f"api-reject {repo.name}: {documents} documents; cold render {t_render:.2f}s, "
        f"cold validation {t_cold:.2f}s ({t_cold / t_render:.1%} of the render), warm "
        f"{t_warm:.3f}s ({t_warm / t_render:.1%}); {len(errors)} errors"
    )


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """Best wall time of `repeat` runs of `fn` (the helm section times one thing at a time)."""
    return min(timed(fn) for _ in range(repeat))


# -- helm targets -------------------------------------------------------------------------------


def bench_helm(repo: Path, repeat: int, jobs: int, binary: str | None) -> None:
    """Per-release cost: in-process SDK vs one `helm template` process; then the repo's render
    with and without its helm targets (both in-process, fresh renderer each run)."""
    from harness.flux.helm import engine as engine_mod

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
            stage.render(cfg, fresh, clusters, stage.HelmOptions(), jobs=jobs, taken=set()).results
        )

    stage_secs = best_of(repeat, helm_stage)
    count = max(len(results), 1)
    print(f"  {repo.name}: Flux targets (one run)        {flux_secs:8.3f}s")
    print(
        f"  {repo.name}: helm stage, {len(results)} targets       {stage_secs:8.3f}s   "
        f"({stage_secs / count * 1000:.0f} ms per release, post-renderer kustomize run included)"
    )


def bench_chart(chart: Path, values: Path, repeat: int, binary: str | None) -> None:
    """CPU seconds per release of one real chart (process time: the machine may be shared,
    CPU time is what a runner pays): the whole engine render, one chart load, one render,
    one schema validation, Helm's manifest rules, the parse of every document."""
    import yaml

    from harness.flux.helm import engine as engine_mod
    from harness.flux.helm.capabilities import for_cluster

    vals = yaml.safe_load(values.read_text()) or {}
    caps = for_cluster([], "v1.33.0", ("gateway.networking.k8s.io/v1/HTTPRoute",))
    request = engine_mod.RenderRequest("app", "media", vals, capabilities=caps)
    sdk_engine = engine_mod.SdkEngine()
    docs = len(sdk_engine.render(chart, request))  # warm: the library loads once per process
    releases = 20
    samples = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(releases):
            sdk_engine.render(chart, request)
        samples.append((time.process_time() - start) / releases)
    samples.sort()
    print(
        f"\n== helm chart {chart.name} ({docs} documents per release, "
        f"{releases} releases x {repeat})"
    )
    print(
        f"  in-process SDK, CPU per release: best {samples[0] * 1000:.1f} ms, "
        f"median {samples[len(samples) // 2] * 1000:.1f} ms"
    )
    chosen = binary or os.environ.get("HARNESS_HELM")
    if chosen:
        proc_engine = engine_mod.resolve(chosen, 60)
        start = time.perf_counter()
        for _ in range(5):
            proc_engine.render(chart, request)
        print(
            "  `helm template` process, wall per release: "
            f"{(time.perf_counter() - start) / 5 * 1000:.1f} ms"
        )


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


def _flux_ks(name: str, path: str, spec: str = "") -> str:
    """A Flux Kustomization from the bootstrap source; `spec` adds lines under `spec:`."""
    extra = textwrap.indent(textwrap.dedent(spec).strip("\n"), "  ")
    return (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\n"
        "kind: Kustomization\n"
        f"metadata:\n  name: {name}\n  namespace: flux-system\n"
        f"spec:\n  interval: 10m\n  path: {path}\n  prune: true\n"
        "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
        + (extra + "\n" if extra else "")
    )


def homelab_repo(root: Path, clusters: int, apps: int) -> Path:
    """C clusters x N apps, laid out like public Flux homelab repos (bootstrap per cluster,
    a cluster-settings ConfigMap, one `apps` Kustomization, one Kustomization per app).

    Even apps build `app/` in every cluster (the clusters share one kustomize run); odd
    apps build `overlays/${CLUSTER}` (one run per cluster); every tenth app has no
    kustomization file, so Flux generates one.
    """
    names = [f"c{k}" for k in range(clusters)]
    by_ns: dict[str, list[str]] = {}
    for i in range(apps):
        by_ns.setdefault(f"ns{i % max(1, apps // 8):02d}", []).append(f"app{i:03d}")
    for c in names:
        _write(
            root,
            f"clusters/{c}/kustomization.yaml",
            """
            apiVersion: kustomize.config.k8s.io/v1beta1
            kind: Kustomization
            resources:
            - flux-system
            - cluster-settings.yaml
            - apps.yaml
            """,
        )
        _write(
            root, f"clusters/{c}/flux-system/kustomization.yaml", "resources:\n- gotk-sync.yaml\n"
        )
        _write(
            root,
            f"clusters/{c}/flux-system/gotk-sync.yaml",
            textwrap.dedent("""
            apiVersion: source.toolkit.fluxcd.io/v1
            kind: GitRepository
            metadata:
              name: flux-system
              namespace: flux-system
            spec:
              interval: 1m
              url: https://example.org/homelab.git
              ref:
                branch: main
            """).lstrip()
            + "---\n"
            + _flux_ks("flux-system", f"./clusters/{c}"),
        )
        _write(
            root,
            f"clusters/{c}/cluster-settings.yaml",
            f"""
            apiVersion: v1
            kind: ConfigMap
            metadata:
              name: cluster-settings
              namespace: flux-system
            data:
              CLUSTER: {c}
              DOMAIN: {c}.example.org
              TIMEZONE: Europe/Berlin
            """,
        )
        _write(
            root,
            f"clusters/{c}/apps.yaml",
            _flux_ks(
                "apps",
                "./kubernetes/apps",
                f"""
          postBuild:
            substitute:
              CLUSTER: {c}
        """,
            ),
        )
    _write(
        root,
        "kubernetes/components/common/kustomization.yaml",
        """
        apiVersion: kustomize.config.k8s.io/v1alpha1
        kind: Component
        labels:
        - pairs:
            app.kubernetes.io/part-of: homelab
        patches:
        - target:
            kind: Deployment
          patch: |
            - op: add
              path: /spec/template/spec/securityContext
              value:
                runAsNonRoot: true
        """,
    )
    _write(
        root,
        "kubernetes/apps/kustomization.yaml",
        "resources:\n" + "".join(f"- {ns}\n" for ns in sorted(by_ns)),
    )
    for ns, members in by_ns.items():
        _write(
            root,
            f"kubernetes/apps/{ns}/kustomization.yaml",
            "resources:\n- namespace.yaml\n" + "".join(f"- {a}/ks.yaml\n" for a in members),
        )
        _write(
            root,
            f"kubernetes/apps/{ns}/namespace.yaml",
            f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n",
        )
        for app in members:
            _homelab_app(root, f"kubernetes/apps/{ns}/{app}", ns, app, names)
    return root


def _homelab_app(root: Path, base: str, ns: str, app: str, clusters: list[str]) -> None:
    index = int(app[3:])
    per_cluster = index % 2 == 1
    path = f"./{base}/overlays/${{CLUSTER}}" if per_cluster else f"./{base}/app"
    up = "../" * (base.count("/") + (3 if per_cluster else 2) - 1)
    _write(
        root,
        f"{base}/ks.yaml",
        _flux_ks(
            app,
            path,
            f"""
          targetNamespace: {ns}
          components:
          - {up}components/common
          postBuild:
            substitute:
              APP: {app}
            substituteFrom:
            - kind: ConfigMap
              name: cluster-settings
        """,
        ),
    )
    files = ["deployment.yaml", "service.yaml", "configmap.yaml", "ingress.yaml"]
    if index % 10 != 4:
        _write(
            root,
            f"{base}/app/kustomization.yaml",
            "resources:\n" + "".join(f"- {f}\n" for f in files),
        )
    _write(
        root,
        f"{base}/app/deployment.yaml",
        f"""
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {app}
        spec:
          replicas: 1
          selector:
            matchLabels:
              app: {app}
          template:
            metadata:
              labels:
                app: {app}
            spec:
              containers:
              - name: {app}
                image: ghcr.io/example/{app}:1.{index}.0
                env:
                - name: TZ
                  value: ${{TIMEZONE}}
                - name: CLUSTER
                  value: ${{CLUSTER}}
                ports:
                - containerPort: 8080
        """,
    )
    _write(
        root,
        f"{base}/app/service.yaml",
        f"""
        apiVersion: v1
        kind: Service
        metadata:
          name: {app}
        spec:
          selector:
            app: {app}
          ports:
          - port: 80
            targetPort: 8080
        """,
    )
    data = "".join(f"  key{x}: value-{x}-${{APP}}\n" for x in range(12))
    _write(
        root,
        f"{base}/app/configmap.yaml",
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {app}-config\ndata:\n{data}",
    )
    _write(
        root,
        f"{base}/app/ingress.yaml",
        f"""
        apiVersion: networking.k8s.io/v1
        kind: Ingress
        metadata:
          name: {app}
        spec:
          rules:
          - host: {app}.${{DOMAIN}}
            http:
              paths:
              - path: /
                pathType: Prefix
                backend:
                  service:
                    name: {app}
                    port:
                      number: 80
        """,
    )
    if per_cluster:
        for replicas, cluster in enumerate(clusters, start=1):
            _write(
                root,
                f"{base}/overlays/{cluster}/kustomization.yaml",
                f"""
                resources:
                - ../../app
                patches:
                - target:
                    kind: Deployment
                    name: {app}
                  patch: |
                    - op: replace
                      path: /spec/replicas
                      value: {replicas}
                """,
            )


def _shape(value: str) -> tuple[int, int]:
    clusters, _, apps = value.partition("x")
    try:
        return int(clusters), int(apps)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: expected CLUSTERSxAPPS, e.g. 3x90") from None


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
    parser.add_argument("--helm-chart", type=Path, help="a chart directory or .tgz (bench_chart)")
    parser.add_argument("--helm-values", type=Path, help="the values file for --helm-chart")
    parser.add_argument(
        "--homelab",
        type=_shape,
        metavar="CxN",
        help="add a generated homelab repo: C clusters x N apps (3x90: ~230 directories)",
    )
    parser.add_argument(
        "--accept",
        action="store_true",
        help="only api-reject's cost on each REPO (and --homelab): cold render vs validation",
    )
    parser.add_argument("--write", type=Path, metavar="DIR", help="only write the --homelab repo")
    parser.add_argument(
        "--incremental",
        action="store_true",
        help="only the incremental lines (one-file and no-change diff, watch, the one-file "
        "diff's imports) against the bare parallel loop, on each REPO as it is (a git "
        "checkout with harness.yaml; its cache under the bench's temp dir)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="only a cold `harness render` against its floor (bare kubectl over every distinct "
        "build it needs), on a copy of each REPO (with its harness.yaml)",
    )
    parser.add_argument(
        "--no-inprocess",
        action="store_true",
        help="skip the in-process lines (-j1 path targets, path + Flux), for long real repos",
    )
    args = parser.parse_args()
    if args.write is not None:
        homelab_repo(args.write, *(args.homelab or (3, 90)))
        return
    if args.helm_chart is not None:
        if args.helm_values is None:
            parser.error("--helm-chart needs --helm-values")
        bench_chart(args.helm_chart, args.helm_values, args.repeat, args.helm_binary)
        if not args.repos:
            return
    if args.accept:
        with tempfile.TemporaryDirectory(prefix="harness-bench-accept-") as tmp:
            targets = [r.resolve() for r in args.repos]
            if args.homelab:
                targets.append(homelab_repo(Path(tmp) / "homelab", *args.homelab))
            for repo in targets:
                bench_accept(repo, args.repeat, args.jobs)
        return
    pycache = tempfile.TemporaryDirectory(prefix="harness-bench-pycache-")
    ENV["PYTHONPYCACHEPREFIX"] = pycache.name
    cache = has_cache_options()
    repos = args.repos or (
        [] if args.synthetic or args.homelab else [HERE / "examples" / "homelab"]
    )
    if args.floor:
        for repo in repos:
            with tempfile.TemporaryDirectory(prefix="harness-bench-floor-") as tmp_name:
                bench_floor(repo.resolve(), Path(tmp_name), args.repeat, args.jobs)
        return
    if args.incremental:
        for repo in repos:
            with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp_name:
                bench_incremental(repo.resolve(), Path(tmp_name), args.repeat, args.jobs)
        return
    for repo in repos:
        bench(repo.resolve(), args.repeat, args.jobs, cache, not args.no_inprocess)
    with tempfile.TemporaryDirectory(prefix="harness-bench-src-") as tmp:
        if args.homelab:
            clusters, apps = args.homelab
            bench(
                homelab_repo(Path(tmp) / "homelab", clusters, apps), args.repeat, args.jobs, cache
            )
        if args.synthetic:
            bench(
                synthetic_repo(Path(tmp) / "breadth", args.synthetic), args.repeat, args.jobs, cache
            )
    print_table()
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nbench process peak RSS (in-process renders): {self_rss:.0f} MiB")
    if args.helm:
        example = HERE / "examples" / "homelab"
        bench_helm(example, args.repeat, args.jobs, args.helm_binary)


if __name__ == "__main__":
    main()
