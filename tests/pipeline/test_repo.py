"""render_repo overlaps path targets with the Flux fixed point; the result is unchanged."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness.core import config as config_mod
from harness.core.model import TargetResult
from harness.flux.targets import render_flux
from harness.pipeline.repo import RenderOptions, render_repo
from harness.render import discover
from harness.render import kustomize as render
from harness.render import seam as incremental
from tests.conftest import EXAMPLE
from tests.flux.conftest import cm, docs, flux_ks, ks_file
from tests.flux.test_targets import two_clusters

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


def test_a_path_target_named_exactly_renders_alone(make_repo: Repo) -> None:
    """`render apps`: that build and nothing else (no Flux fixed point, no other path), so
    `render --no-cache DIR` costs one kustomize run; a glob still renders every Flux target,
    since it may name one of them."""
    cfg = config_mod.load(make_repo({**two_clusters(), "harness.yaml": "goldens: goldens\n"}))
    renderer = render.resolve(flags=FLAGS)
    snapshot = render_repo(cfg, renderer, RenderOptions(jobs=2, selection=("apps",)))
    assert sorted(snapshot.results) == ["apps"]
    assert renderer.runs == 1
    globbed = render_repo(cfg, render.resolve(flags=FLAGS), RenderOptions(selection=("*apps",)))
    assert sorted(globbed.results) == ["apps", "dev/flux-system/apps", "prod/flux-system/apps"]


# -- Flux builds reuse restricted path builds when the configured flags restrict loads ----


def _restricted_repo(make_repo: Repo) -> Path:
    """kubectl_flags [] (loads restricted to the root, kustomize's default). `apps` builds
    the same under both restrictors; `outside` reads a file above its root, so its path
    target fails where Flux (LoadRestrictionsNone) succeeds; `apps-ns` adds a namespace
    (a generated kustomization: its own run); `ignored` reads a file .sourceignore drops."""
    files = {
        **two_clusters(),
        "harness.yaml": "goldens: goldens\nkubectl_flags: []\n",
        "clusters/base/kustomization.yaml": ks_file("vars.yaml", "apps.yaml", "more.yaml"),
        "clusters/base/more.yaml": docs(
            flux_ks("outside", "./outside"),
            flux_ks("apps-ns", "./apps", targetNamespace="other"),
            flux_ks("ignored", "./ignored"),
        ),
        "shared/extra.yaml": cm("extra", "web", k="v"),
        "outside/kustomization.yaml": ks_file("../shared/extra.yaml"),
        "ignored/kustomization.yaml": ks_file("cm.yaml"),
        "ignored/cm.yaml": cm("ignored", "web"),
        ".sourceignore": "ignored/cm.yaml\n",
    }
    return make_repo(files)


def _flux_only(results: dict[str, TargetResult]) -> dict[str, tuple[str | None, str]]:
    return {n: v for n, v in _texts(results).items() if results[n].target.kind == "flux"}


def test_flux_reuses_a_restricted_path_build_byte_for_byte(make_repo: Repo) -> None:
    cfg = config_mod.load(_restricted_repo(make_repo))
    assert cfg.kubectl_flags == ()
    alone = render.resolve(flags=cfg.kubectl_flags)
    expected = render_flux(cfg, alone, jobs=2, strict=cfg.strict)  # no path builds to reuse
    renderer = render.resolve(flags=cfg.kubectl_flags)
    snapshot = render_repo(cfg, renderer, RenderOptions(jobs=2))
    assert _flux_only(snapshot.results) == _texts(expected)

    results = snapshot.results
    paths = [n for n, r in results.items() if r.target.kind == "path"]
    # Flux alone builds clusters/dev, clusters/prod, apps, outside and the apps-ns mirror;
    # beside the path targets only the last two run again: the rest reuse the path runs
    assert alone.runs == 5 and len(paths) == 6
    assert renderer.runs == len(paths) + 2
    assert results["apps"].ok and results["dev/flux-system/apps"].ok
    assert results["outside"].error is not None
    assert "security" in results["outside"].error or "outside" in results["outside"].error
    assert results["dev/flux-system/outside"].ok, "Flux builds unrestricted, so it renders"
    assert "namespace: other" in results["dev/flux-system/apps-ns"].text()
    assert "namespace: other" not in results["apps"].text()
    assert results["ignored"].ok
    assert "excluded from the source artifact" in (results["dev/flux-system/ignored"].error or "")


def test_unrestricted_build_reuses_only_a_successful_restricted_one(
    tmp_path: Path, make_repo: Repo
) -> None:
    repo = make_repo(
        {
            "inside/kustomization.yaml": ks_file("cm.yaml"),
            "inside/cm.yaml": cm("inside"),
            "shared/extra.yaml": cm("extra"),
            "outside/kustomization.yaml": ks_file("../shared/extra.yaml"),
        }
    )
    fresh = render.resolve()
    renderer = render.resolve()
    assert renderer.build(repo / "inside").error is None
    assert renderer.build(repo / "outside").error is not None
    assert renderer.runs == 2
    for name in ("inside", "outside"):
        reused = renderer.build(repo / name, render.UNRESTRICTED)
        assert reused == fresh.build(repo / name, render.UNRESTRICTED)
        assert reused.error is None
    assert renderer.runs == 3, "inside reused its restricted build; outside ran unrestricted"


def test_expected_path_build_runs_first_for_an_unrestricted_ask(make_repo: Repo) -> None:
    repo = make_repo({"app/kustomization.yaml": ks_file("cm.yaml"), "app/cm.yaml": cm("a")})
    renderer = render.resolve()
    renderer.expect([repo / "app"])
    flux_side = renderer.build(repo / "app", render.UNRESTRICTED)
    path_side = renderer.build(repo / "app")
    assert flux_side == path_side and flux_side.error is None
    assert renderer.runs == 1


def test_flux_reuse_on_the_example_is_byte_identical() -> None:
    cfg = replace(config_mod.load(EXAMPLE), kubectl_flags=())
    alone = render.resolve(flags=())
    expected = render_flux(cfg, alone, jobs=2, strict=cfg.strict)
    renderer = render.resolve(flags=())
    snapshot = render_repo(cfg, renderer, RenderOptions(jobs=2))
    assert _flux_only(snapshot.results) == _texts(expected)
    paths = sum(1 for r in snapshot.results.values() if r.target.kind == "path")
    assert renderer.runs < paths + alone.runs, "in-place flux builds reused path runs"


def test_a_fresh_cache_starts_the_first_builds_beside_the_version_check(
    tmp_path: Path, make_repo: Repo, kubectl: Path
) -> None:
    """Every cache key holds kubectl's version, so a cold render's first probe waited for
    `kubectl version` before any build started; with a cache that holds nothing the first
    builds start beside it. A target whose closure leaves the repo is still never built,
    a warm run still builds nothing (a script renderer is asked its version every run), and
    the render is the one an uncached run gives."""
    from harness.cache.store import RenderCache, Store

    log = tmp_path / "runs.log"
    wrapper = tmp_path / "kubectl"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = version ]; then echo V0 >> {log}; sleep 0.5; echo V1 >> {log}\n'
        f'else echo "B $*" >> {log}; fi\n'
        f'exec "{kubectl}" "$@"\n'
    )
    wrapper.chmod(0o755)
    (tmp_path / "outside.yaml").write_text(cm("outside", "default"))
    names = [f"app{i}" for i in range(4)]
    repo = make_repo(
        {
            "aaa/kustomization.yaml": "resources:\n- ../../outside.yaml\n",  # escapes the repo
            **{f"{n}/kustomization.yaml": "resources:\n- cm.yaml\n" for n in names},
            **{f"{n}/cm.yaml": cm(n, "default", k=n) for n in names},
        }
    )
    cfg = config_mod.load(repo)
    uncached = render_repo(cfg, render.resolve(kubectl=str(wrapper)), RenderOptions(jobs=2))
    store = tmp_path / "cache"
    for warm in (False, True):
        log.write_text("")
        renderer = render.resolve(kubectl=str(wrapper))
        options = RenderOptions(jobs=2, cache=RenderCache(Store(store)))
        snapshot = render_repo(cfg, renderer, options)
        assert _texts(snapshot.results) == _texts(uncached.results)
        assert snapshot.results["aaa"].error  # the closure's escape, as uncached
        lines = log.read_text().splitlines()
        assert not any("aaa" in line for line in lines)  # never built, not even ahead
        builds = [i for i, line in enumerate(lines) if line.startswith("B ")]
        if warm:
            assert builds == [] and renderer.runs == 0
            continue
        assert renderer.runs == len(names) == len(builds)  # none twice, none wasted
        assert lines.index("V0") < builds[0] < lines.index("V1")  # overlapped
