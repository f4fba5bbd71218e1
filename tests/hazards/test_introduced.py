"""What a change introduces: findings compared by what they are about, after renames."""

from __future__ import annotations

from typing import Any

from harness.hazards import engine
from harness.hazards.finding import Finding, Severity
from harness.hazards.introduced import Renames, introduced, renames
from tests.hazards.snap import cm, flux, ks, ns, snapshot


def _cluster(namespace: str, owners: tuple[str, str] = ("a", "b"), extra: Any = ()) -> Any:
    first, second = owners
    return snapshot(
        flux("dev", "flux-system", ks(first), ks(second)),
        flux("dev", first, ns(namespace), cm("shared", namespace), cm("app", namespace)),
        flux("dev", second, cm("shared", namespace), *extra),
    )


def test_a_namespace_rename_reports_no_old_finding_as_new() -> None:
    base, head = _cluster("media"), _cluster("mediaserver")
    assert [f.id for f in engine.lint(base).findings if f.rule == "duplicate-owner"] == [
        "duplicate-owner:dev:ConfigMap/media/shared"
    ]
    names = renames(base, head)
    assert names.namespaces == {"media": "mediaserver"}
    assert names.document("Namespace/media") == "Namespace/mediaserver"
    assert names.document("ConfigMap/media/shared") == "ConfigMap/mediaserver/shared"
    report = engine.diff(base, head)
    assert [f.id for f in report.findings if f.rule == "duplicate-owner"] == []


def test_a_move_between_kustomizations_is_the_same_finding() -> None:
    base = _cluster("media")
    head = _cluster("media", owners=("a", "c"))  # b renamed to c: same objects
    assert renames(base, head).kustomizations == {("dev", "b"): "c"}
    assert not [f for f in engine.diff(base, head).findings if f.rule == "duplicate-owner"]


def test_a_new_object_in_the_same_relation_is_introduced() -> None:
    base = _cluster("media")
    head = _cluster("media", extra=[cm("app", "media")])  # b now also renders app
    new = [f.id for f in engine.diff(base, head).findings if f.rule == "duplicate-owner"]
    assert new == ["duplicate-owner:dev:ConfigMap/media/app"]


def _finding(
    severity: Severity, docs: tuple[str, ...] = (), ks: tuple[str, ...] = (), rule: str = "r"
) -> Finding:
    return Finding(f"{rule}:{docs}:{ks}", rule, severity, "dev", ks, docs, "m")


def test_a_worse_severity_about_the_same_objects_is_introduced() -> None:
    old = [_finding("info", ("ConfigMap/x/a",))]
    same, worse = _finding("info", ("ConfigMap/x/a",)), _finding("error", ("ConfigMap/x/a",))
    assert introduced(old, [same]) == []
    assert introduced(old, [worse]) == [worse]
    other_rule = _finding("info", ("ConfigMap/x/a",), rule="other")
    assert introduced(old, [other_rule]) == [other_rule]


def test_kustomization_only_findings_follow_renames_as_a_tuple() -> None:
    old = [_finding("warning", ks=("apps", "infra"))]
    names = Renames(kustomizations={("dev", "apps"): "applications"})
    kept = _finding("warning", ks=("applications", "infra"))
    other = _finding("warning", ks=("applications", "db"))
    assert introduced(old, [kept, other], names) == [other]
