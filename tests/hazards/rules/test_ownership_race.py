"""ownership-race: a move A -> B is safe only when something orders prune after adoption."""

from __future__ import annotations

from typing import Any

from harness.hazards.rules.ownership_race import RULE
from tests.hazards.snap import by_id, cm, diff_ctx, flux, helmrelease, ks, ns, snapshot

ROOT = "flux-system"
KEY = "kustomize.toolkit.fluxcd.io/prune"


def _split(
    *,
    prune: bool = True,
    depends: tuple[str, ...] = (),
    source: str = "flux-system",
    moved: list[dict[str, Any]] | None = None,
    base_moved: list[dict[str, Any]] | None = None,
) -> tuple[Any, Any]:
    """Cilium leaves platform for its own Kustomization (head); platform keeps coredns."""
    cilium = moved or [ns("kube-system"), helmrelease("cilium", "kube-system")]
    base = snapshot(
        flux("dev", ROOT, ks("platform")),
        flux("dev", "platform", *(base_moved or cilium), cm("coredns", "kube-system")),
    )
    head = snapshot(
        flux(
            "dev",
            ROOT,
            ks("platform", prune=prune, depends=depends),
            ks("cilium", source=source),
        ),
        flux("dev", "platform", cm("coredns", "kube-system")),
        flux("dev", "cilium", *cilium),
    )
    return base, head


def _run(base: Any, head: Any) -> dict[str, Any]:
    return by_id(RULE.check_diff(diff_ctx(base, head)))


NS_ID = "ownership-race:dev:platform:cilium:Namespace/kube-system"


def test_unprotected_split_is_an_error_naming_kube_system_and_both_procedures() -> None:
    found = _run(*_split())
    f = found[NS_ID]
    assert f.severity == "error"
    assert f.kustomizations == ("platform", "cilium")
    assert "kubectl delete namespace kube-system" in f.message
    assert "ConfigMap/kube-system/coredns" in f.message
    assert "CoreDNS, metrics-server and the CNI" in f.message
    assert "prune: false on platform" in f.message
    assert "kustomize.toolkit.fluxcd.io/prune: disabled" in f.message
    hr = found[
        "ownership-race:dev:platform:cilium:helm.toolkit.fluxcd.io/HelmRelease/kube-system/cilium"
    ]
    assert hr.severity == "warning" and "uninstalls" in hr.message


def test_depends_on_new_owner_makes_it_safe() -> None:
    found = _run(*_split(depends=("cilium",)))
    assert found and all(f.severity == "info" for f in found.values())
    assert "revision-gated" in found[NS_ID].message


def test_prune_false_makes_it_safe() -> None:
    found = _run(*_split(prune=False))
    assert found and all(f.severity == "info" for f in found.values())
    assert "prune: false" in found[NS_ID].message


def test_prune_disabled_on_the_live_object_makes_it_safe() -> None:
    marked = ns("kube-system", annotations={KEY: "disabled"})
    found = _run(*_split(moved=[marked], base_moved=[marked]))
    assert found[NS_ID].severity == "info"


def test_prune_disabled_only_on_the_moved_copy_does_not() -> None:
    marked = ns("kube-system", annotations={KEY: "disabled"})
    found = _run(*_split(moved=[marked], base_moved=[ns("kube-system")]))
    assert found[NS_ID].severity == "error"
    assert "does not protect it" in found[NS_ID].message


def test_dependency_on_another_source_is_not_revision_gated() -> None:
    found = _run(*_split(depends=("cilium",), source="other"))
    assert found[NS_ID].severity == "error"
    assert "not revision-gated" in found[NS_ID].message


def test_unmoved_documents_are_not_reported() -> None:
    base, _head = _split()
    assert _run(base, base) == {}


def test_removed_old_owner_garbage_collects_unless_it_had_prune_false() -> None:
    base = snapshot(
        flux("dev", ROOT, ks("apps")),
        flux("dev", "apps", cm("app", "x")),
    )
    head = snapshot(
        flux("dev", ROOT, ks("apps-wave-0")),
        flux("dev", "apps-wave-0", cm("app", "x")),
    )
    (f,) = RULE.check_diff(diff_ctx(base, head))
    # a ConfigMap pruned then recreated: a brief gap, not a loss
    assert f.severity == "warning" and "apps is removed with prune: true" in f.message
    assert "garbage-collect it before apps-wave-0 adopts it" in f.message
    base = snapshot(flux("dev", ROOT, ks("apps", prune=False)), flux("dev", "apps", cm("app", "x")))
    (g,) = RULE.check_diff(diff_ctx(base, head))
    assert g.severity == "info"


def test_a_document_left_behind_by_a_failed_target_is_no_move() -> None:
    """apps and shared both render the ConfigMap; apps fails at head: no move to shared."""

    def side(apps: Any) -> Any:
        return snapshot(
            flux("dev", "flux-system", ks("apps"), ks("shared")),
            apps,
            flux("dev", "shared", cm("settings", "media")),
        )

    base = side(flux("dev", "apps", cm("settings", "media")))
    head = side(flux("dev", "apps", error="apps: kustomize: missing.yaml: no such file"))
    (f,) = RULE.check_diff(diff_ctx(base, head))
    assert (f.id, f.severity) == ("ownership-race:unjudged:dev:apps", "info")
    assert f.documents == ("ConfigMap/media/settings",)
    assert "apps failed to render in head" in f.message
