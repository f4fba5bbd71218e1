"""Precision suite: realistic layouts lint with no false error, the seeds' incidents at error.

Each layout (tests/hazards/layouts.py) is written to a temp dir, made a git repo and linted
through the CLI with real kubectl; the expected findings are recorded per rule, every rule
listed, so a new finding (or a lost one) on a layout that real repos look like fails here.
Every warning or info expected below comes with the sentence that defends it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.report.lint_text import LINT_RULES as LINT_RULE_SUMMARIES
from tests import gitkit
from tests.conftest import Result, write_tree
from tests.hazards import layouts

pytestmark = pytest.mark.slow  # renders whole layouts with the real kubectl

Cli = Callable[..., Result]
Expected = dict[str, dict[str, str]]

LINT_RULES = [rule for rule, _summary in LINT_RULE_SUMMARIES]


def _repo(tmp_path: Path, files: dict[str, str], name: str = "repo") -> Path:
    root = write_tree(tmp_path / name, files)
    gitkit.init(root)
    gitkit.commit_all(root, "layout")
    return root


def _lint(cli: Cli, repo: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    result = cli("lint", "--repo", repo, "-o", "json", *args)
    assert result.code in (0, 1), result.stdout + result.stderr
    return result, json.loads(result.stdout)


def _by_rule(findings: list[dict[str, Any]]) -> Expected:
    out: Expected = {rule: {} for rule in LINT_RULES}
    for f in findings:
        out.setdefault(f["rule"], {})[f["id"]] = f["severity"]
    return out


def _expect(**rules: dict[str, str]) -> Expected:
    out: Expected = {rule: {} for rule in LINT_RULES}
    for rule, found in rules.items():
        out[rule.replace("_", "-")] = found
    return out


# -- home-operations layout: bootstrap helmfile with CRDs ----------------------------------------

SAME_KS = ("cert-manager", "cilium", "envoy-gateway", "external-secrets", "kube-prometheus-stack")

HOME_OPS = _expect(
    # Each HelmRelease shares its Kustomization with its own custom resources; that only works
    # because the bootstrap helmfile installs the CRDs first: a latent note, not a hazard.
    crd_order={f"crd-order:cluster:{ks}": "info" for ks in SAME_KS},
    # gatus expands ${GATUS_WEB_PORT} itself; nothing substitutes it: latent.
    substitution={"substitution:cluster:gatus:GATUS_WEB_PORT:literal": "info"},
)


def test_bootstrap_helmfile_layout_lints_clean_and_exits_0(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, layouts.home_ops())
    result, data = _lint(cli, repo)
    assert result.code == 0 and data["summary"]["exit_code"] == 0
    assert _by_rule(data["findings"]) == HOME_OPS
    # the finding says how the CRDs were judged preinstalled
    messages = {f["id"]: f["message"] for f in data["findings"]}
    assert (
        "bootstrap/helmfile/apps.yaml installs release kube-system/cilium"
        in (messages["crd-order:cluster:cilium"])
    )
    assert (
        "bootstrap/helmfile/crds.yaml renders the CRDs of release network/envoy-gateway"
        in (messages["crd-order:cluster:envoy-gateway"])
    )
    sources = {(p["file"], p["release"]) for p in data["preinstalled"]}
    assert ("bootstrap/helmfile/crds.yaml", "observability/kube-prometheus-stack") in sources
    assert any(p["file"] == "bootstrap/kustomize" for p in data["preinstalled"])
    # the echo app uses ExternalSecret, HTTPRoute and ServiceMonitor without any dependsOn:
    # every one of those CRDs exists before Flux, so nothing is reported for it
    assert not [f for f in data["findings"] if "echo" in f["id"]]


def test_same_layout_without_bootstrap_is_caught_at_error(tmp_path: Path, cli: Cli) -> None:
    """The seeds' CRD/CR deadlock: on a cluster without the CRDs each of these fails."""
    repo = _repo(tmp_path, layouts.home_ops(bootstrap=False))
    result, data = _lint(cli, repo)
    assert result.code == 1
    found = _by_rule(data["findings"])
    assert found["crd-order"] == {
        **{f"crd-order:cluster:{ks}": "error" for ks in SAME_KS},
        # echo's custom resources wait for other Kustomizations: Flux retries, slow bootstrap
        "crd-order:cluster:echo:envoy-gateway": "info",
        "crd-order:cluster:echo:external-secrets": "info",
        "crd-order:cluster:echo:kube-prometheus-stack": "info",
    }
    cilium = next(f for f in data["findings"] if f["id"] == "crd-order:cluster:cilium")
    assert cilium["documents"] == [
        "cilium.io/CiliumL2AnnouncementPolicy/kube-system/l2",
        "cilium.io/CiliumLoadBalancerIPPool/kube-system/pool",
    ]
    assert "no matches for kind" in cilium["message"]


def test_config_declared_preinstalled_replaces_the_helmfile(tmp_path: Path, cli: Cli) -> None:
    files = layouts.home_ops(bootstrap=False)
    files["harness.yaml"] = """\
preinstalled:
  - helmreleases: [kube-system/cilium, cert-manager/cert-manager, external-secrets/external-secrets]
    reason: installed by the Talos bootstrap script
  - crds: [gateway.networking.k8s.io, gateway.envoyproxy.io, monitoring.coreos.com]
    reason: CRD bundles applied by scripts/bootstrap.sh
"""
    repo = _repo(tmp_path, files)
    result, data = _lint(cli, repo)
    assert result.code == 0
    assert _by_rule(data["findings"]) == HOME_OPS
    messages = {f["id"]: f["message"] for f in data["findings"]}
    assert (
        "declared preinstalled in harness.yaml: installed by the Talos bootstrap script"
        in (messages["crd-order:cluster:cilium"])
    )


# -- flux2 example layout: CRDs only from Flux, proper dependsOn --------------------------------


def test_flux_tiers_with_depends_on_lint_with_no_finding(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, layouts.flux_tiers())
    result, data = _lint(cli, repo, "--fail-on", "info")
    assert result.code == 0, result.stdout
    assert _by_rule(data["findings"]) == _expect()
    assert data["gates"]["substitution"]["hazards"] == 0
    assert data["gates"]["substitution"]["assertions"] >= 6


def test_escaped_cloud_init_in_a_substituted_tier_is_fine(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, layouts.with_vms(layouts.flux_tiers()))
    _result, data = _lint(cli, repo, "--fail-on", "info")
    assert _by_rule(data["findings"]) == _expect()


# -- the seeds' incidents -------------------------------------------------------------------------


def test_missing_substitute_from_dependency_is_a_warning_under_strict_an_error_without(
    tmp_path: Path, cli: Cli
) -> None:
    """Seed 666a607: a substituting Kustomization not chained to the one writing its vars.
    Without strict substitution (the seed's controller) the race applies an empty value: an
    error. With it (the default) the build fails and Flux retries until the variable is
    there: it heals by itself, a warning."""
    repo = _repo(tmp_path, layouts.flux_tiers(root_dependency=False))
    ids = [
        f"depends-on:{c}:{ks}:race:ConfigMap/cluster-vars"
        for c in ("production", "staging")
        for ks in ("apps", "infra-configs")
    ]
    result, data = _lint(cli, repo)
    assert result.code == 0  # the default gate: errors only
    assert _by_rule(data["findings"])["depends-on"] == dict.fromkeys(ids, "warning")
    assert "heals by itself" in data["findings"][0]["message"]
    loose, data = _lint(cli, repo, "--no-strict")
    assert loose.code == 1
    assert _by_rule(data["findings"])["depends-on"] == dict.fromkeys(ids, "error")
    assert "renders empty" in data["findings"][0]["message"]


def test_unescaped_shell_variable_in_substituted_cloud_init_is_an_error(
    tmp_path: Path, cli: Cli
) -> None:
    repo = _repo(tmp_path, layouts.with_vms(layouts.flux_tiers(), escaped=False))
    result = cli("lint", "--repo", repo, "-o", "json")
    assert result.code == 2  # strict substitution fails the apps-vms targets themselves
    data = json.loads(result.stdout)
    found = _by_rule(data["findings"])
    assert found["substitution"] == {
        f"substitution:{c}:apps-vms:HOSTNAME:script": "error" for c in ("production", "staging")
    }
    message = data["findings"][0]["message"]
    assert "apps/vms/unifi.yaml" in message and "$${HOSTNAME}" in message


def _split(repo: Path, *, new_owner: bool = True, protect: bool = False) -> None:
    platform = repo / "platform/kustomization.yaml"
    platform.write_text(platform.read_text().replace("  - ./cilium\n", ""))
    if new_owner:
        (repo / "clusters/dev/cilium.yaml").write_text(layouts.CILIUM_OWN_KS)
    if protect:
        ks = repo / "clusters/dev/platform.yaml"
        ks.write_text(ks.read_text().replace("  prune: true\n", "  prune: false\n"))


def _diff(cli: Cli, repo: Path) -> dict[str, str]:
    result = cli("diff", "--repo", repo, "--base", "HEAD", "-o", "json")
    assert result.code in (0, 1), result.stdout + result.stderr
    return {f["id"]: f["severity"] for f in json.loads(result.stdout)["findings"]}


KUBE_SYSTEM = "Namespace/kube-system"


def test_cilium_split_deleting_kube_system_is_an_error(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, layouts.platform())
    _split(repo)
    found = _diff(cli, repo)
    assert found[f"ownership-race:dev:platform:cilium:{KUBE_SYSTEM}"] == "error"
    # the HelmRelease is uninstalled and reinstalled at worst: a warning
    assert (
        found[
            "ownership-race:dev:platform:cilium:helm.toolkit.fluxcd.io/HelmRelease/kube-system/cilium"
        ]
        == "warning"
    )


def test_cilium_split_with_prune_false_transition_is_safe(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, layouts.platform())
    _split(repo, protect=True)
    found = _diff(cli, repo)
    assert found[f"ownership-race:dev:platform:cilium:{KUBE_SYSTEM}"] == "info"
    assert "error" not in found.values()


def test_removing_the_sole_kube_system_declarer_is_an_error(tmp_path: Path, cli: Cli) -> None:
    repo = _repo(tmp_path, layouts.platform())
    _split(repo, new_owner=False)
    found = _diff(cli, repo)
    assert found[f"prune-delete:dev:platform:{KUBE_SYSTEM}"] == "error"


@pytest.mark.parametrize("layout", ["home_ops", "flux_tiers", "platform"])
def test_lint_text_summary_lists_every_lint_rule_first(
    tmp_path: Path, cli: Cli, layout: str
) -> None:
    repo = _repo(tmp_path, getattr(layouts, layout)())
    result = cli("lint", "--repo", repo)
    assert result.code == 0, result.stdout + result.stderr
    first = [line.split()[0] for line in result.stdout.splitlines()[: len(LINT_RULES)]]
    assert first == LINT_RULES
    if layout == "home_ops":
        assert "preinstalled before Flux (3 sources):" in result.stdout
        assert (
            "  bootstrap/helmfile/apps.yaml (bootstrap helmfile): releases kube-system/cilium, "
            "kube-system/coredns, cert-manager/cert-manager and external-secrets/external-secrets"
        ) in result.stdout
        assert "crd-order                5 info" in result.stdout


def test_diff_reports_only_the_new_deadlock_in_a_bootstrapped_repo(
    tmp_path: Path, cli: Cli
) -> None:
    """What exists before Flux is known to `diff` too: a new app using bootstrap CRDs is not
    news, a new HelmRelease beside its own custom resources (not bootstrapped) is."""
    repo = _repo(tmp_path, layouts.home_ops())
    files: dict[str, str] = {}
    layouts.add_app(
        files,
        "kube-system",
        "snapshot-controller",
        (
            "helmrelease.yaml",
            layouts.oci_release(
                "snapshot-controller", "oci://ghcr.io/piraeusdatastore/snapshot-controller", "4.1.0"
            ),
        ),
        (
            "volumesnapshotclass.yaml",
            layouts.custom("snapshot.storage.k8s.io/v1", "VolumeSnapshotClass", "csi-ceph"),
        ),
        declare_ns=False,
    )
    layouts.add_app(
        files,
        "default",
        "echo2",
        (
            "externalsecret.yaml",
            layouts.custom("external-secrets.io/v1", "ExternalSecret", "echo2"),
        ),
        declare_ns=False,
    )
    write_tree(
        repo,
        {k: v for k, v in files.items() if not k.endswith("/kustomization.yaml") or "/app/" in k},
    )
    for ns, app in (("kube-system", "snapshot-controller"), ("default", "echo2")):
        index = repo / f"kubernetes/apps/{ns}/kustomization.yaml"
        index.write_text(index.read_text() + f"  - ./{app}/ks.yaml\n")
    result = cli("diff", "--repo", repo, "--base", "HEAD", "-o", "json")
    assert result.code in (0, 1), result.stdout + result.stderr
    found = {
        f["id"]: f["severity"]
        for f in json.loads(result.stdout)["findings"]
        if f["rule"] == "crd-order"
    }
    assert found == {"crd-order:cluster:snapshot-controller": "error"}
