"""`harness init`: starter harness.yaml with TODO declarations, then goldens, then check is 0."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from harness.core.outside import placeholder
from tests.conftest import Result
from tests.flux.conftest import cm, docs, flux_ks, ks_file

Repo = Callable[[dict[str, str | bytes]], Path]
Cli = Callable[..., Result]

SECRETS = {"kind": "Secret", "name": "cluster-secrets"}
SETTINGS = {"kind": "ConfigMap", "name": "cluster-settings"}
TEAM_SOURCE = yaml.safe_dump(
    {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "team", "namespace": "flux-system"},
        "spec": {"url": "https://example.invalid/team.git"},
    }
)


def homelab() -> dict[str, str | bytes]:
    """A cluster whose `cluster-secrets` Secret is created at bootstrap, outside git.

    The child Kustomization `db` (rendered by `apps`) reads the same Secret for a variable
    `apps` does not use, so init needs a second round to find it.
    """
    return {
        "clusters/home/kustomization.yaml": ks_file("apps.yaml", "settings.yaml", "team.yaml"),
        "clusters/home/settings.yaml": cm("cluster-settings", "flux-system", TZ="Etc/UTC"),
        "clusters/home/apps.yaml": flux_ks(
            "apps", "./apps", postBuild={"substituteFrom": [SETTINGS, SECRETS]}
        ),
        "clusters/home/team.yaml": docs(TEAM_SOURCE, flux_ks("team", "./deploy", source="team")),
        "apps/kustomization.yaml": ks_file("web.yaml", "db.yaml"),
        "apps/web.yaml": cm("web", "web", host="web.${SECRET_DOMAIN}", tz="${TZ}"),
        "apps/db.yaml": flux_ks("db", "./db", postBuild={"substituteFrom": [SECRETS]}),
        "db/db.yaml": cm("db", "db", host="${SECRET_DB_HOST}", user="${DB_USER:=app}"),
    }


def test_init_then_check_exits_0_with_the_secret_outside_git(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo(homelab())
    res = cli("init", "--repo", repo)
    assert res.code == 0, res.stderr + res.stdout
    assert "error" not in res.stderr
    assert "info: home/flux-system/team: skipped, source GitRepository/flux-system/team" in (
        res.stderr
    )
    assert "wrote harness.yaml with 1 placeholder object(s) and 1 external source(s)" in (
        res.stdout
    )
    assert "next: review the TODO entries in harness.yaml, then run `harness check`" in res.stdout
    written = (repo / "harness.yaml").read_text()
    assert "# TODO" in written and "#   - clusters/home" in written
    assert yaml.safe_load(written)["outside_git"] == {
        "home": {
            "objects": [
                {
                    "kind": "Secret",
                    "namespace": "flux-system",
                    "name": "cluster-secrets",
                    # TZ comes from the ConfigMap in git; DB_USER has a default
                    "keys": {
                        "SECRET_DOMAIN": "placeholder-secret-domain",
                        "SECRET_DB_HOST": "placeholder-secret-db-host",
                    },
                }
            ],
            "sources": {"GitRepository/flux-system/team": "external"},
        }
    }
    golden = (repo / "goldens" / "flux" / "home" / "flux-system" / "db.yaml").read_text()
    assert "host: placeholder-secret-db-host" in golden, "placeholders show as placeholders"
    check = cli("check", "--repo", repo)
    assert check.code == 0, check.stderr + check.stdout
    assert "error" not in check.stderr


def test_quiet_init_prints_no_rounds_and_no_info_lines(make_repo: Repo, cli: Cli) -> None:
    """Issue 32: `-q` is errors and the verdict; what init declared is in the harness.yaml it
    wrote, and the skipped Kustomization is in the file's `sources:`."""
    res = cli("init", "--repo", make_repo(homelab()), "-q")
    assert res.code == 0, res.stderr
    # warnings stay (this one: the clusters were guessed); no round or info line
    assert [line.split(":")[0] for line in res.stderr.splitlines()] == ["warning"]
    assert "wrote harness.yaml with 1 placeholder object(s) and 1 external source(s)" in (
        res.stdout
    )


def test_init_refuses_to_overwrite_unless_forced(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo({**homelab(), "harness.yaml": "goldens: mine\n"})
    res = cli("init", "--repo", repo)
    assert res.code == 2
    assert "harness.yaml already exists" in res.stderr and "--force" in res.stderr
    assert (repo / "harness.yaml").read_text() == "goldens: mine\n"
    assert not (repo / "goldens").exists() and not (repo / "mine").exists()
    forced = cli("init", "--repo", repo, "--force")
    assert forced.code == 0, forced.stderr
    assert "outside_git:" in (repo / "harness.yaml").read_text()


def test_init_on_a_repo_without_gaps_writes_no_declarations(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo({"app/kustomization.yaml": ks_file("a.yaml"), "app/a.yaml": cm("a")})
    res = cli("init", "--repo", repo)
    assert res.code == 0, res.stderr
    assert yaml.safe_load((repo / "harness.yaml").read_text()) == {"goldens": "goldens"}
    assert "next: commit harness.yaml and goldens/, then run `harness check`" in res.stdout
    assert cli("check", "--repo", repo).code == 0


def test_init_reports_a_real_error_and_exits_2(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo({"app/kustomization.yaml": ks_file("missing.yaml")})
    res = cli("init", "--repo", repo)
    assert res.code == 2
    assert "error: app:" in res.stderr
    assert (repo / "harness.yaml").is_file(), "the starter is still written"
    assert "next: fix the errors above, then run `harness update`" in res.stdout


def test_placeholders_are_name_safe() -> None:
    assert placeholder("SECRET_DOMAIN") == "placeholder-secret-domain"
    assert placeholder("__") == "placeholder"


def _external_secret(name: str, target: str | None, **keys: str) -> str:
    spec: dict[str, object] = {
        "secretStoreRef": {"kind": "ClusterSecretStore", "name": "vault"},
        "data": [{"secretKey": k, "remoteRef": {"key": v}} for k, v in keys.items()],
    }
    if target is not None:
        spec["target"] = {"name": target}
    return yaml.safe_dump(
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ExternalSecret",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": spec,
        }
    )


def test_init_gives_each_external_secret_s_target_its_own_keys(make_repo: Repo, cli: Cli) -> None:
    """Two Secrets made by ExternalSecrets in git: each is declared with the keys its
    ExternalSecret writes, not with every variable the Kustomization lacks."""
    db_secrets = {"kind": "Secret", "name": "db-secrets"}
    repo = make_repo(
        {
            "clusters/home/kustomization.yaml": ks_file("apps.yaml", "external.yaml"),
            "clusters/home/external.yaml": docs(
                _external_secret("cluster-secrets", None, SECRET_DOMAIN="home/domain"),
                _external_secret("db", "db-secrets", DB_PASSWORD="db/password"),
            ),
            "clusters/home/apps.yaml": flux_ks(
                "apps", "./apps", postBuild={"substituteFrom": [SECRETS, db_secrets]}
            ),
            "apps/kustomization.yaml": ks_file("web.yaml"),
            "apps/web.yaml": cm("web", "web", host="${SECRET_DOMAIN}", pw="${DB_PASSWORD}"),
        }
    )
    res = cli("init", "--repo", repo)
    assert res.code == 0, res.stderr + res.stdout
    config = yaml.safe_load((repo / "harness.yaml").read_text())
    objects = {o["name"]: o["keys"] for o in config["outside_git"]["home"]["objects"]}
    assert objects == {
        "cluster-secrets": {"SECRET_DOMAIN": placeholder("SECRET_DOMAIN")},
        "db-secrets": {"DB_PASSWORD": placeholder("DB_PASSWORD")},
    }
    assert cli("check", "--repo", repo).code == 0


def test_init_leaves_out_failing_directories_flux_never_builds(make_repo: Repo, cli: Cli) -> None:
    """A Talos bootstrap directory inflating a chart with helmCharts fails without
    --enable-helm; no Flux Kustomization builds it, so it must not fail the first check."""
    files = homelab()
    files["talos/cni/kustomization.yaml"] = (
        "helmCharts:\n  - name: cilium\n    repo: https://helm.cilium.io\n    version: 1.16.0\n"
    )
    files["apps/broken/kustomization.yaml"] = ks_file("missing.yaml")  # not built by Flux either
    repo = make_repo(files)
    res = cli("init", "--repo", repo)
    assert res.code == 0, res.stderr + res.stdout
    assert (
        "init: left out 2 directories no Flux Kustomization builds, which fail to render here "
        "(exclude: in harness.yaml): apps/broken, talos/cni" in res.stdout
    )
    config = yaml.safe_load((repo / "harness.yaml").read_text())
    assert config["exclude"] == ["apps/broken", "talos/cni"]
    text = (repo / "harness.yaml").read_text()
    assert "  - talos/cni  # helmCharts: must specify --enable-helm" in text
    assert cli("check", "--repo", repo).code == 0


def test_init_keeps_a_failing_directory_flux_builds(make_repo: Repo, cli: Cli) -> None:
    files = homelab()
    files["apps/kustomization.yaml"] = ks_file("web.yaml", "db.yaml", "missing.yaml")
    repo = make_repo(files)
    res = cli("init", "--repo", repo)
    assert res.code == 2
    assert "exclude" not in yaml.safe_load((repo / "harness.yaml").read_text())
