"""One Kustomization built like `flux build`: substitution, owner labels, SOPS, commonMetadata."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.core import documents
from harness.flux.api import ObjectRef, parse_kustomization
from harness.flux.includes import Includes
from harness.flux.kustomize import build as build_mod
from harness.flux.kustomize import generator
from harness.flux.kustomize.build import BuildError, Context, build, mask_sops
from harness.render import kustomize as render
from tests.flux.conftest import cm, docs, flux_ks, ks_file, new_renderer

Repo = Callable[[dict[str, str | bytes]], Path]


@pytest.fixture
def ctx_for(
    tmp_path: Path,
) -> Iterator[Callable[..., Context]]:
    spaces: list[generator.Workspace] = []

    def make(repo: Path, strict: bool = True, renderer: render.Renderer | None = None) -> Context:
        ws = generator.Workspace(repo)
        spaces.append(ws)
        return Context(renderer or new_renderer(), ws, Includes(), repo.resolve(), strict)

    yield make
    for ws in spaces:
        ws.close()


def run(
    ctx: Context,
    repo: Path,
    path: str,
    objects: Mapping[ObjectRef, Mapping[str, Any]] | None = None,
    **spec: Any,
) -> list[dict[str, Any]]:
    ks = parse_kustomization(yaml.safe_load(flux_ks("app", path, **spec)))
    built = build(ks, repo / path, ctx, lambda ref: (objects or {}).get(ref))
    return list(built.objects)


def names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


VARS = ObjectRef("ConfigMap", "flux-system", "vars")


def test_owner_labels_on_every_object(make_repo: Repo, ctx_for: Callable[..., Context]) -> None:
    repo = make_repo({"app/a.yaml": docs(cm("a", "ns"), cm("b", "ns"))})
    objs = run(ctx_for(repo), repo, "app")
    assert names(objs) == ["a", "b"]
    for obj in objs:
        assert obj["metadata"]["labels"] == {
            "kustomize.toolkit.fluxcd.io/name": "app",
            "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
        }


def test_common_metadata_is_applied_last_and_overrides(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    labelled = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"team": "old", "keep": "yes"}},
        }
    )
    repo = make_repo({"app/a.yaml": labelled})
    objs = run(
        ctx_for(repo),
        repo,
        "app",
        commonMetadata={
            "labels": {"team": "new", "kustomize.toolkit.fluxcd.io/name": "override"},
            "annotations": {"owner": "me"},
        },
    )
    meta = objs[0]["metadata"]
    assert meta["labels"] == {
        "team": "new",
        "keep": "yes",
        "kustomize.toolkit.fluxcd.io/name": "override",
        "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
    }
    assert meta["annotations"] == {"owner": "me"}


def test_target_namespace_and_name_prefix(make_repo: Repo, ctx_for: Callable[..., Context]) -> None:
    repo = make_repo(
        {
            "app/kustomization.yaml": ks_file("a.yaml", namespace="own", namePrefix="x-"),
            "app/a.yaml": cm("a", "elsewhere"),
        }
    )
    objs = run(ctx_for(repo), repo, "app", targetNamespace="target", namePrefix="p-")
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs] == [
        ("target", "p-a")
    ]


def test_components_are_resolved_relative_to_spec_path(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    component = yaml.safe_dump(
        {
            "apiVersion": "kustomize.config.k8s.io/v1alpha1",
            "kind": "Component",
            "labels": [{"pairs": {"added": "by-component"}}],
        }
    )
    repo = make_repo(
        {
            "components/extra/kustomization.yaml": component,
            "apps/one/a.yaml": cm("a", "ns"),
        }
    )
    objs = run(ctx_for(repo), repo, "apps/one", components=["../../components/extra"])
    assert objs[0]["metadata"]["labels"]["added"] == "by-component"


def test_patches_and_images(make_repo: Repo, ctx_for: Callable[..., Context]) -> None:
    deploy = yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1.0"}]},
                },
            },
        }
    )
    repo = make_repo({"app/kustomization.yaml": ks_file("d.yaml"), "app/d.yaml": deploy})
    objs = run(
        ctx_for(repo),
        repo,
        "app",
        patches=[
            {
                "patch": "- op: replace\n  path: /spec/replicas\n  value: 3\n",
                "target": {"kind": "Deployment", "name": "web"},
            }
        ],
        images=[{"name": "nginx", "newTag": "2.0"}],
    )
    assert objs[0]["spec"]["replicas"] == 3
    assert objs[0]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2.0"


# -- substitution ------------------------------------------------------------------------------

TEMPLATE = yaml.safe_dump(
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": "ns"},
        "data": {"env": "${ENV}", "script": "echo $${HOME} $$PATH", "plain": "$HOME"},
    }
)


def test_substitution_typing_and_escapes(make_repo: Repo, ctx_for: Callable[..., Context]) -> None:
    deploy = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: ns\n"
        "spec:\n  replicas: ${REPLICAS}\n  paused: ${PAUSED}\n  minReadySeconds: ${EMPTY}\n"
    )
    repo = make_repo({"app/c.yaml": TEMPLATE, "app/d.yaml": deploy})
    objs = run(
        ctx_for(repo),
        repo,
        "app",
        postBuild={"substitute": {"ENV": "prod", "REPLICAS": "3", "PAUSED": "true", "EMPTY": ""}},
    )
    config, deployment = objs
    assert config["data"] == {"env": "prod", "script": "echo ${HOME} $PATH", "plain": "$HOME"}
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["paused"] is True
    assert deployment["spec"]["minReadySeconds"] is None


def test_precedence_later_sources_win_inline_wins_over_all(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    template = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: out\n  namespace: ns\n"
        "data:\n  a: ${A}\n  b: ${B}\n  c: ${C}\n"
    )
    repo = make_repo({"app/t.yaml": template})
    sources = {
        ObjectRef("ConfigMap", "flux-system", "first"): {"data": {"A": "1", "B": "1", "C": "1"}},
        ObjectRef("Secret", "flux-system", "second"): {
            "data": {"B": base64.b64encode(b"2\n").decode()},
            "stringData": {"C": "2"},
        },
    }
    objs = run(
        ctx_for(repo),
        repo,
        "app",
        sources,
        postBuild={
            "substitute": {"C": "inline"},
            "substituteFrom": [
                {"kind": "ConfigMap", "name": "first"},
                {"kind": "Secret", "name": "second"},
            ],
        },
    )
    # substituted text is parsed again: an unquoted number stays a number, as in Flux; a
    # Secret's variable is its value's marker, the one the Secret's own document shows
    secret = sources[ObjectRef("Secret", "flux-system", "second")]
    marker = documents.redaction_marker(documents.identity(secret), "data.B", secret["data"]["B"])
    assert objs[0]["data"] == {"a": 1, "b": marker, "c": "inline"}


def test_an_empty_secret_value_substitutes_as_empty(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    """Issue 33: an empty value (or one Flux's newline stripping empties) is the empty
    variable, as in Flux's envsubst: bare it reads back as null, a default form takes the
    default, strict mode accepts it (it is set). Its marker was a non-empty string."""
    template = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: out\n  namespace: ns\n"
        "data:\n  a: ${E}\n  b: ${S:-dflt}\n  c: ${N}\n  d: x${E}y\n  e: ${K}\n"
    )
    repo = make_repo({"app/t.yaml": template})
    secret = {
        "data": {"E": "", "N": base64.b64encode(b"\n").decode(), "K": "aw=="},
        "stringData": {"S": ""},
    }
    objs = run(
        ctx_for(repo),
        repo,
        "app",
        {ObjectRef("Secret", "flux-system", "s"): secret},
        postBuild={"substituteFrom": [{"kind": "Secret", "name": "s"}]},
    )
    marker = documents.redaction_marker(documents.identity(secret), "data.K", "aw==")
    assert objs[0]["data"] == {"a": None, "b": "dflt", "c": None, "d": "xy", "e": marker}


def test_optional_source_may_be_missing(make_repo: Repo, ctx_for: Callable[..., Context]) -> None:
    repo = make_repo({"app/c.yaml": TEMPLATE})
    objs = run(
        ctx_for(repo),
        repo,
        "app",
        postBuild={
            "substitute": {"ENV": "x"},
            "substituteFrom": [{"kind": "ConfigMap", "name": "absent", "optional": True}],
        },
    )
    assert objs[0]["data"]["env"] == "x"


def test_missing_required_source_is_an_error(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/c.yaml": TEMPLATE})
    with pytest.raises(BuildError, match=r"ConfigMap/flux-system/absent is neither rendered"):
        run(
            ctx_for(repo),
            repo,
            "app",
            postBuild={"substituteFrom": [{"kind": "ConfigMap", "name": "absent"}]},
        )


def test_sources_are_looked_up_in_the_kustomization_namespace(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/c.yaml": TEMPLATE})
    elsewhere = {ObjectRef("ConfigMap", "other", "vars"): {"data": {"ENV": "wrong"}}}
    with pytest.raises(BuildError, match="neither rendered from git nor declared"):
        run(
            ctx_for(repo),
            repo,
            "app",
            elsewhere,
            postBuild={"substituteFrom": [{"kind": "ConfigMap", "name": "vars"}]},
        )


def test_disabled_label_or_annotation_leaves_the_resource_alone(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    def raw(name: str, where: str) -> str:
        meta = {"name": name, where: {"kustomize.toolkit.fluxcd.io/substitute": "disabled"}}
        return yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"v": "${X}$$"}}
        )

    repo = make_repo(
        {"app/a.yaml": docs(raw("by-label", "labels"), raw("by-annotation", "annotations"))}
    )
    objs = run(ctx_for(repo), repo, "app", postBuild={"substitute": {"X": "1"}})
    assert [o["data"]["v"] for o in objs] == ["${X}$$", "${X}$$"]


def test_strict_mode_names_variable_document_and_file(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/kustomization.yaml": ks_file("c.yaml"), "app/c.yaml": TEMPLATE})
    with pytest.raises(BuildError) as err:
        run(ctx_for(repo), repo, "app", postBuild={"substitute": {"OTHER": "1"}})
    assert str(err.value) == (
        'app/c.yaml: variable not set (strict mode): "ENV" in ConfigMap/ns/app'
    )


def test_lenient_mode_reads_unset_as_empty(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/c.yaml": TEMPLATE})
    objs = run(ctx_for(repo, strict=False), repo, "app", postBuild={"substitute": {"O": "1"}})
    assert objs[0]["data"]["env"] is None


def test_invalid_variable_name_fails_the_kustomization(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/c.yaml": TEMPLATE})
    with pytest.raises(BuildError, match="'BAD-NAME' var name is invalid"):
        run(ctx_for(repo), repo, "app", postBuild={"substitute": {"ENV": "x", "BAD-NAME": "1"}})


def test_empty_variables_skip_substitution_unless_always(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/c.yaml": TEMPLATE})
    ctx = ctx_for(repo)
    objs = run(ctx, repo, "app", postBuild={})
    assert objs[0]["data"]["env"] == "${ENV}"
    assert objs[0]["data"]["script"] == "echo $${HOME} $$PATH"
    with pytest.raises(BuildError, match='variable not set \\(strict mode\\): "ENV"'):
        run(ctx, repo, "app", postBuild={"substituteStrategy": "Always"})


def test_no_post_build_means_no_substitution(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/c.yaml": TEMPLATE})
    objs = run(ctx_for(repo), repo, "app")
    assert objs[0]["data"]["env"] == "${ENV}"


# -- SOPS, dropping, reuse -------------------------------------------------------------------

SOPS_SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "token", "namespace": "ns"},
    "type": "Opaque",
    "data": {"a": "RU5DW0FFUzI1Nl9HQ00sZGF0YTp4XQ=="},
    "stringData": {"b": "ENC[AES256_GCM,data:xyz,type:str]"},
    "sops": {"mac": "ENC[AES256_GCM,data:abc,type:str]", "version": "3.9.0"},
}


def test_sops_secret_is_masked_like_flux_build() -> None:
    obj = yaml.safe_load(yaml.safe_dump(SOPS_SECRET))
    mask_sops(obj)
    assert "sops" not in obj
    assert obj["data"] == {"a": base64.b64encode(b"**SOPS**").decode()}
    assert obj["stringData"] == {"b": "**SOPS**"}


def test_sops_dockerconfigjson_gets_a_json_mask() -> None:
    obj = yaml.safe_load(yaml.safe_dump(SOPS_SECRET))
    obj["type"] = "kubernetes.io/dockerconfigjson"
    mask_sops(obj)
    assert base64.b64decode(obj["data"]["a"]) == b'{"mask":"**SOPS**"}'
    assert obj["stringData"]["b"] == '{"mask":"**SOPS**"}'


def test_sops_metadata_is_stripped_from_other_kinds() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "sops": {}}
    mask_sops(obj)
    assert "sops" not in obj


def test_masked_values_stay_readable_in_documents(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    plain = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "plain", "namespace": "ns"},
        "stringData": {"password": "hunter2"},
    }
    repo = make_repo({"app/s.yaml": docs(yaml.safe_dump(SOPS_SECRET), yaml.safe_dump(plain))})
    texts = {
        o["metadata"]["name"]: documents.document_from_object(o).text
        for o in run(ctx_for(repo), repo, "app")
    }
    assert "b: '**SOPS**'" in texts["token"] and "KipTT1BTKio=" in texts["token"]
    assert "sops:" not in texts["token"]
    assert "hunter2" not in texts["plain"] and documents.REDACTED_PREFIX in texts["plain"]


def test_sops_encrypted_substitution_source_reads_as_mask(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/c.yaml": TEMPLATE})
    secret = dict(SOPS_SECRET, stringData={"ENV": "ENC[AES256_GCM,data:q,type:str]"}, data={})
    ks = parse_kustomization(
        yaml.safe_load(
            flux_ks("app", "app", postBuild={"substituteFrom": [{"kind": "Secret", "name": "s"}]})
        )
    )
    built = build(
        ks,
        repo / "app",
        ctx_for(repo),
        lambda ref: secret if ref == ObjectRef("Secret", "flux-system", "s") else None,
    )
    assert built.objects[0]["data"]["env"] == build_mod.SOPS_VARIABLE
    assert any("SOPS-encrypted" in n for n in built.notes)


class _Canned:
    """A renderer stand-in that returns a fixed stream (kustomize never emits nameless ones)."""

    flags = ("--load-restrictor", "LoadRestrictionsNone")

    def __init__(self, stream: str) -> None:
        self.stream = stream

    def build(self, directory: Path, extra: tuple[str, ...] = ()) -> render.BuildOutput:
        return render.BuildOutput(self.stream)


def test_objects_without_apiversion_kind_or_name_are_dropped(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/kustomization.yaml": ks_file("a.yaml"), "app/a.yaml": cm("a")})
    stream = docs(
        cm("kept"),
        "kind: ConfigMap\nmetadata:\n  name: no-api\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: gen-\n",
    )
    ctx = ctx_for(repo, renderer=_Canned(stream))  # type: ignore[arg-type]
    ks = parse_kustomization(yaml.safe_load(flux_ks("app", "app")))
    built = build(ks, repo / "app", ctx, lambda _ref: None)
    assert names(list(built.objects)) == ["kept"]
    assert built.notes == ("dropped 2 object(s) without apiVersion, kind or metadata.name",)


def test_undecodable_file_fails_the_build_naming_it(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/ok.yaml": cm("a"), "app/broken.yaml": "a: [b"})
    with pytest.raises(BuildError, match=r"failed to decode Kubernetes YAML from app/broken.yaml"):
        run(ctx_for(repo), repo, "app")


def test_kustomize_errors_name_repo_paths(make_repo: Repo, ctx_for: Callable[..., Context]) -> None:
    repo = make_repo({"app/kustomization.yaml": ks_file("missing.yaml")})
    with pytest.raises(BuildError) as err:
        run(ctx_for(repo), repo, "app", targetNamespace="x")
    message = str(err.value)
    assert message.startswith("app: kustomize: ") and "missing.yaml" in message
    assert "harness-flux-" not in message and str(repo) not in message


def test_empty_directory_builds_zero_objects(
    tmp_path: Path, ctx_for: Callable[..., Context]
) -> None:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    assert run(ctx_for(repo), repo, "app") == []


def test_identical_inputs_run_kustomize_once(
    make_repo: Repo, ctx_for: Callable[..., Context]
) -> None:
    repo = make_repo({"app/a.yaml": cm("a"), "app/kustomization.yaml": ks_file("a.yaml")})
    renderer = new_renderer()
    ctx = ctx_for(repo, renderer=renderer)
    renderer.build(repo / "app")  # the path target's run
    assert renderer.runs == 1
    run(ctx, repo, "app")
    run(ctx, repo, "app", postBuild={"substitute": {"X": "1"}})
    assert renderer.runs == 1, "no overrides: the path target's run is reused"
    run(ctx, repo, "app", targetNamespace="t")
    run(ctx, repo, "app", targetNamespace="t", postBuild={"substitute": {"X": "1"}})
    assert renderer.runs == 2, "same overrides: one generated build, shared"


def test_module_exposes_no_printing() -> None:
    assert "print(" not in Path(build_mod.__file__).read_text()
