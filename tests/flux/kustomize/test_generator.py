"""Flux's generator rules (fluxcd/pkg kustomize_generator.go); the repo is never touched."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.core import yamlload
from harness.flux.api import (
    FluxKustomization,
    Image,
    ObjectRef,
    Patch,
    SpecError,
    parse_kustomization,
)
from harness.flux.kustomize import generator
from tests.flux.conftest import cm, flux_ks, ks_file, objects, render_repo

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


def test_empty_string_overrides_are_written_back_empty(tmp_path: Path) -> None:
    """Go writes the struct back with omitempty: an empty prefix clears the file's one."""
    out = generator.edit({"namePrefix": "a-", "resources": ["x"]}, ks(name_prefix=""), tmp_path)
    assert "namePrefix" not in out


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


@pytest.mark.parametrize(
    ("target", "written"),
    [
        (None, None),
        ({}, {}),  # present but empty: kustomize selects every resource
        ({"kind": "Service", "bogus": "x", "name": ""}, {"kind": "Service"}),
        (
            {"labelSelector": "app=a", "annotationSelector": "x=y", "group": "apps"},
            {"group": "apps", "labelSelector": "app=a", "annotationSelector": "x=y"},
        ),
    ],
)
def test_patch_targets_keep_only_selector_fields(
    tmp_path: Path, target: dict[str, str] | None, written: dict[str, str] | None
) -> None:
    out = generator.edit({"resources": ["x"]}, ks(patches=(Patch("p", target),)), tmp_path)
    assert out["patches"][0].get("target") == written
    assert ("target" in out["patches"][0]) is (written is not None)


APP = "ghcr.io/acme/app"
SHA = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("in_file", "override", "expected"),
    [
        pytest.param(
            {"name": APP, "newTag": "1.0"},
            Image(APP, new_name="mirror.local/app"),
            {"name": APP, "newName": "mirror.local/app", "newTag": "1.0"},
            id="newName-only keeps the file's tag",
        ),
        pytest.param(
            {"name": APP, "newName": "mirror.local/app", "newTag": "1.0"},
            Image(APP, new_tag="2.0"),
            {"name": APP, "newName": "mirror.local/app", "newTag": "2.0"},
            id="newTag-only keeps the file's newName",
        ),
        pytest.param(
            {"name": APP, "digest": SHA},
            Image(APP, new_name="mirror.local/app"),
            {"name": APP, "newName": "mirror.local/app", "digest": SHA},
            id="newName-only keeps the file's digest",
        ),
        pytest.param(
            {"name": APP, "newName": "mirror.local/app", "digest": SHA},
            Image(APP, new_tag="3.1"),
            {"name": APP, "newName": "mirror.local/app", "newTag": "3.1"},
            id="a tag replaces the file's digest",
        ),
        pytest.param(
            {"name": APP, "newTag": "1.0"},
            Image(APP, digest=SHA),
            {"name": APP, "digest": SHA},
            id="a digest replaces the file's tag",
        ),
        pytest.param(
            {"name": APP, "newTag": "1.0", "digest": SHA},
            Image(APP, new_tag="4.0", digest="sha256:" + "cd" * 32),
            {"name": APP, "newTag": "4.0", "digest": "sha256:" + "cd" * 32},
            id="tag and digest together both apply",
        ),
        pytest.param(
            {"name": APP, "newName": "old.local/app", "newTag": "1.0"},
            Image(APP),
            {"name": APP, "newName": "old.local/app", "newTag": "1.0"},
            id="a bare name changes nothing",
        ),
        pytest.param(
            {"name": APP, "newName": "old.local/app", "newTag": "1.0"},
            Image(APP, new_name="new.local/app", new_tag="5.0"),
            {"name": APP, "newName": "new.local/app", "newTag": "5.0"},
            id="set fields override",
        ),
    ],
)
def test_images_merge_into_the_entry_of_the_same_name(
    tmp_path: Path, in_file: dict[str, str], override: Image, expected: dict[str, str]
) -> None:
    base = {"resources": ["x"], "images": [{"name": "other", "newTag": "9"}, in_file]}
    out = generator.edit(base, ks(images=(override,)), tmp_path)
    assert out["images"] == [{"name": "other", "newTag": "9"}, expected]
    assert base["images"][1] == in_file, "the input mapping is not modified"


def test_images_without_an_entry_are_appended_in_order(tmp_path: Path) -> None:
    out = generator.edit(
        {"resources": ["x"]},
        ks(images=(Image("b", new_tag="2"), Image("a", new_name="n", digest=SHA), Image("c"))),
        tmp_path,
    )
    assert out["images"] == [
        {"name": "b", "newTag": "2"},
        {"name": "a", "newName": "n", "digest": SHA},
        {"name": "c"},
    ]


@pytest.mark.parametrize(
    ("base", "created", "spec", "expected"),
    [
        pytest.param({"resources": ["a.yaml"]}, False, (), None, id="resources: none added"),
        pytest.param(
            {"configMapGenerator": [{"name": "x"}]},
            False,
            (),
            ["originAnnotations"],
            id="file without resources: originAnnotations",
        ),
        pytest.param(
            {"resources": []}, False, (), ["originAnnotations"], id="empty resources list"
        ),
        pytest.param(
            {"bases": ["../b"]}, False, (), ["originAnnotations"], id="bases are not resources"
        ),
        pytest.param(
            {"configMapGenerator": [{"name": "x"}]},
            False,
            ("transformerAnnotations",),
            ["transformerAnnotations"],
            id="spec replaces the fallback",
        ),
        pytest.param(
            {"resources": ["a.yaml"], "buildMetadata": ["managedByLabel"]},
            False,
            ("originAnnotations", "transformerAnnotations"),
            ["originAnnotations", "transformerAnnotations"],
            id="spec replaces the file's list",
        ),
        pytest.param(
            {"resources": ["a.yaml"], "buildMetadata": ["managedByLabel"]},
            False,
            (),
            ["managedByLabel"],
            id="no spec: the file's list stays",
        ),
        pytest.param(
            {"namespace": "_placeholder"}, True, (), None, id="generated file: no fallback"
        ),
    ],
)
def test_build_metadata(
    tmp_path: Path,
    base: dict[str, object],
    created: bool,
    spec: tuple[str, ...],
    expected: list[str] | None,
) -> None:
    out = generator.edit(base, ks(build_metadata=spec), tmp_path, created=created)
    assert out.get("buildMetadata") == expected


def test_normalize_is_flux_decode_encode_round_trip() -> None:
    out, dropped = generator.normalize(
        {
            "NamePrefix": "a-",
            "namespace": "first",
            "Namespace": "second",
            "commonLables": {"typo": "x"},
            "resources": ["a.yaml"],
            "images": [],
            "sortOptions": {},
            "namesuffix": None,
        }
    )
    assert out == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namePrefix": "a-",
        "namespace": "second",
        "resources": ["a.yaml"],
        "sortOptions": {},
    }
    assert dropped == ["commonLables"]


def test_normalize_keeps_a_component_kind() -> None:
    out, _ = generator.normalize(
        {"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component"}
    )
    assert (out["apiVersion"], out["kind"]) == ("kustomize.config.k8s.io/v1alpha1", "Component")


@pytest.mark.parametrize(
    ("path", "local"),
    [
        ("components/tls", True),
        ("./tls", True),
        ("../../shared/tls", True),
        ("file://components/tls", True),
        ("FILE://components/tls", True),
        ("file:///srv/components/tls", False),
        ("/srv/components/tls", False),
        ("HTTP://git.example.org/team/infra", False),
        ("https://git.example.org/team/infra//tls?ref=v1", False),
        ("ssh://git@git.example.org/team/infra", False),
        ("git@git.example.org:team/infra.git", False),
        ("git::https://git.example.org/team/infra", False),
        ("gh:team/infra", False),
        ("github.com:team/infra", False),
        ("GitHub.com/team/infra", False),
        ("git.example.org/team/infra", True),  # a bare host path only for github.com
        ("gitlab.com/team/infra", True),
        ("git@", True),  # a prefix alone is not longer than itself
        ("https://", True),
    ],
)
def test_is_local_relative_matches_fluxcd_pkg(path: str, local: bool) -> None:
    assert generator.is_local_relative(path) is local


@pytest.mark.parametrize(
    "component", ["/abs/comp", "https://example.com/comp", "git@host:org/repo", "file:///c"]
)
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


# -- fidelity cases that only show in a real build ------------------------------------------


def test_scan_does_not_follow_symlinked_directories(make_repo: Repo) -> None:
    repo = make_repo({"shared/s.yaml": cm("s"), "app/a.yaml": cm("a"), "app/.yaml": cm("dot")})
    os.symlink(repo / "shared", repo / "app" / "linked")
    assert generator.scan(repo / "app") == ["./.yaml", "./a.yaml"]


@pytest.mark.parametrize(
    ("kustomization", "spec", "in_place"),
    [
        pytest.param(ks_file("a.yaml"), {}, True, id="resources and no overrides"),
        pytest.param(ks_file("a.yaml"), {"namePrefix": "x-"}, False, id="an override"),
        pytest.param(
            ks_file("a.yaml"), {"buildMetadata": ["originAnnotations"]}, False, id="buildMetadata"
        ),
        pytest.param(ks_file(), {}, False, id="no resources: originAnnotations"),
        pytest.param(ks_file("a.yaml", bogus=1), {}, False, id="an unknown key is dropped"),
    ],
)
def test_plan_builds_in_place_only_when_flux_would_change_nothing(
    make_repo: Repo, kustomization: str, spec: dict[str, object], in_place: bool
) -> None:
    repo = make_repo({"app/kustomization.yaml": kustomization, "app/a.yaml": cm("a")})
    fk = parse_kustomization(yaml.safe_load(flux_ks("app", "./app", **spec)))
    with generator.workspace(repo) as ws:
        plan = generator.plan(fk, repo / "app", ws)
        assert (plan.directory == repo / "app") is in_place
        if not in_place:
            written = yaml.safe_load((plan.directory / "kustomization.yaml").read_text())
            assert "bogus" not in written


@pytest.mark.parametrize(
    ("spec", "empty"),
    [
        ({}, True),
        ({"targetNamespace": "apps", "namePrefix": "p-", "images": [{"name": "x"}]}, True),
        ({"patches": [{"patch": "- op: remove\n  path: /x", "target": {"kind": "X"}}]}, False),
    ],
)
def test_empty_directory_gets_a_placeholder_namespace(
    make_repo: Repo, spec: dict[str, object], empty: bool
) -> None:
    repo = make_repo({"app/README.md": "nothing here"})
    fk = parse_kustomization(yaml.safe_load(flux_ks("app", "./app", **spec)))
    with generator.workspace(repo) as ws:
        plan = generator.plan(fk, repo / "app", ws)
        assert plan.empty is empty
        if not empty:
            written = yaml.safe_load((plan.directory / "kustomization.yaml").read_text())
            assert written["namespace"] == "_placeholder"
            assert "resources" not in written


def _flux_repo(app: dict[str, str], **spec: object) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "clusters/dev/apps.yaml": flux_ks("apps", "./app", **spec),
        "clusters/dev/kustomization.yaml": ks_file("apps.yaml"),
    }
    files.update({f"app/{k}": v for k, v in app.items()})
    return files


def test_kustomization_without_resources_renders_origin_annotations(make_repo: Repo) -> None:
    repo = make_repo(
        _flux_repo(
            {
                "kustomization.yaml": yaml.safe_dump(
                    {"configMapGenerator": [{"name": "settings", "literals": ["a=b"]}]}
                )
            }
        )
    )
    results = render_repo(repo)
    (obj,) = objects(results["dev/flux-system/apps"])
    origin = yaml.safe_load(obj["metadata"]["annotations"]["config.kubernetes.io/origin"])
    assert origin["configuredBy"]["kind"] == "ConfigMapGenerator"


def test_spec_build_metadata_reaches_the_build(make_repo: Repo) -> None:
    repo = make_repo(
        _flux_repo(
            {"kustomization.yaml": ks_file("a.yaml"), "a.yaml": cm("a")},
            buildMetadata=["originAnnotations"],
        )
    )
    (obj,) = objects(render_repo(repo)["dev/flux-system/apps"])
    assert obj["metadata"]["annotations"]["config.kubernetes.io/origin"] == "path: a.yaml\n"


def test_unknown_kustomization_key_is_dropped_like_flux(make_repo: Repo) -> None:
    repo = make_repo(
        _flux_repo({"kustomization.yaml": ks_file("a.yaml", bogus=1), "a.yaml": cm("a")})
    )
    (obj,) = objects(render_repo(repo)["dev/flux-system/apps"])
    assert obj["metadata"]["name"] == "a"


def test_component_into_an_empty_directory_lands_in_the_placeholder_namespace(
    make_repo: Repo,
) -> None:
    component = yaml.safe_dump(
        {
            "apiVersion": "kustomize.config.k8s.io/v1alpha1",
            "kind": "Component",
            "configMapGenerator": [{"name": "c", "literals": ["k=v"]}],
            "generatorOptions": {"disableNameSuffixHash": True},
        }
    )
    files = _flux_repo({"README.md": "empty"}, components=["../comp"])
    files["comp/kustomization.yaml"] = component
    repo = make_repo(files)
    (obj,) = objects(render_repo(repo)["dev/flux-system/apps"])
    assert obj["metadata"]["namespace"] == "_placeholder"


def test_images_merge_end_to_end(make_repo: Repo) -> None:
    deploy = yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:0"}]}}},
        }
    )
    repo = make_repo(
        _flux_repo(
            {
                "kustomization.yaml": ks_file("d.yaml", images=[{"name": "web", "newTag": "1.2"}]),
                "d.yaml": deploy,
            },
            images=[{"name": "web", "newName": "mirror.local/web"}],
        )
    )
    (obj,) = objects(render_repo(repo)["dev/flux-system/apps"])
    assert obj["spec"]["template"]["spec"]["containers"][0]["image"] == "mirror.local/web:1.2"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (["originAnnotations"], True),
        (["transformerAnnotations"], True),
        (["managedByLabel"], False),
    ],
)
def test_spec_build_metadata_takes_only_the_crd_enum(value: list[str], ok: bool) -> None:
    obj = yaml.safe_load(flux_ks("app", "./app", buildMetadata=value))
    if ok:
        assert parse_kustomization(obj).build_metadata == tuple(value)
    else:
        with pytest.raises(SpecError, match=r"spec.buildMetadata\[0\] must be one of"):
            parse_kustomization(obj)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{}\n", None),
        ("apiVersion: v1\nkind: ConfigMapList\n", None),
        (
            "apiVersion: v1\nkind: List\nitems:\n"
            "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
            None,
        ),
        (
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap}\n",
            "missing metadata.name",
        ),
        ("apiVersion: v1\nkind: List\nitems: {a: b}\n", "expected array in List/items"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  -\n", None),
    ],
)
def test_scan_decodes_like_kustomizes_resource_factory(
    make_repo: Repo, content: str, problem: str | None
) -> None:
    repo = make_repo({"app/x.yaml": content})
    if problem is None:
        assert generator.scan(repo / "app") == ["./x.yaml"]
    else:
        with pytest.raises(generator.GeneratorError, match=problem):
            generator.scan(repo / "app")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("patches", "p.yaml", "cannot unmarshal string into Go struct field Kustomization.patches"),
        ("namespace", ["a"], "cannot unmarshal array into Go struct field Kustomization.namespace"),
        ("commonLabels", ["a"], "Kustomization.commonLabels of type object"),
        ("images", {"name": "x"}, "cannot unmarshal object into Go struct field"),
    ],
)
def test_a_field_of_the_wrong_type_fails_like_flux(
    make_repo: Repo, field: str, value: object, message: str
) -> None:
    repo = make_repo(
        {"app/kustomization.yaml": ks_file("a.yaml", **{field: value}), "app/a.yaml": cm("a")}
    )
    fk = parse_kustomization(yaml.safe_load(flux_ks("app", "./app", namePrefix="x-")))
    with generator.workspace(repo) as ws, pytest.raises(generator.GeneratorError, match=message):
        generator.plan(fk, repo / "app", ws)


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


# -- reuse: a rewrite that changes nothing builds the path target's own directory -------------

_SHAPES = st.fixed_dictionaries(
    {
        "namespace": st.sampled_from([None, "apps", "media"]),
        "target": st.sampled_from([None, "apps", "media"]),
        "prefix": st.sampled_from([None, "p-"]),
        "labels": st.booleans(),
        "images": st.booleans(),
    }
)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=_SHAPES)
def test_a_rewrite_that_changes_nothing_builds_what_the_mirror_builds(
    shape: dict[str, Any], tmp_path_factory: pytest.TempPathFactory, kubectl: Path
) -> None:
    """Real-repo-shaped kustomization files (a namespace, labels, images) under Flux specs
    (targetNamespace equal to the file's namespace or not, a namePrefix): whenever the plan
    builds the directory in place, the build is byte-identical to kustomize on Flux's
    generated file in a mirror, which is what the build would otherwise run."""
    from harness.render import kustomize as render

    root = tmp_path_factory.mktemp("inplace")
    app = root / "app"
    app.mkdir()
    body: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["cm.yaml", "deploy.yaml"],
    }
    if shape["namespace"]:
        body["namespace"] = shape["namespace"]
    if shape["labels"]:
        body["labels"] = [{"pairs": {"app.kubernetes.io/name": "web"}}]
    if shape["images"]:
        body["images"] = [{"name": "nginx", "newTag": "1.27"}]
    (app / "kustomization.yaml").write_text("# a comment Flux drops\n" + yaml.safe_dump(body))
    (app / "cm.yaml").write_text(cm("web", "default", key="v"))
    (app / "deploy.yaml").write_text(DEPLOY)
    spec = ks(target_namespace=shape["target"], name_prefix=shape["prefix"])
    renderer = render.resolve(flags=render.UNRESTRICTED, timeout=300)
    with generator.workspace(root) as ws:
        plan = generator.plan(spec, app, ws)
        edited = generator.edit(yaml.safe_load((app / "kustomization.yaml").read_text()), spec, app)
        mirror = ws.mirror(app, "kustomization.yaml", yamlload.dump(edited))
        rewritten = renderer.build(mirror)
        if not plan.generated:
            in_place = renderer.build(app)
            assert in_place.error is None and rewritten.error is None
            assert in_place.stdout == rewritten.stdout
    expect_in_place = shape["target"] in (None, shape["namespace"]) and shape["prefix"] is None
    assert (not plan.generated) == expect_in_place


DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
"""


def test_a_mirror_links_every_sibling_on_the_way_down_to_the_real_path(make_repo: Repo) -> None:
    """What a mirror holds, entry by entry: at each level from the repo root, every entry but
    the next level's directory is a symlink to the real entry; at the last, every entry but
    the kustomization files, and the generated file. Two mirrors sharing levels (their
    listings are taken once per workspace) hold the same links there."""
    repo = make_repo(
        {
            "README.md": "x",
            "apps/one/app/kustomization.yaml": ks_file("a.yaml"),
            "apps/one/app/a.yaml": cm("a"),
            "apps/one/app/sub/b.yaml": cm("b"),
            "apps/one/other/c.yaml": cm("c"),
            "apps/two/d.yaml": cm("d"),
            "base/e.yaml": cm("e"),
        }
    )
    real = repo.resolve()

    def expected(leaf: Path, generated: str) -> dict[str, str]:
        out: dict[str, str] = {}
        here = real
        rel = leaf.relative_to(real).parts
        for depth in range(len(rel) + 1):
            part = rel[depth] if depth < len(rel) else None
            prefix = "/".join(rel[:depth])
            for name in sorted(os.listdir(here)):
                if name == part or (part is None and name in generator.KUSTOMIZATION_FILES):
                    continue
                out[f"{prefix}/{name}".lstrip("/")] = f"-> {here / name}"
            if part is None:
                break
            out[f"{prefix}/{part}".lstrip("/")] = "dir"
            here = here / part
        out[f"{'/'.join(rel)}/{generated}"] = "file"
        return out

    def held(top: Path) -> dict[str, str]:
        out: dict[str, str] = {}
        for path in sorted(top.rglob("*")):
            rel = path.relative_to(top).as_posix()
            if path.is_symlink():
                out[rel] = f"-> {os.readlink(path)}"
            else:
                out[rel] = "dir" if path.is_dir() else "file"
        return out

    with generator.workspace(repo) as ws:
        for directory in (repo / "apps/one/app", repo / "apps/one/other", repo / "apps/two"):
            plan = generator.plan(ks(target_namespace="t"), directory, ws)
            top = Path(ws.root, plan.directory.relative_to(ws.root).parts[0])
            assert held(top) == expected(directory.resolve(), "kustomization.yaml"), directory
            assert (plan.directory / "a.yaml").exists() == (directory.name == "app")
