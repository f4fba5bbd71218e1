"""A ref's whole render, remembered by its tree: the next diff's base needs no checkout, and
answers exactly what rendering the checkout answers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.cache import store as cache_mod
from harness.cli.commands import diff as diff_cmd
from harness.cli.context import Common
from harness.core import config as config_mod
from harness.core.model import HelmInfo, Snapshot
from harness.pipeline import gitref, refsnap
from harness.render import kustomize as render
from tests.conftest import configmap, kustomization
from tests.gitkit import commit_all, init


def _repo(root: Path, extra: dict[str, str] | None = None) -> Path:
    files = {
        "a/kustomization.yaml": kustomization("cm.yaml"),
        "a/cm.yaml": configmap("a", v="1"),
        "b/kustomization.yaml": kustomization("cm.yaml", "missing.yaml"),  # fails: an error
        "b/cm.yaml": configmap("b", v="1"),
        **(extra or {}),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit_all(root, "base")
    return root


def _view(run: diff_cmd.DiffRun) -> tuple[object, ...]:
    def side(s: Snapshot) -> dict[str, object]:
        return {n: (r.documents, r.error, r.notes, r.sha256) for n, r in s.results.items()}

    blank = Snapshot(renderer=run.analysis.base.renderer)
    rest = dataclasses.replace(run.analysis, base=blank, head=blank)
    return (run.code, run.verdict, side(run.analysis.base), side(run.analysis.head), rest)


def test_the_second_diff_reads_the_base_without_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(init(tmp_path / "git"))
    (root / "a/cm.yaml").write_text(configmap("a", v="2"))
    common = Common(repo=root, quiet=True, cache_dir=tmp_path / "cache")
    first = diff_cmd.compute(common, diff_cmd.DiffOptions())
    uncached = diff_cmd.compute(
        Common(repo=root, quiet=True, no_cache=True), diff_cmd.DiffOptions()
    )

    def no_checkout(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the remembered base needs no checkout")

    monkeypatch.setattr(gitref, "checkout_ahead", no_checkout)
    second = diff_cmd.compute(common, diff_cmd.DiffOptions())
    assert _view(second) == _view(first) == _view(uncached)
    assert second.analysis.base.label == first.analysis.base.label
    assert second.code == 0 and first.analysis.head.results["b"].error  # a pre-existing error


def _key(root: Path, cfg: config_mod.Config) -> refsnap.RefKey | None:
    sha = gitref.resolve(root, "HEAD")
    return refsnap.ref_key(cfg, root, Path("."), sha, renderer_identity="k", options={})


def test_only_a_render_that_is_a_function_of_the_tree_is_remembered(tmp_path: Path) -> None:
    root = _repo(init(tmp_path / "plain"))
    cfg = config_mod.load(root)
    assert _key(root, cfg) is not None
    outside = dataclasses.replace(cfg, sources={"GitRepository/x/y": "../elsewhere"})
    assert _key(root, outside) is None  # a mapped source outside the tree
    inside = dataclasses.replace(cfg, sources={"GitRepository/x/y": "a"})
    assert _key(root, inside) is not None and _key(root, inside) != _key(root, cfg)
    attrs = _repo(init(tmp_path / "attrs"), {"sub/.gitattributes": "*.yaml text eol=crlf\n"})
    assert _key(attrs, config_mod.load(attrs)) is None  # a checkout may differ from the tree
    usual = _repo(init(tmp_path / "usual"), {".gitattributes": "* text=auto eol=lf\n"})
    assert _key(usual, config_mod.load(usual)) is not None  # what homelab repos commit


def test_helm_targets_are_never_remembered(tmp_path: Path) -> None:
    root = _repo(init(tmp_path / "git"))
    cfg = config_mod.load(root)
    key = _key(root, cfg)
    assert key is not None
    cache = cache_mod.RenderCache(None)
    renderer = render.resolve()
    from harness.pipeline.repo import RenderOptions, render_repo

    snapshot = render_repo(cfg, renderer, RenderOptions(jobs=1))
    name = next(iter(snapshot.results))
    result = snapshot.results[name]
    helm = dataclasses.replace(result.target, kind="helm", helm=HelmInfo(chart="c"))
    with_helm = dataclasses.replace(
        snapshot, results={**snapshot.results, "x@helm": dataclasses.replace(result, target=helm)}
    )
    refsnap.remember(cache, key, with_helm, root, {})
    assert refsnap.load(cache, key, "HEAD") is None
    refsnap.remember(cache, key, snapshot, root, {"b": "digest"})
    loaded = refsnap.load(cache, key, "HEAD (label)")
    assert loaded is not None
    again, digests = loaded
    assert digests == {"b": "digest"} and again.label == "HEAD (label)"
    assert {n: (r.documents, r.error) for n, r in again.results.items()} == {
        n: (r.documents, r.error) for n, r in snapshot.results.items()
    }
