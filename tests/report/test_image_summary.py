"""The "Images" lines: one per change, workloads grouped with their clusters, digests short in
text and whole in JSON."""

from __future__ import annotations

from harness.compare.images import changes
from harness.report.image_summary import change_dict, change_line, summary_title
from tests.compare.test_images import deploy
from tests.diffkit import snapshot

DIGEST = "sha256:" + "cd" * 32


def _bump(old: str, new: str, names: tuple[str, ...] = ("web",)):  # type: ignore[no-untyped-def]
    side = {c: lambda img: [deploy(n, img) for n in names] for c in ("a", "b")}
    base = snapshot({f"{c}/flux-system/apps": make(old) for c, make in side.items()})
    head = snapshot({f"{c}/flux-system/apps": make(new) for c, make in side.items()})
    return changes(base, head)


def test_a_line_names_each_workload_once_with_its_clusters() -> None:
    found = _bump("ghcr.io/o/app:1", f"ghcr.io/o/app:2@{DIGEST}")
    assert summary_title(found) == "images: 1 change in 2 containers"
    assert change_line(found[0]) == (
        "ghcr.io/o/app: 1 -> 2@sha256:cdcdcdcdcdcd (apps/Deployment/apps/web in a, b)"
    )
    entry = change_dict(found[0])
    assert entry["after"]["digest"] == DIGEST and entry["after"]["tag"] == "2"
    assert entry["clusters"] == ["a", "b"]


def test_many_workloads_end_in_a_count_unless_all_are_asked_for() -> None:
    (change,) = _bump("app:1", "app:2", names=("w1", "w2", "w3", "w4"))
    assert change_line(change).endswith("apps/Deployment/apps/w3 in a, b; and 1 more)")
    assert change_line(change, None).endswith("apps/Deployment/apps/w4 in a, b)")


def test_oci_artifacts_are_counted_apart_from_containers() -> None:
    oci = (
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n"
        "  name: chart\n  namespace: flux-system\nspec:\n  url: oci://ghcr.io/o/chart\n"
        "  ref:\n    tag: {tag}\n"
    )
    base = snapshot({"c/flux-system/apps": [oci.format(tag="1"), deploy("web", "app:1")]})
    head = snapshot({"c/flux-system/apps": [oci.format(tag="2"), deploy("web", "app:2")]})
    assert (
        summary_title(changes(base, head)) == "images: 2 changes in 1 container and 1 OCI artifact"
    )
