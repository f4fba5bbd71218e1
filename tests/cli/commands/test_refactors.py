"""Regression suite: realistic refactors of a Flux repo, committed in a real git repo and
diffed through the CLI (`harness diff --base HEAD~1 --head HEAD`), asserting the verdict,
the exit code and the hazard findings the change introduces. Every scenario also checks
that each output's headline numbers are the JSON summary's (one counting model)."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import fluxrepo as fr
from tests.cli.commands.conftest import private_tmpdir
from tests.conftest import Result
from tests.gitkit import commit_all, init

Cli = Callable[..., Result]
Scenario = Callable[[Path], None]

DIFF = ("diff", "--base", "HEAD~1", "--head", "HEAD")


def write(root: Path, files: fr.Files) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def remove(root: Path, *paths: str) -> None:
    for rel in paths:
        path = root / rel
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def two_apps(*, storage: bool = False, broken: bool = False) -> fr.Files:
    """media and db, each its own Flux Kustomization; optionally a broken third."""
    files = {
        **fr.app("apps/media", "media", "media", storage=storage),
        **fr.app("apps/db", "db", "db", storage=storage),
    }
    kss = {
        "media": fr.flux_ks("media", "./apps/media"),
        "db": fr.flux_ks("db", "./apps/db"),
    }
    if broken:
        files.update(fr.broken())
        kss["broken"] = fr.flux_ks("broken", "./apps/broken")
    return {**files, **fr.cluster(kss)}


@pytest.fixture
def git_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TMPDIR", str(private_tmpdir(tmp_path)))
    monkeypatch.setattr("tempfile.tempdir", None)
    return init(tmp_path / "git")


def scenario(root: Path, base: fr.Files, change: Scenario) -> Path:
    """Commit `base`, apply `change`, commit it: HEAD~1 -> HEAD is the refactor."""
    write(root, base)
    commit_all(root, "base")
    change(root)
    commit_all(root, "refactor")
    return root


def as_json(cli: Cli, root: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    res = cli(*DIFF, "--repo", root, "-o", "json", *extra)
    assert res.stdout, res.stderr
    return res.code, json.loads(res.stdout)


def findings(data: dict[str, Any], rule: str | None = None) -> dict[str, str]:
    return {f["id"]: f["severity"] for f in data["findings"] if rule is None or f["rule"] == rule}


# -- the scenarios --------------------------------------------------------------------------


def move_directory(root: Path) -> None:
    """apps/media -> apps/media-stack/media, spec.path follows."""
    (root / "apps/media-stack").mkdir()
    shutil.move(root / "apps/media", root / "apps/media-stack/media")
    write(root, {"clusters/dev/media.yaml": fr.flux_ks("media", "./apps/media-stack/media")})


def split(root: Path) -> None:
    """One `apps` Kustomization over both apps becomes `apps` (media) and `db`."""
    write(
        root,
        {
            **fr.cluster(
                {
                    "apps": fr.flux_ks("apps", "./apps/media", depends=["db"]),
                    "db": fr.flux_ks("db", "./apps/db"),
                }
            ),
        },
    )


def merge(root: Path) -> None:
    """media and db become one `apps` Kustomization over ./apps."""
    remove(root, "clusters/dev/media.yaml", "clusters/dev/db.yaml")
    write(
        root,
        {
            **fr.cluster({"apps": fr.flux_ks("apps", "./apps")}),
            "apps/kustomization.yaml": fr.kustomization("media", "db"),
        },
    )


def rename_namespace(root: Path) -> None:
    """media's namespace becomes mediaserver."""
    write(
        root,
        {
            "apps/media/namespace.yaml": fr.namespace("mediaserver"),
            "apps/media/kustomization.yaml": fr.kustomization(
                "namespace.yaml",
                "deployment.yaml",
                "config.yaml",
                "pvc.yaml",
                namespace="mediaserver",
            ),
        },
    )


def remove_apps(root: Path) -> None:
    """Both PVC-backed apps are deleted, directories and Kustomizations."""
    remove(root, "apps/media", "apps/db", "clusters/dev/media.yaml", "clusters/dev/db.yaml")
    write(root, fr.cluster({"broken": fr.flux_ks("broken", "./apps/broken")}))


def ci_only(root: Path) -> None:
    write(root, {".github/workflows/ci.yaml": "on: [pull_request]\njobs: {}\n"})


def touch_broken(root: Path) -> None:
    """The broken directory changes but still fails the same way: its inputs changed."""
    path = root / "apps/broken/kustomization.yaml"
    path.write_text("# still broken\n" + path.read_text())


def copy_into_bootstrap(root: Path) -> None:
    """media's Namespace also goes into the cluster's root Kustomization; apps/media keeps it."""
    files = fr.cluster(
        {"media": fr.flux_ks("media", "./apps/media"), "db": fr.flux_ks("db", "./apps/db")}
    )
    files[f"{fr.CLUSTER}/namespaces.yaml"] = fr.namespace("media")
    files[f"{fr.CLUSTER}/kustomization.yaml"] = fr.kustomization(
        "sync.yaml", "db.yaml", "media.yaml", "namespaces.yaml"
    )
    write(root, files)


OCI = (
    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: podinfo\n"
    "spec:\n  interval: 10m\n  url: oci://ghcr.io/stefanprodan/manifests/podinfo\n"
    "  ref:\n    tag: {tag}\n"
)


def with_source() -> fr.Files:
    """two_apps plus apps/src: one OCIRepository, no namespace in the directory; its Flux
    Kustomization puts it into flux-system."""
    files = two_apps()
    files.update(
        {
            "apps/src/oci.yaml": OCI.format(tag="6.0.0"),
            "apps/src/kustomization.yaml": fr.kustomization("oci.yaml"),
            **fr.cluster(
                {
                    "media": fr.flux_ks("media", "./apps/media"),
                    "db": fr.flux_ks("db", "./apps/db"),
                    "src": fr.flux_ks("src", "./apps/src", target_namespace="flux-system"),
                }
            ),
        }
    )
    return files


def bump_source(root: Path) -> None:
    """The OCIRepository's tag is bumped and media's Kustomization gains a service account."""
    media = fr.flux_ks("media", "./apps/media") + "  serviceAccountName: media\n"
    write(root, {"apps/src/oci.yaml": OCI.format(tag="6.1.0"), "clusters/dev/media.yaml": media})


REMOTE = "https://example.invalid/org/fleet//base?ref=v1"  # never resolves (RFC 2606)


def remote_root() -> fr.Files:
    """two_apps whose cluster root also names a remote base, unreachable on both sides."""
    files = two_apps()
    files[f"{fr.CLUSTER}/kustomization.yaml"] = fr.kustomization(
        "sync.yaml", "db.yaml", "media.yaml", REMOTE
    )
    return files


def retune_media(root: Path) -> None:
    """media's Kustomization (a file of the failing root's closure) changes its interval."""
    write(root, {f"{fr.CLUSTER}/media.yaml": fr.flux_ks("media", "./apps/media", prune=False)})


def broken_with_config() -> fr.Files:
    """two_apps plus apps/broken: a ConfigMap that builds, then a file that does not exist."""
    files = two_apps()
    files.update(
        {
            "apps/broken/config.yaml": fr.configmap("broken", LOG_LEVEL="info"),
            "apps/broken/kustomization.yaml": fr.kustomization("config.yaml", "missing.yaml"),
            **fr.cluster(
                {
                    "media": fr.flux_ks("media", "./apps/media"),
                    "db": fr.flux_ks("db", "./apps/db"),
                    "broken": fr.flux_ks("broken", "./apps/broken"),
                }
            ),
        }
    )
    return files


def edit_broken_config(root: Path) -> None:
    write(root, {"apps/broken/config.yaml": fr.configmap("broken", LOG_LEVEL="debug")})


def helm_release(name: str, namespace: str, depends: str = "") -> str:
    """A HelmRelease of chart `app`; `depends` is `namespace/name` of one it dependsOn."""
    deps = ""
    if depends:
        dep_ns, dep_name = depends.split("/")
        deps = f"  dependsOn:\n    - name: {dep_name}\n      namespace: {dep_ns}\n"
    return (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n"
        f"  name: {name}\n  namespace: {namespace}\nspec:\n"
        + deps
        + "  interval: 1h\n  chart:\n    spec:\n      chart: app\n      sourceRef:\n"
        "        kind: HelmRepository\n        name: charts\n        namespace: flux-system\n"
    )


def releases() -> fr.Files:
    """infra installs HelmRelease db/postgres; apps' media/sonarr dependsOn it."""
    repository = (
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n"
        "  name: charts\n  namespace: flux-system\nspec:\n  url: https://charts.example.invalid\n"
    )
    return {
        "infra/repository.yaml": repository,
        "infra/postgres.yaml": helm_release("postgres", "db"),
        "infra/kustomization.yaml": fr.kustomization("repository.yaml", "postgres.yaml"),
        "apps/sonarr.yaml": helm_release("sonarr", "media", "db/postgres"),
        "apps/kustomization.yaml": fr.kustomization("sonarr.yaml"),
        **fr.cluster(
            {"infra": fr.flux_ks("infra", "./infra"), "apps": fr.flux_ks("apps", "./apps")}
        ),
    }


def break_infra(root: Path) -> None:
    write(root, {"infra/kustomization.yaml": fr.kustomization("repository.yaml", "gone.yaml")})


def break_media(root: Path) -> None:
    write(root, fr.broken("apps/media"))
    remove(root, "apps/media/namespace.yaml")


# -- verdicts, exit codes, findings ----------------------------------------------------------


def test_directory_move_with_identical_output_is_a_pure_move(git_root: Path, cli: Cli) -> None:
    root = scenario(git_root, two_apps(storage=True), move_directory)
    code, data = as_json(cli, root, "--expect", "pure-move")
    assert code == 0, data["reasons"]
    assert data["verdict"] == "pure-move"
    assert "media: path moved, output identical" in data["verdict_line"]
    assert "apps/media -> apps/media-stack/media" in data["verdict_line"]
    [respec] = data["respecified"]
    assert respec["changes"] == "spec.path: ./apps/media -> ./apps/media-stack/media"
    assert respec["outcome"] == "identical"
    assert findings(data) == {}


def test_split_into_two_kustomizations_is_a_pure_ownership_move(git_root: Path, cli: Cli) -> None:
    base = {
        **fr.app("apps/media", "media", "media", storage=True),
        **fr.app("apps/db", "db", "db", storage=True),
        "apps/kustomization.yaml": fr.kustomization("media", "db"),
        **fr.cluster({"apps": fr.flux_ks("apps", "./apps")}),
    }
    root = scenario(git_root, base, split)
    code, data = as_json(cli, root, "--expect", "pure-move")
    assert code == 0, data["reasons"]
    assert data["verdict"] == "pure-move"
    assert data["verdict_line"].startswith("pure ownership move: 4 documents apps -> db")
    assert "apps: path moved, documents moved unchanged" in data["verdict_line"]
    assert {o["kustomization"]: o["changes"] for o in data["orchestration"]} == {
        "apps": ["dependsOn +db"],
        "db": ["added (path ./apps/db)"],
    }
    # apps dependsOn db: db adopts the objects before apps prunes; the moves are notes only
    races = findings(data, "ownership-race")
    assert len(races) == 4 and set(races.values()) == {"info"}
    assert findings(data, "prune-delete") == {}


def test_merge_without_protection_reports_the_races(git_root: Path, cli: Cli) -> None:
    root = scenario(git_root, two_apps(storage=True), merge)
    code, data = as_json(cli, root, "--expect", "pure-move")
    assert code == 0, data["reasons"]
    assert data["verdict"] == "pure-move"
    assert data["verdict_line"].startswith("pure ownership move:")
    races = findings(data, "ownership-race")
    assert any("PersistentVolumeClaim/media/media-data" in i for i in races), races
    assert any("PersistentVolumeClaim/db/db-data" in i for i in races), races


def test_namespace_rename_is_a_change_and_old_findings_stay_old(git_root: Path, cli: Cli) -> None:
    base = two_apps(storage=True)
    # a pre-existing lint finding about media's ConfigMap: a literal ${DOMAIN}, no postBuild
    base["apps/media/config.yaml"] = fr.configmap("media-config", URL="https://${DOMAIN}/")
    root = scenario(git_root, base, rename_namespace)
    lint = cli("lint", "--repo", root, "-o", "json", "--fail-on", "info")
    before = [f for f in json.loads(lint.stdout)["findings"] if f["rule"] == "substitution"]
    assert any("media-config" in " ".join(f["documents"]) for f in before), before
    code, data = as_json(cli, root, "--expect", "pure-move")
    assert code == 1
    assert data["verdict"] == "changed"
    assert findings(data, "substitution") == {}  # same finding, renamed namespace: not new
    deleted = findings(data, "prune-delete")
    assert deleted.get("prune-delete:dev:media:Namespace/media") == "error"
    assert deleted.get("prune-delete:dev:media:PersistentVolumeClaim/media/media-data") == "error"


def test_app_removal_reports_pvc_deletions_despite_a_broken_target(
    git_root: Path, cli: Cli
) -> None:
    root = scenario(git_root, two_apps(storage=True, broken=True), remove_apps)
    code, data = as_json(cli, root)
    assert code == 0, data["errors"]
    assert data["verdict"] == "changed"
    assert data["errors"] == []
    assert {p["target"] for p in data["preexisting_errors"]} == {
        "apps/broken",
        "dev/flux-system/broken",
    }
    deleted = findings(data, "prune-delete")
    assert deleted["prune-delete:dev:media:PersistentVolumeClaim/media/media-data"] == "error"
    assert deleted["prune-delete:dev:db:PersistentVolumeClaim/db/db-data"] == "error"
    assert not any(":unjudged:" in i for i in deleted)
    strict = cli(*DIFF, "--repo", root, "--fail-on-preexisting-error")
    assert strict.code == 2


def test_ci_only_commit_with_a_preexisting_broken_target_is_no_change(
    git_root: Path, cli: Cli
) -> None:
    root = scenario(git_root, two_apps(broken=True), ci_only)
    res = cli(*DIFF, "--repo", root)
    assert res.code == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("no change: ")
    assert "2 pre-existing render errors: failing the same way on both sides" in lines[0]
    # said once, with a count; the messages with -v
    assert [ln for ln in lines if "pre-existing" in ln and not ln.startswith("no change")] == [
        "2 pre-existing render errors (failing the same way on both sides, inputs unchanged; "
        "not judged): apps/broken, dev/flux-system/broken; -v shows the messages",
        "8 targets: 0 differ, 6 unchanged, 0 render errors, 2 pre-existing errors",
    ]
    verbose = cli(*DIFF, "--repo", root, "-v").stdout.splitlines()
    assert any(
        ln.startswith(
            "pre-existing error: dev/flux-system/broken (base and head, inputs unchanged)"
        )
        for ln in verbose
    )
    assert lines[-1] == "8 targets: 0 differ, 6 unchanged, 0 render errors, 2 pre-existing errors"
    assert cli(*DIFF, "--repo", root, "--expect", "no-change").code == 0
    assert cli(*DIFF, "--repo", root, "--fail-on-preexisting-error").code == 2
    comment = cli("comment", *DIFF[1:], "--repo", root)
    assert comment.code == 0
    assert comment.stdout.startswith(
        "### No change: 6 targets, 20 documents unchanged (2 pre-existing render errors)"
    )
    assert "> [!WARNING]\n> **Not judged**: 2 pre-existing render errors (" in comment.stdout
    assert "<summary>Not judged: 2 pre-existing render errors</summary>" in comment.stdout
    assert comment.stdout.count("`dev/flux-system/broken`") == 1  # listed once, collapsed
    assert "[!CAUTION]" not in comment.stdout


def test_an_error_whose_inputs_changed_stays_an_error(git_root: Path, cli: Cli) -> None:
    root = scenario(git_root, two_apps(broken=True), touch_broken)
    code, data = as_json(cli, root)
    assert code == 2
    assert data["preexisting_errors"] == []
    assert {e["target"] for e in data["errors"]} == {"apps/broken", "dev/flux-system/broken"}


def test_an_error_new_on_head_is_exit_2(git_root: Path, cli: Cli) -> None:
    root = scenario(git_root, two_apps(broken=True), break_media)
    code, data = as_json(cli, root)
    assert code == 2
    assert {p["target"] for p in data["preexisting_errors"]} == {
        "apps/broken",
        "dev/flux-system/broken",
    }
    assert {(e["target"], e["side"]) for e in data["errors"]} == {
        ("apps/media", "head"),
        ("dev/flux-system/media", "head"),
    }
    assert data["verdict"] == "changed"


def test_a_copy_still_rendered_where_it_was_is_an_addition_not_a_move(
    git_root: Path, cli: Cli
) -> None:
    root = scenario(git_root, two_apps(), copy_into_bootstrap)
    code, data = as_json(cli, root)
    assert code == 0
    assert data["moves"] == []
    assert data["verdict_line"].startswith(
        "changed: 1 object changes in 1 cluster (1 target): 0 changed, 1 added, 0 removed"
    )
    [flux] = [ch for ch in data["changes"] if ch["clusters"]]
    assert (flux["op"], flux["id"], flux["real"], flux["moved"]) == (
        "added",
        "Namespace/media",
        True,
        False,
    )
    assert flux["note"] == "also rendered by flux-system/media (on both sides)"
    assert flux["targets"] == ["dev/flux-system/flux-system"]
    c = data["summary"]["counts"]
    assert (c["added"], c["removed"], c["objects_added"], c["objects_removed"]) == (1, 0, 1, 0)
    [reason] = [r for r in data["reasons"] if r["counts_as"] == "added"]
    assert reason["message"] == (
        "dev/flux-system/flux-system: Namespace/media added "
        "(also rendered by dev/flux-system/media, on both sides)"
    )
    text = cli(*DIFF, "--repo", root).stdout
    assert "+ Namespace/media  also rendered by flux-system/media (on both sides)" in text
    comment = cli("comment", *DIFF[1:], "--repo", root).stdout
    assert "1 object changes in 1 cluster (1 target): 0 changed, 1 added, 0 removed" in comment


def test_a_path_copy_and_its_flux_copy_are_one_object(git_root: Path, cli: Cli) -> None:
    root = scenario(git_root, with_source(), bump_source)
    _code, data = as_json(cli, root)
    # apps/src is what dev/flux-system/src deploys: its copy is judged there, listed with it
    assert data["verdict_line"] == (
        "changed: 1 object changes in 1 cluster (1 target): 1 changed, 0 added, 0 removed; "
        "1 Flux Kustomization changes"
    )
    c = data["summary"]["counts"]
    assert (c["objects"], c["objects_changed"], c["kustomizations_changed"]) == (1, 1, 1)
    assert (c["changed"], c["change_targets"]) == (1, 1)  # per target, as the reasons say
    assert [(ch["id"], ch["targets"]) for ch in data["changes"] if ch["real"]] == [
        (
            "source.toolkit.fluxcd.io/OCIRepository/flux-system/podinfo",
            ["apps/src", "dev/flux-system/src"],
        ),
        (
            "kustomize.toolkit.fluxcd.io/Kustomization/flux-system/media",
            ["clusters/dev", "dev/flux-system/flux-system"],
        ),
    ]
    comment = cli("comment", *DIFF[1:], "--repo", root).stdout
    assert comment.splitlines()[0] == (
        "### 1 object changes in 1 cluster (1 target): 1 changed, 0 added, 0 removed; "
        "1 Flux Kustomization changes"
    )


def test_an_unreachable_remote_base_is_preexisting_whatever_else_changes(
    git_root: Path, cli: Cli
) -> None:
    root = scenario(git_root, remote_root(), retune_media)
    code, data = as_json(cli, root)
    assert code == 0, data["errors"]
    assert data["errors"] == []
    assert {p["target"] for p in data["preexisting_errors"]} == {
        "clusters/dev",
        "dev/flux-system/flux-system",
    }
    assert all(REMOTE in p["message"] for p in data["preexisting_errors"])
    assert data["verdict"] == "no-change"
    assert cli(*DIFF, "--repo", root, "--fail-on-preexisting-error").code == 2


def test_a_failure_is_preexisting_when_only_files_it_does_not_name_change(
    git_root: Path, cli: Cli
) -> None:
    root = scenario(git_root, broken_with_config(), edit_broken_config)
    code, data = as_json(cli, root)
    assert code == 0, data["errors"]
    assert {p["target"] for p in data["preexisting_errors"]} == {
        "apps/broken",
        "dev/flux-system/broken",
    }
    assert [p["message"] for p in data["preexisting_errors"]] == [
        "apps/broken/kustomization.yaml: kustomize: missing.yaml: no such file or directory",
        "apps/broken: kustomize: missing.yaml: no such file or directory",
    ]


def test_a_target_broken_at_head_removes_no_dependency(git_root: Path, cli: Cli) -> None:
    root = scenario(git_root, releases(), break_infra)
    code, data = as_json(cli, root)
    assert code == 2
    assert ("infra", "head") in {
        (e["target"].rsplit("/", 1)[-1], e["side"]) for e in data["errors"]
    }
    depends = findings(data, "depends-on")
    assert depends == {"depends-on:unjudged:dev": "warning"}
    [note] = [f for f in data["findings"] if f["id"] == "depends-on:unjudged:dev"]
    assert "HelmRelease media/sonarr -> db/postgres" in note["message"]
    assert "this change removes" not in json.dumps(data["findings"])


# -- one counting model: every headline is the JSON summary ----------------------------------

SCENARIOS: dict[str, tuple[Callable[[], fr.Files], Scenario]] = {
    "move": (lambda: two_apps(storage=True), move_directory),
    "merge": (lambda: two_apps(storage=True), merge),
    "rename": (lambda: two_apps(storage=True), rename_namespace),
    "removal": (lambda: two_apps(storage=True, broken=True), remove_apps),
    "ci-only": (lambda: two_apps(broken=True), ci_only),
    "new-error": (lambda: two_apps(broken=True), break_media),
    "copy": (two_apps, copy_into_bootstrap),
    "source": (with_source, bump_source),
}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_headline_is_the_json_summary(name: str, git_root: Path, cli: Cli) -> None:
    base, change = SCENARIOS[name]
    root = scenario(git_root, base(), change)
    _code, data = as_json(cli, root)
    c = data["summary"]["counts"]
    assert c["targets"] == len(data["targets"])
    assert c["targets"] == (
        c["targets_changed"]
        + c["targets_unchanged"]
        + c["targets_error"]
        + c["targets_preexisting_error"]
    )
    assert c["targets_compared"] == c["targets_changed"] + c["targets_unchanged"]
    assert c["targets_changed"] == data["summary"]["targets_changed"]
    assert c["targets_preexisting_error"] == len(data["preexisting_errors"])
    assert c["targets_error"] == len({e["target"] for e in data["errors"]})
    assert (
        c["documents_changing"]
        == c["changed"] + c["added"] + c["removed"] + c["moved_with_changes"]
    )
    counted = {r["counts_as"] for r in data["reasons"]}
    assert counted <= {
        "changed",
        "added",
        "removed",
        "moved_with_changes",
        "flux_kustomizations",
        "duplicates",
        "errors",
    }
    for key in ("changed", "added", "removed", "moved_with_changes"):
        assert c[key] == sum(1 for r in data["reasons"] if r["counts_as"] == key)
    assert c["kustomizations_changed"] == len(
        {r["id"] for r in data["reasons"] if r["counts_as"] == "flux_kustomizations"}
    )

    # text: the verdict line (also in the JSON) and the closing targets line
    text = cli(*DIFF, "--repo", root)
    lines = text.stdout.splitlines()
    assert lines[0] == data["verdict_line"]
    if data["verdict"] == "changed":
        if c["documents_changing"]:
            line = (
                f"{_plural(c['objects'], 'object')} "
                f"{'changes' if c['objects'] == 1 else 'change'} in "
            )
            assert lines[0].startswith(f"changed: {line}")
            assert (
                f": {c['objects_changed']} changed, {c['objects_added']} added, "
                f"{c['objects_removed']} removed"
            ) in lines[0]
            assert len({ch["id"] for ch in data["changes"] if ch["real"]}) >= c["objects"]
        if c["targets_error"]:
            assert _plural(c["targets_error"], "render error") in lines[0]
    elif data["verdict"] == "no-change":
        assert lines[0].startswith(
            f"no change: {_plural(c['targets_compared'], 'target')}, "
            f"{_plural(c['documents_after'], 'document')} unchanged"
        )
    expected = (
        f"{_plural(c['targets'], 'target')}: {c['targets_changed']} "
        f"{'differs' if c['targets_changed'] == 1 else 'differ'}, "
        f"{c['targets_unchanged']} unchanged, {_plural(c['targets_error'], 'render error')}"
    )
    if c["targets_preexisting_error"]:
        expected += f", {_plural(c['targets_preexisting_error'], 'pre-existing error')}"
    assert lines[-1] == expected

    # the PR comment: its headline and context line
    comment = cli("comment", *DIFF[1:], "--repo", root).stdout
    context = next(ln for ln in comment.splitlines() if ln.startswith("`harness diff`"))
    assert f"{_plural(c['targets_compared'], 'target')} compared, {c['targets_changed']} " in (
        context
    )
    headline = comment.splitlines()[0]
    if data["verdict"] == "changed" and c["documents_changing"]:
        where = _plural(c["change_targets"], "target")
        if c["clusters"]:
            where = f"{_plural(c['clusters'], 'cluster')} ({where})"
        assert (
            f"{_plural(c['objects'], 'object')} "
            f"{'changes' if c['objects'] == 1 else 'change'} in {where}: "
            f"{c['objects_changed']} changed, {c['objects_added']} added, "
            f"{c['objects_removed']} removed"
        ).capitalize() in headline
    if c["targets_error"]:
        assert f"{_plural(c['targets_error'], 'render error')} (not compared)" in headline
    numbers = [int(n) for n in re.findall(r"(\d+) (?:Flux Kustomization)", headline)]
    assert numbers in ([], [c["kustomizations_changed"]])

    # JUnit: one testcase per target plus one per finding; skipped = pre-existing errors
    junit = ET.fromstring(cli(*DIFF, "--repo", root, "-o", "junit").stdout)
    assert int(junit.get("tests") or 0) == c["targets"] + len(data["findings"])
    assert int(junit.get("skipped") or 0) == c["targets_preexisting_error"]
    assert int(junit.get("errors") or 0) == c["targets_error"]
