"""render_repo overlaps path targets with the Flux fixed point; the result is unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness import config as config_mod
from harness import discover, incremental, render
from harness.flux.targets import render_flux
from harness.model import TargetResult
from harness.pipeline import RenderOptions, render_repo

from .conftest import EXAMPLE
from .flux.test_targets import two_clusters

Repo = Callable[[dict[str, str | bytes]], Path]
FLAGS = ("--load-restrictor", "LoadRestrictionsNone")


def _one_after_the_other(cfg: config_mod.Config) -> tuple[dict[str, TargetResult], int]:
    """What render_repo did before it overlapped the stages: paths, then Flux."""
    renderer = render.resolve(flags=cfg.kubectl_flags)
    seam = incremental.Seam.for_run(renderer, None)
    results = incremental.render_paths(seam, discover.path_targets(cfg), cfg.repo, 2)
    results.update(render_flux(cfg, renderer, jobs=2, strict=cfg.strict, seam=seam))
    return dict(sorted(results.items())), renderer.runs


def _texts(results: dict[str, TargetResult]) -> dict[str, tuple[str | None, str]]:
    return {n: (r.error, r.text()) for n, r in results.items()}


def test_overlapped_render_equals_sequential_on_the_example() -> None:
    cfg = config_mod.load(EXAMPLE)
    expected, runs = _one_after_the_other(cfg)
    for jobs in (1, 2, 4):
        renderer = render.resolve(flags=cfg.kubectl_flags)
        snapshot = render_repo(cfg, renderer, RenderOptions(jobs=jobs))
        assert _texts(snapshot.results) == _texts(expected), jobs
        assert renderer.runs == runs, "a build both stages want still runs once"
        assert renderer._slots is None


def test_overlapped_render_equals_sequential_with_errors(make_repo: Repo) -> None:
    files = {
        **two_clusters(),
        "broken/kustomization.yaml": "resources: [missing.yaml]\n",
        "harness.yaml": "goldens: goldens\n",
    }
    cfg = config_mod.load(make_repo(files))
    expected, _ = _one_after_the_other(cfg)
    snapshot = render_repo(cfg, render.resolve(flags=FLAGS), RenderOptions(jobs=2))
    assert _texts(snapshot.results) == _texts(expected)
    assert snapshot.results["broken"].error is not None


def test_progress_hears_of_every_target_once(make_repo: Repo) -> None:
    cfg = config_mod.load(make_repo({**two_clusters(), "harness.yaml": "goldens: goldens\n"}))
    planned: list[int] = []
    done: list[str] = []
    snapshot = render_repo(
        cfg,
        render.resolve(flags=FLAGS),
        RenderOptions(jobs=2),
        on_plan=planned.append,
        on_done=lambda r: done.append(r.name),
    )
    assert sum(planned) == len(snapshot.results)
    assert sorted(done) == sorted(snapshot.results)

