"""One change, one entry: identical changes across targets group; different ones do not."""

from __future__ import annotations

from harness.compare import gate
from harness.compare.analyze import analyze
from harness.compare.groups import Place, group, places_text, verdict_reasons
from harness.core.model import Snapshot
from tests.diffkit import cilium_split, cm, snapshot
from tests.hazards import snap as hs

SHARED = ("apps", "apps/web", "dev/flux-system/apps", "prod/flux-system/apps")


def _groups(base, head):  # type: ignore[no-untyped-def]
    a = analyze(base, head)
    return group(a, verdict_reasons(gate.judge(a)))


def test_one_value_of_a_shared_base_is_one_group_with_every_target() -> None:
    base = snapshot({name: [cm("cfg", v="1"), cm("other")] for name in SHARED})
    head = snapshot({name: [cm("cfg", v="2"), cm("other")] for name in SHARED})
    (g,) = _groups(base, head)
    assert (g.op, str(g.id), g.real) == ("changed", "ConfigMap/default/cfg", True)
    assert [f.path for f in g.fields] == ["data.v"]
    assert g.targets == SHARED and g.clusters == ("dev", "prod")
    assert places_text(g.places) == "apps, apps/web; dev, prod: flux-system/apps"


def test_different_values_per_cluster_are_different_groups() -> None:
    base = snapshot(
        {"dev/flux-system/apps": [cm("cfg", v="1")], "prod/flux-system/apps": [cm("cfg", v="1")]}
    )
    head = snapshot(
        {"dev/flux-system/apps": [cm("cfg", v="2")], "prod/flux-system/apps": [cm("cfg", v="3")]}
    )
    groups = _groups(base, head)
    assert [(g.fields[0].after, g.targets) for g in groups] == [
        ("2", ("dev/flux-system/apps",)),
        ("3", ("prod/flux-system/apps",)),
    ]


def test_every_difference_is_in_exactly_one_group() -> None:
    """The cilium split: relocations, moves (grouped across clusters), a Kustomization's
    orchestration change (not real), an added Kustomization; nothing twice, nothing lost."""
    base, head = cilium_split(value="2")
    a = analyze(base, head)
    groups = group(a, verdict_reasons(gate.judge(a)))
    seen = [(p.target, g.op, str(g.id)) for g in groups for p in g.places]
    expected = [
        (t.name, op, str(d))
        for t in a.targets
        if t.differs
        for op, ids in (
            ("changed", [c.id for c in t.changed]),
            ("added", [x.doc.id for x in t.added]),
            ("removed", [r.doc.id for r in t.removed]),
        )
        for d in ids
    ]
    assert sorted(seen) == sorted(expected)
    real = {(g.op, str(g.id), g.targets) for g in groups if g.real}
    # the path copies are what dev deploys: the Flux move is the one real entry
    assert real == {("removed", "ConfigMap/kube-system/hr", ("dev/flux-system/platform",))}
    ks = [g for g in groups if g.kustomization and g.op == "changed"]
    assert ks and not any(g.real for g in ks)  # prune/dependsOn: orchestration, not a change
    moved = [g for g in groups if g.moved and not g.real and g.op == "removed"]
    assert {(str(g.id), g.copy, g.how) for g in moved} == {
        ("ConfigMap/kube-system/ns", "platform/cilium", "identical"),
        ("ConfigMap/kube-system/hr", "platform/cilium", "with changes"),  # judged via Flux
        ("ConfigMap/kube-system/ns", "flux-system/cilium", "pure ownership"),
    }


def test_places_name_helm_targets_and_format_names() -> None:
    places = [
        Place("base", "path", None),
        Place("dev/media/whoami", "helm", "dev"),
        Place("prod/media/whoami", "helm", "prod"),
    ]
    assert places_text(places, lambda n: f"`{n}`") == "`base`; helm dev, prod: `media/whoami`"


def test_a_path_copy_deployed_twice_is_listed_under_each_deployed_object() -> None:
    """deploy/apps' HelmRelease has no namespace; the production and staging Kustomizations
    deploy it (through their overlays clusters/<env>/apps) as two objects. Two entries, each
    with the shared base and its own overlay: never a third, never the other's overlay."""

    def side(drift: str) -> Snapshot:
        spec = {"chart": {"spec": {"chart": "podinfo"}}, "driftDetection": {"mode": drift}}
        api = "helm.toolkit.fluxcd.io/v2"
        envs = ("production", "staging")
        return hs.snapshot(
            hs.flux(
                "hub",
                "flux-system",
                *(hs.ks("apps", f"./clusters/{env}/apps", namespace=env) for env in envs),
            ),
            hs.path("deploy/apps", hs.obj("HelmRelease", "podinfo", api=api, spec=spec)),
            *(
                hs.path(
                    f"clusters/{env}/apps", hs.obj("HelmRelease", "podinfo", api=api, spec=spec)
                )
                for env in envs
            ),
            *(
                hs.flux(
                    "hub",
                    "apps",
                    hs.obj("HelmRelease", "podinfo", env, api, spec=spec),
                    namespace=env,
                )
                for env in envs
            ),
        )

    groups = _groups(side("disabled"), side("enabled"))
    assert [(str(g.id), g.targets) for g in groups] == [
        (
            "helm.toolkit.fluxcd.io/HelmRelease/production/podinfo",
            ("clusters/production/apps", "deploy/apps", "hub/production/apps"),
        ),
        (
            "helm.toolkit.fluxcd.io/HelmRelease/staging/podinfo",
            ("clusters/staging/apps", "deploy/apps", "hub/staging/apps"),
        ),
    ]


def test_a_new_overlay_and_its_flux_copy_are_one_entry() -> None:
    """A production overlay appears beside the staging one (flux2-hub-spoke-example
    5dcfc42): its path copy says `also rendered by clusters/staging/apps`, the Flux copy
    `new`; one object, so one entry listing both."""
    api = "helm.toolkit.fluxcd.io/v2"

    def release(env: str, namespace: str = "") -> dict:  # type: ignore[type-arg]
        return hs.obj("HelmRelease", "podinfo", namespace, api, spec={"values": {"host": env}})

    def side(*envs: str) -> Snapshot:
        return hs.snapshot(
            hs.flux(
                "hub",
                "flux-system",
                *(hs.ks("apps", f"./clusters/{env}/apps", namespace=env) for env in envs),
            ),
            *(hs.path(f"clusters/{env}/apps", release(env)) for env in envs),
            *(hs.flux("hub", "apps", release(env, env), namespace=env) for env in envs),
        )

    groups = [g for g in _groups(side("staging"), side("staging", "production")) if g.op == "added"]
    assert [(str(g.id), g.targets, g.note) for g in groups if "HelmRelease" in str(g.id)] == [
        (
            "helm.toolkit.fluxcd.io/HelmRelease/production/podinfo",
            ("clusters/production/apps", "hub/production/apps"),
            "new: no target rendered it before",
        )
    ]
