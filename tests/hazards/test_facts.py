"""facts: per-target facts kept by content; a diff's sides read each other's, and the findings
are those of a run that derives everything again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cache import store as cache_mod
from harness.core.run import Run
from harness.hazards import engine
from harness.hazards.facts import Facts, content_key, fact
from tests.hazards.snap import cm, flux, helmrelease, ks, path, snapshot

ROOT = "flux-system"


def _cache(directory: Path) -> cache_mod.RenderCache:
    cache = cache_mod.open_cache(cache_mod.Settings(enabled=True, directory=directory))
    assert cache is not None
    return cache


def test_a_fact_is_computed_once_and_a_seeded_side_reads_it(tmp_path: Path) -> None:
    calls: list[str] = []

    def compute(value: str) -> Any:
        calls.append(value)
        return [value, 1]

    cache = _cache(tmp_path)
    base = Facts(cache, "base")
    assert base.get("k", "a", lambda: compute("a")) == ["a", 1]
    assert base.get("k", "a", lambda: compute("again")) == ["a", 1]
    base.save()
    head = Facts(_cache(tmp_path), "head", ("base",))  # a fresh process: no run memo
    assert head.get("k", "a", lambda: compute("never")) == ["a", 1]
    assert head.get("k", "b", lambda: compute("b")) == ["b", 1]
    assert calls == ["a", "b"] and (head.computed, head.reused) == (1, 1)
    head.save()
    later = Facts(_cache(tmp_path), "head")  # its own table holds both
    assert later.get("k", "b", lambda: compute("x")) == ["b", 1] and later.computed == 0
    cache.close()


def test_a_seed_without_a_table_gets_the_sides_facts(tmp_path: Path) -> None:
    """A base whose findings came from the findings memo computed no facts: the head's
    table is written under the base's name too, so the next head against it finds them."""
    head = Facts(_cache(tmp_path), "head1", ("base",))
    head.get("k", "a", lambda: 1)
    head.save()
    again = Facts(_cache(tmp_path), "head2", ("base",))
    assert again.get("k", "a", lambda: 2) == 1


def test_a_head_keeps_no_table_of_its_own_when_its_base_has_one(tmp_path: Path) -> None:
    base = Facts(_cache(tmp_path), "base")
    base.get("k", "a", lambda: 1)
    base.save()
    head = Facts(_cache(tmp_path), "head", ("base",), keep_own=False)
    assert head.get("k", "a", lambda: 2) == 1 and head.get("k", "b", lambda: 3) == 3
    head.save()
    again = Facts(_cache(tmp_path), "head")
    assert again.get("k", "b", lambda: 4) == 4 and again.get("k", "a", lambda: 5) == 5


def test_without_a_cache_the_run_remembers_and_outside_a_run_nothing_does() -> None:
    assert fact(None, "k", lambda: "unused", lambda: 3) == 3
    with Run().entered():
        Facts(None, "a").get("k", "x", lambda: 1)
        assert Facts(None, "b").get("k", "x", lambda: 2) == 1
    assert Facts(None, "c").get("k", "x", lambda: 4) == 4


def test_content_keys_keep_parts_apart() -> None:
    assert content_key("ab", ["c"]) != content_key("a", ["bc"])
    assert content_key("a", ["b", "c"]) != content_key("a", ["bc"])
    assert content_key("a", ["b"]) == content_key("a", ["b"])


# -- a diff's findings with facts are a full run's ---------------------------------------------

PLATFORM = ks("platform", subst_from=["cluster-vars"])


def _render(state: dict[str, Any]) -> Any:
    """Two clusters from one base: the lint rules' facts (foreign values, `${...}`
    references, API verdicts) all have something to find."""
    source = helmrelease("cilium", "kube-system", k8sServiceHost=f"${{{state['var']}}}", replicas=1)

    def cluster(name: str, host: str, rendered: str, replicas: int) -> list[Any]:
        return [
            flux(
                name,
                ROOT,
                PLATFORM,
                ks(ROOT, f"./clusters/{name}"),
                cm("cluster-vars", ROOT, K3S_API_HOST=host, CLUSTER_ENV=name),
            ),
            flux(
                name,
                "platform",
                helmrelease("cilium", "kube-system", k8sServiceHost=rendered, replicas=replicas),
                cm("settings", "kube-system", url=state["url"]),
            ),
        ]

    return snapshot(
        path("platform", source),
        *cluster("dev", state["dev"], state["dev_rendered"], state["replicas"]),
        *cluster("prod", state["prod"], state["prod_rendered"], 1),
    )


HOSTS = ("192.168.1.10", "192.168.2.10", "10.0.0.1")
EDITS = st.one_of(
    st.tuples(
        st.sampled_from(["dev", "prod", "dev_rendered", "prod_rendered"]), st.sampled_from(HOSTS)
    ),
    st.tuples(st.just("replicas"), st.integers(1, 3)),
    st.tuples(st.just("var"), st.sampled_from(["K3S_API_HOST", "UNSET_HOST"])),
    st.tuples(st.just("url"), st.sampled_from(["http://192.168.1.10/x", "http://example.dev"])),
)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(EDITS, min_size=1, max_size=6))
def test_findings_with_facts_are_a_full_runs(
    tmp_path_factory: Any, edits: list[tuple[str, Any]]
) -> None:
    """Random edit sequences, each head diffed with the one base: as fresh processes
    sharing the render cache (memo and facts read back from disk), in one long-lived run
    as `harness watch` keeps it (with a base memo), and without a cache in that run: every
    report equals the one derived from scratch (ids, severities, messages, all of it)."""
    directory = tmp_path_factory.mktemp("facts")
    state: dict[str, Any] = {
        "dev": HOSTS[0],
        "prod": HOSTS[1],
        "dev_rendered": HOSTS[0],
        "prod_rendered": HOSTS[1],
        "replicas": 1,
        "var": "K3S_API_HOST",
        "url": "http://example.dev",
    }
    base = _render(state)
    watch = Run()
    base_memo: engine.BaseMemo = {}
    for name, value in edits:
        state[name] = value
        head = _render(state)
        full = engine.diff(base, head)
        for _ in range(2):  # a fresh process: fills the cache, then reads it
            cache = _cache(directory)
            memo = engine.FindingsMemo(cache)
            assert engine.diff(base, head, memo=memo) == full, edits
            cache.close()
        assert memo.misses == 0
        with watch.entered():
            cache = _cache(directory)
            kept = engine.diff(base, head, memo=engine.FindingsMemo(cache), base_memo=base_memo)
            assert kept == full, edits
            assert engine.diff(base, head) == full, edits  # the run's memo, no cache
            cache.close()


def test_a_heads_unchanged_targets_take_the_bases_facts(tmp_path: Path) -> None:
    """A fresh process diffing a head against a base an earlier diff judged derives facts
    only for what differs, and finds what a full run finds: a leak and an unset variable."""
    state = {
        "dev": HOSTS[0],
        "prod": HOSTS[1],
        "dev_rendered": HOSTS[0],
        "prod_rendered": HOSTS[1],
        "replicas": 1,
        "var": "K3S_API_HOST",
        "url": "http://example.dev",
    }
    base = _render(state)
    first = _render({**state, "replicas": 2})
    cache = _cache(tmp_path)
    engine.diff(base, first, memo=engine.FindingsMemo(cache))
    cache.close()
    head = _render({**state, "prod_rendered": HOSTS[0], "var": "UNSET_HOST"})
    full = engine.diff(base, head)
    rules = sorted(f.rule for f in full.findings if f.severity != "info")
    assert rules == ["overlay-parity", "substitution", "substitution"]  # both clusters unset
    cache = _cache(tmp_path)
    memo = engine.FindingsMemo(cache)
    assert engine.diff(base, head, memo=memo) == full
    cache.close()
    # the base: prod's two targets' verdicts (the first diff changed dev alone, so prod's
    # cluster-scoped rules never ran there); the head: the changed path target's references
    # and whether it opts out of substitution, prod's platform target's search and its
    # verdicts; the rest is the base's. Substitution's view of the changed path target
    # (engine.same_views) also asks both sides' `$${...}`, which its rule never needed
    assert (memo.computed_facts, memo.reused_facts) == (8, 16)


# -- ... and with the repo's preinstalled files edited between the diffs -------------------------

_HELMFILE = "releases:\n  - name: {name}\n    namespace: cert-manager\n    chart: jetstack/{name}\n"
_CERT_CRD = (
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
    "metadata:\n  name: certificates.cert-manager.io\nspec:\n  group: cert-manager.io\n"
    "  names: {kind: Certificate, plural: certificates}\n  scope: Namespaced\n"
)
_TALOS = "machine:\n  inlineManifests:\n    - name: certs\n      contents: |\n" + "".join(
    f"        {line}\n" for line in _CERT_CRD.splitlines()
)
FILE_EDITS = st.one_of(
    st.tuples(st.just("helmfile"), st.sampled_from(["cert-manager", "cilium", None])),
    st.tuples(st.just("talos"), st.sampled_from(["plain", "talos", None])),
    st.tuples(st.just("crds"), st.sampled_from(["crd", "plain", None])),
    st.tuples(st.just("certificate"), st.booleans()),
)
_FILES = {
    "helmfile": "bootstrap/helmfile/apps.yaml",
    "talos": "talos/nodes/controlplane.yaml",
    "crds": "bootstrap/extra/crds.yaml",
}


def _render_certs(certificate: bool) -> Any:
    """A cluster whose cert-manager HelmRelease shares its Kustomization with a Certificate:
    crd-order's verdict depends on what the repo preinstalls (an error, or an info)."""
    cert = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "wildcard", "namespace": "cert-manager"},
    }
    objs: list[Any] = [helmrelease("cert-manager", "cert-manager")]
    if certificate:
        objs.append(cert)
    return snapshot(flux("dev", ROOT, ks("platform")), flux("dev", "platform", *objs))


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(FILE_EDITS, min_size=1, max_size=6))
def test_findings_with_a_remembered_scan_are_a_full_runs(
    tmp_path_factory: Any, edits: list[tuple[str, Any]]
) -> None:
    """Random edits of the files the preinstalled scan reads (a bootstrap helmfile, a Talos
    machine config, a bootstrap CRD file: changed, added, removed) and of the render: a diff
    in a fresh process (its own file facts, the cache read back: the scan's record), and in
    one long-lived run (`harness watch`), reports what a diff without any cache reports."""
    import os

    from harness.core.filefacts import FileFacts

    directory = tmp_path_factory.mktemp("cache")
    repo = tmp_path_factory.mktemp("repo")
    (repo / "apps").mkdir()
    (repo / "apps" / "a.yaml").write_text("a: 1\n")
    clock = [1_000_000_000]

    def settle(*paths: Path) -> None:  # dated in the past: not racily new, each step later
        clock[0] += 10
        for p in paths:
            if p.exists():
                os.utime(p, (clock[0], clock[0]))

    settle(*repo.rglob("*"), repo)
    base = _render_certs(False)  # a head with the Certificate introduces crd-order's finding
    watch = Run()
    certificate = True
    for name, value in edits:
        if name == "certificate":
            certificate = value
        else:
            target = repo / _FILES[name]
            target.parent.mkdir(parents=True, exist_ok=True)
            existed = target.exists()
            if value is None:
                target.unlink(missing_ok=True)
            elif name == "helmfile":
                target.write_text(_HELMFILE.format(name=value))
            elif name == "talos":
                target.write_text(_TALOS if value == "talos" else "machine:\n  type: worker\n")
            else:
                target.write_text(_CERT_CRD if value == "crd" else "kind: ConfigMap\n")
            # an edit in place leaves its directory's stat; an added or removed file does not
            moved = [d for d in target.parents if d == repo or repo in d.parents]
            settle(target, *(moved if existed != target.exists() else []))
        head = _render_certs(certificate)
        with Run(files=FileFacts()).entered():
            full = engine.diff(base, head, head_repo=repo)
        assert [f.rule for f in full.findings] == (["crd-order"] if certificate else [])
        for _ in range(2):  # a fresh process: fills the cache, then reads it
            with Run(files=FileFacts()).entered():
                cache = _cache(directory)
                memo = engine.FindingsMemo(cache)
                assert engine.diff(base, head, head_repo=repo, memo=memo) == full, edits
                cache.close()
        with watch.entered():
            cache = _cache(directory)
            kept = engine.diff(base, head, head_repo=repo, memo=engine.FindingsMemo(cache))
            assert kept == full, edits
            cache.close()
