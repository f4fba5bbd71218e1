"""Engines: the in-process SDK and a `helm` binary produce what Helm's own template produces.

The proofs: harness's helm target (the whole pipeline: Flux render, values, engine,
post-renderers) against Helm's template engine called directly on the same chart and values,
after only the documented transformations (helm-controller's origin labels, the release
namespace on namespaced objects); Helm's manifest rules on crafted render outputs; and, with
a real `helm` binary, both engines against `helm template` itself on charts shaped like real
public ones (shapes.py), part for part, in order, with sources.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.core import config as config_mod
from harness.core.errors import RendererError
from harness.flux.helm import engine as engine_mod
from harness.flux.helm import sdk
from harness.flux.helm.capabilities import Capabilities, for_cluster
from harness.flux.helm.engine import (
    BinaryEngine,
    EngineError,
    RenderRequest,
    SdkEngine,
    resolve,
    sort_manifests,
    split_manifests,
)
from harness.pipeline.repo import RenderOptions, render_repo
from harness.render import kustomize as render_mod
from tests.conftest import write_tree
from tests.flux.helm import shapes
from tests.flux.helm.charts import chart_files, cluster_repo, configmap, helm_release, local_chart

VALUES = {"replicas": 4, "greeting": "from the test", "image": {"tag": "9.9.9"}}


def _helm_template(
    chart: Path, release: str, namespace: str, values: dict[str, Any]
) -> list[dict[str, Any]]:
    """Helm's template engine on the chart: every rendered template plus crds/, tests left out
    (helm-controller runs no tests unless spec.test.enable)."""
    helm = sdk.module()
    with helm.Chart.load(str(chart)) as loaded:
        rendered = loaded.render(
            values, name=release, namespace=namespace, revision=1, is_install=True
        )
        crds = loaded.crds
    out = [o for c in crds for o in yaml.safe_load_all(c["data"]) if o]
    for name, text in rendered.items():
        if name.endswith("NOTES.txt"):
            continue
        for obj in yaml.safe_load_all(text):
            if obj and "test" not in obj.get("metadata", {}).get("annotations", {}).get(
                "helm.sh/hook", ""
            ):
                out.append(obj)
    return out


def _as_cluster_receives(obj: dict[str, Any], release: str, namespace: str) -> dict[str, Any]:
    meta = obj["metadata"]
    meta["labels"] = {
        **meta.get("labels", {}),
        "helm.toolkit.fluxcd.io/name": release,
        "helm.toolkit.fluxcd.io/namespace": namespace,
    }
    if obj["kind"] != "CustomResourceDefinition":
        meta.setdefault("namespace", namespace)
    return obj


def _key(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True)


def test_helm_target_equals_helms_own_template(make_repo: Any) -> None:
    repo = make_repo(
        cluster_repo(
            helm_release(
                chart=local_chart(),
                values={"replicas": 4, "image": {"tag": "9.9.9"}},
                valuesFrom=[{"kind": "ConfigMap", "name": "web-values"}],
            ),
            config=[configmap("web-values", "apps", {"values.yaml": "greeting: from the test\n"})],
        )
    )
    cfg = replace(config_mod.load(repo), helm=True)
    renderer = render_mod.resolve(flags=cfg.kubectl_flags)
    snapshot = render_repo(cfg, renderer, RenderOptions(jobs=2, helm=True))
    result = snapshot.results["prod/apps/web"]
    assert result.ok, result.error
    ours = [yaml.safe_load(d.text) for d in result.documents]
    # the chart's Secret is redacted in documents; compare its shape, not its value
    expected = [
        _as_cluster_receives(o, "web", "apps")
        for o in _helm_template(repo / "charts/demo", "web", "apps", VALUES)
    ]
    for obj in [*ours, *expected]:
        if obj["kind"] == "Secret":
            obj["stringData"] = {k: "<secret>" for k in obj["stringData"]}
    assert sorted(map(_key, ours)) == sorted(map(_key, expected))
    # install order: Helm's dry-run manifest order, crds first, hooks last
    kinds = [o["kind"] for o in ours]
    assert kinds == [
        "CustomResourceDefinition",
        "Secret",
        "ConfigMap",
        "CustomResourceDefinition",
        "Deployment",
        "Job",
    ]


def test_sdk_engine_parts(tmp_path: Path) -> None:
    chart = write_tree(tmp_path, chart_files("1.0.0", prefix="demo/")) / "demo"
    request = RenderRequest("rel", "ns", VALUES)
    parts = SdkEngine().render(chart, request)
    assert [(p.kind, p.obj["kind"]) for p in parts] == [
        ("crd", "CustomResourceDefinition"),
        ("manifest", "Secret"),
        ("manifest", "ConfigMap"),
        ("manifest", "CustomResourceDefinition"),
        ("manifest", "Deployment"),
        ("hook", "Job"),
    ]
    assert parts[1].source == "demo/templates/secret.yaml"
    no_crds = SdkEngine().render(chart, replace(request, include_crds=False, hooks=False))
    assert [p.kind for p in no_crds] == ["manifest"] * 4
    with_tests = SdkEngine().render(chart, replace(request, tests=True))
    # hooks in Helm's install order too: a Pod before a Job, whatever their paths
    assert [p.obj["kind"] for p in with_tests if p.kind == "hook"] == ["Pod", "Job"]


def test_manifest_rules_are_helms() -> None:
    files = {
        "x/templates/NOTES.txt": "not: yaml: at all: [",
        "x/templates/MYNOTES.txt": "also never a manifest: {",
        "x/charts/sub/templates/NOTES.txt": "subchart notes: : [",
        "x/templates/_helpers.tpl": "kind: Never\n",
        "x/templates/_dir/inside.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c2}\n",
        "x/templates/blank.yaml": "  \n\n   \n",
        "x/templates/comment.yaml": "# only a comment\n",
        "x/templates/multi.yaml": (
            "---\n\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1}\n"
            "---apiVersion: example.com/v1\nkind: Zebra\nmetadata: {name: z}\n"
            "\n---\n\n---\napiVersion: example.com/v1\nkind: Aardvark\nmetadata: {name: a}\n"
        ),
        "x/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
        "x/templates/svc.txt": "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
        "x/templates/hooks.yaml": (
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n"
            "  annotations: {helm.sh/hook: ' Pre-Install , post-upgrade'}\n"
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n"
            "  annotations: {helm.sh/hook: test-success}\n"
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: failure\n"
            "  annotations: {helm.sh/hook: test-failure}\n"
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argo\n"
            "  annotations: {helm.sh/hook: 'pre-install,post-sync'}\n"
        ),
    }
    manifests, hooks = sort_manifests(files)
    assert [(p.obj["kind"], p.obj["metadata"]["name"], p.source) for p in manifests] == [
        ("ConfigMap", "c2", "x/templates/_dir/inside.yaml"),  # only base names are partials
        ("ConfigMap", "c1", "x/templates/multi.yaml"),
        ("Service", "s", "x/templates/svc.txt"),  # any extension under templates/
        ("Deployment", "d", "x/templates/deploy.yaml"),
        ("Aardvark", "a", "x/templates/multi.yaml"),  # unknown kinds last, alphabetically
        ("Zebra", "z", "x/templates/multi.yaml"),  # `---apiVersion` glued still splits
    ]
    # an unknown event (`post-sync`, `test-failure`) drops the document entirely
    assert [(p.obj["metadata"]["name"], p.events, p.test) for p in hooks] == [
        ("t", ("test-success",), True),
        ("j", ("pre-install", "post-upgrade"), False),
    ]
    assert split_manifests("---\n\n\n---\nkind: A\n---\nkind: B\n") == [
        "---\nkind: A",
        "kind: B\n",
    ]
    with pytest.raises(EngineError, match=r"^helm: YAML parse error on x/templates/bad.yaml: "):
        sort_manifests({"x/templates/bad.yaml": "kind: [unclosed\n"})
    with pytest.raises(EngineError, match="a str where an object"):
        sort_manifests({"x/templates/text.yaml": "just some text\n"})


def test_helm_template_stream_keeps_sources_and_crds() -> None:
    stream = (
        "---\n# Source: app/crds/a.yaml\napiVersion: apiextensions.k8s.io/v1\n"
        "kind: CustomResourceDefinition\nmetadata: {name: a.example.com}\n"
        "---\n# Source: app/charts/sub/crds/b.yaml\napiVersion: apiextensions.k8s.io/v1\n"
        "kind: CustomResourceDefinition\nmetadata: {name: b.example.com}\n"
        "---\n# Source: app/templates/crds/c.yaml\napiVersion: apiextensions.k8s.io/v1\n"
        "kind: CustomResourceDefinition\nmetadata: {name: c.example.com}\n"
        "---\n# Source: app/templates/common.yaml\n---\napiVersion: v1\nkind: ConfigMap\n"
        "metadata: {name: inner}\n"
    )
    parts = engine_mod._sourced_parts(stream, "manifest")
    assert [p.source for p in parts] == [
        "app/crds/a.yaml",
        "app/charts/sub/crds/b.yaml",
        "app/templates/crds/c.yaml",
        "app/templates/common.yaml",  # the document with its own `---` keeps its source
    ]
    crd = engine_mod._CRD_SOURCE
    assert [bool(crd.match(p.source)) for p in parts] == [True, True, False, False]


def test_chart_kube_version_constraint_is_checked(tmp_path: Path) -> None:
    files = chart_files("1.0.0", prefix="demo/")
    files["demo/Chart.yaml"] += "kubeVersion: '>=1.30.0-0'\n"
    chart = write_tree(tmp_path, files) / "demo"
    old = RenderRequest("rel", "ns", {}, capabilities=Capabilities("v1.29.5+k3s1"))
    with pytest.raises(EngineError) as info:
        SdkEngine().render(chart, old)
    assert str(info.value) == (
        "helm: chart requires kubeVersion: >=1.30.0-0 which is incompatible with Kubernetes "
        "v1.29.5+k3s1"
    )
    new = replace(old, capabilities=Capabilities("v1.31.0"))
    assert SdkEngine().render(chart, new)


def test_sdk_engine_template_error_is_one_line(tmp_path: Path) -> None:
    files = chart_files("1.0.0", prefix="demo/")
    files["demo/templates/bad.yaml"] = (
        '{{ required "image.digest is required" .Values.image.digest }}\n'
    )
    chart = write_tree(tmp_path, files) / "demo"
    with pytest.raises(Exception, match=r"image\.digest is required") as info:
        SdkEngine().render(chart, RenderRequest("rel", "ns", {}))
    assert "\n" not in str(info.value)


def test_sdk_engine_renders_with_the_capabilities_it_is_given(tmp_path: Path) -> None:
    """In-process, the request's capabilities decide the branches (native.py): app-template's
    HTTPRoute version, a ServiceMonitor gate, a PodDisruptionBudget version, a KubeVersion."""
    gateway = for_cluster(
        [], "v1.33.1", ("gateway.networking.k8s.io/v1/HTTPRoute", "monitoring.coreos.com/v1")
    )
    bare = Capabilities("v1.28.0")
    engine = SdkEngine()  # one worker for every render

    def kinds(name: str, caps: Capabilities) -> dict[str, str]:
        chart = shapes.write_chart(tmp_path / caps.kube_version, name)
        request = RenderRequest("rel", "ns", shapes.VALUES[name], capabilities=caps)
        return {p.obj["kind"]: p.obj["apiVersion"] for p in engine.render(chart, request)}

    assert kinds("app", gateway)["HTTPRoute"] == "gateway.networking.k8s.io/v1"
    assert kinds("app", bare)["HTTPRoute"] == "gateway.networking.k8s.io/v1alpha2"
    watcher = kinds("watcher", gateway)
    assert watcher["ServiceMonitor"] == "monitoring.coreos.com/v1"
    assert watcher["PodDisruptionBudget"] == "policy/v1"
    assert "ServiceMonitor" not in kinds("watcher", bare)
    chart = shapes.write_chart(tmp_path / "dns", "dns")
    for kube, minor in (("v1.33.1", "33"), ("v1.29.0", "29")):
        request = RenderRequest("rel", "ns", {}, capabilities=Capabilities(kube))
        (deploy,) = [p.obj for p in engine.render(chart, request) if p.obj["kind"] == "Deployment"]
        args = deploy["spec"]["template"]["spec"]["containers"][0]["args"]
        assert f"--kube-minor={minor}" in args


def _helm_binary_template(
    helm: Path, chart: Path, values: dict[str, Any], caps: Capabilities, *extra: str
) -> list[tuple[str, str, dict[str, Any]]]:
    """Helm's own `helm template`, its stream read here on its own: (class, source, object)."""
    values_file = chart.parent / "test-values.json"
    values_file.write_text(json.dumps(values))
    argv = [str(helm), "template", "rel", str(chart), "-n", "ns", "-f", str(values_file)]
    argv += ["--include-crds", "--kube-version", caps.kube_version, *extra]
    if caps.api_versions:
        argv += ["--api-versions", ",".join(caps.api_versions)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    found: list[tuple[str, str, dict[str, Any]]] = []
    source = ""
    for chunk in re.split(r"(?m)^---$", out):
        match = re.search(r"(?m)^# Source: (.+)$", chunk)
        source = match.group(1) if match else source
        for obj in yaml.safe_load_all(chunk):
            if obj:
                hook = "helm.sh/hook" in (obj["metadata"].get("annotations") or {})
                where = source.split("/")
                crd = "crds" in where and "templates" not in where
                found.append(("crd" if crd else "hook" if hook else "manifest", source, obj))
    return found


@pytest.mark.slow
def test_binary_engine_is_helm_template(tmp_path: Path, helm_binary: Path) -> None:
    """The binary engine against the real `helm template`, with the cluster's capabilities
    (a gateway and a monitoring CRD): every part, in order, with its source."""
    engine = resolve(str(helm_binary), 60)
    assert isinstance(engine, BinaryEngine)
    assert engine.version().startswith("helm v")
    cluster = for_cluster(
        [],
        "v1.31.4",
        ("gateway.networking.k8s.io/v1/HTTPRoute", "monitoring.coreos.com/v1"),
    )
    for name in shapes.CHARTS:
        chart = shapes.write_chart(tmp_path, name)
        values = shapes.VALUES[name]
        request = RenderRequest("rel", "ns", values, tests=True, capabilities=cluster)
        ours = [(p.kind, p.source, p.obj) for p in engine.render(chart, request)]
        assert ours == _helm_binary_template(helm_binary, chart, values, cluster), name
    argv = engine.argv(chart, replace(request, tests=False), tmp_path / "v.json")
    assert argv[argv.index("--kube-version") + 1] == "v1.31.4"
    assert "--skip-tests" in argv
    assert argv[argv.index("--api-versions") + 1] == ",".join(cluster.api_versions)
    with pytest.raises(EngineError, match=r"^helm: Error: .*chart requires kubeVersion"):
        engine.render(
            shapes.write_chart(tmp_path / "old", "dns"),
            RenderRequest("rel", "ns", {}, capabilities=Capabilities("v1.21.0")),
        )


@pytest.mark.slow
def test_sdk_engine_equals_helm_template_with_the_clusters_capabilities(
    tmp_path: Path, helm_binary: Path
) -> None:
    """The in-process SDK (one render, Helm's rules applied here) against the real `helm
    template --kube-version ... --api-versions ...` given the same capabilities: each chart
    shape, as a directory and an archive, on a cluster serving the Gateway API and
    monitoring CRDs and on a bare older one; CRDs, manifests and hooks, tests included."""
    clusters = (
        for_cluster(
            [], "v1.33.1", ("gateway.networking.k8s.io/v1/HTTPRoute", "monitoring.coreos.com/v1")
        ),
        for_cluster([], "v1.28.0"),
    )
    engine = SdkEngine()
    for caps in clusters:
        for name in shapes.CHARTS:
            for archive in (False, True):
                root = tmp_path / caps.kube_version / ("a" if archive else "d")
                chart = shapes.package(root, name) if archive else shapes.write_chart(root, name)
                values = shapes.VALUES[name]
                request = RenderRequest("rel", "ns", values, tests=True, capabilities=caps)
                ours = [(p.kind, p.source, p.obj) for p in engine.render(chart, request)]
                theirs = _helm_binary_template(helm_binary, chart, values, caps)
                assert ours == theirs, (name, caps)
    # without tests: helm's --skip-tests drops `test` and `test-success` hooks alike
    chart = shapes.write_chart(tmp_path / "t", "stack")
    request = RenderRequest("rel", "ns", {}, capabilities=clusters[0])
    ours = [(p.kind, p.source, p.obj) for p in engine.render(chart, request)]
    expected = _helm_binary_template(helm_binary, chart, {}, clusters[0], "--skip-tests")
    assert ours == expected


def test_binary_engine_errors_are_one_line(tmp_path: Path, helm_binary: Path) -> None:
    files = chart_files("1.0.0", prefix="demo/")
    files["demo/templates/bad.yaml"] = '{{ fail "boom" }}\n'
    chart = write_tree(tmp_path, files) / "demo"
    with pytest.raises(EngineError, match=r"^helm: Error: .*boom$") as info:
        resolve(str(helm_binary), 60).render(chart, RenderRequest("rel", "ns", {}))
    assert "\n" not in str(info.value)


def test_binary_from_environment_and_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_HELM", "/nonexistent/helm")
    with pytest.raises(
        RendererError, match=r"\$HARNESS_HELM /nonexistent/helm: no such executable"
    ):
        resolve(None, 60)
    with pytest.raises(RendererError, match="--helm-binary /nope/helm"):
        resolve("/nope/helm", 60)


def test_sdk_render_that_never_ends_is_stopped_and_the_next_one_runs(tmp_path: Path) -> None:
    """The SDK renders in a worker process: a chart looping ~1e9 times is killed at the
    timeout (the in-process SDK had none), and a fresh worker serves the next release."""
    files = chart_files("1.0.0", prefix="slow/")
    files["slow/templates/loop.yaml"] = (
        "{{- range until 100000 }}{{- range until 10000 }}{{- end }}{{- end }}\n"
    )
    slow = write_tree(tmp_path, files) / "slow"
    fast = write_tree(tmp_path, chart_files("1.0.0", prefix="demo/")) / "demo"
    engine = SdkEngine(timeout=2)
    started = time.monotonic()
    with pytest.raises(EngineError, match=r"did not finish within 2s \(render killed\)"):
        engine.render(slow, RenderRequest("rel", "ns", VALUES))
    assert time.monotonic() - started < 150  # killed at the timeout, not run to its end
    assert [p.obj["kind"] for p in engine.render(fast, RenderRequest("rel", "ns", VALUES))]


def test_sdk_log_lines_come_back_attributed_without_timestamps(tmp_path: Path) -> None:
    chart = write_tree(tmp_path, chart_files("1.0.0", prefix="demo/")) / "demo"
    linked = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: linked\n"
    outside = write_tree(tmp_path / "elsewhere", {"cm.yaml": linked})
    (chart / "templates" / "linked.yaml").symlink_to(outside / "cm.yaml")
    logs: list[str] = []
    SdkEngine().render(chart, RenderRequest("rel", "ns", VALUES), logs)
    assert any("found symbolic link in path" in line for line in logs), logs
    assert not any(re.match(r"\d{4}/\d\d/\d\d ", line) for line in logs), logs


HANGING_HELM = """#!/bin/sh
# a `helm` whose plugin child outlives it unless its whole process group is killed
sleep 300 &
echo $! > {pid}
wait
"""


def test_a_helm_timeout_kills_its_plugin_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    fake = tmp_path / "helm"
    fake.write_text(HANGING_HELM.format(pid=pid_file))
    fake.chmod(0o755)
    chart = write_tree(tmp_path, chart_files("1.0.0", prefix="demo/")) / "demo"
    # 2 s: time for the script to start its child and write the pid even on a loaded machine
    with pytest.raises(EngineError, match="timed out after 2s"):
        BinaryEngine(fake, 2).render(chart, RenderRequest("rel", "ns", VALUES))
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 300  # SIGKILL is asynchronous: the child is reaped by init
    while True:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        if time.monotonic() > deadline:
            pytest.fail(f"helm's child {child} survived the timeout")
        time.sleep(0.1)
