"""Every image per cluster and workload, once; a change's images compared by identity and
said once with every place it happens; a failed target never reads as images gone."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.compare.images import ImageUse, Place, changes, images_of, version_line
from harness.core.model import Snapshot
from tests.diffkit import cm, snapshot


def deploy(name: str, image: str, namespace: str = "apps", init: str = "") -> str:
    inits = f"      initContainers:\n      - name: setup\n        image: {init}\n" if init else ""
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n"
        f"  namespace: {namespace}\nspec:\n  template:\n    spec:\n{inits}"
        f"      containers:\n      - name: {name}\n        image: {image}\n"
    )


def cronjob(name: str, image: str) -> str:
    return (
        f"apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: {name}\n  namespace: apps\n"
        "spec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n"
        f"          containers:\n          - name: job\n            image: {image}\n"
    )


POD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: debug\n  namespace: apps\nspec:\n"
    "  containers:\n  - name: main\n    image: busybox\n"
    "  ephemeralContainers:\n  - name: dbg\n    image: alpine:3\n"
)


def test_every_container_of_every_workload_kind_is_listed() -> None:
    snap = snapshot(
        {
            "dev/flux-system/apps": [
                deploy("web", "ghcr.io/o/web:1", init="busybox:1.36"),
                cronjob("backup", "restic/restic:0.17"),
                POD,
            ]
        }
    )
    rows = [
        (u.cluster, str(u.workload), u.field, u.container, u.image.text) for u in images_of(snap)
    ]
    assert rows == [
        ("dev", "Pod/apps/debug", "containers", "main", "busybox"),
        ("dev", "Pod/apps/debug", "ephemeralContainers", "dbg", "alpine:3"),
        ("dev", "apps/Deployment/apps/web", "initContainers", "setup", "busybox:1.36"),
        ("dev", "apps/Deployment/apps/web", "containers", "web", "ghcr.io/o/web:1"),
        ("dev", "batch/CronJob/apps/backup", "containers", "job", "restic/restic:0.17"),
    ]


def test_a_path_target_copy_of_a_deployed_workload_is_said_by_the_cluster() -> None:
    snap = snapshot(
        {
            "apps/web": [deploy("web", "app:1", namespace="")],  # Flux sets the namespace
            "apps/tool": [deploy("tool", "tool:1")],  # no cluster deploys it
            "dev/flux-system/apps": [deploy("web", "app:1")],
            "prod/flux-system/apps": [deploy("web", "app:1")],
        }
    )
    rows = [(u.cluster, str(u.workload), u.targets) for u in images_of(snap)]
    assert rows == [
        ("", "apps/Deployment/apps/tool", ("apps/tool",)),
        ("dev", "apps/Deployment/apps/web", ("dev/flux-system/apps",)),
        ("prod", "apps/Deployment/apps/web", ("prod/flux-system/apps",)),
    ]
    assert [str(u.workload) for u in images_of(snap, ["prod"])] == ["apps/Deployment/apps/web"]


def test_a_bump_in_two_clusters_is_one_change() -> None:
    base = snapshot({f"{c}/flux-system/apps": [deploy("web", "ghcr.io/o/web:1.0")] for c in "ab"})
    head = snapshot({f"{c}/flux-system/apps": [deploy("web", "ghcr.io/o/web:1.1")] for c in "ab"})
    (change,) = changes(base, head)
    assert (change.op, change.repository, version_line(change)) == (
        "changed",
        "ghcr.io/o/web",
        "1.0 -> 1.1",
    )
    assert change.clusters == ("a", "b")
    assert [(p.cluster, str(p.workload), p.container) for p in change.places] == [
        ("a", "apps/Deployment/apps/web", "web"),
        ("b", "apps/Deployment/apps/web", "web"),
    ]


def test_a_respelling_of_the_same_image_is_no_change() -> None:
    base = snapshot({"c/flux-system/apps": [deploy("web", "nginx:1.25")]})
    head = snapshot({"c/flux-system/apps": [deploy("web", "docker.io/library/nginx:1.25")]})
    assert changes(base, head) == ()


def test_digests_repositories_new_and_gone_images() -> None:
    digest = "sha256:" + "ab" * 32
    base = snapshot(
        {
            "c/flux-system/apps": [
                deploy("a", "app:1"),
                deploy("b", "docker.io/o/b:2"),
                deploy("old", "old:1"),
            ]
        }
    )
    head = snapshot(
        {
            "c/flux-system/apps": [
                deploy("a", f"app:1@{digest}"),
                deploy("b", "ghcr.io/o/b:2"),
                deploy("new", "new:1"),
            ]
        }
    )
    assert [(c.op, version_line(c)) for c in changes(base, head)] == [
        ("changed", "1 -> 1@sha256:abababababab"),
        ("changed", "docker.io/o/b:2 -> ghcr.io/o/b:2"),
        ("added", "new 1"),
        ("removed", "gone 1"),
    ]


def test_a_target_failing_on_one_side_is_no_image_added_or_removed() -> None:
    ok = snapshot({"c/flux-system/apps": [deploy("web", "app:1")]})
    failed = snapshot({"c/flux-system/apps": "kustomize: accumulating resources: boom"})
    assert changes(ok, failed) == ()
    assert changes(failed, ok) == ()


HELMRELEASE = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: home-assistant
  namespace: default
spec:
  values:
    controllers:
      main:
        containers:
          app:
            image:
              repository: ghcr.io/home-operations/home-assistant
              tag: {tag}
    sidecar:
      image: docker.io/library/busybox:1.36
    exporter:
      image:
        registry: quay.io
        repository: prometheus/node-exporter
        digest: sha256:{digest}
    enabled: true
"""

OCIREPO = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: konflate
  namespace: flux-system
spec:
  url: oci://ghcr.io/home-operations/charts/konflate
  ref:
    tag: {tag}
"""


def test_helmrelease_values_and_oci_sources_name_images_nothing_rendered() -> None:
    snap = snapshot(
        {
            "c/flux-system/apps": [
                HELMRELEASE.format(tag="2026.8.2", digest="ef" * 32),
                OCIREPO.format(tag="0.6.0"),
            ]
        }
    )
    rows = [(u.field, u.container, u.image.text) for u in images_of(snap)]
    assert rows == [
        (
            "values",
            "spec.values.controllers.main.containers.app.image",
            "ghcr.io/home-operations/home-assistant:2026.8.2",
        ),
        (
            "values",
            "spec.values.exporter.image",
            f"quay.io/prometheus/node-exporter@sha256:{'ef' * 32}",
        ),
        ("values", "spec.values.sidecar.image", "docker.io/library/busybox:1.36"),
        ("ociRepository", "spec.ref", "ghcr.io/home-operations/charts/konflate:0.6.0"),
    ]


def test_a_rendered_release_says_its_images_through_its_workloads() -> None:
    snap = snapshot(
        {
            "c/flux-system/apps": [HELMRELEASE.format(tag="1", digest="ef" * 32)],
            "c/default/home-assistant": [deploy("home-assistant", "ghcr.io/o/ha:1")],
        }
    )
    helm = snap.results["c/default/home-assistant"]
    target = replace(helm.target, kind="helm", cluster="c")
    snap = replace(snap, results={**snap.results, helm.name: replace(helm, target=target)})
    assert [(u.field, u.image.text) for u in images_of(snap)] == [("containers", "ghcr.io/o/ha:1")]


def test_a_renovate_bump_of_values_and_a_chart_is_two_changes() -> None:
    base = snapshot(
        {
            "c/flux-system/apps": [
                HELMRELEASE.format(tag="1.0", digest="ef" * 32),
                OCIREPO.format(tag="0.6.0"),
            ]
        }
    )
    head = snapshot(
        {
            "c/flux-system/apps": [
                HELMRELEASE.format(tag="1.1", digest="ef" * 32),
                OCIREPO.format(tag="0.6.1"),
            ]
        }
    )
    assert [(c.repository, version_line(c)) for c in changes(base, head)] == [
        ("ghcr.io/home-operations/charts/konflate", "0.6.0 -> 0.6.1"),
        ("ghcr.io/home-operations/home-assistant", "1.0 -> 1.1"),
    ]


# `changes` reads only the workloads a diff touched; these hold it to the whole-side answer


def _whole_changes(base: Snapshot, head: Snapshot) -> list[tuple[str, str, str, tuple[Place, ...]]]:
    """What `changes` says, from every image of both whole sides (its definition)."""
    before: dict[Place, ImageUse] = {}
    after: dict[Place, ImageUse] = {}
    for uses, out in ((images_of(base), before), (images_of(head), after)):
        for use in uses:
            out.setdefault(Place(use.cluster, use.workload, use.container), use)
    failed_base = {n for n, r in base.results.items() if not r.ok}
    failed_head = {n for n, r in head.results.items() if not r.ok}
    grouped: dict[tuple[str, str, str], list[Place]] = {}
    for place in sorted(before.keys() | after.keys()):
        old, new = before.get(place), after.get(place)
        if old is not None and new is not None:
            if not old.image.same_image(new.image):
                grouped.setdefault(("changed", old.image.text, new.image.text), []).append(place)
        elif old is not None and not failed_head.intersection(old.targets):
            grouped.setdefault(("removed", old.image.text, ""), []).append(place)
        elif new is not None and not failed_base.intersection(new.targets):
            grouped.setdefault(("added", "", new.image.text), []).append(place)
    return sorted((*key, tuple(places)) for key, places in grouped.items())


def _said(base: Snapshot, head: Snapshot) -> list[tuple[str, str, str, tuple[Place, ...]]]:
    return sorted(
        (
            c.op,
            c.before.text if c.before else "",
            c.after.text if c.after else "",
            c.places,
        )
        for c in changes(base, head)
    )


def test_an_image_bump_beside_unchanged_documents_of_its_target_is_said() -> None:
    base = snapshot(
        {
            "c/flux-system/apps": [deploy("web", "app:1"), deploy("db", "pg:16")],
            "c/flux-system/other": [deploy("cache", "redis:7")],
        }
    )
    head = snapshot(
        {
            "c/flux-system/apps": [deploy("web", "app:2"), deploy("db", "pg:16")],
            "c/flux-system/other": [deploy("cache", "redis:7")],
        }
    )
    assert [(c.op, version_line(c)) for c in changes(base, head)] == [("changed", "1 -> 2")]
    assert _said(base, head) == _whole_changes(base, head)


def test_an_unchanged_path_copy_shows_once_the_cluster_stops_deploying_it() -> None:
    """The path target renders the same bytes on both sides, but its use counted only
    where no cluster deploys that workload: the change of another target decides it."""
    path = {"apps/web": [deploy("web", "app:1", namespace="")]}
    base = snapshot({**path, "c/flux-system/apps": [deploy("web", "app:1")]})
    head = snapshot({**path, "c/flux-system/apps": [cm("other")]})
    said = _said(base, head)
    assert said == _whole_changes(base, head)
    assert [op for op, *_ in said] == ["added", "removed"]


def test_a_release_rendered_on_one_side_only_moves_its_values_images() -> None:
    """The Flux target holding the HelmRelease is unchanged; its helm target renders only
    in head, so its values stop counting there and its workloads count instead."""
    release = HELMRELEASE.format(tag="1", digest="ef" * 32)
    base = snapshot({"c/flux-system/apps": [release], "c/default/home-assistant": "no chart"})
    head = snapshot(
        {
            "c/flux-system/apps": [release],
            "c/default/home-assistant": [deploy("home-assistant", "ghcr.io/o/ha:1")],
        }
    )
    sides = []
    for snap in (base, head):
        helm = snap.results["c/default/home-assistant"]
        target = replace(helm.target, kind="helm", cluster="c")
        sides.append(
            replace(snap, results={**snap.results, helm.name: replace(helm, target=target)})
        )
    assert _said(*sides) == _whole_changes(*sides)
    assert _said(*sides)  # the values' images go, the workload's comes


def test_a_second_owner_of_an_unchanged_workload_decides_its_place() -> None:
    base = snapshot(
        {
            "c/flux-system/a": [deploy("web", "app:1")],
            "c/flux-system/b": [deploy("web", "app:1")],
        }
    )
    head = snapshot(
        {
            "c/flux-system/a": [deploy("web", "app:1")],
            "c/flux-system/b": [deploy("web", "app:0")],
        }
    )
    assert _said(base, head) == _whole_changes(base, head)
    assert _said(head, base) == _whole_changes(head, base)


def test_nothing_touched_is_no_change_without_reading_a_document() -> None:
    side = {"c/flux-system/apps": [deploy("web", "app:1")], "apps/web": [deploy("web", "x:1")]}
    assert changes(snapshot(side), snapshot(side)) == ()


_NAMES = st.sampled_from(["web", "db", "cache"])
_DOC = st.one_of(
    st.builds(
        deploy,
        _NAMES,
        st.sampled_from(["app:1", "app:2", "docker.io/library/app:1", "pg:16"]),
        st.sampled_from(["apps", "", "other"]),
        st.sampled_from(["", "busybox:1", "busybox:2"]),
    ),
    st.builds(lambda tag: HELMRELEASE.format(tag=tag, digest="ef" * 32), st.sampled_from("12")),
    st.builds(lambda name: cm(name), _NAMES),
)
_TARGETS = ["c/flux-system/a", "c/flux-system/b", "d/flux-system/a", "apps/web", "apps/db"]
_SIDE = st.fixed_dictionaries(
    {},
    optional={
        name: st.one_of(st.lists(_DOC, max_size=3, unique=True), st.just("failed"))
        for name in _TARGETS
    },
)


@settings(max_examples=150, deadline=None)
@given(
    _SIDE, st.lists(st.tuples(st.sampled_from(_TARGETS), st.one_of(st.none(), _SIDE)), max_size=3)
)
def test_changes_are_the_whole_sides_changes(spec: dict[str, Any], edits: list[Any]) -> None:
    """Random sides, head = base with a few targets edited, dropped or failed: what the
    touched workloads say is what both whole sides' images say."""
    head_spec = dict(spec)
    for name, other in edits:
        if other is None:
            head_spec.pop(name, None)
        elif name in other:
            head_spec[name] = other[name]
    base, head = snapshot(spec), snapshot(head_spec)
    assert _said(base, head) == _whole_changes(base, head)
