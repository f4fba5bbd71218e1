"""Hazard findings in every output: alert blocks, JUnit cases, GitHub annotations, JSON."""

from __future__ import annotations

import io

from rich.console import Console

from harness.hazards.engine import HazardReport, Suppressed
from harness.hazards.finding import Finding
from harness.report import findings, github, junit

ERR = Finding(
    "ownership-race:dev:platform:cilium:Namespace/kube-system",
    "ownership-race",
    "error",
    "dev",
    ("platform", "cilium"),
    ("Namespace/kube-system",),
    "that is `kubectl delete namespace kube-system`; write $${X} <b>not html</b> *x*",
)
NOTE = Finding("depends-on:dev:x:missing:y", "depends-on", "info", "dev", ("x",), (), "fyi")
REPORT = HazardReport((ERR, NOTE), (Suppressed(NOTE, "known"),))


def test_alert_blocks_one_per_severity_escaped() -> None:
    text = findings.alert_blocks(REPORT)
    assert text.startswith("> [!CAUTION]\n> **1 hazard error**\n> - **ownership-race**: ")
    assert "\\$\\${X}" in text and "&lt;b&gt;" in text and "\\*x\\*" in text
    assert "`ownership-race:dev:platform:cilium:Namespace/kube-system`" in text
    assert "> [!NOTE]\n> **1 hazard note**" in text
    assert text.endswith("1 hazard finding(s) suppressed by the config file.")
    only = findings.alert_blocks(REPORT, severities=("info",), suppressed_note=False)
    assert only.startswith("> [!NOTE]") and "CAUTION" not in only


def test_text_json_junit_and_github() -> None:
    buf = io.StringIO()
    findings.print_findings(Console(file=buf, no_color=True, width=200), REPORT)
    out = buf.getvalue()
    assert "ownership-race (1 error)" in out and "suppressed depends-on:dev:x:missing:y" in out
    data = findings.report_dict(REPORT)
    assert data["findings"][0]["kustomizations"] == ["platform", "cilium"]
    assert data["suppressed"][0]["reason"] == "known"
    cases = junit.hazard_cases(REPORT)
    assert cases[0].failure is not None and cases[0].classname == "harness.hazards.ownership-race"
    assert cases[1].failure is None and cases[1].output == "info: fyi"
    lines = github.hazard_lines(REPORT)
    assert lines[0].startswith("::error title=harness ownership-race%3Adev%3A")
    assert lines[1].startswith("::notice ")
    assert findings.counts_line(REPORT) == "1 error, 0 warnings, 1 info"


def _race(cluster: str, doc: str = "Namespace/kube-system") -> Finding:
    return Finding(
        f"ownership-race:{cluster}:platform:cilium:{doc}",
        "ownership-race",
        "error",
        cluster,
        ("platform", "cilium"),
        (doc,),
        f"{doc} moves from platform to cilium in {cluster} while platform keeps prune: true",
    )


def test_the_same_finding_in_several_clusters_is_one_bullet() -> None:
    report = HazardReport((_race("dev"), _race("prod"), _race("dev", "Secret/x")))
    groups = findings.grouped(report.findings)
    assert [(f.cluster, message, ids) for f, message, ids in groups] == [
        (
            "dev",
            "Namespace/kube-system moves from platform to cilium in dev and prod while "
            "platform keeps prune: true",
            [
                "ownership-race:dev:platform:cilium:Namespace/kube-system",
                "ownership-race:prod:platform:cilium:Namespace/kube-system",
            ],
        ),
        (
            "dev",
            "Secret/x moves from platform to cilium in dev while platform keeps prune: true",
            ["ownership-race:dev:platform:cilium:Secret/x"],
        ),
    ]
    text = findings.alert_blocks(report)
    assert "> **3 hazard errors**" in text
    assert text.count("> - **ownership-race**") == 2
    assert "(+1 alike)" in text


def test_cluster_names_inside_other_words_are_not_grouped_away() -> None:
    """`dev` inside `devices` or `dev-tools` is not the cluster name."""
    a = Finding("r:dev:x", "r", "warning", "dev", ("x",), (), "dev-tools in dev break devices")
    b = Finding("r:prod:x", "r", "warning", "prod", ("x",), (), "dev-tools in prod break devices")
    [(_first, message, ids)] = findings.grouped([a, b])
    assert message == "dev-tools in dev and prod break devices"
    assert ids == ["r:dev:x", "r:prod:x"]


def _crd(ks: str, cluster: str = "main", cause: str = "add dependsOn storage/kopiur") -> Finding:
    return Finding(
        f"crd-order:{cluster}:{ks}:storage/kopiur",
        "crd-order",
        "info",
        cluster,
        (ks, "storage/kopiur"),
        (f"kopiur.home-operations.com/Restore/{ks}",),
        f"{ks} applies ...; add dependsOn storage/kopiur for a clean bootstrap.",
        cause,
    )


def test_findings_of_one_cause_are_one_entry_from_three() -> None:
    apps = [f"downloads/app-{i}" for i in range(5)]
    report = HazardReport((*(_crd(a) for a in apps), _crd("x", cause="add dependsOn other")))
    entries = findings.entries(report.findings)
    assert [(len(e.subjects), e.first.cause) for e in entries] == [
        (5, "add dependsOn storage/kopiur"),
        (0, "add dependsOn other"),  # a cause alone stays a finding of its own
    ]
    assert entries[0].headline == "5 Kustomizations: add dependsOn storage/kopiur"
    assert entries[0].names(3) == "downloads/app-0, downloads/app-1, downloads/app-2 and 2 more"
    buf = io.StringIO()
    findings.print_findings(Console(file=buf, no_color=True, width=300), report)
    out = buf.getvalue()
    assert out.count("5 Kustomizations: add dependsOn storage/kopiur") == 1
    assert "crd-order:main:downloads/app-3" not in out and "(-v lists each finding)" in out
    buf = io.StringIO()
    findings.print_findings(Console(file=buf, no_color=True, width=300), report, verbose=True)
    assert buf.getvalue().count("crd-order:main:downloads/app-") == 5
    block = findings.alert_blocks(report)
    assert "5 Kustomizations: add dependsOn storage/kopiur" in block
    (group,) = findings.entries_dict(report.findings)
    assert group["count"] == 5 and len(group["ids"]) == 5


def test_two_findings_of_one_cause_stay_apart() -> None:
    report = HazardReport((_crd("a"), _crd("b")))
    assert [e.subjects for e in findings.entries(report.findings)] == [(), ()]
