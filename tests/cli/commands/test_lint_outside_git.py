"""`harness lint` resolves sources and substituteFrom objects as the renderer does: objects
and sources declared in harness.yaml `outside_git` are known to the hazard rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import Result
from tests.flux.conftest import cm, docs, flux_ks, ks_file
from tests.gitkit import commit_all, init

Cli = Callable[..., Result]

SECRETS = {"kind": "Secret", "name": "cluster-secrets"}
TEAM_SOURCE = yaml.safe_dump(
    {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "team", "namespace": "flux-system"},
        "spec": {"url": "https://example.invalid/team.git"},
    }
)


def _outside(cluster: str = "home", **secret: Any) -> dict[str, Any]:
    decl = {"kind": "Secret", "namespace": "flux-system", "name": "cluster-secrets", **secret}
    return {
        "outside_git": {
            cluster: {
                "objects": [decl],
                "sources": {"GitRepository/flux-system/team": "external"},
            }
        }
    }


def _repo(tmp_path: Path, config: dict[str, Any], web: str = "web.${SECRET_DOMAIN}") -> Path:
    """A cluster whose `apps` substitutes from a Secret created at bootstrap (not in git),
    and whose `team` Kustomization comes from another team's repo. The team's `spec.path`
    also exists in this repo, with a `${}` nothing here defines: reading it would judge the
    wrong repo's files."""
    root = init(tmp_path / "git")
    files = {
        "clusters/home/kustomization.yaml": ks_file("apps.yaml", "team.yaml"),
        "clusters/home/apps.yaml": flux_ks(
            "apps", "./apps", postBuild={"substituteFrom": [SECRETS]}
        ),
        "clusters/home/team.yaml": docs(TEAM_SOURCE, flux_ks("team", "./deploy", source="team")),
        "apps/kustomization.yaml": ks_file("web.yaml"),
        "apps/web.yaml": cm("web", "web", host=web, user="${DB_USER:=app}"),
        "deploy/other.yaml": cm("other", "other", url="${ONLY_IN_THE_TEAM_REPO}"),
        "harness.yaml": yaml.safe_dump({"goldens": "goldens", **config}),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit_all(root, "base")
    return root


def _lint(cli: Cli, repo: Path) -> tuple[Result, dict[str, Any]]:
    res = cli("lint", "--repo", repo, "--output", "json")
    return res, json.loads(res.stdout)


def test_a_declared_secret_and_an_external_source_give_no_finding(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, _outside(keys={"SECRET_DOMAIN": "placeholder-secret-domain"}))
    res, data = _lint(cli, repo)
    assert res.code == 0, res.stderr + res.stdout
    assert data["errors"] == [] and data["findings"] == [], data["findings"]
    assert data["unchecked"] == [], "an external source is skipped, not 'source unknown'"
    assert "home/flux-system/team: skipped" in res.stderr
    # apps' variables were checked against the declaration, not skipped as unknowable
    assert "substitution gate: 2 assertions, 0 hazards" in cli("lint", "--repo", repo).stdout


def test_a_variable_the_declaration_lacks_is_named(tmp_path: Path, cli: Cli) -> None:
    """The declared keys are what the Secret defines: a misspelt variable is an unset one
    (the render fails on it too), found because the declaration is known."""
    repo = _repo(
        tmp_path,
        _outside(keys={"SECRET_DOMAIN": "placeholder-secret-domain"}),
        web="web.${SECRET_DOMIAN}",
    )
    res, data = _lint(cli, repo)
    assert res.code == 2, "the render fails on the undeclared key"
    ids = [f["id"] for f in data["findings"]]
    assert ids == ["substitution:home:apps:SECRET_DOMIAN:unset"], ids
    assert "Secret/cluster-secrets" in data["findings"][0]["message"]


def test_an_any_key_declaration_defines_every_variable(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, _outside(any_key="placeholder"), web="web.${SECRET_DOMIAN}")
    res, data = _lint(cli, repo)
    assert res.code == 0, res.stderr + res.stdout
    assert data["findings"] == []


def test_a_declaration_under_the_clusters_path_applies(tmp_path: Path, cli: Cli) -> None:
    """A cluster answers to its directory's path as well as its name, as in the renderer."""
    repo = _repo(tmp_path, _outside("clusters/home", keys={"SECRET_DOMAIN": "x"}))
    res, data = _lint(cli, repo)
    assert res.code == 0, res.stderr + res.stdout
    assert data["findings"] == [] and data["unchecked"] == []


def test_a_source_mapped_to_a_checkout_is_judged_there(tmp_path: Path, cli: Cli) -> None:
    """A source mapped to a local checkout renders from it, and lint reads the same files:
    the `${}` in the checkout is reported with its path, the repo's own `deploy/` is not."""
    config = _outside(keys={"SECRET_DOMAIN": "x"})
    config["outside_git"]["home"]["sources"] = {"GitRepository/flux-system/team": "vendor/team"}
    repo = _repo(tmp_path, config)
    (repo / "vendor/team/deploy").mkdir(parents=True)
    (repo / "vendor/team/deploy/team.yaml").write_text(cm("team", "team", note="${TEAM_NOTE}"))
    res, data = _lint(cli, repo)
    assert res.code == 0, res.stderr + res.stdout
    assert [f["id"] for f in data["findings"]] == ["substitution:home:team:TEAM_NOTE:literal"]
    assert "vendor/team/deploy/team.yaml" in data["findings"][0]["message"]


def test_skipped_kustomizations_are_one_line_once_per_run(tmp_path: Path, cli: Cli) -> None:
    """Four Kustomizations built from an external source: every verb says so in one line
    with a count, once (not once per side of a diff); -v, the JSON and the comment list them."""
    root = init(tmp_path / "git")
    teams = [flux_ks(f"team-{c}", f"./deploy/{c}", source="team") for c in "abcd"]
    files = {
        "clusters/home/kustomization.yaml": ks_file("apps.yaml", "team.yaml"),
        "clusters/home/apps.yaml": flux_ks("apps", "./apps"),
        "clusters/home/team.yaml": docs(TEAM_SOURCE, *teams),
        "apps/kustomization.yaml": ks_file("web.yaml"),
        "apps/web.yaml": cm("web", "web", v="1"),
        "harness.yaml": yaml.safe_dump(
            {
                "goldens": "goldens",
                "outside_git": {
                    "home": {"sources": {"GitRepository/flux-system/team": "external"}}
                },
            }
        ),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit_all(root, "base")
    (root / "apps/web.yaml").write_text(cm("web", "web", v="2"))
    line = (
        "info: 4 Flux Kustomizations not rendered, their source is external (harness.yaml "
        "outside_git): home/flux-system/team-a, home/flux-system/team-b, "
        "home/flux-system/team-c and 1 more (-v lists each)"
    )
    for verb in ("diff", "lint", "comment"):
        res = cli(verb, "--repo", root)
        assert [ln for ln in res.stderr.splitlines() if ln.startswith("info:")] == [line], verb
    verbose = cli("diff", "--repo", root, "-v").stderr.splitlines()
    assert [ln for ln in verbose if "skipped" in ln] == [
        f"info: home/flux-system/team-{c}: skipped, source GitRepository/flux-system/team is "
        "external (harness.yaml outside_git)"
        for c in "abcd"
    ]
    data = json.loads(cli("diff", "--repo", root, "-o", "json").stdout)
    assert [s["target"] for s in data["skipped"]] == [f"home/flux-system/team-{c}" for c in "abcd"]
    comment = cli("comment", "--repo", root).stdout
    assert "> **Not judged**: 4 Flux Kustomizations skipped (" in comment
    assert "<summary>Not judged: 4 Flux Kustomizations skipped</summary>" in comment
