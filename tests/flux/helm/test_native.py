"""The helm-c render call bound through ctypes (native.py): the installed library renders
with the capabilities it is given, and a library that does not (an ABI change, built here
from a few lines of C that answer like helm-c but ignore the options) fails the probe and
every helm target with one line, never a render with Helm's defaults."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.flux.helm import native, sdk
from harness.flux.helm.engine import EngineError, RenderRequest, SdkEngine
from tests.conftest import write_tree
from tests.flux.helm.charts import chart_files

# helm-c's exported names and shapes, answering the probe as Helm's defaults would
_IGNORES_OPTIONS = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
static char *dup(const char *s) { char *p = malloc(strlen(s) + 1); strcpy(p, s); return p; }
void *helm_c_version(void) { return dup(VERSION); }
void helm_free_string(void *p) { free(p); }
int32_t helm_chart_load(const char *path, uint64_t *out, char **err) { *out = 7; return 0; }
int32_t helm_chart_free(uint64_t h, char **err) { return 0; }
int32_t helm_chart_crds(uint64_t h, char **out, char **err) { *out = dup("[]"); return 0; }
int32_t helm_chart_metadata(uint64_t h, char **out, char **err) { *out = dup("{}"); return 0; }
int32_t helm_render(uint64_t h, const char *values, const char *opts, char **out, char **err) {
    *out = dup("{\"probe/templates/caps.txt\": \"v1.20.0 lacks\"}");
    return 0;
}
"""


def _fake_library(tmp_path: Path, version: str = native.PINNED) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build a stand-in library")
    source = tmp_path / "fake.c"
    source.write_text(_IGNORES_OPTIONS)
    lib = tmp_path / f"libhelm_c.so.{version}"
    subprocess.run(
        ["cc", "-shared", "-fPIC", f'-DVERSION="{version}"', "-o", str(lib), str(source)],
        check=True,
    )
    return lib


def test_the_installed_library_branches_on_what_it_is_given(tmp_path: Path) -> None:
    native.probe()
    assert native.library_path().name == f"libhelm_c.so.{native.PINNED}"
    files = chart_files("1.0.0", prefix="demo/")
    files["demo/templates/caps.yaml"] = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n"
        "  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n"
        '  route: {{ .Capabilities.APIVersions.Has "gateway.networking.k8s.io/v1/HTTPRoute"'
        " | quote }}\n"
    )
    chart = write_tree(tmp_path, files) / "demo"
    options = {
        "name": "rel",
        "namespace": "ns",
        "kube_version": "v1.33.2",
        "api_versions": ["gateway.networking.k8s.io/v1/HTTPRoute"],
    }
    out = native.render(chart, {}, options)
    assert out.files["demo/templates/caps.yaml"].endswith('kube: "v1.33.2"\n  route: "true"\n')
    assert out.metadata["name"] == "demo"
    bare = native.render(chart, {}, {"name": "rel"})
    assert bare.files["demo/templates/caps.yaml"].endswith('route: "false"\n')


def test_render_errors_are_the_librarys_message(tmp_path: Path) -> None:
    with pytest.raises(native.NativeError, match="no such file or directory"):
        native.render(tmp_path / "absent", {}, {})
    files = chart_files("1.0.0", prefix="demo/")
    files["demo/templates/bad.yaml"] = '{{ required "need.this" .Values.need }}\n'
    with pytest.raises(native.NativeError, match=r"need\.this"):
        native.render(write_tree(tmp_path, files) / "demo", {}, {})
    with pytest.raises(native.NativeError, match="unknown field"):  # keys are checked
        native.render(tmp_path / "demo", {}, {"kube_versions": "v1.30.0"})


def test_a_library_that_ignores_capabilities_fails_the_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HELM_C_LIB", str(_fake_library(tmp_path)))
    with pytest.raises(native.ProbeFailed) as info:
        native.probe()
    assert str(info.value) == native.PROBE_FAILED
    assert sdk.probe() == native.PROBE_FAILED


def test_a_library_of_another_version_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HELM_C_LIB", str(_fake_library(tmp_path, "0.3.0")))
    with pytest.raises(native.NativeMissing, match=r"helm-c library 0\.3\.0 at .*0\.2\.2"):
        native.library()


def test_helm_targets_fail_with_one_line_when_the_probe_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker probes at start and answers every render with the probe's line."""
    chart = write_tree(tmp_path, chart_files("1.0.0", prefix="demo/")) / "demo"
    monkeypatch.setenv("HELM_C_LIB", str(_fake_library(tmp_path)))
    with pytest.raises(EngineError) as info:
        SdkEngine().render(chart, RenderRequest("rel", "ns", {}))
    assert str(info.value) == f"helm: {native.PROBE_FAILED}"
