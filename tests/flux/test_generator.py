"""Flux's generator rules (fluxcd/pkg kustomize_generator.go); the repo is never touched."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from harness.flux import generator
from harness.flux.model import FluxKustomization, Image, ObjectRef, Patch
from tests.flux.conftest import cm, ks_file

Repo = Callable[[dict[str, str | bytes]], Path]
SOURCE = ObjectRef("GitRepository", "flux-system", "flux-system")


def ks(**fields: object) -> FluxKustomization:
    return FluxKustomization(
        name="app",
        namespace="flux-system",
        path="./app",
        source=SOURCE,
        **fields,  # type: ignore[arg-type]
    )


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(root.rglob("*"))
    }


# -- scan ------------------------------------------------------------------------------------


def test_scan_adds_kustomization_subdir_once_and_does_not_descend(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "app/a.yaml": cm("a"),
            "app/sub/kustomization.yaml": ks_file("x.yaml"),
            "app/sub/x.yaml": cm("x"),
            "app/sub/deeper/y.yaml": cm("y"),
            "app/plain/b.yml": cm("b"),
            "app/plain/nested/c.yaml": cm("c"),
        }
    )
    assert generator.scan(repo / "app") == [
        "./a.yaml",
        "./plain/b.yml",
        "./plain/nested/c.yaml",
        "./sub",
    ]


def test_scan_takes_only_yaml_and_yml(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "app/a.yaml": cm("a"),
            "app/b.yml": cm("b"),
            "app/c.json": '{"apiVersion": "v1", "kind": "ConfigMap"}',
            "app/README.md": "# not a manifest",
            "app/d.YAML": "not: [valid",
        }
    )
    assert generator.scan(repo / "app") == ["./a.yaml", "./b.yml"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("key: [unclosed", "failed to decode Kubernetes YAML from"),
        ("apiVersion: v1\nmetadata:\n  name: x\n", "missing kind"),
        ("apiVersion: v1\nkind: ConfigMap\n", "missing metadata.name"),
        (b"\xff\xfe\x00garbage", "failed to decode Kubernetes YAML from"),
    ],
)
def test_scan_fails_on_a_file_that_is_not_kubernetes_yaml(
    make_repo: Repo, content: str | bytes, problem: str
) -> None:
    repo = make_repo({"app/good.yaml": cm("a"), "app/bad.yaml": content})
    with pytest.raises(generator.GeneratorError) as err:
        generator.scan(repo / "app")
    assert problem in str(err.value)
    assert "bad.yaml" in str(err.value)


def test_scan_accepts_comment_only_files(make_repo: Repo) -> None:
    repo = make_repo({"app/placeholder.yaml": "# generated at bootstrap\n"})
    assert generator.scan(repo / "app") == ["./placeholder.yaml"]


def test_empty_directory_plans_an_empty_build(tmp_path: Path) -> None:
    (tmp_path / "repo" / "empty").mkdir(parents=True)
    with generator.workspace(tmp_path / "repo") as ws:
        plan = generator.plan(ks(), tmp_path / "repo" / "empty", ws)
    assert plan.empty and plan.generated


# -- edit --------------------------------------------------------------------------------------


def test_overrides_replace_namespace_prefix_suffix(tmp_path: Path) -> None:
    base = {"namespace": "old", "namePrefix": "a-", "nameSuffix": "-z", "resources": ["x.yaml"]}
    out = generator.edit(
        base, ks(target_namespace="new", name_prefix="p-", name_suffix="-s"), tmp_path
    )
    assert out["namespace"] == "new"
    assert out["namePrefix"] == "p-"
    assert out["nameSuffix"] == "-s"
    assert out["resources"] == ["x.yaml"]
    assert base["namespace"] == "old", "the input mapping is not modified"


def test_empty_string_overrides_still_replace(tmp_path: Path) -> None:
    out = generator.edit({"namePrefix": "a-"}, ks(name_prefix=""), tmp_path)
    assert out["namePrefix"] == ""


def test_patches_and_components_are_appended(tmp_path: Path) -> None:
    (tmp_path / "comp").mkdir()
    base = {"patches": [{"path": "p.yaml"}], "components": ["../own"]}
    out = generator.edit(
        base,
        ks(
            patches=(Patch("- op: add", {"kind": "Deployment", "name": ""}),),
            components=("comp",),
        ),
        tmp_path,
    )
    assert out["patches"] == [
        {"path": "p.yaml"},
        {"patch": "- op: add", "target": {"kind": "Deployment"}},
    ]
    assert out["components"] == ["../own", "comp"]


def test_images_merge_by_name(tmp_path: Path) -> None:
    base = {"images": [{"name": "nginx", "newTag": "1"}, {"name": "redis", "newTag": "6"}]}
    out = generator.edit(
        base,
        ks(images=(Image("redis", new_name="valkey", new_tag="8"), Image("app", digest="d"))),
        tmp_path,
    )
    assert out["images"] == [
        {"name": "nginx", "newTag": "1"},
        {"name": "redis", "newName": "valkey", "newTag": "8"},
        {"name": "app", "digest": "d"},
    ]


@pytest.mark.parametrize("component", ["/abs/comp", "https://example.com/comp"])
def test_components_must_be_local_and_relative(tmp_path: Path, component: str) -> None:
    with pytest.raises(generator.GeneratorError, match="must be local and relative"):
        generator.edit({}, ks(components=(component,)), tmp_path)


def test_ignore_missing_components_drops_only_missing_ones(tmp_path: Path) -> None:
    (tmp_path / "here").mkdir()
    out = generator.edit(
        {}, ks(components=("here", "gone"), ignore_missing_components=True), tmp_path
    )
    assert out["components"] == ["here"]
    out = generator.edit({}, ks(components=("here", "gone")), tmp_path)
    assert out["components"] == ["here", "gone"]


# -- plan and the mirror workspace -------------------------------------------------------------


def test_dir_with_kustomization_and_no_overrides_builds_in_place(make_repo: Repo) -> None:
    repo = make_repo({"app/kustomization.yaml": ks_file("a.yaml"), "app/a.yaml": cm("a")})
    with generator.workspace(repo) as ws:
        plan = generator.plan(ks(), repo / "app", ws)
    assert plan.directory == repo / "app"
    assert not plan.generated


def test_generated_kustomization_lives_outside_the_repo(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "base/kustomization.yaml": ks_file("b.yaml"),
            "base/b.yaml": cm("b"),
            "app/kustomization.yml": ks_file("../base", "a.yaml"),
            "app/a.yaml": cm("a"),
            "plain/c.yaml": cm("c"),
        }
    )
    before = snapshot(repo)
    with generator.workspace(repo) as ws:
        edited = generator.plan(ks(target_namespace="t"), repo / "app", ws)
        generated = generator.plan(ks(), repo / "plain", ws)
        assert not edited.directory.is_relative_to(repo)
        assert not generated.directory.is_relative_to(repo)
        data = yaml.safe_load((edited.directory / "kustomization.yml").read_text())
        assert data["namespace"] == "t"
        assert data["resources"] == ["../base", "a.yaml"]
        assert not (edited.directory / "kustomization.yaml").exists()
        # relative references resolve through the mirror to the real files
        assert (edited.directory / "../base/b.yaml").resolve() == (repo / "base/b.yaml").resolve()
        assert os.path.islink(edited.directory / "a.yaml")
        gen = yaml.safe_load((generated.directory / "kustomization.yaml").read_text())
        assert gen["resources"] == ["./c.yaml"]
        root = ws.root
    assert not root.exists(), "the workspace is removed on exit"
    assert snapshot(repo) == before, "the user's tree is never modified"


def test_identical_inputs_share_one_mirror(make_repo: Repo) -> None:
    repo = make_repo({"app/a.yaml": cm("a")})
    with generator.workspace(repo) as ws:
        one = generator.plan(ks(target_namespace="x"), repo / "app", ws)
        two = generator.plan(ks(target_namespace="x"), repo / "app", ws)
        other = generator.plan(ks(target_namespace="y"), repo / "app", ws)
    assert one.directory == two.directory
    assert other.directory != one.directory


def test_messages_name_repo_paths_not_mirror_paths(make_repo: Repo) -> None:
    repo = make_repo({"app/a.yaml": cm("a")})
    with generator.workspace(repo) as ws:
        plan = generator.plan(ks(target_namespace="x"), repo / "app", ws)
        message = f"error in '{plan.directory}/a.yaml'"
        assert ws.to_repo(message) == f"error in '{(repo / 'app').resolve()}/a.yaml'"


def test_mirrors_go_to_tmpdir_when_set_else_to_tmpfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # tempfile caches what it found first
    assert generator.scratch_dir() is None  # tempfile then honours $TMPDIR
    with generator.workspace(tmp_path) as ws:
        assert ws.root.parent == tmp_path
    monkeypatch.delenv("TMPDIR")
    shm = Path("/dev/shm")
    expected = str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None
    assert generator.scratch_dir() == expected
