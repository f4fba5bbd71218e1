"""Verdict rules (no-change / pure-move / changed) and exit codes, on hand-built snapshots."""

from __future__ import annotations

import pytest

from harness.compare import gate
from harness.compare.analyze import analyze
from harness.compare.fieldpath import compile_patterns
from tests.diffkit import cilium_split, cm, ks, snapshot


def verdict_of(base, head, **kw):  # type: ignore[no-untyped-def]
    a = analyze(base, head, **kw)
    return a, gate.judge(a)


def test_cilium_split_is_a_pure_move_with_listed_orchestration_changes() -> None:
    a, v = verdict_of(*cilium_split())
    assert v.verdict == "pure-move", v.reasons
    assert v.reasons == ()
    assert [str(o) for o in v.orchestration] == [
        "cilium: added (path ./platform/cilium)",
        "platform: prune true -> false, dependsOn +cilium",
    ]
    platform = next(o for o in v.orchestration if o.name == "platform")
    assert platform.targets == ("clusters/base", "dev/flux-system/flux-system")
    [group] = v.groups
    assert (group.source, group.dest, len(group.ids), group.level) == (
        "platform",
        "cilium",
        2,
        "flux",
    )
    assert not group.identical and group.clusters == ("dev",)
    assert v.holds("pure-move") and not v.holds("no-change")
    assert gate.exit_code(a, v, "pure-move", False) == 0
    assert gate.exit_code(a, v, "no-change", False) == 1
    assert gate.exit_code(a, v, None, False) == 0
    assert gate.exit_code(a, v, None, True) == 1


def test_a_value_changed_on_the_way_fails_pure_move_and_names_the_field() -> None:
    a, v = verdict_of(*cilium_split(value="changed"))
    assert v.verdict == "changed"
    messages = [str(r) for r in v.reasons]
    # the path copies are what dev's Kustomizations deploy: judged once, as the Flux move
    assert messages == [
        "dev: ConfigMap/kube-system/hr moved platform -> cilium with changes: data.k: v -> changed",
    ]
    assert (v.tally.changed, v.tally.moved_with_changes, v.tally.added, v.tally.removed) == (
        0,
        1,
        0,
        0,
    )
    assert gate.exit_code(a, v, "pure-move", False) == 1


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ("  targetNamespace: other\n", "spec.targetNamespace"),
        ("  postBuild:\n    substitute:\n      A: b\n", "spec.postBuild"),
        ("  components:\n  - ../c\n", "spec.components"),
    ],
)
def test_output_field_change_without_its_flux_target_is_not_verified(
    extra: str, field: str
) -> None:
    base = snapshot({"clusters/base": [ks("apps", "./apps")]})
    head = snapshot({"clusters/base": [ks("apps", "./apps", extra=extra)]})
    _, v = verdict_of(base, head)
    assert v.verdict == "changed"
    [reason] = v.reasons
    assert field in str(reason)
    assert "its output is not verified (no Flux target renders it)" in str(reason)
    assert v.tally.flux_kustomizations == 1


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ("  serviceAccountName: deployer\n", "spec.serviceAccountName"),
        ("  kubeConfig:\n    secretRef:\n      name: remote\n", "spec.kubeConfig"),
    ],
)
def test_fields_that_change_where_or_how_it_applies_are_real(extra: str, field: str) -> None:
    flux = {"dev/flux-system/apps": [cm("a", owner="apps")]}
    base = snapshot({"dev/flux-system/flux-system": [ks("apps", "./apps")], **flux})
    head = snapshot({"dev/flux-system/flux-system": [ks("apps", "./apps", extra=extra)], **flux})
    _, v = verdict_of(base, head)
    assert v.verdict == "changed"
    [reason] = v.reasons
    assert field in str(reason) and "not an orchestration field" in str(reason)


def test_path_change_with_identical_output_is_a_pure_move() -> None:
    flux = {"dev/flux-system/apps": [cm("a", owner="apps")]}
    base = snapshot({"dev/flux-system/flux-system": [ks("apps", "./apps")], **flux})
    head = snapshot({"dev/flux-system/flux-system": [ks("apps", "./apps2")], **flux})
    a, v = verdict_of(base, head)
    assert v.verdict == "pure-move", v.reasons
    [r] = v.respecified
    assert (r.name, r.what, r.how) == ("apps", "path moved", "output identical")
    assert str(r) == "apps: spec.path: ./apps -> ./apps2 (output identical)"
    assert gate.exit_code(a, v, "pure-move", False) == 0


def test_path_change_with_changed_output_is_real() -> None:
    base = snapshot(
        {
            "dev/flux-system/flux-system": [ks("apps", "./apps")],
            "dev/flux-system/apps": [cm("a", owner="apps")],
        }
    )
    head = snapshot(
        {
            "dev/flux-system/flux-system": [ks("apps", "./apps2")],
            "dev/flux-system/apps": [cm("a", owner="apps", k="other")],
        }
    )
    _, v = verdict_of(base, head)
    assert v.verdict == "changed"
    messages = [str(r) for r in v.reasons]
    assert (
        "dev/flux-system/flux-system: Flux Kustomization apps: spec.path: ./apps -> ./apps2; "
        "its output changes (see dev/flux-system/apps)" in messages
    )


def test_health_check_exprs_are_orchestration() -> None:
    exprs = "  healthCheckExprs:\n  - apiVersion: v1\n    kind: X\n    current: 'true'\n"
    base = snapshot({"clusters/base": [ks("apps", "./apps")]})
    head = snapshot({"clusters/base": [ks("apps", "./apps", extra=exprs)]})
    _, v = verdict_of(base, head)
    assert v.verdict == "pure-move", v.reasons


def test_orchestration_only_changes_are_a_pure_move() -> None:
    extra_before = "  wait: true\n  timeout: 5m\n"
    extra_after = (
        "  wait: false\n  timeout: 10m\n  retryInterval: 1m\n  suspend: true\n"
        "  healthChecks:\n  - kind: Deployment\n    name: web\n    namespace: apps\n"
    )
    base = snapshot(
        {"clusters/base": [ks("apps", "./apps", depends=["a", "b"], extra=extra_before)]}
    )
    head = snapshot(
        {
            "clusters/base": [
                ks("apps", "./apps", prune=False, depends=["b", "c"], extra=extra_after)
            ]
        }
    )
    _, v = verdict_of(base, head)
    assert v.verdict == "pure-move", v.reasons
    [o] = v.orchestration
    assert str(o) == (
        "apps: prune true -> false, wait true -> false, retryInterval (absent) -> 1m, "
        "timeout 5m -> 10m, suspend (absent) -> true, dependsOn +c -a, "
        "healthChecks +Deployment/apps/web"
    )


def test_removed_flux_kustomization_is_listed_with_its_prune_setting() -> None:
    base = snapshot(
        {
            "clusters/base": [ks("apps", "./apps")],
            "dev/flux-system/apps": [cm("a", owner="apps")],
        }
    )
    head = snapshot(
        {
            "clusters/base": [ks("apps-wave-0", "./apps/wave-0")],
            "dev/flux-system/apps-wave-0": [cm("a", owner="apps-wave-0")],
        }
    )
    _, v = verdict_of(base, head)
    assert v.verdict == "pure-move", v.reasons
    assert [str(o) for o in v.orchestration] == [
        "apps: removed (prune: true, its objects are garbage-collected unless relabelled first)",
        "apps-wave-0: added (path ./apps/wave-0)",
    ]


def test_added_and_removed_documents_that_go_nowhere_are_changes() -> None:
    base = snapshot({"a": [cm("x"), cm("gone")]})
    head = snapshot({"a": [cm("x"), cm("new")]})
    _, v = verdict_of(base, head)
    assert v.verdict == "changed"
    assert [str(r) for r in v.reasons] == [
        "a: ConfigMap/default/gone removed (rendered by no other target)",
        "a: ConfigMap/default/new added (new: no target rendered it before)",
    ]
    assert (v.tally.added, v.tally.removed) == (1, 1)


def test_identical_snapshots_are_no_change() -> None:
    spec = {"a": [cm("x")], "dev/flux-system/a": [cm("x", owner="a")]}
    a, v = verdict_of(snapshot(spec), snapshot(spec))
    assert v.verdict == "no-change" and v.reasons == () and v.notes == ()
    assert all(
        gate.exit_code(a, v, e, f) == 0
        for e in (None, "no-change", "pure-move")
        for f in (True, False)
    )


def test_reformat_only_and_ignored_fields_are_notes_not_changes() -> None:
    base = snapshot(
        {"a": ["apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: v\n"]}
    )
    head = snapshot({"a": ["apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {k: v}\n"]})
    _, v = verdict_of(base, head)
    assert v.verdict == "no-change"
    assert v.notes == ("1 document reformatted only (bytes differ, parsed content equal)",)
    labelled = snapshot(
        {"a": [cm("x").replace("metadata:\n", "metadata:\n  labels: {helm.sh/chart: c-2}\n")]}
    )
    plain = snapshot(
        {"a": [cm("x").replace("metadata:\n", "metadata:\n  labels: {helm.sh/chart: c-1}\n")]}
    )
    assert verdict_of(plain, labelled)[1].verdict == "changed"
    _, v = verdict_of(plain, labelled, ignore=compile_patterns(["metadata.labels.helm.sh/chart"]))
    assert v.verdict == "no-change"
    assert v.notes == ("1 document differ only in ignore_fields",)


def test_new_duplicate_owner_is_a_change_an_old_one_is_not() -> None:
    base = snapshot(
        {"dev/flux-system/a": [cm("x", owner="a")], "dev/flux-system/b": [cm("y", owner="b")]}
    )
    head = snapshot(
        {
            "dev/flux-system/a": [cm("x", owner="a")],
            "dev/flux-system/b": [cm("y", owner="b"), cm("x", owner="b")],
        }
    )
    _, v = verdict_of(base, head)
    assert v.verdict == "changed"
    assert any("two owners" in str(r) for r in v.reasons)
    _, again = verdict_of(head, head)
    assert again.verdict == "no-change"


def test_render_errors_make_the_verdict_changed_and_the_exit_code_2() -> None:
    base = snapshot({"a": [cm("x")], "b": [cm("y")]})
    head = snapshot({"a": "kustomize: missing.yaml: no such file", "b": [cm("y")]})
    a, v = verdict_of(base, head)
    assert v.verdict == "changed"
    assert [str(r) for r in v.reasons] == [
        "a: render failed on head: kustomize: missing.yaml: no such file"
    ]
    assert v.tally.errors == 1 and v.tally.removed == 0
    for expect in (None, "no-change", "pure-move"):
        assert gate.exit_code(a, v, expect, True) == 2


def test_path_only_relocation_groups() -> None:
    base = snapshot(
        {"platform": [cm("a"), cm("b")], "platform/cilium": [cm("a")], "other": [cm("a")]}
    )
    head = snapshot({"platform": [cm("b")], "platform/cilium": [cm("a")], "other": [cm("a")]})
    _, v = verdict_of(base, head)
    assert v.verdict == "pure-move"
    [g] = v.groups
    assert (g.source, g.dest, g.level, g.identical) == ("platform", "platform/cilium", "path", True)


def test_a_relocation_pairs_with_the_target_it_arrived_in() -> None:
    """`apps` renders both before and after (it aggregates): the move is media -> media2."""
    base = snapshot({"apps": [cm("a")], "apps/media": [cm("a")]})
    head = snapshot({"apps": [cm("a")], "apps/media2": [cm("a")]})
    _, v = verdict_of(base, head)
    assert v.verdict == "pure-move"
    [g] = v.groups
    assert (g.source, g.dest) == ("apps/media", "apps/media2")


def test_a_decryption_change_is_real_even_with_identical_output() -> None:
    """harness masks SOPS values either way, so the same render proves nothing here."""
    flux = {"dev/flux-system/apps": [cm("a", owner="apps")]}
    extra = "  decryption:\n    provider: sops\n"
    base = snapshot({"dev/flux-system/flux-system": [ks("apps", "./apps", extra=extra)], **flux})
    head = snapshot({"dev/flux-system/flux-system": [ks("apps", "./apps")], **flux})
    _, v = verdict_of(base, head)
    assert v.verdict == "changed"
    assert "spec.decryption" in str(v.reasons[0])


def test_a_directory_flux_deploys_is_judged_through_the_flux_copy() -> None:
    """A kustomization.yaml added to a directory a Flux Kustomization builds makes a new
    path target whose objects are all "new"; what the cluster receives is the Flux copy,
    which did not change (flux2-hub-spoke-example 9857780). A directory no Kustomization
    deploys stays its own cluster."""
    root = {"dev/flux-system/flux-system": [ks("tenants", "./tenants", owner="flux-system")]}
    flux = [cm("a", owner="tenants"), cm("b", owner="tenants")]
    base = snapshot({**root, "dev/flux-system/tenants": flux})
    head = snapshot(
        {
            **root,
            "dev/flux-system/tenants": flux,
            "tenants": [cm("a"), cm("b")],
            "tenants/base": [cm("a")],  # a base it includes: deployed too
            "scratch": [cm("c")],
        }
    )
    a, v = verdict_of(base, head)
    assert a.deployed == {"tenants", "tenants/base"}
    assert [str(r) for r in v.reasons] == [
        "scratch: ConfigMap/default/c added (new: no target rendered it before)"
    ]


def test_a_directory_below_a_generated_kustomization_is_deployed() -> None:
    """clusters/prod has no kustomization.yaml: Flux generates one taking flux-system/ (d2-fleet
    89d842c), so the path target clusters/prod/flux-system is what the root deploys."""
    root = ks("flux-system", "./clusters/prod", owner="flux-system")

    def side(v: str):  # type: ignore[no-untyped-def]
        return snapshot(
            {
                "prod/flux-system/flux-system": [root, cm("flux", "flux-system", v=v)],
                "clusters/prod/flux-system": [root, cm("flux", "flux-system", v=v)],
            }
        )

    a, v = verdict_of(side("1"), side("2"))
    assert a.deployed == {"clusters/prod/flux-system"}
    assert [r.target for r in v.reasons] == ["prod/flux-system/flux-system"]


def test_a_synthesised_root_deploys_what_is_below_its_directory() -> None:
    """A FluxInstance root has no Kustomization document to read a spec.path from; its
    target's directory (clusters/prod, no kustomization file) says what it builds."""
    from dataclasses import replace

    def side(v: str):  # type: ignore[no-untyped-def]
        snap = snapshot(
            {
                "prod/flux-system/flux-system": [cm("flux", "flux-system", v=v)],
                "clusters/prod/flux-system": [cm("flux", "flux-system", v=v)],
                "apps": [cm("other")],
            }
        )
        root = snap.results["prod/flux-system/flux-system"]
        moved = replace(
            root, target=replace(root.target, path=root.target.path.parents[2] / "clusters/prod")
        )
        return replace(snap, results={**snap.results, moved.name: moved})

    a, v = verdict_of(side("1"), side("2"))
    assert a.deployed == {"clusters/prod/flux-system"}
    assert [r.target for r in v.reasons] == ["prod/flux-system/flux-system"]
