"""`harness get`'s table and `harness.get/v1`: whole names, `-` for nothing, counts by hand."""

from __future__ import annotations

import json

import pytest

from harness.core.model import RendererInfo
from harness.flux.inventory import HrRow, KsRow
from harness.report import listing

ROWS = (
    KsRow(
        "dev",
        "flux-system",
        "apps",
        "dev/flux-system/apps",
        "rendered",
        path="./apps",
        source="GitRepository/flux-system/flux-system",
        depends_on=("flux-system/platform", "infra/crds"),
        documents=12,
    ),
    KsRow(
        "dev",
        "flux-system",
        "broken",
        "dev/flux-system/broken",
        "failed",
        path="./broken",
        suspend=True,
        reason="broken/kustomization.yaml: kustomize: no such file",
    ),
    KsRow("prod", "apps", "web", "prod/apps/web", "not judged", reason="declared under x"),
)


def test_the_table_has_whole_names_and_a_counts_line(capsys: pytest.CaptureFixture[str]) -> None:
    listing.print_table(ROWS, "ks")
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "cluster  name                path      source                                 "
        "depends on           suspend  documents  status",
        "dev      flux-system/apps    ./apps    GitRepository/flux-system/flux-system  "
        "platform,infra/crds  -               12  rendered",
        "dev      flux-system/broken  ./broken  -                                      "
        "-                    yes              -  failed",
        "prod     apps/web            -         -                                      "
        "-                    -                -  not judged",
        "3 Kustomizations in 2 clusters: 1 rendered, 1 failed, 1 not judged",
    ]
    assert (
        err == "error: dev/flux-system/broken: broken/kustomization.yaml: kustomize: no such file\n"
    )


def test_verbose_says_why_a_row_was_not_rendered(capsys: pytest.CaptureFixture[str]) -> None:
    listing.print_table(ROWS, "ks", verbose=True)
    err = capsys.readouterr().err
    assert "info: prod/apps/web: not judged, declared under x\n" in err


def test_a_helm_release_shows_its_chart_at_its_version() -> None:
    row = HrRow(
        "dev",
        "kube-system",
        "cilium",
        "rendered",
        chart="cilium",
        version="1.16.5",
        source="HelmRepository/kube-system/cilium",
        documents=40,
    )
    assert listing.hr_cells(row) == [
        "dev",
        "kube-system/cilium",
        "cilium@1.16.5",
        "HelmRepository/kube-system/cilium",
        "-",
        "-",
        "40",
        "rendered",
    ]
    local = HrRow("dev", "media", "whoami", "skipped", chart="./charts/whoami", version="*")
    assert listing.hr_cells(local)[2] == "./charts/whoami"


def test_json_is_versioned_and_counts_every_status(capsys: pytest.CaptureFixture[str]) -> None:
    listing.print_json(ROWS, "ks", RendererInfo("kubectl", "v1.37.1"))
    payload = json.loads(capsys.readouterr().out)
    assert payload["schema"] == "harness.get/v1"
    assert payload["kind"] == "Kustomization"
    assert payload["counts"] == {"rendered": 1, "failed": 1, "skipped": 0, "not judged": 1}
    assert payload["items"][0] == {
        "cluster": "dev",
        "namespace": "flux-system",
        "name": "apps",
        "target": "dev/flux-system/apps",
        "path": "./apps",
        "source": "GitRepository/flux-system/flux-system",
        "depends_on": ["flux-system/platform", "infra/crds"],
        "suspend": False,
        "documents": 12,
        "status": "rendered",
        "reason": "",
    }
    assert payload["items"][1]["documents"] is None
