"""A ref's whole render, remembered by its tree: the next diff's base needs no checkout, and
answers exactly what rendering the checkout answers."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cache import store as cache_mod
from harness.cli.commands import diff as diff_cmd
from harness.cli.context import Common
from harness.core import config as config_mod
from harness.core import documents, parsed
from harness.core.model import (
    DocId,
    Document,
    HelmInfo,
    RendererInfo,
    Snapshot,
    Target,
    TargetResult,
)
from harness.core.run import Run
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


# -- the entry: a packed value (cache/fileformat.py), documents stored once ------------------


def _doc(kind: str, name: str, text: str) -> Document:
    return Document(DocId("", kind, "ns", name), "v1", text, documents.sha256_text(text))


def _snapshot(root: Path) -> Snapshot:
    """Every field a stored render keeps: a document shared by a path target and a Flux
    build, text JSON cannot give back as an equal object (a timestamp), non-ASCII and
    newline-heavy text, an error, notes, duplicates, a skipped target."""
    shared = _doc("ConfigMap", "shared", "apiVersion: v1\nkind: ConfigMap\ndata:\n  k: é ☃\n")
    stamped = _doc(
        "ConfigMap", "when", "apiVersion: v1\nkind: ConfigMap\ndata:\n  at: 2024-01-01\n"
    )
    quoted = _doc("Secret", "s", 'apiVersion: v1\nkind: Secret\ndata:\n  x: "a\\"b"\n')
    path = Target("apps/a", "path", root / "apps/a")
    flux = Target("flux-system/a", "flux", root / "apps/a", "main")
    broken = Target("apps/b", "path", root / "apps/b")
    top = Target(".", "path", root)
    dup = DocId("apps", "Deployment", "ns", "web")
    results = [
        TargetResult(path, (shared, stamped), "1" * 64, duplicates=(dup, dup)),
        TargetResult(flux, (shared, quoted), "2" * 64, notes=("a note", "another")),
        TargetResult(broken, (), "", error="kustomize: missing.yaml: no such file"),
        TargetResult(top, (), "3" * 64),
    ]
    return Snapshot(
        renderer=RendererInfo("kubectl", "v1.31.0", ("kubectl", "kustomize")),
        results={r.target.name: r for r in results},
        label="HEAD",
        skipped={"flux-system/x": "source GitRepository/x/y is external"},
    )


def _stored(tmp_path: Path) -> tuple[cache_mod.Store, refsnap.RefKey]:
    return cache_mod.Store(tmp_path / "cache"), refsnap.RefKey("ab" * 32, "0" * 40, tmp_path)


def test_a_remembered_render_reads_back_equal(tmp_path: Path) -> None:
    store, key = _stored(tmp_path)
    snapshot = _snapshot(tmp_path)
    with Run().entered():
        refsnap.remember(cache_mod.RenderCache(store), key, snapshot, tmp_path, {"apps/b": "d"})
    with Run().entered():  # a fresh process: nothing of the first run's in memory
        loaded = refsnap.load(cache_mod.RenderCache(store), key, "HEAD")
        assert loaded is not None
        again, digests = loaded
        assert again == snapshot and digests == {"apps/b": "d"}
        for name, result in again.results.items():
            assert [(d.text, d.sha256) for d in result.documents] == [
                (d.text, documents.sha256_text(d.text)) for d in snapshot.results[name].documents
            ]
        a, b = again.results["apps/a"], again.results["flux-system/a"]
        assert a.documents[0] is b.documents[0]  # stored and made once
        assert parsed.load(a.documents[1].text) == {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": {"at": datetime.date(2024, 1, 1)},
        }  # no JSON for it: parsed from its text
    packed = store.get_packed(key.digest)
    assert packed is not None
    assert len(packed[0]["snapshot"]["documents"]) == 3  # four uses, three documents
    assert len(packed[1]) == 5  # their texts, and two objects as JSON (not the timestamp's)


def _payload(tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
    made = refsnap.snapshot_payload(_snapshot(tmp_path), tmp_path)
    assert made is not None
    return made


def _set(path: tuple[object, ...], value: object) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        at: Any = body
        for step in path[:-1]:
            at = at[step]
        at[path[-1]] = value

    return change


@pytest.mark.parametrize(
    "change",
    [
        _set(("renderer",), ["kubectl", "v1"]),
        _set(("renderer", 2), "kubectl"),
        _set(("documents", 0, 0), None),  # a group that is no string
        _set(("documents", 0, 5), 7),  # a sha256 that is no string
        _set(("documents", 0, 6), 99),  # a text past the strings
        _set(("documents", 0, 6), -1),
        _set(("documents", 0, 7), "0"),
        _set(("documents", 0), ["", "ConfigMap"]),
        _set(("results", 0, 1), "chart"),  # a kind harness has not
        _set(("results", 0, 3), 1),  # a cluster that is no string
        _set(("results", 0, 5), ["error"]),
        _set(("results", 0, 6), ["apps", "Deployment", "ns"]),  # not whole DocIds
        _set(("results", 0, 7), [1]),
        _set(("results", 0, 8), [0, 9]),  # a document that is not there
        _set(("results", 0, 8), [-1]),
        _set(("results", 0, 8), [True]),
        _set(("results", 0), {"name": "apps/a"}),  # the first layout's dict (KIND v1)
        _set(("skipped",), {"x": 1}),
        _set(("extra",), 1),
    ],
)
def test_a_stored_render_of_another_shape_is_a_miss(
    tmp_path: Path, change: Callable[[dict[str, Any]], None]
) -> None:
    """Checksummed, so as written, but not by this harness: a miss, never a crash."""
    body, strings = _payload(tmp_path)
    change(body)
    store, key = _stored(tmp_path)
    store.put_packed(key.digest, {"snapshot": body, "digests": {}}, strings)
    with Run().entered():
        assert refsnap.load(cache_mod.RenderCache(store), key, "HEAD") is None


def test_a_json_entry_of_the_first_format_is_a_miss(tmp_path: Path) -> None:
    store, key = _stored(tmp_path)
    body, _strings = _payload(tmp_path)
    store.put(key.digest, {"snapshot": body, "digests": {}})
    cache = cache_mod.RenderCache(store)
    assert not refsnap.known(cache, key)
    assert refsnap.load(cache, key, "HEAD") is None
    assert refsnap.KIND == "ref-snapshot-v2"  # keys apart from the first layout's entries
