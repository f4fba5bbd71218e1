"""ResourceSet expansion as flux-operator builds it: a vector table of our own (inputs,
Flatten and Permute, providers by name and label, Static defaults, exported inputs,
missing keys, trim markers, dedup, exclusion, steps, commonMetadata, copyFrom), then a
tiny fleet rendered end to end whose ResourceSet emits per-tenant Namespace + Kustomization."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cache import store as cache
from harness.core import config as config_mod
from harness.flux import resourceset
from harness.flux.api import ObjectRef
from harness.flux.resourceset import NotJudged, ResourceSetError, expand
from harness.flux.targets import render_flux
from harness.pipeline.repo import RenderOptions, render_repo
from tests.flux.conftest import by_id, flux_ks, new_renderer
from tests.flux.conftest import render_repo as render_flux_repo

OWNER = {resourceset.OWNER_NAME: "rs", resourceset.OWNER_NAMESPACE: "apps"}


def rset(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "fluxcd.controlplane.io/v1",
        "kind": "ResourceSet",
        "metadata": {"name": "rs", "namespace": "apps", **meta},
        "spec": spec,
    }


def provider(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    status = spec.pop("status", None)
    obj: dict[str, Any] = {
        "apiVersion": "fluxcd.controlplane.io/v1",
        "kind": "ResourceSetInputProvider",
        "metadata": {"name": name, "namespace": "apps", "labels": labels or {}},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


CM = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cm-<< inputs.id >>", "namespace": "apps"},
    "data": {"v": "<< inputs.v | quote >>"},
}


def names(objs: tuple[dict[str, Any], ...]) -> list[str]:
    return [
        f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in objs
    ]


def no_objects(_ref: ObjectRef) -> None:
    return None


def test_inline_inputs_render_each_resource_per_input_set_with_owner_labels() -> None:
    spec = {
        "inputs": [{"tenant": "team1", "replicas": 2}, {"tenant": "team2", "replicas": 3}],
        "resources": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "<< inputs.tenant >>"}},
            {
                "apiVersion": "helm.toolkit.fluxcd.io/v2",
                "kind": "HelmRelease",
                "metadata": {"name": "app-<< inputs.tenant >>", "namespace": "apps"},
                "spec": {"values": {"replicaCount": "<< inputs.replicas | int >>"}},
            },
        ],
    }
    out = expand(rset(spec), [], no_objects)
    assert out.inputs == 2
    assert names(out.objects) == [
        "Namespace//team1",
        "Namespace//team2",
        "HelmRelease/apps/app-team1",
        "HelmRelease/apps/app-team2",
    ]
    assert out.objects[2]["spec"]["values"]["replicaCount"] == 2  # an int after `int`
    assert out.objects[0]["metadata"]["labels"] == OWNER


def test_inputs_provider_is_set_and_inline_sets_get_no_id() -> None:
    spec = {
        "inputs": [{"x": "a"}],
        "resourcesTemplate": "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: c\n"
        "data:\n  p: << inputs.provider | toJson | quote >>\n"
        '  id: << get inputs "id" | default "none" >>\n',
    }
    (obj,) = expand(rset(spec), [], no_objects).objects
    assert obj["data"] == {
        "p": '{"apiVersion":"fluxcd.controlplane.io/v1","kind":"ResourceSet","name":"rs",'
        '"namespace":"apps"}',
        "id": "none",
    }


def test_flatten_concatenates_own_inputs_then_providers_sorted_by_name() -> None:
    providers = [
        provider("zeta", type="Static", defaultValues={"v": "z"}),
        provider("alpha", type="Static", defaultValues={"v": "a"}),
    ]
    spec = {
        "inputs": [{"id": "own", "v": "o"}],
        "inputsFrom": [{"name": "zeta"}, {"name": "alpha"}, {"name": "zeta"}],
        "resources": [CM],
    }
    out = expand(rset(spec), providers, no_objects)
    # Static ids: adler32 of the name offline, as `flux-operator build resourceset` does
    assert names(out.objects) == [
        "ConfigMap/apps/cm-own",
        f"ConfigMap/apps/cm-{resourceset.input_id('alpha')}",
        f"ConfigMap/apps/cm-{resourceset.input_id('zeta')}",
    ]
    assert [o["data"]["v"] for o in out.objects] == ["o", "a", "z"]


def test_label_selector_matches_labels_and_expressions_in_its_namespace_only() -> None:
    providers = [
        provider("dev", {"app": "web", "env": "dev"}, type="Static", defaultValues={"v": "d"}),
        provider("prod", {"app": "web", "env": "prod"}, type="Static", defaultValues={"v": "p"}),
        provider("db", {"app": "db", "env": "dev"}, type="Static", defaultValues={"v": "x"}),
    ]
    other = provider("elsewhere", {"app": "web", "env": "dev"}, type="Static")
    other["metadata"]["namespace"] = "other"
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "env", "operator": "In", "values": ["dev", "staging"]}],
    }
    spec = {"inputsFrom": [{"selector": selector}], "resources": [CM]}
    out = expand(rset(spec), [*providers, other], no_objects)
    assert [o["data"]["v"] for o in out.objects] == ["d"]


def test_static_id_comes_from_a_baked_status_when_there_is_one() -> None:
    baked = provider(
        "p", type="Static", defaultValues={"v": "new"}, status={"exportedInputs": [{"id": "42"}]}
    )
    out = expand(rset({"inputsFrom": [{"name": "p"}], "resources": [CM]}), [baked], no_objects)
    assert names(out.objects) == ["ConfigMap/apps/cm-42"]
    assert out.objects[0]["data"]["v"] == "new"


def test_dynamic_provider_uses_exported_inputs_or_is_not_judged() -> None:
    exported = {"exportedInputs": [{"id": "1", "v": "pr-1"}, {"id": "2", "v": "pr-2"}]}
    prs = provider("prs", type="GitHubPullRequest", url="https://x", status=exported)
    out = expand(rset({"inputsFrom": [{"name": "prs"}], "resources": [CM]}), [prs], no_objects)
    assert names(out.objects) == ["ConfigMap/apps/cm-1", "ConfigMap/apps/cm-2"]
    bare = provider("prs", type="GitHubPullRequest", url="https://x")
    with pytest.raises(NotJudged, match="GitHubPullRequest"):
        expand(rset({"inputsFrom": [{"name": "prs"}], "resources": [CM]}), [bare], no_objects)


def test_a_named_provider_that_is_not_rendered_fails_the_build() -> None:
    with pytest.raises(ResourceSetError, match="failed to get provider apps/gone"):
        expand(rset({"inputsFrom": [{"name": "gone"}], "resources": [CM]}), [], no_objects)


def test_providers_exporting_nothing_apply_nothing() -> None:
    empty = provider("p", type="OCIArtifactTag", url="oci://x/y", status={"exportedInputs": []})
    out = expand(rset({"inputsFrom": [{"name": "p"}], "resources": [CM]}), [empty], no_objects)
    assert out.objects == ()
    assert "apply nothing" in " ".join(out.notes) or "applies nothing" in " ".join(out.notes)


def test_permute_nests_each_set_under_its_normalized_provider_name() -> None:
    providers = [
        provider("Git-Tag", type="Static", defaultValues={"sha": "abc"}),
        provider("oci.tag", type="Static", defaultValues={"digest": "d1"}),
    ]
    spec = {
        "inputStrategy": {"name": "Permute"},
        "inputs": [{"id": "blue"}, {"id": "green"}],
        "inputsFrom": [{"name": "Git-Tag"}, {"name": "oci.tag"}],
        "resourcesTemplate": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        "  name: cm-<< inputs.rs.id >>\n  namespace: apps\ndata:\n  id: << inputs.id | quote >>\n"
        "  sha: << inputs.git_tag.sha >>\n  digest: << inputs.oci_tag.digest >>\n",
    }
    out = expand(rset(spec), providers, no_objects)
    assert names(out.objects) == ["ConfigMap/apps/cm-blue", "ConfigMap/apps/cm-green"]
    ids = [o["data"]["id"] for o in out.objects]
    # the permutation id: adler32 of "<provider>=<index>/..." in provider order
    assert ids == [
        resourceset.input_id("rs=0/git_tag=0/oci_tag=0"),
        resourceset.input_id("rs=1/git_tag=0/oci_tag=0"),
    ]
    assert out.objects[0]["data"]["sha"] == "abc"


def test_permute_skips_empty_providers_unless_told_and_caps_combinations() -> None:
    empty = provider("none", type="OCIArtifactTag", url="oci://a/b", status={"exportedInputs": []})
    spec = {"inputStrategy": {"name": "Permute"}, "inputs": [{"x": 1}], "resources": [CM]}
    named = {"apiVersion": "v1", "kind": "ConfigMap"}
    spec["resources"] = [{**named, "metadata": {"name": "c-<< inputs.rs.x >>", "namespace": "a"}}]
    with_empty = {**spec, "inputsFrom": [{"name": "none"}]}
    assert names(expand(rset(with_empty), [empty], no_objects).objects) == ["ConfigMap/a/c-1"]
    strict = {**with_empty, "inputStrategy": {"name": "Permute", "includeEmptyProviders": True}}
    assert expand(rset(strict), [empty], no_objects).objects == ()
    big = {"exportedInputs": [{"id": str(i)} for i in range(101)]}
    many = [provider(f"p{i}", type="X", url="u", status=big) for i in range(2)]
    capped = {
        **spec,
        "inputs": [{"x": 1}, {"x": 2}],
        "inputsFrom": [{"name": "p0"}, {"name": "p1"}],
    }
    with pytest.raises(ResourceSetError, match=r"maximum allowed permutations\. max: 10000"):
        expand(rset(capped), many, no_objects)


def test_missing_key_fails_the_build_and_trim_markers_trim() -> None:
    bad = {"inputs": [{"a": "x"}], "resources": [{**CM, "data": {"v": "<< inputs.b >>"}}]}
    with pytest.raises(ResourceSetError, match=r"resources\[0\].*map has no entry for key"):
        expand(rset(bad), [], no_objects)
    template = (
        "<<- range $c := inputs.components >>\n---\napiVersion: v1\nkind: ConfigMap\n"
        "metadata:\n  name: << $c >>\n  namespace: apps\n  <<- if inputs.extra >>\n"
        "  labels:\n    extra: 'yes'\n  <<- end >>\n<<- end >>\n"
    )
    spec = {"inputs": [{"components": ["a", "b"], "extra": True}], "resourcesTemplate": template}
    out = expand(rset(spec), [], no_objects)
    assert names(out.objects) == ["ConfigMap/apps/a", "ConfigMap/apps/b"]
    assert out.objects[0]["metadata"]["labels"] == {"extra": "yes", **OWNER}


def test_dedup_resources_first_and_reconcile_disabled_excludes() -> None:
    shared = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}}
    sa = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": "sa-<< inputs.t >>",
            "annotations": {
                "fluxcd.controlplane.io/reconcile": (
                    '<< if eq inputs.t "a" >>enabled<< else >>disabled<< end >>'
                )
            },
        },
    }
    spec = {
        "inputs": [{"t": "a"}, {"t": "b"}],
        "resources": [shared, sa],
        "resourcesTemplate": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n"
        "data:\n  from: template\n",
    }
    out = expand(rset(spec), [], no_objects)
    assert names(out.objects) == ["ConfigMap//shared", "ServiceAccount//sa-a"]
    assert "data" not in out.objects[0]


def test_steps_build_in_order_and_reject_a_resource_in_two_steps() -> None:
    one = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}}
    two = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two"}}
    spec = {"steps": [{"name": "s1", "resources": [one]}, {"name": "s2", "resources": [two]}]}
    assert names(expand(rset(spec), [], no_objects).objects) == ["ConfigMap//one", "ConfigMap//two"]
    dup = {"steps": [{"name": "s1", "resources": [one]}, {"name": "s2", "resources": [one]}]}
    with pytest.raises(ResourceSetError, match=r'duplicate resource .* in step "s2"'):
        expand(rset(dup), [], no_objects)
    mixed = {"steps": spec["steps"], "resources": [one]}
    with pytest.raises(ResourceSetError, match="mutually exclusive"):
        expand(rset(mixed), [], no_objects)


def test_common_metadata_overrides_and_copy_from_copies_rendered_data() -> None:
    source_cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"ENV": "prod"}}
    source_secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": {"k": "dg=="}}
    found = {
        ObjectRef("ConfigMap", "flux-system", "info"): source_cm,
        ObjectRef("Secret", "flux-system", "auth"): source_secret,
    }
    annotated = {"annotations": {"fluxcd.controlplane.io/copyFrom": "flux-system/info"}}
    spec = {
        "commonMetadata": {"labels": {"team": "x"}, "annotations": {"a": "b"}},
        "resources": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "info", **annotated}},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": "auth",
                    "annotations": {"fluxcd.controlplane.io/copyFrom": "flux-system/auth"},
                },
            },
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": "gone",
                    "annotations": {"fluxcd.controlplane.io/copyFrom": "flux-system/gone"},
                },
            },
        ],
    }
    out = expand(rset(spec), [], found.get)
    cm, secret, gone = out.objects
    assert cm["data"] == {"ENV": "prod"}
    assert cm["metadata"]["labels"] == {**OWNER, "team": "x"}
    assert cm["metadata"]["annotations"]["a"] == "b"
    # copied as stringData, applied as data (what the API server stores)
    assert secret["data"] == {"k": "dg=="} and secret["type"] == "Opaque"
    assert "data" not in gone
    assert any("flux-system/gone is not in what this cluster renders" in n for n in out.notes)


def test_depends_on_defaults_to_its_namespace() -> None:
    obj = rset({"dependsOn": [{"apiVersion": "v1", "kind": "Kustomization", "name": "infra"}]})
    assert resourceset.depends_on(obj) == [("Kustomization", "apps", "infra")]


@pytest.mark.parametrize(
    ("name", "key"),
    [("my-rset", "my_rset"), ("Git Tag", "git_tag"), ("a..b__c", "a_b_c"), ("ünï", "n")],
)
def test_normalize_key(name: str, key: str) -> None:
    assert resourceset.normalize_key(name) == key


# -- end to end -----------------------------------------------------------------------------

TENANTS = {
    "apiVersion": "fluxcd.controlplane.io/v1",
    "kind": "ResourceSet",
    "metadata": {"name": "tenants", "namespace": "flux-system"},
    "spec": {
        "inputsFrom": [{"selector": {"matchLabels": {"role": "tenant"}}}],
        "inputs": [{"tenant": "team-a"}],
        "resources": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "<< inputs.tenant >>"}},
            {
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {"name": "apps", "namespace": "<< inputs.tenant >>"},
                "spec": {
                    "interval": "10m",
                    "path": "./apps/<< inputs.tenant >>",
                    "prune": True,
                    "sourceRef": {
                        "kind": "GitRepository",
                        "name": "flux-system",
                        "namespace": "flux-system",
                    },
                },
            },
        ],
    },
}
# a provider emitted by another ResourceSet: the fixed point expands that one first
PROVIDERS = {
    "apiVersion": "fluxcd.controlplane.io/v1",
    "kind": "ResourceSet",
    "metadata": {"name": "providers", "namespace": "flux-system"},
    "spec": {
        "resources": [
            {
                "apiVersion": "fluxcd.controlplane.io/v1",
                "kind": "ResourceSetInputProvider",
                "metadata": {
                    "name": "team-b",
                    "namespace": "flux-system",
                    "labels": {"role": "tenant"},
                },
                "spec": {"type": "Static", "defaultValues": {"tenant": "team-b"}},
            }
        ]
    },
}


def app(tenant: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: {tenant}\n"


def test_a_fleet_renders_each_tenant_a_resourceset_emits(
    make_repo: Callable[[dict[str, str | bytes]], Path],
) -> None:
    repo = make_repo(
        {
            "clusters/prod/tenants.yaml": flux_ks("tenants", "./tenants"),
            "tenants/tenants.yaml": yaml.safe_dump_all([TENANTS, PROVIDERS]),
            "apps/team-a/app.yaml": app("team-a"),
            "apps/team-b/app.yaml": app("team-b"),
        }
    )
    results = render_flux_repo(repo)
    assert sorted(results) == [
        "prod/flux-system/flux-system",
        "prod/flux-system/providers@resourceset",
        "prod/flux-system/tenants",
        "prod/flux-system/tenants@resourceset",
        "prod/team-a/apps",
        "prod/team-b/apps",
    ]
    emitted = results["prod/flux-system/tenants@resourceset"]
    assert emitted.target.path == repo / "tenants"
    assert sorted(by_id(emitted)) == [
        "Namespace/team-a",
        "Namespace/team-b",
        "kustomize.toolkit.fluxcd.io/Kustomization/team-a/apps",
        "kustomize.toolkit.fluxcd.io/Kustomization/team-b/apps",
    ]
    assert emitted.notes[0].startswith("ResourceSet expanded as flux-operator does: 2 input set")
    assert sorted(by_id(results["prod/team-b/apps"])) == ["ConfigMap/team-b/app"]


def test_template_documents_follow_the_ssa_reader() -> None:
    template = (
        "---\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n"
        "  metadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n---\n"
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata: {name: k}\n"
    )
    assert names(expand(rset({"resourcesTemplate": template}), [], no_objects).objects) == [
        "ConfigMap//a"
    ]
    with pytest.raises(ResourceSetError, match="Object 'Kind' is missing"):
        expand(rset({"resourcesTemplate": "apiVersion: v1\n"}), [], no_objects)


def test_not_judged_and_failing_resourcesets_are_said_while_the_rest_render(
    make_repo: Callable[[dict[str, str | bytes]], Path],
) -> None:
    pulls = {
        "apiVersion": "fluxcd.controlplane.io/v1",
        "kind": "ResourceSetInputProvider",
        "metadata": {"name": "pulls", "namespace": "flux-system"},
        "spec": {"type": "GitHubPullRequest", "url": "https://github.com/org/app"},
    }
    previews = {
        **TENANTS,
        "metadata": {"name": "previews", "namespace": "flux-system"},
        "spec": {"inputsFrom": [{"name": "pulls"}], "resources": TENANTS["spec"]["resources"]},
    }
    broken = {
        **TENANTS,
        "metadata": {"name": "broken", "namespace": "flux-system"},
        "spec": {"inputs": [{"other": "x"}], "resources": TENANTS["spec"]["resources"][:1]},
    }
    repo = make_repo(
        {
            "clusters/prod/tenants.yaml": flux_ks("tenants", "./tenants"),
            "tenants/rsets.yaml": yaml.safe_dump_all([pulls, previews, broken]),
        }
    )
    skipped: dict[str, str] = {}
    cfg = config_mod.load(repo)
    results = render_flux(cfg, new_renderer(), jobs=2, strict=True, on_skip=skipped.__setitem__)
    assert sorted(results) == [
        "prod/flux-system/broken@resourceset",
        "prod/flux-system/flux-system",
        "prod/flux-system/tenants",
    ]
    assert results["prod/flux-system/broken@resourceset"].error == (
        "ResourceSet flux-system/broken: failed to build resources[0]: "
        'map has no entry for key "tenant"'
    )
    assert list(skipped) == ["prod/flux-system/previews@resourceset"]
    assert skipped["prod/flux-system/previews@resourceset"].startswith(
        "not judged: ResourceSetInputProvider flux-system/pulls is of type GitHubPullRequest"
    )


def test_helm_releases_a_resourceset_emits_reach_the_helm_stage(
    make_repo: Callable[[dict[str, str | bytes]], Path],
) -> None:
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "web-<< inputs.tenant >>", "namespace": "apps"},
        "spec": {
            "interval": "1h",
            "chart": {
                "spec": {
                    "chart": "./charts/web",
                    "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
                }
            },
            "values": {"replicas": "<< inputs.replicas >>"},
        },
    }
    rset_obj = {
        **TENANTS,
        "spec": {"inputs": [{"tenant": "a", "replicas": 2}], "resources": [release]},
    }
    repo = make_repo(
        {
            "clusters/prod/tenants.yaml": flux_ks("tenants", "./tenants"),
            "tenants/rset.yaml": yaml.safe_dump(rset_obj),
        }
    )
    owned: dict[str, tuple[dict[str, Any], ...]] = {}

    def hook(cluster: str, _source: Any, owners: Any, _root: Path) -> None:
        owned.update(dict(owners))

    render_flux(config_mod.load(repo), new_renderer(), jobs=2, strict=True, on_cluster=hook)
    (emitted,) = owned["prod/flux-system/tenants@resourceset"]
    assert emitted["metadata"]["name"] == "web-a"
    assert emitted["spec"]["values"] == {"replicas": 2}


def test_a_warm_cache_expands_alike(
    make_repo: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    """A cache hit of the Kustomization that renders the ResourceSet keeps the ResourceSet
    (and the provider another one emits): cold, warm and uncached renders are identical."""
    repo = make_repo(
        {
            "clusters/prod/tenants.yaml": flux_ks("tenants", "./tenants"),
            "tenants/tenants.yaml": yaml.safe_dump_all([TENANTS, PROVIDERS]),
            "apps/team-a/app.yaml": app("team-a"),
            "apps/team-b/app.yaml": app("team-b"),
        }
    )
    store = cache.Store(tmp_path / "cache")

    def texts(run_cache: cache.RenderCache | None) -> dict[str, str]:
        snap = render_repo(
            config_mod.load(repo), new_renderer(), RenderOptions(jobs=2, cache=run_cache)
        )
        return {n: r.text() for n, r in snap.results.items() if r.target.kind == "flux"}

    cold = texts(cache.RenderCache(store))
    warm_cache = cache.RenderCache(store)
    warm = texts(warm_cache)
    assert warm == cold == texts(None)
    assert "prod/team-b/apps" in warm
