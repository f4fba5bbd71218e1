"""The API's data narrows as documented: documents per kind, cluster and target."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.api.model import Document, Finding, Lint, Snapshot, Target


def _doc(kind: str, name: str, target: str, cluster: str | None) -> Document:
    return Document(
        id=f"{kind}/apps/{name}",
        api_version="v1",
        group="",
        kind=kind,
        namespace="apps",
        name=name,
        sha256="0" * 64,
        text="",
        object={},
        target=target,
        cluster=cluster,
    )


SNAP = Snapshot(
    repo=Path("/repo"),
    renderer="kubectl v1",
    targets=(
        Target("apps", "path", None, Path("apps"), (_doc("ConfigMap", "a", "apps", None),)),
        Target(
            "dev/flux-system/apps",
            "flux",
            "dev",
            Path("clusters/dev"),
            (
                _doc("ConfigMap", "a", "dev/flux-system/apps", "dev"),
                _doc("Service", "b", "dev/flux-system/apps", "dev"),
            ),
        ),
        Target("prod/flux-system/apps", "flux", "prod", Path("clusters/prod"), error="boom"),
    ),
    skipped={"prod/flux-system/x": "external"},
)


def test_documents_narrow_by_kind_cluster_and_target() -> None:
    ids = [(d.target, d.id) for d in SNAP.documents(kind="ConfigMap")]
    assert ids == [("apps", "ConfigMap/apps/a"), ("dev/flux-system/apps", "ConfigMap/apps/a")]
    assert [d.id for d in SNAP.documents(cluster="dev")] == ["ConfigMap/apps/a", "Service/apps/b"]
    assert [d.target for d in SNAP.documents(target_kind="path")] == ["apps"]
    assert list(SNAP.documents(target="prod/flux-system/apps")) == []


def test_errors_clusters_and_lookup() -> None:
    assert [t.name for t in SNAP.errors] == ["prod/flux-system/apps"]
    assert SNAP.clusters == ("dev", "prod")
    assert SNAP.target("apps").kind == "path"
    with pytest.raises(KeyError):
        SNAP.target("nope")
    with pytest.raises(TypeError):
        SNAP.skipped["y"] = "z"  # type: ignore[index]
    assert "targets=" not in repr(SNAP)  # a failing policy's traceback stays short


def test_lint_findings_at_a_severity_or_worse() -> None:
    def finding(severity: str) -> Finding:
        return Finding(f"r:{severity}", "r", severity, None, (), (), "m")  # type: ignore[arg-type]

    lint = Lint(SNAP, (finding("error"), finding("warning"), finding("info")))
    assert [f.severity for f in lint.at_least("warning")] == ["error", "warning"]
