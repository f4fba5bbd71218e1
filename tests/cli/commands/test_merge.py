"""`harness merge`: diff shards of a cross-target change give the unsharded diff and comment;
shard files that do not make one run are refused with exit 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, configmap, kustomization
from tests.gitkit import commit_all
from tests.homelab import cilium_transition

Cli = Callable[..., Result]


def shard_files(cli: Cli, repo: Path, out: Path, verb: str, total: int, *args: str) -> list[Path]:
    files = []
    for k in range(1, total + 1):
        res = cli(verb, "--repo", repo, "-o", "json", "--shard", f"{k}/{total}", *args)
        assert res.code in (0, 1), res.stderr
        path = out / f"{verb}-{k}.json"
        path.write_text(res.stdout)
        files.append(path)
    return files


@pytest.mark.slow
def test_diff_shards_merge_into_the_unsharded_diff_and_comment(
    homelab: Path, cli: Cli, tmp_path: Path
) -> None:
    root = homelab.parent.parent
    # configured clusters are units of their own, located in two checkouts (base and head)
    config_file = homelab / "harness.yaml"
    config_file.write_text(config_file.read_text() + "clusters: [clusters/dev, clusters/prod]\n")
    commit_all(root, "base")
    cilium_transition(homelab)  # objects move between Kustomizations: shards must not split it
    args = ("--base", "HEAD", "--fail-on-diff")
    full = cli("diff", "--repo", homelab, "-o", "json", *args)
    assert full.code == 1, full.stderr
    assert json.loads(full.stdout)["moves"], "the scenario must move objects"
    files = shard_files(cli, homelab, tmp_path, "diff", 2, *args)
    merged = cli("merge", "--repo", homelab, "-o", "json", *files)
    assert (merged.code, merged.stdout) == (full.code, full.stdout)
    comment = cli("comment", "--repo", homelab, *args)
    merged_comment = cli("merge", "--repo", homelab, "--comment", *files)
    assert (merged_comment.code, merged_comment.stdout) == (comment.code, comment.stdout)


def test_merge_refuses_what_is_not_one_run(
    make_repo: Callable[[dict[str, str]], Path], cli: Cli, tmp_path: Path
) -> None:
    files = {f"{d}/kustomization.yaml": kustomization("cm.yaml") for d in "abcd"}
    files |= {f"{d}/cm.yaml": configmap(d) for d in "abcd"}
    example_copy = make_repo({**files, "harness.yaml": "goldens: goldens\n"})
    renders = shard_files(cli, example_copy, tmp_path, "render", 2)
    missing = cli("merge", "--repo", example_copy, renders[0])
    assert missing.code == 2 and "shard(s) 2/2 missing" in missing.stderr
    twice = cli("merge", "--repo", example_copy, renders[0], renders[0], renders[1])
    assert twice.code == 2 and "also in" in twice.stderr
    (tmp_path / "three").mkdir()
    other = shard_files(cli, example_copy, tmp_path / "three", "render", 3)
    mixed = cli("merge", "--repo", example_copy, renders[0], other[1])
    assert mixed.code == 2 and "shard of another run" in mixed.stderr
    plain = tmp_path / "plain.json"
    plain.write_text(cli("render", "--repo", example_copy, "-o", "json").stdout)
    no_block = cli("merge", "--repo", example_copy, plain)
    assert no_block.code == 2 and "no `shard` block" in no_block.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    bad = cli("merge", "--repo", example_copy, broken)
    assert bad.code == 2 and f"{broken}: cannot read shard output" in bad.stderr
    comment = cli("merge", "--repo", example_copy, "--comment", *renders)
    assert comment.code == 2 and "--comment needs shards of `harness diff`" in comment.stderr
    merged = cli("merge", "--repo", example_copy, "-o", "json", *renders)
    assert merged.stdout == cli("render", "--repo", example_copy, "-o", "json").stdout


def test_a_bad_shard_value_exits_2(example_copy: Path, cli: Cli) -> None:
    res = cli("check", "--repo", example_copy, "--shard", "5/4")
    assert res.code == 2 and "--shard 5/4" in res.stderr
