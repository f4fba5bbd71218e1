"""Canaries: a plaintext value planted on every route by which Secret data can reach an
output, then rotated; no output format, golden, shard file or cache entry may hold either
value (plain or base64), and the rotation must still show as a (masked) change.

Routes: Flux `substituteFrom` into a ConfigMap value, into an annotation, into a
HelmRelease's inline values and into its post-renderer patch; Helm `valuesFrom` a Secret;
a SOPS-marked Secret's plaintext (`*_unencrypted`) key; a last-applied-configuration
annotation holding a Secret, on a ConfigMap and on a Secret; a plain Secret's data and
stringData (the baseline); and kustomize's own copies out of a generated Secret (the
`infra` build, a path target and a Flux target): a replacement into a Deployment's env, a
replacement into part of a ConfigMap value (`options.delimiter`) that a second
replacement copies on into an annotation (a chain), a `ReplacementTransformer` config
with its replacements in a file, and a deprecated `var` substituted into container args.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, run_harness, write_tree
from tests.flux.helm.charts import (
    chart_files,
    dump,
    flux_ks,
    helm_release,
    kustomization,
    local_chart,
)
from tests.gitkit import commit_all, init

ROUTES = (
    "subst-configmap",
    "subst-annotation",
    "helm-inline-values",
    "helm-postrenderer",
    "helm-valuesfrom",
    "sops-unencrypted",
    "last-applied-configmap",
    "last-applied-secret",
    "plain-secret",
    "kustomize-replacement",
    "kustomize-chain",
    "kustomize-transformer",
    "kustomize-var",
)


VALUES = "helm-valuesfrom"


def canaries(round_: int) -> dict[str, str]:
    return {route: f"canary-{route}-r{round_}-7f3e9b21" for route in ROUTES}


def secret(name: str, namespace: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        **fields,
    }


def repo_files(c: dict[str, str]) -> dict[str, str]:
    """One cluster: `infra` renders the Secrets, `apps` substitutes from one of them."""
    held = secret("held", "apps", stringData={"password": c["last-applied-configmap"]})
    own = secret("own", "apps", stringData={"password": c["last-applied-secret"]})
    last = "kubectl.kubernetes.io/last-applied-configuration"
    sops_secret = secret(
        "sops",
        "apps",
        data={"key": "ENC[AES256_GCM,data:Zm9v,iv:aXY=,tag:dGFn,type:str]"},
        stringData={"api_unencrypted": c["sops-unencrypted"]},
        sops={"mac": "ENC[AES256_GCM,data:bWFj,iv:aXY=,tag:dGFn,type:str]", "version": "3.9.0"},
    )
    release = helm_release(
        chart=local_chart(),
        values={"greeting": "${HELM_INLINE}"},
        valuesFrom=[{"kind": "Secret", "name": "web-values"}],
        postRenderers=[
            {
                "kustomize": {
                    "patches": [
                        {
                            "target": {"kind": "Deployment"},
                            "patch": dump(
                                {
                                    "apiVersion": "apps/v1",
                                    "kind": "Deployment",
                                    "metadata": {
                                        "name": "any",
                                        "annotations": {"rotated": "${POST_RENDER}"},
                                    },
                                }
                            ),
                        }
                    ]
                }
            }
        ],
    )
    files = {
        "harness.yaml": "helm: true\n",
        "clusters/prod/kustomization.yaml": kustomization("infra.yaml", "apps.yaml"),
        "clusters/prod/infra.yaml": dump(flux_ks("infra", "./infra")),
        "clusters/prod/apps.yaml": dump(
            flux_ks(
                "apps",
                "./apps",
                dependsOn=[{"name": "infra"}],
                postBuild={"substituteFrom": [{"kind": "Secret", "name": "flux-vars"}]},
            )
        ),
        **kustomize_routes(c),
        "infra/secrets.yaml": dump(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}},
            secret(
                "flux-vars",
                "flux-system",
                stringData={
                    "DB_PASSWORD": c["subst-configmap"],
                    "NOTE": c["subst-annotation"],
                    "HELM_INLINE": c["helm-inline-values"],
                    "POST_RENDER": c["helm-postrenderer"],
                },
            ),
            secret(
                "web-values",
                "apps",
                stringData={"values.yaml": f"logLevel: {c['helm-valuesfrom']}\n"},
            ),
            secret(
                "plain",
                "apps",
                stringData={"token": c["plain-secret"]},
                data={"encoded": base64.b64encode(c["plain-secret"].encode()).decode()},
            ),
        ),
        "apps/kustomization.yaml": kustomization("app.yaml", "release.yaml"),
        "apps/app.yaml": dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "app",
                    "namespace": "apps",
                    "annotations": {
                        "note": "${NOTE}",
                        last: json.dumps(held, separators=(",", ":"), sort_keys=True) + "\n",
                    },
                },
                "data": {"dsn": "postgres://app:${DB_PASSWORD}@db/app"},
            },
            {**own, "metadata": {**own["metadata"], "annotations": {last: json.dumps(own)}}},
            sops_secret,
        ),
        "apps/release.yaml": dump(release),
    }
    files.update(chart_files("1.0.0", prefix="charts/demo/"))
    return files


def kustomize_routes(c: dict[str, str]) -> dict[str, str]:
    """`infra`: a generated Secret whose values kustomize copies into other objects."""
    kfile = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["secrets.yaml", "worker.yaml"],
        "transformers": ["transformer.yaml"],
        "secretGenerator": [
            {
                "name": "generated",
                "namespace": "apps",
                "literals": [
                    f"token={c['kustomize-replacement']}",
                    f"user={c['kustomize-chain']}",
                    f"key={c['kustomize-transformer']}",
                    f"pass={c['kustomize-var']}",
                ],
            }
        ],
        "replacements": [
            {
                "source": {"kind": "Secret", "name": "generated", "fieldPath": "data.token"},
                "targets": [
                    {
                        "select": {"kind": "Deployment", "name": "work.*"},
                        "fieldPaths": [
                            "spec.template.spec.containers.[name=app].env.[name=TOKEN].value"
                        ],
                    }
                ],
            },
            {
                "source": {"kind": "Secret", "name": "generated", "fieldPath": "data.user"},
                "targets": [
                    {
                        "select": {"kind": "ConfigMap", "name": "conn"},
                        "fieldPaths": ["data.url"],
                        "options": {"delimiter": "@", "index": 0},
                    }
                ],
            },
            {
                "source": {"kind": "ConfigMap", "name": "conn", "fieldPath": "data.url"},
                "targets": [
                    {
                        "select": {"kind": "Deployment"},
                        "fieldPaths": ["metadata.annotations.[example.com/url]"],
                        "options": {"create": True},
                    }
                ],
            },
        ],
        "vars": [
            {
                "name": "PASS",
                "objref": {"kind": "Secret", "name": "generated", "apiVersion": "v1"},
                "fieldref": {"fieldpath": "data.pass"},
            }
        ],
    }
    worker = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "worker", "namespace": "apps"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "worker:1",
                            "args": ["--password=$(PASS)"],
                            "env": [
                                {"name": "TOKEN", "value": "x"},
                                {"name": "KEY", "value": "x"},
                            ],
                        }
                    ]
                }
            }
        },
    }
    conn = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "conn", "namespace": "apps"},
        "data": {"url": "USER@cache:6379"},
    }
    transformer = {
        "apiVersion": "builtin",
        "kind": "ReplacementTransformer",
        "metadata": {"name": "key"},
        "replacements": [{"path": "key-replacement.yaml"}],
    }
    key = {
        "source": {"kind": "Secret", "name": "generated", "fieldPath": "data.key"},
        "targets": [
            {
                "select": {"kind": "Deployment"},
                "fieldPaths": ["spec.template.spec.containers.*.env.[name=KEY].value"],
            }
        ],
    }
    return {
        "infra/kustomization.yaml": dump(kfile),
        "infra/worker.yaml": dump(worker, conn),
        "infra/transformer.yaml": dump(transformer),
        "infra/key-replacement.yaml": dump(key),
    }


def needles(values: dict[str, str]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for route, value in values.items():
        out[route] = value.encode()
        out[f"{route} (base64)"] = base64.b64encode(value.encode())
    return out


def scan(blobs: dict[str, bytes], values: dict[str, str]) -> list[str]:
    return sorted(
        f"{name}: {where}"
        for where, data in blobs.items()
        for name, needle in needles(values).items()
        if needle in data
    )


@pytest.mark.slow
def test_no_secret_value_in_any_output_golden_shard_or_cache_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    repo = write_tree(init(tmp_path / "repo"), repo_files(canaries(1)))
    blobs: dict[str, bytes] = {}

    def record(name: str, res: Result, codes: tuple[int, ...] = (0, 1)) -> Result:
        assert res.code in codes, (name, res.stdout[-2000:], res.stderr[-2000:])
        blobs[f"{name} stdout"] = res.stdout.encode()
        blobs[f"{name} stderr"] = res.stderr.encode()
        return res

    first = record("update", run_harness("update", "--repo", repo), (0,))
    assert "error" not in first.stderr, first.stderr
    commit_all(repo, "base")
    for path, content in repo_files(canaries(2)).items():  # every canary rotated
        (repo / path).write_text(content)
    out = tmp_path / "out"
    out.mkdir()
    check = record("check", run_harness("check", "--repo", repo, "--html", out / "check.html"))
    assert check.code == 1, check.stdout  # the rotation shows, masked
    for fmt in ("json", "junit", "github", "html"):
        record(f"check -o {fmt}", run_harness("check", "--repo", repo, "-o", fmt))
        record(f"diff -o {fmt}", run_harness("diff", "--repo", repo, "-o", fmt))
    diff = record("diff", run_harness("diff", "--repo", repo, "-U", "3", "--html", out / "d.html"))
    assert "***" in diff.stdout
    record("comment", run_harness("comment", "--repo", repo, "--split", "--output-dir", out / "c"))
    record("comment stdout", run_harness("comment", "--repo", repo))
    record("render", run_harness("render", "--repo", repo))
    record("render -o json", run_harness("render", "--repo", repo, "-o", "json"))
    for target in (
        "apps",
        "infra",
        "prod/flux-system/apps",
        "prod/flux-system/infra",
        "prod/apps/web",
    ):
        record(f"render {target}", run_harness("render", target, "--repo", repo))
    for fmt in ("text", "json", "html"):
        record(f"lint -o {fmt}", run_harness("lint", "--repo", repo, "-o", fmt), (0, 1, 2))
    shards = []
    for k in (1, 2):
        res = record(
            f"check shard {k}",
            run_harness("check", "--repo", repo, "-o", "json", "--shard", f"{k}/2"),
        )
        shards.append(out / f"shard-{k}.json")
        shards[-1].write_text(res.stdout)
        res = record(
            f"diff shard {k}",
            run_harness("diff", "--repo", repo, "-o", "json", "--shard", f"{k}/2"),
        )
        (out / f"diff-shard-{k}.json").write_text(res.stdout)
    record("merge", run_harness("merge", *shards, "--repo", repo))
    record("update rotated", run_harness("update", "--repo", repo), (0,))
    files = [p for root in (out, repo / "goldens", cache) for p in root.rglob("*") if p.is_file()]
    assert len([p for p in files if cache in p.parents]) > 5  # the cache was really used
    blobs.update({str(p): p.read_bytes() for p in files})
    hits = scan(blobs, {**canaries(1), **{f"{k} (rotated)": v for k, v in canaries(2).items()}})
    assert hits == [], f"{len(hits)} canary hits"
    # the markers are what the rotation changed: the golden of every route's target moved
    golden = (repo / "goldens" / "flux").rglob("*.yaml")
    texts = "\n".join(p.read_text() for p in golden)
    assert texts.count("<redacted sha256:") >= 8


# -- issue 28: routes that reach an output by the way, not through a masked field ----------

LATE = {
    "error-line": "canary-intfield-r1-5d2c88",
    "flux-patch": "canary-fluxpatch-r1-9f3a71",
    "into-name": "canary-intoname-r1-77ab31",
    "upper-v1": "canary-upperv1-r1-1c9e42",
    "flux-json-patch": "canary-jsonpatch-r1-4b8e10",
    "flux-patch-any-kind": "canary-anykind-r1-90c4e2",
    "inline-substitute": "canary-inlinesub-r1-d03f5a",
    "inline-substitute-data": "canary-inlinedata-r1-6e2b97",
}


def late_files(c: dict[str, str]) -> dict[str, str]:
    """A path target whose build fails with kustomize quoting a Secret value (a replacement
    into an integer field); a Flux Kustomization whose `spec.patches` writes a Secret (a
    strategic-merge patch, one naming another kind, and a JSON 6902 one), one whose inline
    `postBuild.substitute` puts values into a Secret's `stringData` and `data`; a
    replacement into `metadata.name`; a Secret written `apiVersion: V1`; and a Namespace
    equal to a username, which stays readable."""
    patch = dump(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "db"},
            "stringData": {"password": c["flux-patch"]},
        }
    )
    # kustomize applies a targeted strategic-merge patch whatever kind the patch names
    any_kind = dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "any"},
            "stringData": {"other": c["flux-patch-any-kind"]},
        }
    )
    json_patch = dump([{"op": "add", "path": "/stringData/token", "value": c["flux-json-patch"]}])
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "a"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "x"}]}}},
    }
    return {
        "harness.yaml": "clusters: [clusters/prod]\n",
        "clusters/prod/kustomization.yaml": kustomization("ks.yaml"),
        "clusters/prod/ks.yaml": dump(
            flux_ks(
                "patched",
                "./b",
                patches=[
                    {"target": {"kind": "Secret"}, "patch": patch},
                    {"target": {"kind": "Secret", "name": "db"}, "patch": json_patch},
                    {"target": {"kind": "Secret"}, "patch": any_kind},
                ],
            ),
            flux_ks(
                "substituted",
                "./f",
                postBuild={
                    "substitute": {
                        "DB_PASS": c["inline-substitute"],
                        "DB_DATA": base64.b64encode(c["inline-substitute-data"].encode()).decode(),
                        "REGION": "eu-west-1",
                    }
                },
            ),
        ),
        "f/kustomization.yaml": kustomization("s.yaml"),
        "f/s.yaml": dump(
            {
                **secret("inline", "f", stringData={"password": "${DB_PASS}"}),
                "data": {"blob": "${DB_DATA}"},
                "metadata": {"name": "inline", "namespace": "f", "labels": {"region": "${REGION}"}},
            }
        ),
        "a/kustomization.yaml": dump(
            {
                "resources": ["res.yaml"],
                "replacements": [
                    {
                        "source": {"kind": "Secret", "name": "s", "fieldPath": "stringData.port"},
                        "targets": [
                            {"select": {"kind": "Deployment"}, "fieldPaths": ["spec.replicas"]}
                        ],
                    }
                ],
            }
        ),
        "a/res.yaml": dump(secret("s", "a", stringData={"port": c["error-line"]}), deploy),
        "b/kustomization.yaml": kustomization("s.yaml"),
        "b/s.yaml": dump(secret("db", "b", stringData={"password": "placeholder"})),
        "c/kustomization.yaml": dump(
            {
                "resources": ["res.yaml"],
                "replacements": [
                    {
                        "source": {"kind": "Secret", "name": "s", "fieldPath": "stringData.user"},
                        "targets": [
                            {
                                "select": {"kind": "ConfigMap", "name": "cm"},
                                "fieldPaths": ["metadata.name"],
                            }
                        ],
                    }
                ],
            }
        ),
        "c/res.yaml": dump(
            secret("s", "c", stringData={"user": c["into-name"]}),
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "c"}},
        ),
        "d/kustomization.yaml": kustomization("s.yaml"),
        "d/s.yaml": dump(
            {**secret("upper", "d", stringData={"token": c["upper-v1"]}), "apiVersion": "V1"}
        ),
        "e/kustomization.yaml": kustomization("res.yaml"),
        "e/res.yaml": dump(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "grafana-admin"}},
            secret("login", "grafana-admin", stringData={"username": "grafana-admin"}),
        ),
    }


@pytest.mark.slow
def test_no_secret_value_reaches_an_output_by_an_error_line_a_patch_a_name_or_a_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    repo = write_tree(init(tmp_path / "repo"), late_files(LATE))
    blobs: dict[str, bytes] = {}

    def record(name: str, res: Result) -> Result:
        assert res.code in (0, 1, 2), (name, res.stdout[-2000:], res.stderr[-2000:])
        assert "internal error" not in res.stderr, res.stderr
        blobs[f"{name} stdout"] = res.stdout.encode()
        blobs[f"{name} stderr"] = res.stderr.encode()
        return res

    update = record("update", run_harness("update", "--repo", repo))
    assert update.code == 2  # `a` fails, the others are written
    assert "cannot decode !!str `<redacted sha256:" in update.stderr
    commit_all(repo, "base")
    (repo / "b/s.yaml").write_text(dump(secret("db", "b", stringData={"password": "other"})))
    out = tmp_path / "out"
    out.mkdir()
    for fmt in ("text", "json", "junit", "github", "html"):
        record(f"check -o {fmt}", run_harness("check", "--repo", repo, "-o", fmt))
        record(f"diff -o {fmt}", run_harness("diff", "--repo", repo, "-o", fmt))
    record("check --html", run_harness("check", "--repo", repo, "--html", out / "c.html"))
    record("comment", run_harness("comment", "--repo", repo, "--split", "--output-dir", out / "m"))
    record("comment stdout", run_harness("comment", "--repo", repo))
    render = record("render", run_harness("render", "--repo", repo))
    record("render -o json", run_harness("render", "--repo", repo, "-o", "json"))
    for target in (
        "a",
        "c",
        "d",
        "e",
        "f",
        "clusters/prod",
        "prod/flux-system/patched",
        "prod/flux-system/substituted",
    ):
        record(f"render {target}", run_harness("render", target, "--repo", repo))
    for fmt in ("text", "json"):
        record(f"lint -o {fmt}", run_harness("lint", "--repo", repo, "-o", fmt))
    shard = record(
        "diff shard", run_harness("diff", "--repo", repo, "-o", "json", "--shard", "1/1")
    )
    (out / "shard.json").write_text(shard.stdout)
    files = [p for root in (out, repo / "goldens", cache) for p in root.rglob("*") if p.is_file()]
    blobs.update({str(p): p.read_bytes() for p in files})
    assert scan(blobs, LATE) == []
    # a name that merely equals a username stays readable everywhere
    shown = blobs["render e stdout"].decode()
    assert "# Namespace/grafana-admin  sha256:" in shown and "namespace: grafana-admin" in shown
    assert "9/10 targets rendered" in render.stdout  # only `a` fails
    # a variable no Secret takes stays readable in the Kustomization
    assert "REGION: eu-west-1" in blobs["render clusters/prod stdout"].decode()
    assert "# ConfigMap/c/<redacted sha256:" in blobs["render c stdout"].decode()
