"""engine: rules run together, suppressions need a reason and match by rule/id/target, gates."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.core.config import Suppression
from harness.core.errors import ConfigError, HarnessError
from harness.core.model import Snapshot
from harness.core.run import Run
from harness.hazards import engine, introduced
from harness.hazards.finding import Finding, and_list, at_least
from tests import synthtree
from tests.conftest import EXAMPLE, Result
from tests.hazards.snap import cm, flux, ks, snapshot

ROOT = "flux-system"


def _dup() -> Any:
    return snapshot(
        flux("dev", ROOT, ks("a", depends=[ROOT]), ks("b", depends=[ROOT]), ks("c", depends=["x"])),
        flux("dev", "a", cm("shared", "x")),
        flux("dev", "b", cm("shared", "x")),
    )


def test_lint_sorts_by_severity_and_counts_the_gate() -> None:
    report = engine.lint(_dup())
    assert [f.id for f in report.findings] == [
        "depends-on:dev:c:missing:x",
        "duplicate-owner:dev:ConfigMap/x/shared",
    ]
    assert [g.line for g in report.gates] == ["substitution gate: 0 assertions, 0 hazards"]
    assert report.counts() == {"error": 1, "warning": 1, "info": 0}


@pytest.mark.parametrize(
    "rule",
    [
        Suppression(rule="duplicate-owner", reason="r"),
        Suppression(rule="", id="duplicate-owner:dev:*", reason="r"),
        Suppression(rule="duplicate-owner", target="dev/a", reason="r"),
        Suppression(rule="", id="duplicate-owner:*", target="ConfigMap/x/*", reason="r"),
    ],
)
def test_suppression_matches(rule: Suppression) -> None:
    report = engine.lint(_dup(), suppressions=[rule])
    assert [f.rule for f in report.findings] == ["depends-on"]
    (s,) = report.suppressed
    assert s.finding.rule == "duplicate-owner" and s.reason == "r"


def test_suppression_that_does_not_match() -> None:
    report = engine.lint(
        _dup(), suppressions=[Suppression(rule="duplicate-owner", target="prod", reason="r")]
    )
    assert len(report.findings) == 2 and report.suppressed == ()


def test_diff_reports_diff_rules_and_only_new_lint_findings() -> None:
    base = _dup()  # already has the duplicate ConfigMap/x/shared
    head = snapshot(
        *base.results.values(),
        flux("dev", "b", cm("shared", "x"), cm("dup", "y")),
        flux("dev", "c", cm("dup", "y")),
    )
    report = engine.diff(base, head)
    assert [f.id for f in report.findings] == ["duplicate-owner:dev:ConfigMap/y/dup"]
    head = snapshot(*list(base.results.values())[:2])  # b stops rendering the shared one
    moved = engine.diff(base, head)
    assert [f.id for f in moved.findings] == ["ownership-race:dev:b:a:ConfigMap/x/shared"]


def test_a_crashing_rule_is_one_clear_error() -> None:
    class Broken:
        id = "broken"
        summary = "always fails"

        def check_snapshot(self, ctx: Any) -> list[Finding]:
            raise KeyError("oops")

        def check_diff(self, ctx: Any) -> list[Finding]:
            return []

    with pytest.raises(HarnessError, match="hazard rule broken failed: KeyError"):
        engine.lint(_dup(), rules=[Broken()])


def test_severity_helpers() -> None:
    assert at_least("error", "warning") and not at_least("info", "warning")
    assert and_list(["a", "b", "c"]) == "a, b and c"
    assert and_list(["a", "b", "c"], 1) == "a and 2 more"


def test_unknown_rule_in_a_suppression_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown rule 'duplicate-owners'"):
        engine.lint(_dup(), suppressions=[Suppression(rule="duplicate-owners", reason="r")])


def _full_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "same_render", lambda base, head: False)


def _moved(snap: Snapshot) -> Snapshot:
    """The same render with every target's path elsewhere (goldens record no path)."""
    results = {
        n: dataclasses.replace(
            r, target=dataclasses.replace(r.target, path=Path("/elsewhere") / n, helm=None)
        )
        for n, r in snap.results.items()
    }
    return dataclasses.replace(snap, results=results, label="other side")


def test_equal_renders_skip_the_lint_passes_with_the_full_paths_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The short-circuit of a no-change diff reports exactly what running every rule does."""
    base = _dup()
    dup_head = snapshot(*base.results.values(), flux("dev", "c", cm("dup", "y")))
    for before, after in ((base, _moved(base)), (dup_head, _moved(dup_head))):
        assert engine.same_render(before, after)
        fast = engine.diff(before, after)
        with monkeypatch.context() as m:
            _full_path(m)
            assert engine.diff(before, after) == fast
        assert engine.lint(after).findings  # the full path had lint findings to compare
    assert not engine.same_render(base, dup_head)


def test_a_no_change_check_of_the_example_takes_it_and_prints_the_same(
    monkeypatch: pytest.MonkeyPatch, cli: Callable[..., Result]
) -> None:
    """`check` compares the goldens with the working tree: the short-circuit applies, and
    every output format prints what the full path prints."""
    seen: list[bool] = []
    real = engine.same_render

    def spy(base: Snapshot, head: Snapshot) -> bool:
        seen.append(real(base, head))
        return seen[-1]

    monkeypatch.setattr(engine, "same_render", spy)
    fast = [cli("check", "--repo", EXAMPLE, "-o", o) for o in ("json", "text", "github")]
    assert seen == [True] * 3 and fast[0].code == 0
    _full_path(monkeypatch)
    full = [cli("check", "--repo", EXAMPLE, "-o", o) for o in ("json", "text", "github")]
    assert [(r.code, _timeless(r.stdout)) for r in full] == [
        (r.code, _timeless(r.stdout)) for r in fast
    ]


def _timeless(text: str) -> str:
    return re.sub(r"\d+(\.\d+)?\s?(s|ms)\b", "<t>", text)


def test_cluster_rules_rerun_only_for_changed_clusters_with_the_full_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A diff runs the cluster-local rules (crd-order, depends-on, duplicate-owner) only for
    the clusters whose render changed, and reports exactly what running them everywhere
    reports; also with a base memo (watch) and when a rename turns the scoping off."""
    from tests.hazards.snap import helmrelease, obj

    issuer = obj("ClusterIssuer", "ca", api="cert-manager.io/v1")

    def cluster(name: str, extra: str = "") -> list[Any]:
        return [
            flux(name, "flux-system", ks("platform"), ks("config")),
            flux(name, "platform", helmrelease("cert-manager", "cert-manager")),
            flux(name, "config", issuer, cm("dup", "y"), cm(f"v{extra}", "y")),
            flux(name, "other", cm("dup", "y")),
        ]

    base = snapshot(*cluster("dev"), *cluster("prod"))
    heads = [
        snapshot(*cluster("dev", "2"), *cluster("prod")),  # dev changes
        snapshot(*cluster("dev", "2"), flux("prod", "flux-system", ks("platform"))),
        snapshot(*cluster("dev"), *cluster("prod"), flux("dev", "new", cm("v", "y"))),
    ]
    assert engine.changed_clusters(base, heads[0]) == {"dev"}
    for head in heads:  # by the targets' digests, as `diff` asks, the same clusters
        digests = (engine.Digests(base), engine.Digests(head))
        assert engine.changed_clusters(base, head, digests) == engine.changed_clusters(base, head)
    memo: engine.BaseMemo = {}
    for head in heads:
        scoped = engine.diff(base, head)
        with_memo = engine.diff(base, head, base_memo=memo)
        with monkeypatch.context() as m:
            m.setattr(engine, "changed_clusters", lambda *_a: {"dev", "prod"})
            everywhere = engine.diff(base, head)
        assert scoped == with_memo == everywhere
    assert any(f.rule == "duplicate-owner" for f in engine.diff(base, heads[2]).findings)


# -- the findings memo: lint findings kept by their inputs across runs ----------------------


def _synthetic_render(root: Path, cache_dir: Path) -> Snapshot:
    from harness.cache import store as cache_mod
    from harness.core import config as config_mod
    from harness.pipeline.repo import RenderOptions, render_repo
    from harness.render import kustomize as render

    cfg = config_mod.load(root)
    renderer = render.resolve(flags=cfg.kubectl_flags, timeout=cfg.timeout)
    cache = cache_mod.open_cache(cache_mod.Settings(enabled=True, directory=cache_dir))
    try:
        return render_repo(cfg, renderer, RenderOptions(jobs=2, cache=cache))
    finally:
        if cache is not None:
            cache.close()


@settings(
    max_examples=int(os.environ.get("HARNESS_PROPERTY_EXAMPLES", "2")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.tuples(st.sampled_from(synthtree.OPS), st.integers(0, 50)), max_size=4))
@pytest.mark.slow
def test_memoized_findings_are_the_full_runs(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, int]]
) -> None:
    """Diffs of one base against heads after random saves: with the memo (cold, then warm
    from an earlier diff's entries) the report is the one without it."""
    from harness.cache import store as cache_mod
    from harness.core import config as config_mod

    root = tmp_path_factory.mktemp("synth") / "repo"
    for rel, text in synthtree.tree().items():
        synthtree.write(root, rel, text)
    cache_dir = tmp_path_factory.mktemp("cache")
    cfg = config_mod.load(root)
    base = _synthetic_render(root, cache_dir)
    done: list[str] = []
    watch = Run()
    base_memo: engine.BaseMemo = {}
    for op, seed in [*edits, ("spec", 1), ("vars", 2)]:
        done.append(synthtree.edit(root, op, seed))
        head = _synthetic_render(root, cache_dir)
        full = engine.diff_for(cfg, base, head, root)
        for _ in range(2):  # the first fills the memo, the second reads it
            cache = cache_mod.open_cache(cache_mod.Settings(enabled=True, directory=cache_dir))
            memo = engine.FindingsMemo(cache)
            try:
                assert engine.diff_for(cfg, base, head, root, memo=memo) == full, done
            finally:
                assert cache is not None
                cache.close()
        assert memo.misses == 0 and memo.computed_facts == 0, done
        with watch.entered():  # `harness watch`: one run, a base memo, facts in memory
            kept = engine.diff_for(cfg, base, head, root, base_memo)
            assert kept == full, done


def test_memo_settings_read_the_same_in_every_process() -> None:
    """A set's repr follows string hashing, which differs per process: the memo's key
    sorts it, so a fresh `harness diff` finds what the previous one kept."""
    from harness.hazards.preinstalled import Provision

    p = Provision("bootstrap manifest", "b.yaml", "how", namespaces=frozenset({"b", "a", "c"}))
    assert engine.canonical(({"y": 1, "x": {2, 1}}, [p])) == (
        "({'x': {1, 2}, 'y': 1}, [Provision(source='bootstrap manifest', file='b.yaml', "
        "how='how', crds={}, release=None, names={}, namespaces={'a', 'b', 'c'}, "
        "clusters=None, apis={})])"
    )


def test_a_malformed_memo_entry_is_computed_again(tmp_path: Path) -> None:
    from harness.cache import store as cache_mod

    cache = cache_mod.open_cache(cache_mod.Settings(enabled=True, directory=tmp_path))
    assert cache is not None
    memo = engine.FindingsMemo(cache)
    cache.put("a" * 64, {"findings": [["id", "rule", "fatal", None, [], [], "m", ""]]})
    cache.put("b" * 64, {"findings": "none"})
    assert memo._get("a" * 64) is None
    assert memo._get("b" * 64) is None
    f = Finding("x/1", "crd-order", "error", "dev", ("a",), ("Kind/b",), "msg", "cause")
    memo._put("c" * 64, [f])
    assert memo._get("c" * 64) == [f]
    assert (memo.hits, memo.misses) == (1, 2)
    cache.close()


def test_what_the_preinstalled_scan_learnt_of_files_outlives_the_process(tmp_path: Path) -> None:
    """A diff keeps the scan's facts about the repo's files (whether each names Talos
    manifests, by its stat) beside the render's, so the next process reads no file for it."""
    from harness.cache import store as cache_mod
    from harness.core.filefacts import FileFacts
    from harness.pipeline.repo import _facts_of

    repo = tmp_path / "repo"
    (repo / "apps").mkdir(parents=True)
    (repo / "apps" / "a.yaml").write_text("a: 1\n")
    old = 1_000_000_000
    os.utime(repo / "apps" / "a.yaml", (old, old))
    base = snapshot(flux("dev", "flux-system", ks("a")))
    head = snapshot(flux("dev", "flux-system", ks("a"), cm("c", "x")))
    settings_ = cache_mod.Settings(enabled=True, directory=tmp_path / "cache")
    with Run(files=FileFacts()).entered():
        cache = cache_mod.open_cache(settings_)
        engine.diff(base, head, head_repo=repo, memo=engine.FindingsMemo(cache))
    later = FileFacts()  # the next process
    _facts_of(repo, cache_mod.open_cache(settings_), later)
    assert later.get(str((repo / "apps" / "a.yaml").resolve()), "talos-manifests")[1] == "0"


# -- rules left out of a head by their views (engine.same_views) ----------------------------

_WORLD_EDITS = (
    "image",
    "annotate",
    "typo",
    "crd",
    "widget",
    "decrypt",
    "depends",
    "namespace",
    "skipcrds",
    "variable",
    "escape",
    "setting",
)


def _world(state: frozenset[tuple[str, str]]) -> Snapshot:
    """Two clusters of the shape a homelab has (a CRD Kustomization, an apps one with a
    Deployment, a HelmRelease and a custom resource, shared path targets declaring and
    using a Namespace), each edit of `_WORLD_EDITS` toggled per cluster by `state`."""
    from tests.hazards.snap import crd, helmrelease, ns, obj, path

    def on(edit: str, cluster: str) -> bool:
        return (edit, cluster) in state

    results: list[Any] = []
    for c in ("dev", "prod"):
        containers = [{"name": "web", "image": f"web:{2 if on('image', c) else 1}"}]
        spec: dict[str, Any] = {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers},
            },
        }
        if on("typo", c):
            spec["replicass"] = 2
        release = helmrelease("cache", "apps", values={"tag": "1"})
        if on("annotate", c):
            release["metadata"]["annotations"] = {"bench/n": "1"}
        if on("depends", c):
            release["spec"]["dependsOn"] = [{"name": "other"}]
        if on("skipcrds", c):
            release["spec"]["install"] = {"crds": "Skip"}
        notes = {}
        if on("variable", c):
            notes["team"] = "${TEAM}"
        if on("escape", c):
            notes["run"] = "echo $${HOME}"
        deployment = obj("Deployment", "web", "apps", api="apps/v1", annotations=notes, spec=spec)
        decryption = {"decryption": {"provider": "sops"}} if on("decrypt", c) else {}
        if c == "prod":  # prod's apps substitute (dev's ship `${...}` as it is)
            decryption["substitute"] = {"CLUSTER": c}
        results += [
            # dev's apps do not wait for their CRDs: a crd-order finding to keep or lose
            flux(c, ROOT, ks("crds"), ks("apps", depends=["crds"][: c == "prod"], **decryption)),
            flux(c, "crds", crd("example.com", "Gadget" if on("crd", c) else "Widget", "widgets")),
            flux(
                c,
                "apps",
                deployment,
                release,
                cm("settings", "apps", level="debug" if on("setting", c) else "info"),
                obj("Widget", "w", "apps", api="example.com/v1", spec={"size": 1}),
                *([obj("Widget", "x", "apps", api="example.com/v1")] if on("widget", c) else []),
            ),
        ]
    used = [cm("settings", "team", level="info")]
    if ("namespace", "dev") in state:
        used.append(cm("more", "other", level="info"))
    results += [path("base/team", ns("team"), cm("a", "team")), path("base/use", *used)]
    return snapshot(*results)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.sampled_from(_WORLD_EDITS), st.sampled_from(("dev", "prod"))),
        min_size=1,
        max_size=5,
    )
)
def test_rules_left_out_by_their_views_find_what_running_them_finds(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, str]]
) -> None:
    """Random saves, each a head diffed against one base: the incremental paths (the
    findings memo, cold for each head's side, and a watch's base memo), which leave out
    the rules whose views of the changed targets are equal, report what running every
    rule reports."""
    from harness.cache import store as cache_mod

    base = _world(frozenset())
    cache = cache_mod.open_cache(
        cache_mod.Settings(enabled=True, directory=tmp_path_factory.mktemp("memo"))
    )
    assert cache is not None
    state: set[tuple[str, str]] = set()
    watch: engine.BaseMemo = {}
    try:
        for edit in edits:
            state ^= {edit}
            head = _world(frozenset(state))
            full = engine.diff(base, head)
            digests = (engine.Digests(base), engine.Digests(head))
            if engine.same_identities(base, head, digests):  # renames' shortcut
                assert introduced.renames(base, head) == introduced.Renames()
            memo = engine.FindingsMemo(cache)
            assert engine.diff(base, head, memo=memo) == full, (edits, state)
            if state and all(e in ("image", "annotate") for e, _c in state):
                # the rules reading nothing of it did not run (or were kept from before)
                assert memo.same_views > 0 or memo.misses == 0
            assert engine.diff(base, head, base_memo=watch) == full, (edits, state)
    finally:
        cache.close()


def test_a_view_names_the_rules_an_edit_leaves_alone() -> None:
    """An image tag or an annotation reads the same to api-reject (the same verdicts), to
    crd-order (the same CRDs and releases), to sole-namespace-declarer (the same
    identities) and to substitution (the same `${...}`); a typo the API server refuses, a
    release that skips its CRDs, a new `${...}` or `$${...}`, a ConfigMap's value, a CRD
    of another kind or a changed Kustomization does not."""
    base = _world(frozenset())

    def same(*edit: tuple[str, str]) -> set[str]:
        head = _world(frozenset(edit))
        ctx = engine.LintContext(head)
        return engine.same_views(
            engine.RULES, base, head, (engine.Digests(base), engine.Digests(head)), ctx
        )

    four = {"api-reject", "crd-order", "sole-namespace-declarer", "substitution"}
    assert same(("image", "dev")) == four
    assert same(("annotate", "prod"), ("image", "dev")) == four
    assert same(("typo", "dev")) == four - {"api-reject"}
    assert same(("skipcrds", "dev")) == four - {"crd-order"}
    assert same(("variable", "prod")) == four - {"substitution"}
    assert same(("escape", "dev")) == four - {"substitution"}
    assert same(("setting", "dev")) == four - {"substitution"}
    assert same(("crd", "dev")) == {"sole-namespace-declarer", "substitution"}
    assert same(("widget", "dev")) == set()  # a new identity
    assert same(("decrypt", "dev")) == set()  # a Kustomization's bytes
    assert same(("depends", "dev")) == set()  # what the graph takes of a HelmRelease
    assert same(("namespace", "dev")) == set()
    for edit, alike in [(("image", "dev"), True), (("widget", "dev"), False)]:
        head = _world(frozenset([edit]))
        digests = (engine.Digests(base), engine.Digests(head))
        assert engine.same_identities(base, head, digests) is alike
