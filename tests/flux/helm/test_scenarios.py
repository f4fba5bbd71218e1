"""The issue's scenarios through the CLI (check, diff, comment, lint, update), with real git
repos, the real kubectl, and a real HTTP chart repository on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import gitkit
from tests.conftest import write_tree
from tests.flux.helm.charts import (
    cluster_repo,
    configmap,
    helm_release,
    helm_repository,
    local_chart,
    repo_chart,
)
from tests.flux.helm.conftest import ChartRepo, package

Cli = Callable[..., Any]


@pytest.fixture
def served(tmp_path: Path, chart_repo: ChartRepo) -> ChartRepo:
    """Versions 1.0.0 and 2.0.0 of `demo`; 2.0.0 drops the templated Gadget CRD."""
    chart_repo.publish(package(tmp_path / "v1", "1.0.0"))
    chart_repo.publish(package(tmp_path / "v2", "2.0.0", gadget_crd=False))
    return chart_repo


def _git_repo(tmp_path: Path, base: dict[str, str], head: dict[str, str]) -> Path:
    repo = gitkit.init(tmp_path / "gitops")
    write_tree(repo, base)
    gitkit.commit_all(repo, "base")
    for rel in base.keys() - head.keys():
        (repo / rel).unlink()
    write_tree(repo, head)
    return repo


def _diff(cli: Cli, repo: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    res = cli("diff", "--repo", repo, "--base", "HEAD", "-q", "-o", "json", *extra)
    return res.code, json.loads(res.stdout)


def _target(payload: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in payload["targets"] if t["name"] == name)


def test_chart_bump_changes_the_deployment_and_removes_a_crd(
    tmp_path: Path, served: ChartRepo, cli: Cli
) -> None:
    sources = [helm_repository(served.url)]
    repo = _git_repo(
        tmp_path,
        cluster_repo(helm_release(chart=repo_chart("1.0.0")), sources=sources),
        cluster_repo(helm_release(chart=repo_chart("2.0.0")), sources=sources),
    )
    code, payload = _diff(cli, repo, "--fail-on-hazard", "error")
    assert code == 1
    web = _target(payload, "prod/apps/web")
    assert web["kind"] == "helm" and web["status"] == "changed"
    assert [r["id"] for r in web["removed"]] == [
        "apiextensions.k8s.io/CustomResourceDefinition/gadgets.demo.example.com"
    ]
    changed = {c["id"] for c in web["changed"]}
    assert "apps/Deployment/apps/web-web" in changed
    [finding] = [f for f in payload["findings"] if f["rule"] == "helm-delete"]
    assert finding["severity"] == "error"
    assert "Kubernetes deletes every Gadget" in finding["message"]
    # the crds/ CRD stays: it is in both versions, and Helm never deletes crds/ anyway
    assert not any("widgets" in r["id"] for r in web["removed"])

    comment = cli("comment", "--repo", repo, "--base", "HEAD", "-q")
    assert comment.code == 0, comment.stderr
    body = comment.stdout
    assert "| helm: prod | `prod/apps/web` | 6 -> 5 | +0 | -1 | ~2 |" in body
    assert "helm-delete" in body
    # the release's own section comes after the Flux targets'
    assert body.index("<summary>prod/apps/web: ") > body.index("prod: flux-system/apps: ")

    text = cli("diff", "--repo", repo, "--base", "HEAD", "-q")
    assert "ghcr.io/example/web:1.0.0 -> ghcr.io/example/web:2.0.0" in text.stdout


def test_values_change_shows_in_the_rendered_objects(tmp_path: Path, cli: Cli) -> None:
    repo = _git_repo(
        tmp_path,
        cluster_repo(helm_release(chart=local_chart(), values={"replicas": 1})),
        cluster_repo(helm_release(chart=local_chart(), values={"replicas": 3})),
    )
    code, payload = _diff(cli, repo, "--expect", "no-change")
    assert code == 1
    web = _target(payload, "prod/apps/web")
    assert [c["id"] for c in web["changed"]] == ["apps/Deployment/apps/web-web"]
    assert web["added"] == [] and web["removed"] == []
    text = cli("diff", "--repo", repo, "--base", "HEAD", "-q").stdout
    assert "spec.replicas: 1 -> 3" in text


def test_values_from_configmap_in_another_kustomization(tmp_path: Path, cli: Cli) -> None:
    release = helm_release(
        chart=local_chart(), valuesFrom=[{"kind": "ConfigMap", "name": "web-values"}]
    )

    def files(greeting: str) -> dict[str, str]:
        cm = configmap("web-values", "apps", {"values.yaml": f"greeting: {greeting}\n"})
        return cluster_repo(release, config=[cm])

    repo = _git_repo(tmp_path, files("hello"), files("bonjour"))
    _, payload = _diff(cli, repo)
    web = _target(payload, "prod/apps/web")
    assert [c["id"] for c in web["changed"]] == ["apps/Deployment/apps/web-web"]
    assert _target(payload, "prod/flux-system/infra")["status"] == "changed"
    assert _target(payload, "prod/flux-system/apps")["status"] == "match"
    text = cli("diff", "--repo", repo, "--base", "HEAD", "-q").stdout
    assert "value: hello -> bonjour" in text


def test_helm_release_moved_between_kustomizations_is_a_pure_move(tmp_path: Path, cli: Cli) -> None:
    release = helm_release(chart=local_chart(), values={"replicas": 2})
    base = cluster_repo(release)
    head = cluster_repo(release)
    # the HelmRelease moves from Kustomization apps to Kustomization infra
    head["apps/kustomization.yaml"] = base["apps/kustomization.yaml"].replace(
        "- release.yaml\n", ""
    )
    head["infra/kustomization.yaml"] = base["infra/kustomization.yaml"] + "- release.yaml\n"
    head["infra/release.yaml"] = head.pop("apps/release.yaml")
    repo = _git_repo(tmp_path, base, head)
    code, payload = _diff(cli, repo, "--expect", "pure-move")
    assert code == 0, payload["reasons"]
    assert _target(payload, "prod/apps/web")["status"] == "match"
    moved = [m for m in payload["moves"] if "HelmRelease/apps/web" in json.dumps(m)]
    assert moved, payload["moves"]
    assert not [f for f in payload["findings"] if f["rule"] == "helm-delete"]


def test_unreachable_chart_unchanged_on_both_sides_is_not_judged(tmp_path: Path, cli: Cli) -> None:
    sources = [helm_repository("http://127.0.0.1:9")]
    files = cluster_repo(helm_release(chart=repo_chart("1.0.0")), sources=sources)
    repo = _git_repo(tmp_path, files, files)
    res = cli("diff", "--repo", repo, "--base", "HEAD", "-q", "-o", "json")
    assert res.code == 0, res.stdout
    payload = json.loads(res.stdout)
    assert payload["errors"] == []
    [unjudged] = payload["not_judged"]["charts"]
    assert unjudged["sources"] == ["HelmRepository/flux-system/charts"]
    assert unjudged["url"] == "http://127.0.0.1:9"
    assert unjudged["targets"] == ["prod/apps/web"]
    assert "127.0.0.1:9" in unjudged["message"]
    assert payload["summary"]["counts"]["targets_not_judged"] == 1
    web = _target(payload, "prod/apps/web")
    assert web["removed"] == [] and web["status"] == "error"
    text = cli("diff", "--repo", repo, "--base", "HEAD", "-q")
    assert text.code == 0
    [line] = [ln for ln in text.stdout.splitlines() if ln.startswith("info: not judged")]
    assert line.startswith(
        "info: not judged: 1 helm target(s) whose chart from http://127.0.0.1:9 "
        "(HelmRepository/flux-system/charts) cannot be fetched on either side"
    )
    assert "1 not judged (chart unreachable)" in text.stdout
    comment = cli("comment", "--repo", repo, "--base", "HEAD", "-q")
    assert comment.code == 0 and "Charts not fetched on either side" in comment.stdout
    # a failed target keeps its chart, version and source in JSON
    render = cli("render", "--repo", repo, "-q", "-o", "json")
    assert render.code == 2
    failed = next(t for t in json.loads(render.stdout)["targets"] if t["name"] == "prod/apps/web")
    assert (failed["chart"], failed["version"], failed["source"]) == (
        "demo",
        "1.0.0",
        "HelmRepository/flux-system/charts",
    )
    assert failed["error"].startswith("HelmRepository/flux-system/charts: ")


def test_unreachable_chart_whose_release_changed_is_an_error(tmp_path: Path, cli: Cli) -> None:
    sources = [helm_repository("http://127.0.0.1:9")]
    base = cluster_repo(helm_release(chart=repo_chart("1.0.0")), sources=sources)
    head = cluster_repo(
        helm_release(chart=repo_chart("1.0.0"), values={"replicas": 2}), sources=sources
    )
    repo = _git_repo(tmp_path, base, head)
    res = cli("diff", "--repo", repo, "--base", "HEAD", "-q", "-o", "json")
    assert res.code == 2
    payload = json.loads(res.stdout)
    assert payload["not_judged"]["charts"] == []
    errors = [e for e in payload["errors"] if e["target"] == "prod/apps/web"]
    assert {e["side"] for e in errors} == {"base", "head"}
    for error in errors:
        assert error["message"].startswith("HelmRepository/flux-system/charts: ")
    # every other target still rendered
    assert _target(payload, "prod/flux-system/apps")["status"] == "changed"
    check = cli("check", "--repo", repo, "-q")
    assert check.code == 2
    assert "prod/apps/web" in check.stdout + check.stderr


def test_goldens_check_offline_and_lint(
    tmp_path: Path, served: ChartRepo, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = cluster_repo(
        helm_release(chart=repo_chart("1.0.0")), sources=[helm_repository(served.url)]
    )
    repo = write_tree(tmp_path / "gitops", files)
    assert cli("update", "--repo", repo, "-q").code == 0
    golden = repo / "goldens" / "helm" / "prod" / "apps" / "web.yaml"
    assert golden.is_file()
    text = golden.read_text()
    assert "kind: Deployment" in text and "chart-default-token" not in text
    assert cli("check", "--repo", repo, "-q").code == 0
    lint = cli("lint", "--repo", repo, "-q", "-o", "json")
    assert lint.code == 0, lint.stdout
    assert json.loads(lint.stdout)["errors"] == []
    # the server goes away: --offline still works from the chart cache
    served.server.shutdown()
    served.server.server_close()
    assert cli("check", "--repo", repo, "-q", "--offline").code == 0
    # online, the unreachable repository fails the target: an error, never a mass deletion
    down = cli("check", "--repo", repo, "-q", "-o", "json")
    assert down.code == 2
    payload = json.loads(down.stdout)
    web = _target(payload, "prod/apps/web")
    assert web["status"] == "error" and web["removed"] == []
    # a cold cache with --offline fails that target clearly
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cold"))
    cold = cli("check", "--repo", repo, "-q", "--offline")
    assert cold.code == 2
    assert "--offline: chart demo 1.0.0" in cold.stdout + cold.stderr
    # without --helm no helm target exists
    listing = cli("render", "--repo", repo, "-q", "--no-helm")
    assert "prod/apps/web" not in listing.stdout


@pytest.mark.parametrize(
    ("policy", "expected"), [(None, ["warning"]), ("Create", ["warning"]), ("CreateReplace", [])]
)
def test_crds_dir_change_under_upgrade_crds_skip(
    tmp_path: Path, cli: Cli, policy: str | None, expected: list[str]
) -> None:
    spec: dict[str, Any] = {"upgrade": {"crds": policy}} if policy else {}
    base = cluster_repo(helm_release(chart=local_chart(), **spec))
    head = dict(base)
    head["charts/demo/crds/widgets.yaml"] = base["charts/demo/crds/widgets.yaml"].replace(
        "type: object", "type: object\n          x-kubernetes-preserve-unknown-fields: true"
    )
    repo = _git_repo(tmp_path, base, head)
    _, payload = _diff(cli, repo)
    web = _target(payload, "prod/apps/web")
    assert [c["id"] for c in web["changed"]] == [
        "apiextensions.k8s.io/CustomResourceDefinition/widgets.demo.example.com"
    ]
    found = [f for f in payload["findings"] if f["rule"] == "helm-crd-upgrade"]
    assert [f["severity"] for f in found] == expected
    if found:
        assert f"upgrade.crds: {policy or 'Skip'}" in found[0]["message"]


def test_crd_moved_out_of_the_chart_into_a_kustomization(tmp_path: Path, cli: Cli) -> None:
    base = cluster_repo(helm_release(chart=local_chart()))
    head = cluster_repo(helm_release(chart=local_chart()), gadget_crd=False)
    head["infra/kustomization.yaml"] = base["infra/kustomization.yaml"] + "- gadget-crd.yaml\n"
    head["infra/gadget-crd.yaml"] = base["charts/demo/templates/crd-gadget.yaml"]
    repo = _git_repo(tmp_path, base, head)
    _, payload = _diff(cli, repo)
    [finding] = [f for f in payload["findings"] if f["rule"] == "helm-delete"]
    assert finding["severity"] == "error"
    assert "for prod/flux-system/infra: the next helm upgrade deletes it" in finding["message"]


def test_bad_helm_binary_is_one_error_line(tmp_path: Path, cli: Cli) -> None:
    repo = write_tree(tmp_path / "gitops", cluster_repo(helm_release(chart=local_chart())))
    res = cli("render", "--repo", repo, "-q", "--helm-binary", tmp_path / "no-helm")
    assert res.code == 2
    assert res.stderr.strip() == f"error: --helm-binary {tmp_path / 'no-helm'}: no such executable"
