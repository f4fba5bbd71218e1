"""Issue-6 acceptance on examples/homelab: the seeds' incidents, reproduced and caught.

Each scenario edits a temp copy of the example (goldens beside it, as in the project) and
renders it with the real kubectl; the unmodified example is rendered once per module.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli.context import Common, load_config, render_snapshot, renderer_for
from harness.core.memo import IdentityMemo
from harness.core.model import Snapshot
from harness.core.run import Run
from harness.hazards import engine
from harness.hazards.engine import HazardReport
from tests.conftest import EXAMPLE, GOLDENS, run_harness
from tests.homelab import edit, platform_depends_on_cilium, platform_prune_false, split_cilium

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (EXAMPLE / "clusters" / "dev").is_dir(), reason="examples/homelab not present"
    ),
]


def copy_example(root: Path) -> Path:
    """examples/homelab with its goldens inside the temp dir (`goldens: ../../goldens`)."""
    repo = root / "examples" / "homelab"
    shutil.copytree(EXAMPLE, repo)
    shutil.copytree(GOLDENS, root / "goldens")
    (root / ".git").mkdir()  # the checkout holds the goldens, as the project does
    (repo / "harness.yaml").write_text("goldens: ../../goldens\n")
    return repo


def render(repo: Path) -> Snapshot:
    common = Common(repo=repo, quiet=True)
    cfg = load_config(common)
    return render_snapshot(common, cfg, renderer_for(common, cfg))


def lint(repo: Path) -> HazardReport:
    return engine.lint(render(repo), repo=repo, goldens=load_config(Common(repo=repo)).goldens)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return render(copy_example(tmp_path_factory.mktemp("base")))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return copy_example(tmp_path)


def races(report: HazardReport) -> dict[str, str]:
    return {f.id: f.severity for f in report.findings if f.rule == "ownership-race"}


def test_unmodified_example_lints_clean_of_errors(repo: Path) -> None:
    result = run_harness("lint", "--repo", repo)
    assert result.code == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-2].startswith("lint: 0 errors, ")
    assert lines[-1].startswith("substitution gate: ") and lines[-1].endswith(", 0 hazards")
    assert "sole-namespace-declarer:platform/cilium:Namespace/kube-system" in result.stdout
    data = json.loads(run_harness("lint", "--repo", repo, "-o", "json", "--fail-on", "info").stdout)
    assert data["schema"] == "harness.lint/v1" and data["summary"]["exit_code"] == 1
    assert data["summary"]["errors"] == 0 and data["gates"]["substitution"]["hazards"] == 0


@pytest.mark.parametrize(
    ("protection", "safe"),
    [
        (None, False),
        (platform_depends_on_cilium, True),
        (platform_prune_false, True),
    ],
    ids=["unprotected", "dependsOn-cilium", "prune-false"],
)
def test_cilium_split_ownership_race(
    base: Snapshot, repo: Path, protection: Callable[[Path], None] | None, safe: bool
) -> None:
    split_cilium(repo)
    if protection is not None:
        protection(repo)
    report = engine.diff(base, render(repo), head_repo=repo)
    found = races(report)
    for cluster in ("dev", "prod"):
        ns_id = f"ownership-race:{cluster}:platform:cilium:Namespace/kube-system"
        assert found[ns_id] == ("info" if safe else "error")
    if safe:
        assert not [f for f in report.findings if f.severity == "error"]
    else:
        (ns_finding,) = [
            f for f in report.findings if f.id.endswith("dev:platform:cilium:Namespace/kube-system")
        ]
        assert "kubectl delete namespace kube-system" in ns_finding.message
        assert "CoreDNS, metrics-server and the CNI" in ns_finding.message
        assert "prune: false on platform" in ns_finding.message
    assert not [f for f in report.findings if f.rule == "prune-delete"]


def test_removing_postbuild_from_the_k3s_api_host_kustomization(repo: Path) -> None:
    platform = repo / "clusters/base/platform.yaml"
    text = platform.read_text()
    platform.write_text(text[: text.index("  postBuild:")])
    report = lint(repo)
    f = next(f for f in report.findings if f.id == "substitution:dev:platform:K3S_API_HOST:literal")
    assert f.severity == "error"
    assert "${K3S_API_HOST}" in f.message and "platform/cilium/helmrelease.yaml" in f.message
    assert report.gates[0].hazards > 0


def test_unescaped_shell_variable_in_cloud_init(repo: Path) -> None:
    vm = repo / "apps/vms/unifi/virtualmachine.yaml"
    edit(
        vm,
        '              cd "$${HOME}"\n',
        '              cd "$${HOME}"\n              echo "${HOSTNAME}" > /etc/hostname-seen\n',
    )
    report = lint(repo)
    f = next(f for f in report.findings if f.id == "substitution:dev:apps-vms:HOSTNAME:script")
    assert f.severity == "error"
    assert "apps/vms/unifi/virtualmachine.yaml" in f.message and "$${HOSTNAME}" in f.message


def test_dev_literal_copied_into_a_prod_rendered_value(repo: Path) -> None:
    edit(
        repo / "platform/cilium/helmrelease.yaml",
        "k8sServiceHost: ${K3S_API_HOST}",
        "k8sServiceHost: 192.168.1.10",
    )
    report = lint(repo)
    (f,) = [f for f in report.findings if f.rule == "overlay-parity"]
    assert f.severity == "warning" and f.cluster == "prod"
    assert "192.168.1.10 (dev's K3S_API_HOST)" in f.message
    assert "spec.values.k8sServiceHost" in f.message


def test_the_per_document_memos_change_no_finding(
    base: Snapshot, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three seed incidents at once: the diff and the lint report the same with the
    run's memos (strings, references, joined texts, parsed objects) bypassed, cold or warm."""
    from harness.core import parsed, yamlload
    from harness.hazards.rules import overlay_parity

    split_cilium(repo)
    edit(
        repo / "apps/vms/unifi/virtualmachine.yaml",
        '              cd "$${HOME}"\n',
        '              cd "$${HOME}"\n              echo "${HOSTNAME}" > /etc/hostname-seen\n',
    )
    edit(
        repo / "platform/cilium/helmrelease.yaml",
        "k8sServiceHost: ${K3S_API_HOST}",
        "k8sServiceHost: 192.168.1.10",
    )
    head = render(repo)

    def reports() -> tuple[HazardReport, HazardReport]:
        return engine.diff(base, head, head_repo=repo), engine.lint(head, repo=repo)

    with monkeypatch.context() as m, Run().entered():
        m.setattr(IdentityMemo, "get", lambda self, obj, flag=None: None)
        m.setattr(overlay_parity, "_joined", lambda texts: "\n".join(t for _p, t in texts))
        m.setattr(parsed, "load", yamlload.load)
        bare = reports()
    with Run().entered():  # a new run: its memos start empty
        cold = reports()
        warm = reports()
    assert bare == cold == warm
    diff, lint_report = bare
    rules = {f.rule for f in diff.findings} | {f.rule for f in lint_report.findings}
    assert {"ownership-race", "substitution", "overlay-parity"} <= rules
