"""Blind spots are loud: a diff, a comment and a check say what they did not judge."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests import fluxrepo as fr
from tests.conftest import Result, run_harness
from tests.gitkit import commit_all, init

Cli = Callable[..., Result]


def _repo(tmp_path: Path, files: fr.Files) -> Path:
    root = init(tmp_path / "git")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit_all(root, "base")
    return root


def test_an_edit_no_rendered_target_reads_is_not_judged_and_says_so(
    tmp_path: Path, cli: Cli
) -> None:
    web = fr.app("apps/web", "web", "web")
    web["apps/web/kustomization.yaml"] = fr.kustomization(
        "namespace.yaml", "deployment.yaml", "missing.yaml", namespace="web"
    )  # broken on both sides: its files reach no rendered target
    repo = _repo(
        tmp_path,
        {**fr.cluster({"web": fr.flux_ks("web", "./apps/web")}), **web},
    )
    (repo / "apps/web/deployment.yaml").write_text(fr.deployment("web", image="nginx:1.28"))
    res = cli("diff", "--repo", repo, "-q")
    first = res.stdout.splitlines()[0]
    assert first.endswith("; not judged: 1 changed file no target reads"), first
    assert (
        "not judged: 1 changed file not covered by any rendered target: apps/web/deployment.yaml"
        in res.stdout
    )
    data = json.loads(cli("diff", "--repo", repo, "-q", "-o", "json").stdout)
    assert data["not_judged"]["uncovered_files"] == ["apps/web/deployment.yaml"]
    comment = cli("comment", "--repo", repo, "-q").stdout
    assert "> [!WARNING]\n> **Not judged**\n>\n> - 1 changed file not covered" in comment


def test_a_covered_edit_has_no_not_judged_line(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(
        tmp_path,
        {
            **fr.cluster({"web": fr.flux_ks("web", "./apps/web")}),
            **fr.app("apps/web", "web", "web"),
        },
    )
    (repo / "apps/web/deployment.yaml").write_text(fr.deployment("web", image="nginx:1.28"))
    res = cli("diff", "--repo", repo, "-q")
    assert "not judged" not in res.stdout
    data = json.loads(cli("diff", "--repo", repo, "-q", "-o", "json").stdout)
    assert data["not_judged"] == {
        "uncovered_files": [],
        "skipped": {},
        "skipped_reasons": {},
        "under_failed": {},
        "charts": [],
    }


def test_skipped_kustomizations_are_counted_by_diff_and_check(tmp_path: Path, cli: Cli) -> None:
    other = fr.flux_ks("vendor", "./deploy").replace("name: flux-system\n", "name: vendor-repo\n")
    repo = _repo(
        tmp_path,
        {
            **fr.cluster({"web": fr.flux_ks("web", "./apps/web"), "vendor": other}),
            **fr.app("apps/web", "web", "web"),
            "harness.yaml": (
                "outside_git:\n  '*':\n    sources:\n"
                "      GitRepository/flux-system/vendor-repo: external\n"
            ),
        },
    )
    assert run_harness("update", "--repo", repo, "-q").code == 0
    check = run_harness("check", "--repo", repo, "-q")
    assert check.code == 0, check.stdout + check.stderr
    assert (
        check.stdout.strip()
        .splitlines()[-1]
        .endswith("; 1 Kustomization not rendered (not judged)")
    )
    res = cli("diff", "--repo", repo)  # -q keeps errors and the verdict only: no info line
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("info:")]  # said once
    assert "dev/flux-system/vendor" in line and "GitRepository/flux-system/vendor-repo" in line
    assert "not judged: 1 Kustomization" not in res.stdout  # not a second time
    data = json.loads(cli("diff", "--repo", repo, "-q", "-o", "json").stdout)
    assert list(data["not_judged"]["skipped"]) == ["dev/flux-system/vendor"]
    assert sum(data["not_judged"]["skipped_reasons"].values()) == 1


def test_kustomizations_a_failed_parent_hides_are_counted(tmp_path: Path, cli: Cli) -> None:
    """The parent `apps` fails (a missing file), so `web` and `db`, which it declares, are
    never seen: a diff says so rather than only `1 pre-existing error`."""
    files = {
        **fr.cluster({"apps": fr.flux_ks("apps", "./apps")}),
        "apps/kustomization.yaml": fr.kustomization("web.yaml", "db.yaml", "missing.yaml"),
        "apps/web.yaml": fr.flux_ks("web", "./apps/web"),
        "apps/db.yaml": fr.flux_ks("db", "./apps/db"),
        **fr.app("apps/web", "web", "web"),
        **fr.app("apps/db", "db", "db"),
    }
    repo = _repo(tmp_path, files)
    res = cli("diff", "--repo", repo, "-q")
    assert (
        "not judged: 2 Kustomizations declared under failed targets, never rendered "
        "(dev/flux-system/apps: 2)" in res.stdout
    ), res.stdout
    data = json.loads(cli("diff", "--repo", repo, "-q", "-o", "json").stdout)
    assert data["not_judged"]["under_failed"] == {"dev/flux-system/apps": 2}
    run_harness("update", "--repo", repo, "-q")
    check = run_harness("check", "--repo", repo, "-q")
    assert check.code == 2  # the parent's own error
    assert (
        check.stdout.strip()
        .splitlines()[-1]
        .endswith("; 2 Kustomizations not rendered (not judged)")
    ), check.stdout


COMPONENT = (
    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
    "patches:\n  - path: replicas.yaml\n    target:\n      kind: Deployment\n"
)
REPLICAS = "- op: replace\n  path: /spec/replicas\n  value: {n}\n"


def test_files_read_through_flux_components_are_judged(tmp_path: Path, cli: Cli) -> None:
    """A component only `spec.components` pulls in: its patch file is read by the build
    Flux generates, so a change to it is a change, never a blind spot."""
    web = fr.flux_ks("web", "./apps/web") + "  components:\n    - ../../components/scale\n"
    repo = _repo(
        tmp_path,
        {
            **fr.cluster({"web": web}),
            **fr.app("apps/web", "web", "web"),
            "components/scale/kustomization.yaml": COMPONENT,
            "components/scale/replicas.yaml": REPLICAS.format(n=2),
        },
    )
    (repo / "components/scale/replicas.yaml").write_text(REPLICAS.format(n=3))
    data = json.loads(cli("diff", "--repo", repo, "-q", "-o", "json").stdout)
    assert data["not_judged"]["uncovered_files"] == []
    assert data["verdict_line"] == (
        "changed: 1 object changes in 1 cluster (1 target): 1 changed, 0 added, 0 removed"
    )
    assert "not judged" not in cli("diff", "--repo", repo, "-q").stdout
