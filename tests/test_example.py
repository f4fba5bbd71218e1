"""Issue-2 acceptance on the bundled example: goldens match, a change is caught, no secret leaks."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from harness.core import yamlload
from tests.conftest import EXAMPLE, GOLDENS, run_harness

pytestmark = pytest.mark.slow


def _secret_literals() -> list[str]:
    """Distinctive secretGenerator values (short ones such as `oauth2-proxy` are also names)."""
    values = []
    for kfile in EXAMPLE.rglob("kustomization.yaml"):
        data = yamlload.load(kfile.read_text()) or {}
        for gen in data.get("secretGenerator") or []:
            for literal in gen.get("literals") or []:
                value = literal.split("=", 1)[1]
                if len(value) >= 16:
                    values.append(value)
    assert values, "the example must carry generated Secrets"
    return values


def test_check_passes_on_the_committed_goldens() -> None:
    result = run_harness("check", "--repo", EXAMPLE)
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("render-golden: ")
    assert " match" in result.stdout.strip().splitlines()[-1]


def test_one_changed_value_is_drift_naming_target_and_document(example_copy: Path) -> None:
    release = example_copy / "platform/cilium/helmrelease.yaml"
    original = release.read_text()
    release.write_text(original.replace("k8sServicePort: 6443", "k8sServicePort: 6444"))
    drift = run_harness("check", "--repo", example_copy)
    assert drift.code == 1, drift.stdout + drift.stderr
    assert "platform/cilium: 3 -> 3 documents (-0, +0, ~1)" in drift.stdout
    assert "~ helm.toolkit.fluxcd.io/HelmRelease/kube-system/cilium" in drift.stdout
    # one change, one entry: the field once, then the 4 targets it lands in
    assert drift.stdout.count("spec.values.k8sServicePort: 6443 -> 6444") == 1
    assert "    in: platform, platform/cilium; dev, prod: flux-system/platform\n" in drift.stdout
    assert drift.stdout.splitlines()[-1].endswith("(4 drifted: 1 object changes in 2 clusters)")
    release.write_text(original)
    assert run_harness("check", "--repo", example_copy).code == 0


def test_a_shared_value_in_six_targets_is_said_once(example_copy: Path) -> None:
    """whoami's values ConfigMap: 2 path targets, both clusters' apps-wave-2, and the
    release both clusters' helm targets render: each field change is printed once."""
    values = example_copy / "apps/wave-2/whoami/values.yaml"
    original = values.read_text()
    values.write_text(original.replace("cpu: 20m", "cpu: 25m"))
    drift = run_harness("check", "--repo", example_copy)
    assert drift.code == 1, drift.stdout + drift.stderr
    out = drift.stdout
    assert out.count("-    cpu: 20m") == 1 and out.count("resources.requests.cpu: 20m -> 25m") == 1
    assert "    in: apps/wave-2, apps/wave-2/whoami; dev, prod: flux-system/apps-wave-2\n" in out
    assert "    in: helm dev, prod: media/whoami\n" in out
    assert out.splitlines()[-1].endswith("(6 drifted: 2 objects change in 2 clusters)")


def test_no_secret_value_in_goldens_or_output() -> None:
    secrets = _secret_literals()
    needles = secrets + [base64.b64encode(s.encode()).decode() for s in secrets]
    golden_text = "".join(p.read_text() for p in GOLDENS.rglob("*") if p.is_file())
    rendered = run_harness("render", "--repo", EXAMPLE, "--output", "json")
    documents = run_harness("render", "platform/keycloak", "--repo", EXAMPLE)
    assert documents.code == 0 and "kind: Secret" in documents.stdout
    for needle in needles:
        assert needle not in golden_text
        assert needle not in rendered.stdout + rendered.stderr
        assert needle not in documents.stdout + documents.stderr


def test_render_json_lists_both_clusters() -> None:
    payload = json.loads(run_harness("render", "--repo", EXAMPLE, "--output", "json").stdout)
    clusters = {t.get("cluster") for t in payload["targets"] if t["kind"] == "flux"}
    assert clusters == {"dev", "prod"}
