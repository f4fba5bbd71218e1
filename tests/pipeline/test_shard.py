"""--shard K/N: the plan (units, costs, owners) and the union of shards equalling one run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.core import config as config_mod
from harness.core.model import Target
from harness.pipeline.shard import (
    FLUX_UNIT,
    ShardError,
    ShardSpec,
    Unit,
    assign,
    make_plan,
    stable_shard,
)
from harness.render import discover
from tests.conftest import Result

Cli = Callable[..., Result]


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "a/b", "3", "1/2/3", "-1/2", ""])
def test_bad_specs_are_refused(text: str) -> None:
    with pytest.raises(ShardError, match="--shard"):
        ShardSpec.parse(text)


def test_specs_parse() -> None:
    assert ShardSpec.parse("2/4") == ShardSpec(2, 4)
    assert ShardSpec.parse(" 1 / 1 ") == ShardSpec(1, 1)
    assert str(ShardSpec(3, 5)) == "3/5"


def test_assignment_is_deterministic_and_balanced_by_cost() -> None:
    units = [Unit(f"path:u{i}", 1.0) for i in range(12)] + [Unit("flux", 9.0)]
    owners = assign(units, 3)
    assert owners == assign(list(reversed(units)), 3)  # input order does not matter
    assert owners["flux"] == 1  # the most expensive unit goes first, to shard 1
    load = {k: sum(u.cost for u in units if owners[u.name] == k) for k in (1, 2, 3)}
    assert load == {1: 9.0, 2: 6.0, 3: 6.0}


# Every CI job computes these in its own process, on its own machine: a value that moved
# (a salted hash, a changed digest prefix) sends a target to two shards or none. Pinned:
# the first 8 bytes of sha256(unit) as a big-endian integer, mod N, plus 1.
PINNED = {
    "path:apps/a": [1, 3, 3, 2],
    "flux": [2, 3, 2, 5],
    "path:x": [2, 3, 2, 1],
    "helm:prod/media/whoami": [2, 3, 2, 2],
    "path:platform/cilium": [1, 2, 3, 3],
}


def test_an_unknown_unit_goes_to_a_pinned_shard() -> None:
    for unit, shards in PINNED.items():
        assert [stable_shard(unit, n) for n in (2, 3, 4, 7)] == shards, unit
    assert {stable_shard(f"path:x{i}", 4) for i in range(50)} == {1, 2, 3, 4}


def test_every_example_target_has_exactly_one_owner(example_copy: Path) -> None:
    cfg = config_mod.load(example_copy)
    paths = discover.path_targets(cfg)
    plans = [make_plan(ShardSpec(k, 4), cfg, paths) for k in (1, 2, 3, 4)]
    targets = [*paths, Target("dev/flux-system/apps", "flux", example_copy, "dev")]
    for target in targets:
        assert sum(p.owns(target) for p in plans) == 1, target.name
    assert sum(p.owns_flux() for p in plans) == 1
    assert any(FLUX_UNIT in p.owned_units() for p in plans)
    loads = [len(p.owned_units()) for p in plans]
    assert max(loads) - min(loads) <= len(paths) // 2


def test_configured_clusters_are_units_of_their_own(example_copy: Path) -> None:
    config_file = example_copy / "harness.yaml"
    config_file.write_text(config_file.read_text() + "clusters:\n- clusters/dev\n- clusters/prod\n")
    cfg = config_mod.load(example_copy)
    plans = [make_plan(ShardSpec(k, 2), cfg, discover.path_targets(cfg)) for k in (1, 2)]
    dev = Target("dev/flux-system/apps", "flux", example_copy, "dev")
    prod = Target("prod/flux-system/apps", "flux", example_copy, "prod")
    assert [p.owns(dev) for p in plans] != [p.owns(prod) for p in plans]  # one each
    dev_dir = example_copy / "clusters" / "dev"
    assert [p.owns_cluster_dir(dev_dir, example_copy) for p in plans].count(True) == 1
    elsewhere = Path("/checkout") / "clusters" / "dev"  # the same cluster at a diff's base
    assert [p.owns_cluster_dir(elsewhere, Path("/checkout")) for p in plans].count(True) == 1


def _json(res: Result) -> dict[str, Any]:
    assert res.code in (0, 1), res.stderr
    data: dict[str, Any] = json.loads(res.stdout)
    return data


@pytest.mark.slow
def test_union_of_four_check_shards_is_the_unsharded_check(
    example_copy: Path, cli: Cli, tmp_path: Path
) -> None:
    # a drift in a path target and in the Flux targets built from it
    deployment = example_copy / "platform" / "oauth2-proxy" / "deployment.yaml"
    deployment.write_text(deployment.read_text().replace("${HA_REPLICAS}", "3", 1))
    full = cli("check", "--repo", example_copy, "-o", "json")
    assert full.code == 1, full.stderr
    files = []
    names: list[str] = []
    for k in range(1, 5):
        res = cli("check", "--repo", example_copy, "-o", "json", "--shard", f"{k}/4")
        data = _json(res)
        assert data["shard"]["index"] == k and data["shard"]["total"] == 4
        names += [t["name"] for t in data["targets"]]
        path = tmp_path / f"shard-{k}.json"
        path.write_text(res.stdout)
        files.append(path)
    assert sorted(names) == sorted(t["name"] for t in _json(full)["targets"])  # a partition
    merged = cli("merge", "--repo", example_copy, "-o", "json", *reversed(files))
    assert merged.code == full.code
    assert merged.stdout == full.stdout
    text = cli("merge", "--repo", example_copy, *files)
    assert text.stdout == cli("check", "--repo", example_copy).stdout


@pytest.mark.slow
def test_update_shards_merge_into_the_unsharded_goldens(
    example_copy: Path, cli: Cli, tmp_path: Path
) -> None:
    config_file = example_copy / "harness.yaml"
    checkout = example_copy.parent.parent  # goldens stay inside it
    whole, merged = checkout / "whole", checkout / "merged"
    config_file.write_text(f"goldens: {whole}\n")
    assert cli("update", "--repo", example_copy, "-q").code == 0
    files = []
    for k in (1, 2, 3):
        res = cli("update", "--repo", example_copy, "-q", "--shard", f"{k}/3")
        assert res.code == 0, res.stderr
        path = tmp_path / f"u{k}.json"
        path.write_text(res.stdout)
        files.append(path)
    assert not merged.exists()  # a shard never writes partial goldens
    config_file.write_text(f"goldens: {merged}\n")
    assert cli("merge", "--repo", example_copy, *files).code == 0
    written = sorted(p.relative_to(whole) for p in whole.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(merged) for p in merged.rglob("*") if p.is_file())
    for rel in written:
        assert (whole / rel).read_bytes() == (merged / rel).read_bytes(), rel
