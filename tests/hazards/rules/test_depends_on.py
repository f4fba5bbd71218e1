"""depends-on: missing targets, cycles, the substitution race, and removals in a diff."""

from __future__ import annotations

from typing import Any

from harness.hazards.rules.depends_on import RULE
from tests.hazards.snap import by_id, cm, diff_ctx, flux, helmrelease, ks, lint_ctx, snapshot

ROOT = "flux-system"


def test_missing_dependency_and_cycles() -> None:
    snap = snapshot(
        flux(
            "dev",
            ROOT,
            ks("a", depends=["b"]),
            ks("b", depends=["c"]),
            ks("c", depends=["a"]),
            ks("d", depends=["nope", "d"]),
        ),
    )
    found = by_id(RULE.check_snapshot(lint_ctx(snap)))
    assert set(found) == {
        "depends-on:dev:d:missing:nope",
        "depends-on:dev:cycle:a,b,c",
        "depends-on:dev:cycle:d",
    }
    assert "a -> b -> c -> a" in found["depends-on:dev:cycle:a,b,c"].message
    assert all(f.severity == "error" for f in found.values())


def test_substitution_race_needs_a_transitive_dependency_on_the_writer() -> None:
    vars_cm = cm("cluster-vars", "flux-system", A="1")
    racy = snapshot(
        flux("dev", ROOT, ks("platform", subst_from=["cluster-vars"]), vars_cm),
    )
    (f,) = RULE.check_snapshot(lint_ctx(racy))
    assert f.id == "depends-on:dev:platform:race:ConfigMap/cluster-vars"
    assert "substitution race" in f.message and "flux-system" in f.kustomizations
    fixed = snapshot(
        flux(
            "dev",
            ROOT,
            ks("platform", depends=[ROOT]),
            ks("apps", depends=["platform"], subst_from=["cluster-vars"]),
            vars_cm,
        ),
    )
    assert RULE.check_snapshot(lint_ctx(fixed)) == []


def test_diff_reports_a_dependency_this_change_removes() -> None:
    base = snapshot(flux("dev", ROOT, ks("a"), ks("b", depends=["a"]), ks("c", depends=["x"])))
    head = snapshot(flux("dev", ROOT, ks("b", depends=["a"]), ks("c", depends=["x"])))
    (f,) = RULE.check_diff(diff_ctx(base, head))
    assert f.id == "depends-on:dev:b:missing:a"
    assert "this change removes" in f.message


def _hr(name: str, namespace: str, *depends: str) -> dict[str, Any]:
    """A HelmRelease; each dependency `name` (same namespace) or `namespace/name`."""
    release = helmrelease(name, namespace)
    if depends:
        release["spec"]["dependsOn"] = [
            {"namespace": d.split("/")[0], "name": d.split("/")[1]} if "/" in d else {"name": d}
            for d in depends
        ]
    return release


def test_helm_release_depends_on_missing_and_cycles() -> None:
    snap = snapshot(
        flux("dev", ROOT, ks("infra"), ks("apps")),
        flux("dev", "infra", _hr("cnpg", "db"), _hr("postgres", "db", "cnpg")),
        flux(
            "dev",
            "apps",
            _hr("sonarr", "media", "db/postgres", "nope"),
            _hr("a", "media", "b"),
            _hr("b", "media", "a"),
            _hr("self", "media", "self"),
        ),
    )
    found = by_id(RULE.check_snapshot(lint_ctx(snap)))
    assert set(found) == {
        "depends-on:dev:helmrelease:media/sonarr:missing:media/nope",
        "depends-on:dev:helmrelease-cycle:media/a,media/b",
        "depends-on:dev:helmrelease-cycle:media/self",
    }
    missing = found["depends-on:dev:helmrelease:media/sonarr:missing:media/nope"]
    assert missing.severity == "error" and missing.kustomizations == ("apps",)
    assert "HelmRelease media/sonarr dependsOn HelmRelease media/nope" in missing.message
    assert "never installs or upgrades it" in missing.message
    cycle = found["depends-on:dev:helmrelease-cycle:media/a,media/b"]
    assert "media/a -> media/b -> media/a" in cycle.message
    assert cycle.documents == (
        "helm.toolkit.fluxcd.io/HelmRelease/media/a",
        "helm.toolkit.fluxcd.io/HelmRelease/media/b",
    )


def test_diff_reports_a_helm_release_dependency_this_change_removes() -> None:
    def side(*infra: dict[str, Any]) -> Any:
        return snapshot(
            flux("dev", ROOT, ks("infra"), ks("apps")),
            flux("dev", "infra", *infra),
            flux("dev", "apps", _hr("sonarr", "media", "db/postgres", "gone-before")),
        )

    base = side(_hr("postgres", "db"))
    head = side(cm("placeholder", "db"))
    (f,) = RULE.check_diff(diff_ctx(base, head))
    assert f.id == "depends-on:dev:helmrelease:media/sonarr:missing:db/postgres"
    assert "this change removes" in f.message
    assert f.kustomizations == ("apps", "infra")  # the dependent's and the removed one's


def test_the_race_heals_under_strict_substitution_and_ships_empty_values_without() -> None:
    from harness.hazards.context import LintContext

    vars_cm = cm("cluster-vars", "flux-system", A="1")
    racy = snapshot(flux("dev", ROOT, ks("platform", subst_from=["cluster-vars"]), vars_cm))
    (strict,) = RULE.check_snapshot(LintContext(racy, strict=True))
    (loose,) = RULE.check_snapshot(LintContext(racy, strict=False))
    assert (strict.severity, loose.severity) == ("warning", "error")
    assert "Flux retries it until flux-system has applied the variable" in strict.message
    assert "reconcile.fluxcd.io/watch: Enabled` on ConfigMap/cluster-vars" in strict.message
    assert "renders empty" in loose.message and strict.id == loose.id
    watched_cm = {
        **vars_cm,
        "metadata": {**vars_cm["metadata"], "labels": {"reconcile.fluxcd.io/watch": "Enabled"}},
    }
    watched = snapshot(flux("dev", ROOT, ks("platform", subst_from=["cluster-vars"]), watched_cm))
    (f,) = RULE.check_snapshot(LintContext(watched, strict=True))
    assert "the watch label re-triggers it at once" in f.message


def test_a_dependency_in_a_target_that_fails_in_head_is_unknown_not_removed() -> None:
    """infra breaks at head: its HelmRelease and the Kustomization it declares are unseen,
    not gone, so nothing 'this change removes'; one warning says what was not judged."""

    def side(infra: Any) -> Any:
        return snapshot(
            flux("dev", ROOT, ks("infra"), ks("apps", depends=["infra-extra"])),
            infra,
            flux("dev", "apps", _hr("sonarr", "media", "db/postgres")),
        )

    base = side(flux("dev", "infra", _hr("postgres", "db"), ks("infra-extra")))
    broken = "infra/kustomization.yaml: kustomize: missing.yaml: no such file or directory"
    head = side(flux("dev", "infra", error=broken))
    (f,) = RULE.check_diff(diff_ctx(base, head))
    assert f.id == "depends-on:unjudged:dev"
    assert f.severity == "warning"
    assert f.message == (
        "depends-on could not judge 2 dependsOn entries in dev (HelmRelease media/sonarr -> "
        "db/postgres and apps -> infra-extra): infra failed to render in head (it applies and "
        "prunes nothing until fixed); infra, which declares infra-extra, failed to render in "
        "head, so whether infra-extra still exists is unknown; what it renders in head is "
        "unknown, not removed; fix the render error and run the diff again."
    )


def test_no_race_advice_against_a_resourceset_writer() -> None:
    """A Kustomization cannot dependsOn a ResourceSet: a tenant Kustomization reading the
    ConfigMap its ResourceSet copies in is not told to."""
    rset = {
        "apiVersion": "fluxcd.controlplane.io/v1",
        "kind": "ResourceSet",
        "metadata": {"name": "tenants", "namespace": "flux-system"},
        "spec": {"inputs": [{"t": "a"}]},
    }
    snap = snapshot(
        flux("dev", ROOT, ks("tenants-ks"), rset),
        flux("dev", "tenants-ks", rset),
        flux(
            "dev",
            "tenants@resourceset",
            ks("apps", namespace="team-a", subst_from=["runtime"]),
            cm("runtime", "team-a", A="1"),
        ),
        flux("dev", "apps", namespace="team-a"),
    )
    assert RULE.check_snapshot(lint_ctx(snap)) == []
