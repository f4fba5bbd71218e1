"""Engines: the in-process SDK and a `helm` binary produce what Helm's own template produces.

The proof compares harness's helm target (the whole pipeline: Flux render, values, engine,
post-renderers) with Helm's template engine called directly on the same chart and values
(`Chart.render`, a different SDK entry point than the dry-run install harness uses), after
only the documented transformations: helm-controller's origin labels and the release
namespace on namespaced objects. Helm's install order is checked against the SDK's dry-run
manifest.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import render as render_mod
from harness.core import config as config_mod
from harness.core.errors import RendererError
from harness.flux.helm import sdk
from harness.flux.helm.engine import (
    BinaryEngine,
    EngineError,
    RenderRequest,
    SdkEngine,
    resolve,
)
from harness.pipeline import RenderOptions, render_repo
from tests.conftest import write_tree
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
    assert [p.obj["kind"] for p in with_tests if p.kind == "hook"] == ["Job", "Pod"]


def test_sdk_engine_template_error_is_one_line(tmp_path: Path) -> None:
    files = chart_files("1.0.0", prefix="demo/")
    files["demo/templates/bad.yaml"] = (
        '{{ required "image.digest is required" .Values.image.digest }}\n'
    )
    chart = write_tree(tmp_path, files) / "demo"
    with pytest.raises(Exception, match=r"image\.digest is required") as info:
        SdkEngine().render(chart, RenderRequest("rel", "ns", {}))
    assert "\n" not in str(info.value)


FAKE_HELM = '''#!{python}
"""A stand-in `helm` for this test: argv is logged, `template` is served by the Helm SDK
(no helm binary is packaged for Debian or PyPI on this machine)."""
import json, sys
import helm_python as helm
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\\n")
if args[:2] == ["version", "--short"]:
    print("v4.2.3+gfake"); sys.exit(0)
assert args[0] == "template", args
release, chart = args[1], args[2]
ns = args[args.index("--namespace") + 1]
values = json.load(open(args[args.index("--values") + 1]))
with helm.Chart.load(chart) as c:
    cfg = helm.Config(storage_driver="memory", namespace=ns, kube_apiserver="https://127.0.0.1:1")
    rel = cfg.install(c, release, values, namespace=ns, dry_run="client")
    out = []
    if "--include-crds" in args:
        out += ["---\\n# Source: %s\\n%s" % (x["filename"], x["data"]) for x in c.crds]
    out.append(rel["manifest"])
    if "--no-hooks" not in args:
        rendered = c.render(values, name=release, namespace=ns, is_install=True)
        for name, text in sorted(rendered.items()):
            if "helm.sh/hook" in text and not ("--skip-tests" in args and "hook: test" in text):
                out.append("---\\n# Source: %s\\n%s" % (name, text))
if "fail" in values:
    sys.stderr.write("Error: execution error at (demo/templates/x.yaml:1:4): boom\\n"); sys.exit(1)
print("".join(out))
'''


def test_binary_engine_runs_helm_template(tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    fake = tmp_path / "helm"
    fake.write_text(FAKE_HELM.format(python=sys.executable, log=str(log)))
    fake.chmod(0o755)
    chart = write_tree(tmp_path, chart_files("1.0.0", prefix="demo/")) / "demo"
    engine = resolve(str(fake), 60)
    assert isinstance(engine, BinaryEngine)
    assert engine.version() == "helm v4.2.3+gfake"
    request = RenderRequest("rel", "ns", VALUES)
    ours = engine.render(chart, request)
    sdk_parts = SdkEngine().render(chart, request)
    assert [(p.kind, _key(p.obj)) for p in ours] == [(p.kind, _key(p.obj)) for p in sdk_parts]
    argv = json.loads(log.read_text().splitlines()[-1])
    assert argv[:5] == ["template", "rel", str(chart), "--namespace", "ns"]
    assert "--include-crds" in argv and "--skip-tests" in argv
    with pytest.raises(Exception, match=r"^helm: Error: execution error .*boom$"):
        engine.render(chart, RenderRequest("rel", "ns", {"fail": True}))


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
    assert time.monotonic() - started < 20
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
    with pytest.raises(EngineError, match="timed out after 1s"):
        BinaryEngine(fake, 1).render(chart, RenderRequest("rel", "ns", VALUES))
    child = int(pid_file.read_text())
    for _ in range(50):  # SIGKILL is asynchronous: the child is reaped by init shortly
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"helm's child {child} survived the timeout")
