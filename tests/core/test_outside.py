"""harness.yaml `outside_git`: objects and sources the cluster has that git does not."""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.core import config as config_mod
from harness.core import documents, outside
from harness.core.errors import ConfigError
from harness.core.model import DocId
from harness.flux.api import ObjectRef
from harness.pipeline.repo import RenderOptions, render_repo
from tests.flux.conftest import by_id, cm, docs, flux_ks, ks_file, new_renderer
from tests.flux.conftest import render_repo as rr

Repo = Callable[[dict[str, str | bytes]], Path]

SECRET_FROM = {"substituteFrom": [{"kind": "Secret", "name": "cluster-secrets"}]}
APP = cm("web", "web", domain="web.${SECRET_DOMAIN}", mail="${MAIL_HOST:=smtp.local}")


def repo_files(**extra: str) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "clusters/dev/kustomization.yaml": ks_file("apps.yaml"),
        "clusters/dev/apps.yaml": flux_ks("apps", "./apps", postBuild=SECRET_FROM),
        "apps/web.yaml": APP,
    }
    files.update(extra)
    return files


def with_config(repo: Path, body: dict[str, Any]) -> Path:
    (repo / "harness.yaml").write_text(yaml.safe_dump(body), encoding="utf-8")
    return repo


def declared(cluster: str = "dev", **obj: Any) -> dict[str, Any]:
    entry = {"kind": "Secret", "namespace": "flux-system", "name": "cluster-secrets", **obj}
    return {"outside_git": {cluster: {"objects": [entry]}}}


# -- config --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ([], "outside_git must map cluster names"),
        ({"dev": []}, "outside_git.dev must be a mapping"),
        ({"dev": {"secrets": []}}, "unknown outside_git.dev key(s): secrets"),
        ({"dev": {"objects": {}}}, "outside_git.dev.objects must be a list"),
        ({"dev": {"objects": ["x"]}}, "outside_git.dev.objects[0] must be a mapping"),
        (
            {"dev": {"objects": [{"kind": "Deployment", "namespace": "a", "name": "b"}]}},
            "objects[0].kind must be ConfigMap or Secret",
        ),
        (
            {"dev": {"objects": [{"kind": "Secret", "name": "b", "keys": {}}]}},
            "objects[0].namespace must be a non-empty string",
        ),
        (
            {"dev": {"objects": [{"kind": "Secret", "namespace": "a", "name": "b"}]}},
            "objects[0] needs keys (placeholder values) or any_key",
        ),
        (
            {
                "dev": {
                    "objects": [{"kind": "Secret", "namespace": "a", "name": "b", "keys": {"P": 3}}]
                }
            },
            "keys must map variable names to placeholder strings (quote numbers",
        ),
        (
            {
                "dev": {
                    "objects": [{"kind": "Secret", "namespace": "a", "name": "b", "any_key": ""}]
                }
            },
            "any_key must be a non-empty placeholder string",
        ),
        (
            {"dev": {"objects": [{"kind": "Secret", "namespace": "a", "name": "b", "value": "x"}]}},
            "unknown outside_git.dev.objects[0] key(s): value",
        ),
        (
            {
                "dev": {
                    "objects": [
                        {"kind": "Secret", "namespace": "a", "name": "b", "keys": {}},
                        {"kind": "Secret", "namespace": "a", "name": "b", "any_key": "x"},
                    ]
                }
            },
            "Secret/a/b is declared twice",
        ),
        ({"dev": {"sources": ["x"]}}, "outside_git.dev.sources must map sources"),
        ({"dev": {"sources": {"team": None}}}, "team must be a directory (a local checkout) or"),
    ],
)
def test_bad_declarations_name_the_key(tmp_path: Path, section: Any, message: str) -> None:
    with_config(tmp_path, {"outside_git": section})
    with pytest.raises(ConfigError) as err:
        config_mod.load(tmp_path)
    assert message in str(err.value)
    assert "harness.yaml" in str(err.value)


def test_unknown_top_level_keys_are_still_errors(tmp_path: Path) -> None:
    with_config(tmp_path, {"outside_gti": {}})
    with pytest.raises(ConfigError, match="unknown config key"):
        config_mod.load(tmp_path)


def test_declarations_parse(tmp_path: Path) -> None:
    with_config(
        tmp_path,
        {
            "outside_git": {
                "*": {"sources": {"GitRepository/apps/team": "external"}},
                "dev": {
                    "objects": [
                        {"kind": "ConfigMap", "namespace": "a", "name": "b", "any_key": "ph"}
                    ],
                    "sources": {"team": "../team"},
                },
            }
        },
    )
    decls = config_mod.load(tmp_path).outside_git
    merged = outside.resolve(decls, ["dev", "clusters/dev"])
    ref = ObjectRef("ConfigMap", "a", "b")
    assert merged.objects[ref] == outside.DeclaredObject(ref, {}, "ph")
    team = ObjectRef("GitRepository", "apps", "team")
    assert merged.source(team, {}) == (True, "../team"), "the cluster's `name` key first"
    assert outside.resolve(decls, ["prod"]).source(team, {}) == (True, None)
    assert outside.resolve(decls, ["prod"]).source(ObjectRef("GitRepository", "x", "y"), {}) == (
        False,
        None,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [("plain-name", "plain-name"), ("true", '"true"'), ("8080", '"8080"'), ("a b", '"a b"')],
)
def test_snippet_scalars_read_back_as_strings(text: str, expected: str) -> None:
    assert outside.scalar(text) == expected
    assert yaml.safe_load(f"k: {outside.scalar(text)}")["k"] == text


# -- rendering -----------------------------------------------------------------------------


def test_missing_secret_error_gives_the_line_that_fixes_it(make_repo: Repo) -> None:
    repo = make_repo(repo_files())
    error = rr(repo)["dev/flux-system/apps"].error
    assert error is not None
    assert "optional" not in error, "never advise changing the Flux manifests"
    snippet = re.search(r"add `(.*)` to harness.yaml", error)
    assert snippet, error
    # MAIL_HOST has a default, so only SECRET_DOMAIN is asked for
    assert yaml.safe_load(snippet.group(1)) == {
        "outside_git": {
            "dev": {
                "objects": [
                    {
                        "kind": "Secret",
                        "namespace": "flux-system",
                        "name": "cluster-secrets",
                        "keys": {"SECRET_DOMAIN": "placeholder-secret-domain"},
                    }
                ]
            }
        }
    }
    (repo / "harness.yaml").write_text(snippet.group(1) + "\n", encoding="utf-8")
    fixed = rr(repo)["dev/flux-system/apps"]
    assert by_id(fixed)["ConfigMap/web/web"]["data"] == {
        "domain": "web.placeholder-secret-domain",
        "mail": "smtp.local",
    }
    assert any("declared outside git" in n and "placeholders" in n for n in fixed.notes)


def test_any_key_answers_only_what_nothing_else_defines(make_repo: Repo) -> None:
    repo = make_repo(
        repo_files(
            **{
                "clusters/dev/apps.yaml": flux_ks(
                    "apps",
                    "./apps",
                    postBuild={
                        "substitute": {"SECRET_DOMAIN": "inline.example"},
                        "substituteFrom": [
                            {"kind": "Secret", "name": "cluster-secrets"},
                            {"kind": "ConfigMap", "name": "settings"},
                        ],
                    },
                ),
                "clusters/dev/kustomization.yaml": ks_file("apps.yaml", "settings.yaml"),
                "clusters/dev/settings.yaml": cm("settings", "flux-system", OTHER="x"),
                "apps/web.yaml": cm(
                    "web", "web", a="${SECRET_DOMAIN}", b="${OTHER}", c="${ANYTHING}"
                ),
            }
        )
    )
    with_config(repo, declared(any_key="placeholder"))
    data = by_id(rr(repo)["dev/flux-system/apps"])["ConfigMap/web/web"]["data"]
    assert data == {"a": "inline.example", "b": "x", "c": "placeholder"}


def test_rendered_object_wins_over_its_declaration(make_repo: Repo) -> None:
    repo = make_repo(
        repo_files(
            **{
                "clusters/dev/kustomization.yaml": ks_file("apps.yaml", "secret.yaml"),
                "clusters/dev/secret.yaml": yaml.safe_dump(
                    {
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {"name": "cluster-secrets", "namespace": "flux-system"},
                        "stringData": {"SECRET_DOMAIN": "real.example"},
                    }
                ),
            }
        )
    )
    with_config(repo, declared(keys={"SECRET_DOMAIN": "placeholder-domain"}))
    result = rr(repo)["dev/flux-system/apps"]
    # the rendered Secret's value, as the marker that stands for it (never the placeholder)
    secret = DocId("", "Secret", "flux-system", "cluster-secrets")
    marker = documents.redaction_marker(secret, "stringData.SECRET_DOMAIN", "real.example")
    assert by_id(result)["ConfigMap/web/web"]["data"]["domain"] == f"web.{marker}"
    assert not any("declared outside git" in n for n in result.notes)


def test_star_applies_to_every_cluster_and_unknown_clusters_are_errors(make_repo: Repo) -> None:
    repo = make_repo(repo_files())
    with_config(repo, declared("*", keys={"SECRET_DOMAIN": "placeholder-d"}))
    assert rr(repo)["dev/flux-system/apps"].ok
    with_config(repo, declared("clusters/dev", keys={"SECRET_DOMAIN": "placeholder-d"}))
    assert rr(repo)["dev/flux-system/apps"].ok, "the cluster's path works too"
    with_config(repo, declared("staging", keys={"SECRET_DOMAIN": "placeholder-d"}))
    with pytest.raises(ConfigError, match=r"outside_git.staging: no such cluster \(clusters: "):
        rr(repo)


def team_repo() -> dict[str, str | bytes]:
    source = yaml.safe_dump(
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": "team", "namespace": "apps"},
            "spec": {"url": "https://example.invalid/team.git"},
        }
    )
    return {
        "clusters/dev/kustomization.yaml": ks_file("team.yaml", "local.yaml"),
        "clusters/dev/team.yaml": docs(
            source, flux_ks("team", "./deploy", namespace="apps", source="team")
        ),
        "clusters/dev/local.yaml": flux_ks("local", "./local"),
        "local/a.yaml": cm("a", "default"),
        "checkout/deploy/t.yaml": cm("t", "apps"),
    }


def test_source_mapped_per_cluster_to_a_checkout(make_repo: Repo) -> None:
    repo = make_repo(team_repo())
    with_config(repo, {"outside_git": {"dev": {"sources": {"apps/team": "checkout"}}}})
    assert list(by_id(rr(repo)["dev/apps/team"])) == ["ConfigMap/apps/t"]


def test_external_source_skips_its_targets_with_one_info_line(make_repo: Repo) -> None:
    repo = make_repo(team_repo())
    with_config(
        repo, {"outside_git": {"dev": {"sources": {"GitRepository/apps/team": "external"}}}}
    )
    cfg = config_mod.load(repo)
    snapshot = render_repo(cfg, new_renderer(), RenderOptions(jobs=2))
    assert "dev/apps/team" not in snapshot.results
    assert snapshot.skipped == {
        "dev/apps/team": "source GitRepository/apps/team is external (harness.yaml outside_git)"
    }
    assert not snapshot.errors()
    assert snapshot.results["dev/flux-system/local"].ok


def test_declared_object_without_a_used_key_says_which_key_to_add(make_repo: Repo) -> None:
    repo = make_repo(repo_files())
    with_config(repo, declared(keys={"OTHER": "placeholder-other"}))
    error = rr(repo)["dev/flux-system/apps"].error
    assert error is not None
    assert error.startswith('apps/web.yaml: variable not set (strict mode): "SECRET_DOMAIN"')
    assert (
        "harness.yaml declares Secret/flux-system/cluster-secrets outside git without "
        "SECRET_DOMAIN: if the object in the cluster has it, add "
        "`SECRET_DOMAIN: placeholder-secret-domain` to the keys of "
        "Secret/flux-system/cluster-secrets under outside_git.dev"
    ) in error
    assert rr(repo, strict=False)["dev/flux-system/apps"].ok, "only strict mode needs every key"


def test_a_cluster_missing_at_another_ref_is_no_typo(make_repo: Repo, tmp_path: Path) -> None:
    """`diff --base` applies today's config to an older checkout without that cluster."""
    repo = make_repo(repo_files())
    with_config(repo, declared("staging", keys={}))
    cfg = config_mod.load(repo)
    with pytest.raises(ConfigError, match=r"outside_git\.staging: no such cluster"):
        render_repo(cfg, new_renderer(), RenderOptions(jobs=2))
    other = tmp_path / "checkout"
    shutil.copytree(repo, other)
    cfg = dataclasses.replace(cfg, repo=other)  # what config_at() in commands/diff.py does
    snapshot = render_repo(cfg, new_renderer(), RenderOptions(jobs=2))
    assert "dev/flux-system/apps" in snapshot.results


def test_fix_lines_nest_into_an_existing_section(make_repo: Repo) -> None:
    """A second top-level `outside_git:` would silently replace the first."""
    repo = make_repo(repo_files())
    with_config(repo, {"outside_git": {"*": {"sources": {"x": "external"}}}})
    error = rr(repo)["dev/flux-system/apps"].error
    assert error is not None
    assert (
        "add `dev: {objects: [{kind: Secret, namespace: flux-system, name: cluster-secrets, "
        in (error)
    )
    assert "under outside_git: in harness.yaml" in error
    with_config(repo, {"outside_git": {"dev": {"sources": {"x": "external"}}}})
    error = rr(repo)["dev/flux-system/apps"].error
    assert error is not None
    assert error.endswith(
        "add `{kind: Secret, namespace: flux-system, name: cluster-secrets, keys: "
        "{SECRET_DOMAIN: placeholder-secret-domain}}` to outside_git.dev.objects in harness.yaml"
    )
