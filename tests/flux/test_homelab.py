"""examples/homelab end to end: both clusters, strict mode, and dev vs prod explained by variables.

The dev/prod proof renders a third overlay, `clusters/markers`, built from dev's own
kustomization file with every cluster-vars value replaced by a marker (`zzNAMEzz`). A scalar
that differs between dev and prod must then be that marker text with the dev values put in
on one side and the prod values on the other: the difference came from substitution, and
from nothing else.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.core.model import TargetResult
from tests.conftest import EXAMPLE
from tests.flux.conftest import render_repo

pytestmark = pytest.mark.skipif(
    not (EXAMPLE / "clusters" / "dev").is_dir(), reason="examples/homelab not present"
)
MARK = re.compile(r"zz([A-Za-z_][A-Za-z0-9_]*)zz")


def cluster_vars(overlay: dict[str, Any]) -> dict[str, str]:
    for patch in overlay.get("patches", []):
        body = yaml.safe_load(patch["patch"])
        if isinstance(body, dict) and body.get("metadata", {}).get("name") == "cluster-vars":
            return {str(k): str(v) for k, v in body["data"].items()}
    raise AssertionError("overlay does not patch cluster-vars")


def add_marker_cluster(repo: Path) -> dict[str, dict[str, str]]:
    """Write clusters/markers; return the dev and prod variable values."""
    dev = yaml.safe_load((repo / "clusters/dev/kustomization.yaml").read_text())
    prod = yaml.safe_load((repo / "clusters/prod/kustomization.yaml").read_text())
    values = {"dev": cluster_vars(dev), "prod": cluster_vars(prod)}
    for patch in dev["patches"]:
        body = yaml.safe_load(patch["patch"])
        if isinstance(body, dict) and body.get("metadata", {}).get("name") == "cluster-vars":
            body["data"] = {k: f"zz{k}zz" for k in body["data"]}
            patch["patch"] = yaml.safe_dump(body, sort_keys=False)
    out = repo / "clusters/markers"
    out.mkdir()
    (out / "kustomization.yaml").write_text(yaml.safe_dump(dev, sort_keys=False))
    sync = (repo / "clusters/dev/sync.yaml").read_text().replace("clusters/dev", "clusters/markers")
    (out / "sync.yaml").write_text(sync)
    return values


def as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def expand(template: str, values: dict[str, str]) -> str:
    return MARK.sub(lambda m: values[m.group(1)], template)


def explained(
    dev: Any, prod: Any, marked: Any, values: dict[str, dict[str, str]], where: str
) -> int:
    """Number of differing scalars; each must be the marker text with dev/prod values in."""
    if isinstance(dev, dict):
        assert isinstance(prod, dict) and isinstance(marked, dict), where
        assert list(dev) == list(prod) == list(marked), where
        return sum(explained(dev[k], prod[k], marked[k], values, f"{where}.{k}") for k in dev)
    if isinstance(dev, list):
        assert isinstance(prod, list) and isinstance(marked, list), where
        assert len(dev) == len(prod) == len(marked), where
        return sum(
            explained(d, p, m, values, f"{where}[{i}]")
            for i, (d, p, m) in enumerate(zip(dev, prod, marked, strict=True))
        )
    if dev == prod:
        return 0
    assert isinstance(marked, str) and MARK.search(marked), (
        f"{where}: {dev!r} vs {prod!r} did not come from a cluster variable"
    )
    assert expand(marked, values["dev"]) == as_text(dev), where
    assert expand(marked, values["prod"]) == as_text(prod), where
    return 1


ROOT = "kustomize.toolkit.fluxcd.io/Kustomization/flux-system/flux-system"


def loaded(result: TargetResult) -> list[tuple[str, Any]]:
    """Documents; the root Kustomization's own spec.path names its cluster, by design."""
    assert result.ok, f"{result.name}: {result.error}"
    out = []
    for doc in result.documents:
        obj = yaml.safe_load(doc.text)
        if str(doc.id) == ROOT:
            assert obj["spec"]["path"] == f"./clusters/{result.target.cluster}"
            obj["spec"]["path"] = "<cluster dir>"
        out.append((str(doc.id), obj))
    return out


@pytest.fixture(scope="module")
def example_results() -> dict[str, TargetResult]:
    return render_repo(EXAMPLE)


def test_both_clusters_render_every_kustomization_strictly(
    example_results: dict[str, TargetResult],
) -> None:
    clusters = {r.target.cluster for r in example_results.values()}
    assert clusters == {"dev", "prod"}
    per_cluster = {
        c: sorted(n.split("/", 1)[1] for n, r in example_results.items() if r.target.cluster == c)
        for c in clusters
    }
    assert per_cluster["dev"] == per_cluster["prod"]
    assert "flux-system/flux-system" in per_cluster["dev"]
    assert len(per_cluster["dev"]) >= 5
    failed = {n: r.error for n, r in example_results.items() if not r.ok}
    assert failed == {}
    for result in example_results.values():
        assert result.documents, f"{result.name} renders nothing"


def test_dev_and_prod_differ_only_in_substituted_values(tmp_path: Path) -> None:
    repo = tmp_path / "homelab"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns(".git"))
    config = repo / "harness.yaml"  # no goldens beside the copy: keep them inside it
    config.write_text(config.read_text().replace("goldens: ../../goldens", "goldens: goldens"))
    values = add_marker_cluster(repo)
    results = render_repo(repo, clusters=("clusters/dev", "clusters/prod", "clusters/markers"))
    names = sorted(n.split("/", 1)[1] for n in results if n.startswith("dev/"))
    differing = 0
    for name in names:
        dev = loaded(results[f"dev/{name}"])
        prod = loaded(results[f"prod/{name}"])
        marked = loaded(results[f"markers/{name}"])
        assert [i for i, _ in dev] == [i for i, _ in prod], name
        assert len(marked) == len(dev), name
        for (doc_id, d), (_, p), (_, m) in zip(dev, prod, marked, strict=True):
            differing += explained(d, p, m, values, f"{name}: {doc_id}")
    assert differing > 0, "dev and prod should differ somewhere"
