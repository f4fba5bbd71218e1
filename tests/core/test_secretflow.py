"""secretflow: the fields kustomize's replacements and vars copy a Secret value into are
masked, and nothing else is (a Namespace that merely equals a username stays readable)."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from harness.core import redaction, secretflow
from harness.core.secretflow import Flows, _split


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(name: str = "creds-5fk2b8t7cm", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "grafana"},
        "data": {k: b64(v) for k, v in data.items()},
    }


def deployment(name: str = "web", **env: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "grafana"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "grafana/grafana:11",
                            "args": ["--user=grafana"],
                            "env": [{"name": k, "value": v} for k, v in env.items()],
                        }
                    ]
                }
            }
        },
    }


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "grafana"},
        "data": data,
    }


def flows(*replacements: dict[str, Any], vars: list[dict[str, Any]] | None = None) -> Flows:
    data = {"replacements": list(replacements), "vars": vars or []}
    return secretflow.from_kustomization(data, lambda _path: [])


def to_env(source: str, target_name: str = "PW", **select: str) -> dict[str, Any]:
    return {
        "source": {"kind": "Secret", "name": "creds", "fieldPath": source},
        "targets": [
            {
                "select": {"kind": "Deployment", **select},
                "fieldPaths": [
                    f"spec.template.spec.containers.[name=app].env.[name={target_name}].value"
                ],
            }
        ],
    }


def env(obj: dict[str, Any], name: str) -> str:
    found = obj["spec"]["template"]["spec"]["containers"][0]["env"]
    return next(e["value"] for e in found if e["name"] == name)


def test_a_replacement_from_a_secret_is_masked_where_it_writes_and_nowhere_else() -> None:
    src = secret(password="hunter2", user="grafana")
    # the output as kustomize wrote it: the value copied, base64 as it is in `data`
    dep = deployment(PW=b64("hunter2"), USER="grafana")
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "grafana"}}
    objects = [ns, src, dep]
    before = copy.deepcopy(objects)

    out = secretflow.mask(objects, flows(to_env("data.password")))

    assert out is not None
    assert objects == before  # the inputs are shared with other builds: never mutated
    assert out[0] is ns and out[1] is src  # untouched objects are not copied
    marker = redaction.marker(secretflow.documents.identity(src), "data.password", b64("hunter2"))
    assert env(out[2], "PW") == marker
    # what merely equals a Secret value elsewhere is not a copy and stays readable
    assert env(out[2], "USER") == "grafana"
    assert out[2]["metadata"]["namespace"] == "grafana"
    assert out[2]["spec"]["template"]["spec"]["containers"][0]["image"] == "grafana/grafana:11"


def test_the_marker_changes_with_the_value_so_a_rotation_still_shows() -> None:
    rep = flows(to_env("data.password"))
    one = secretflow.mask([secret(password="a1"), deployment(PW=b64("a1"))], rep)
    two = secretflow.mask([secret(password="b2"), deployment(PW=b64("b2"))], rep)
    assert one is not None and two is not None
    assert redaction.is_marker(env(one[1], "PW")) and redaction.is_marker(env(two[1], "PW"))
    assert env(one[1], "PW") != env(two[1], "PW")


def test_keyed_markers_follow_harness_mask_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(redaction.ENV_KEY, "k")
    out = secretflow.mask(
        [secret(password="a1"), deployment(PW=b64("a1"))], flows(to_env("data.password"))
    )
    assert out is not None and env(out[1], "PW").startswith("<redacted hmac-sha256:")


def test_without_a_secret_source_nothing_is_copied_or_masked() -> None:
    rep = {
        "source": {"kind": "ConfigMap", "name": "settings", "fieldPath": "data.level"},
        "targets": [{"select": {"kind": "Deployment"}, "fieldPaths": ["metadata.name"]}],
    }
    objects = [configmap("settings", level="debug"), deployment(LEVEL="debug")]
    assert secretflow.mask(objects, flows(rep)) is None
    assert secretflow.mask(objects, Flows()) is None


def test_a_secrets_name_is_not_a_secret_value() -> None:
    """`fieldPath` defaults to metadata.name: copying a generated Secret's hashed name into
    an env var (so a sidecar can find it) is common and reveals nothing."""
    rep = to_env("metadata.name", target_name="SECRET_NAME")
    del rep["source"]["fieldPath"]
    objects = [secret("creds-5fk2b8t7cm", pw="x"), deployment(SECRET_NAME="creds-5fk2b8t7cm")]
    assert secretflow.mask(objects, flows(rep)) is None


def test_target_selection_uses_anchored_regexes_and_reject() -> None:
    rep = to_env("data.password")
    rep["targets"][0]["select"] = {"kind": "Deploy.*", "name": "web-.*"}
    rep["targets"][0]["reject"] = [{"name": "web-canary"}]
    objects = [
        secret(password="pw"),
        deployment("web-main", PW=b64("pw")),
        deployment("web-canary", PW=b64("pw")),
        deployment("api", PW=b64("pw")),
    ]
    out = secretflow.mask(objects, flows(rep))
    assert out is not None
    assert redaction.is_marker(env(out[1], "PW"))
    assert env(out[2], "PW") == b64("pw")  # rejected
    assert env(out[3], "PW") == b64("pw")  # not selected: kustomize wrote nothing there


def test_a_source_named_before_its_hash_suffix_still_selects_the_generated_secret() -> None:
    out = secretflow.mask(
        [secret("creds-9gh5h6bt8k", password="pw"), deployment(PW=b64("pw"))],
        flows(to_env("data.password")),
    )
    assert out is not None and redaction.is_marker(env(out[1], "PW"))


def test_a_delimited_piece_is_masked_inside_the_value_it_was_written_into() -> None:
    rep = {
        "source": {"kind": "Secret", "name": "creds", "fieldPath": "data.user"},
        "targets": [
            {
                "select": {"kind": "ConfigMap"},
                "fieldPaths": ["data.url"],
                "options": {"delimiter": "@", "index": 0},
            }
        ],
    }
    user = b64("admin")
    out = secretflow.mask(
        [secret(user="admin"), configmap("conn", url=f"{user}@db:5432", other=user)], flows(rep)
    )
    assert out is not None
    url = out[1]["data"]["url"]
    assert user not in url and url.endswith("@db:5432") and redaction.contains_marker(url)
    assert out[1]["data"]["other"] == user  # not a field the replacement writes


def test_a_delimited_source_taints_only_its_piece() -> None:
    rep = to_env("stringData.dsn")
    rep["source"]["options"] = {"delimiter": ":", "index": 1}
    src = {**secret(), "stringData": {"dsn": "app:s3cret:db"}}
    out = secretflow.mask([src, deployment(PW="s3cret")], flows(rep))
    assert out is not None and redaction.is_marker(env(out[1], "PW"))


def test_a_chain_through_a_configmap_carries_the_taint() -> None:
    first = {
        "source": {"kind": "Secret", "name": "creds", "fieldPath": "data.password"},
        "targets": [{"select": {"kind": "ConfigMap", "name": "dsn"}, "fieldPaths": ["data.dsn"]}],
    }
    second = {
        "source": {"kind": "ConfigMap", "name": "dsn", "fieldPath": "data.dsn"},
        "targets": [
            {
                "select": {"kind": "Deployment"},
                "fieldPaths": ["metadata.annotations.[example.com/dsn]"],
            }
        ],
    }
    pw = b64("pw-42")
    dep = deployment()
    dep["metadata"]["annotations"] = {"example.com/dsn": pw}
    out = secretflow.mask(
        [secret(password="pw-42"), configmap("dsn", dsn=pw), dep], flows(first, second)
    )
    assert out is not None
    assert redaction.is_marker(out[1]["data"]["dsn"])
    assert out[2]["metadata"]["annotations"]["example.com/dsn"] == out[1]["data"]["dsn"]


def test_wildcards_indexes_and_a_whole_map_source() -> None:
    rep = {
        "source": {"kind": "Secret", "name": "creds", "fieldPath": "data"},
        "targets": [
            {
                "select": {"kind": "Deployment"},
                "fieldPaths": ["spec.template.spec.containers.*.env.0.value"],
            }
        ],
    }
    out = secretflow.mask(
        [secret(a="one", b="two"), deployment(A=b64("two"), B=b64("one"))], flows(rep)
    )
    assert out is not None
    assert redaction.is_marker(env(out[1], "A"))
    assert env(out[1], "B") == b64("one")  # index 0 only


def test_a_path_into_structured_data_masks_the_scalar_holding_it() -> None:
    rep = {
        "source": {"kind": "Secret", "name": "creds", "fieldPath": "data.token"},
        "targets": [
            {"select": {"kind": "ConfigMap"}, "fieldPaths": ["data.[config.json].auth.token"]}
        ],
    }
    token = b64("tok")
    cm = configmap("app", **{"config.json": f'{{"auth": {{"token": "{token}"}}}}'})
    out = secretflow.mask([secret(token="tok"), cm], flows(rep))
    assert out is not None
    text = out[1]["data"]["config.json"]
    assert token not in text and redaction.contains_marker(text)


def test_vars_are_masked_in_kustomizes_default_var_reference_fields() -> None:
    var = {
        "name": "PASS",
        "objref": {"kind": "Secret", "name": "creds", "apiVersion": "v1"},
        "fieldref": {"fieldpath": "data.pass"},
    }
    pw = b64("pw")
    dep = deployment(PASS=pw)
    dep["spec"]["template"]["spec"]["containers"][0]["args"] = [f"--password={pw}"]
    cm = configmap("unrelated", value=pw)  # ConfigMap data is not a var reference field
    out = secretflow.mask([secret(**{"pass": "pw"}), dep, cm], flows(vars=[var]))
    assert out is not None
    args = out[1]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[0].startswith("--password=<redacted ") and redaction.is_marker(env(out[1], "PASS"))
    assert out[2] is cm


def test_var_references_from_a_configurations_file_widen_where_vars_land() -> None:
    var = {
        "name": "PASS",
        "objref": {"kind": "Secret", "name": "creds"},
        "fieldref": {"fieldpath": "data.pass"},
    }
    refs = secretflow.from_configuration(
        [{"varReference": [{"path": "data", "kind": "ConfigMap"}]}]
    )
    pw = b64("pw")
    both = Flows.join([flows(vars=[var]), refs])
    out = secretflow.mask([secret(**{"pass": "pw"}), configmap("cm", value=pw)], both)
    assert out is not None and redaction.is_marker(out[1]["data"]["value"])


def test_replacement_files_and_transformer_configs_are_read() -> None:
    entry = to_env("data.password")
    read = {"r.yaml": [[entry]], "one.yaml": [entry]}
    from_file = secretflow.from_kustomization(
        {"replacements": [{"path": "r.yaml"}, {"path": "one.yaml"}, {"path": "gone.yaml"}]},
        lambda p: read.get(p, []),
    )
    assert len(from_file.replacements) == 2  # a list, a single mapping; a missing file: none
    assert len(Flows.join([from_file]).replacements) == 1  # the same one twice is one
    transformer = secretflow.from_transformer(
        {"kind": "ReplacementTransformer", "replacements": [{"path": "r.yaml"}]},
        lambda p: read.get(p, []),
    )
    assert transformer.replacements == from_file.replacements[:1]
    assert not secretflow.from_transformer({"kind": "PatchTransformer"}, lambda p: [])


def test_malformed_declarations_are_ignored_not_fatal() -> None:
    bad = secretflow.from_kustomization(
        {
            "replacements": ["x", {"source": "y"}, {"sourceValue": "v", "targets": []}],
            "vars": [{"name": 1}, {"name": "X"}],
        },
        lambda p: [],
    )
    assert not bad


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("a.b.c", ["a", "b", "c"]),
        ("metadata.annotations.[example.com/x]", ["metadata", "annotations", "example.com/x"]),
        ("spec.containers.[name=a.b].image", ["spec", "containers", "[name=a.b]", "image"]),
        (r"data.config\.json", ["data", "config.json"]),
        ("list.[=-jar]", ["list", "[=-jar]"]),
    ],
)
def test_field_paths_split_as_kustomize_splits_them(path: str, parts: list[str]) -> None:
    assert _split(path) == tuple(parts)


def test_a_replacement_into_metadata_name_masks_the_name_the_selector_no_longer_matches() -> None:
    """kustomize selects `cm` and renames it to the copied value: the output object no
    longer carries the selector's name, yet its name (its identity) must be masked."""
    src = secret(user="canary-user-r1")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": b64("canary-user-r1")}}
    rep = Flows(
        replacements=(
            secretflow.Replacement(
                source=secretflow.Selector(kind="Secret", name="creds-5fk2b8t7cm"),
                field_path="data.user",
                delimiter="",
                index=0,
                targets=(
                    secretflow.Target(
                        secretflow.Selector(kind="ConfigMap", name="cm", regex=True),
                        (),
                        ("metadata.name",),
                    ),
                ),
            ),
        )
    )
    out = secretflow.mask([src, cm], rep)
    assert out is not None
    assert redaction.is_marker(out[1]["metadata"]["name"])
    assert secretflow.documents.identity(out[1]).name == out[1]["metadata"]["name"]
