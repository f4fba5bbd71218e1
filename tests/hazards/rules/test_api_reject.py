"""api-reject: what a Kustomization's server-side dry-run would refuse, one finding per cause."""

# ruff: noqa: E501 (literal messages and CRD fixtures read best unbroken)

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.cache.store import RenderCache
from harness.core.config import Preinstalled
from harness.core.model import Target
from harness.hazards.context import LintContext
from harness.hazards.rules.api_reject import NOT_JUDGED, RULE
from tests.conftest import Result, kustomization
from tests.hazards.snap import by_id, flux, ks, obj, snapshot

SECRET_SOPS = {"mac": "ENC[AES256_GCM,data:abc,type:str]", "version": "3.9.0"}


def judged(ctx: LintContext) -> list[Any]:
    return RULE.check_snapshot(ctx)


def deployment(namespace: str = "media", **container: Any) -> dict[str, Any]:
    c = {"name": "plex", "image": "plex", **container}
    spec = {
        "selector": {"matchLabels": {"app": "plex"}},
        "template": {"metadata": {"labels": {"app": "plex"}}, "spec": {"containers": [c]}},
    }
    return obj("Deployment", "plex", namespace, "apps/v1", spec=spec)


def widget_crd(**version: Any) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    }
    versions = [
        {
            "name": "v1",
            "served": True,
            "storage": True,
            "schema": {"openAPIV3Schema": schema},
            **version,
        }
    ]
    spec = {
        "group": "example.io",
        "names": {"kind": "Widget", "plural": "widgets"},
        "scope": "Namespaced",
        "versions": versions,
    }
    return obj(
        "CustomResourceDefinition", "widgets.example.io", api="apiextensions.k8s.io/v1", spec=spec
    )


def widget(**spec: Any) -> dict[str, Any]:
    return obj("Widget", "w", "media", "example.io/v1", spec=spec)


def test_a_typo_shared_by_two_kustomizations_is_one_finding() -> None:
    snap = snapshot(
        flux("dev", "flux-system", ks("a"), ks("b")),
        flux("dev", "a", deployment(resourcess={})),
        flux("dev", "b", deployment(resourcess={})),
    )
    found = [f for f in RULE.check_snapshot(LintContext(snap)) if f.severity == "error"]
    (f,) = found
    assert (
        f.id
        == "api-reject:dev:apps/Deployment/media/plex:spec.template.spec.containers[0].resourcess"
    )
    assert f.kustomizations == ("a", "b")
    assert f.message == (
        "Kustomizations a and b would fail their dry-run: Deployment/media/plex "
        "spec.template.spec.containers[0].resourcess: unknown field"
    )


def test_sops_without_decryption_is_an_error_with_the_fix_and_with_it_the_shape_is_checked() -> (
    None
):
    secret = obj(
        "Secret", "creds", "media", stringData={"k": "ENC[AES256_GCM,data:x]"}, sops=SECRET_SOPS
    )
    bad_secret = {**secret, "metadata": {"name": "bad", "namespace": "media"}, "strinData": {}}
    snap = snapshot(
        flux(
            "dev",
            "flux-system",
            ks("plain"),
            ks("decrypting", decryption={"provider": "sops", "secretRef": {"name": "sops-age"}}),
        ),
        flux("dev", "plain", secret),
        flux("dev", "decrypting", secret, bad_secret),
    )
    found = by_id(judged(LintContext(snap)))
    assert sorted(found) == [
        "api-reject:dev:Secret/media/bad:strinData",
        "api-reject:dev:Secret/media/creds:sops",
    ]
    sops = found["api-reject:dev:Secret/media/creds:sops"]
    assert sops.severity == "error" and sops.kustomizations == ("plain",)
    assert "spec.decryption: {provider: sops, secretRef: {name: <the key Secret>}}" in sops.message
    assert found["api-reject:dev:Secret/media/bad:strinData"].kustomizations == ("decrypting",)


def test_custom_resources_against_the_crds_the_cluster_renders() -> None:
    snap = snapshot(
        flux("dev", "flux-system", ks("crds"), ks("apps", depends=["crds"])),
        flux("dev", "crds", widget_crd()),
        flux("dev", "apps", widget(size="big")),
        flux("prod", "flux-system", ks("apps")),
        flux("prod", "apps", widget(size="big")),  # prod has no CRD: not judged
    )
    ctx = LintContext(snap)
    found = by_id(RULE.check_snapshot(ctx))
    assert sorted(found) == ["api-reject:dev:example.io/Widget/media/w:spec.size"]
    assert found["api-reject:dev:example.io/Widget/media/w:spec.size"].message == (
        "Kustomization apps would fail its dry-run: Widget/media/w spec.size: wrong type: expected integer, got string"
    )
    # counted once per cluster, a note of the report, never a finding; Flux's own kinds
    # (no gotk-components.yaml here) have their own line
    assert ctx.memo[NOT_JUDGED] == (
        "api-reject did not judge Flux's own kinds (2 object(s)) in cluster dev: no Flux CRDs "
        "rendered in this cluster (gotk-components.yaml)",
        "api-reject did not judge Flux's own kinds (1 object(s)) in cluster prod: no Flux CRDs "
        "rendered in this cluster (gotk-components.yaml)",
        "api-reject did not judge 1 object(s) of 1 kind(s) in cluster prod (no schema: the "
        "cluster renders no CRD for them): example.io/Widget",
    )


def test_flux_kinds_without_flux_crds_name_the_flux_instance_version() -> None:
    """A Flux Operator install renders no Flux CRDs: its Kustomizations and sources are
    counted once per cluster, with the Flux version its FluxInstance would install."""
    instance = obj(
        "FluxInstance",
        "flux",
        "flux-system",
        "fluxcd.controlplane.io/v1",
        spec={"distribution": {"version": "2.6.x", "registry": "ghcr.io/fluxcd"}},
    )
    repo = obj("GitRepository", "apps", "flux-system", "source.toolkit.fluxcd.io/v1")
    snap = snapshot(flux("dev", "flux-system", ks("a"), ks("b"), repo, instance))
    ctx = LintContext(snap)
    assert judged(ctx) == []
    assert ctx.memo[NOT_JUDGED] == (
        "api-reject did not judge Flux's own kinds (3 object(s)) in cluster dev: no Flux CRDs "
        "rendered in this cluster (gotk-components.yaml); its FluxInstance installs Flux "
        "2.6.x, whose CRDs harness does not ship",
        "api-reject did not judge 1 object(s) of 1 kind(s) in cluster dev (no schema: the "
        "cluster renders no CRD for them): fluxcd.controlplane.io/FluxInstance",
    )


def test_preinstalled_crds_give_no_schema_their_objects_are_counted() -> None:
    """A `preinstalled:` CRD has no schema harness reads: its custom resources are counted
    as not judged (and said to be preinstalled), never skipped silently nor an error."""
    snap = snapshot(
        flux("dev", "flux-system", widget_crd()),
        flux("dev", "apps", widget(size="big"), obj("Issuer", "i", "media", "cert-manager.io/v1")),
    )
    entry = Preinstalled(reason="talos", crds=("cert-manager.io",))
    ctx = LintContext(snap, preinstalled_entries=(entry,))
    assert [f.id for f in judged(ctx)] == ["api-reject:dev:example.io/Widget/media/w:spec.size"]
    assert ctx.memo[NOT_JUDGED] == (
        "api-reject did not judge 1 object(s) of 1 kind(s) in cluster dev (no schema: the "
        "cluster renders no CRD for them): cert-manager.io/Issuer; 1 object(s) of 1 kind(s) "
        "have CRDs installed before Flux, which carry no schema harness reads: "
        "cert-manager.io/Issuer",
    )


def test_a_crd_a_helm_target_renders_judges_the_clusters_custom_resources() -> None:
    """`--helm`: a chart's CRD (its crds/ or templates) is read in full, in its cluster."""
    instance = obj(
        "FluxInstance",
        "flux",
        "flux-system",
        "fluxcd.controlplane.io/v1",
        spec={"distribution": {"version": "2.7.x"}},
    )
    helm = replace(
        flux("dev", "cilium", widget_crd(), instance),
        target=Target(
            name="dev/kube-system/cilium", kind="helm", path=Path("/repo"), cluster="dev"
        ),
    )
    snap = snapshot(flux("dev", "apps", ks("b"), widget(size="big")), helm)
    ctx = LintContext(snap)
    assert [f.id for f in judged(ctx)] == ["api-reject:dev:example.io/Widget/media/w:spec.size"]
    # the Widget is judged (not counted); a flux-instance chart's FluxInstance names the
    # Flux version in the note for Flux's own kinds
    assert ctx.memo[NOT_JUDGED] == (
        "api-reject did not judge Flux's own kinds (1 object(s)) in cluster dev: no Flux CRDs "
        "rendered in this cluster (gotk-components.yaml); its FluxInstance installs Flux "
        "2.7.x, whose CRDs harness does not ship",
    )


def test_each_cluster_is_judged_by_its_own_kube_version() -> None:
    """`helm.kube_version: {old: v1.30.0}`: the old cluster still serves what 1.36 removed."""
    flow = obj(
        "FlowSchema",
        "f",
        api="flowcontrol.apiserver.k8s.io/v1beta3",
        spec={"priorityLevelConfiguration": {"name": "x"}},
    )
    snap = snapshot(flux("old", "a", flow), flux("new", "a", flow))
    ctx = LintContext(snap, kube_version="v1.36.0", kube_versions={"old": "v1.30.0"})
    assert sorted((f.cluster, f.severity, f.message) for f in judged(ctx)) == [
        (
            "new",
            "error",
            "Kustomization a would fail its dry-run: FlowSchema/f apiVersion: "
            "flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema is not served by Kubernetes 1.36 "
            "(removed in 1.32): use flowcontrol.apiserver.k8s.io/v1",
        ),
        (
            "old",
            "warning",
            "Kustomization a applies FlowSchema/f: apiVersion: flowcontrol.apiserver.k8s.io/v1beta3 "
            "FlowSchema is deprecated: Kubernetes 1.32 removes it: use flowcontrol.apiserver.k8s.io/v1",
        ),
    ]


def test_crd_versions_not_served_undefined_and_deprecated() -> None:
    def verdict(crd: dict[str, Any], api: str = "example.io/v1") -> list[tuple[str, str]]:
        w = {**widget(size=1), "apiVersion": api}
        snap = snapshot(flux("dev", "flux-system", ks("a")), flux("dev", "a", crd, w))
        return [(f.severity, f.message) for f in judged(LintContext(snap))]

    assert verdict(widget_crd(served=False)) == [
        (
            "error",
            "Kustomization a would fail its dry-run: Widget/media/w apiVersion: example.io/v1 is not served by its CRD",
        )
    ]
    assert verdict(widget_crd(), "example.io/v2") == [
        (
            "error",
            "Kustomization a would fail its dry-run: Widget/media/w apiVersion: example.io/v2 is not a version of its CRD (defined: v1)",
        )
    ]
    assert verdict(
        widget_crd(deprecated=True, deprecationWarning="example.io/v1 Widget is deprecated; use v2")
    ) == [
        (
            "warning",
            "Kustomization a applies Widget/media/w: apiVersion: example.io/v1 Widget is deprecated; use v2",
        )
    ]


def test_removed_and_deprecated_builtin_versions() -> None:
    pdb = obj("PodDisruptionBudget", "p", "media", "policy/v1beta1", spec={"maxUnavailable": 1})
    flow = obj(
        "FlowSchema",
        "f",
        api="flowcontrol.apiserver.k8s.io/v1beta3",
        spec={"priorityLevelConfiguration": {"name": "x"}},
    )
    snap = snapshot(flux("dev", "flux-system", ks("a")), flux("dev", "a", pdb, flow))
    messages = sorted((f.severity, f.message) for f in judged(LintContext(snap)))
    assert messages == [
        (
            "error",
            "Kustomization a would fail its dry-run: FlowSchema/f apiVersion: flowcontrol.apiserver.k8s.io/v1beta3 "
            "FlowSchema is not served by Kubernetes 1.36 (removed in 1.32): use flowcontrol.apiserver.k8s.io/v1",
        ),
        (
            "error",
            "Kustomization a would fail its dry-run: PodDisruptionBudget/media/p apiVersion: policy/v1beta1 "
            "PodDisruptionBudget is not served by Kubernetes 1.36 (removed in 1.25): use policy/v1",
        ),
    ]
    old = [(f.severity, f.message) for f in judged(LintContext(snap, kube_version="v1.30.0"))]
    assert old == [
        (
            "error",
            "Kustomization a would fail its dry-run: PodDisruptionBudget/media/p apiVersion: policy/v1beta1 "
            "PodDisruptionBudget is not served by Kubernetes 1.30 (removed in 1.25): use policy/v1",
        ),
        (
            "warning",
            "Kustomization a applies FlowSchema/f: apiVersion: flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema is "
            "deprecated: Kubernetes 1.32 removes it: use flowcontrol.apiserver.k8s.io/v1",
        ),
    ]


def test_verdicts_are_kept_in_the_render_cache() -> None:
    snap = snapshot(
        flux("dev", "flux-system", ks("a")), flux("dev", "a", deployment(resourcess={}))
    )
    cache = RenderCache(None)
    first = RULE.check_snapshot(LintContext(snap, cache=cache))
    assert (cache.hits, cache.misses) == (0, 2)  # two targets, one entry each
    again = RULE.check_snapshot(LintContext(snap, cache=cache))
    assert (cache.hits, again) == (2, first)


FLUX_KS = """apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
"""
# Flux's own CRDs as a repo's gotk-components.yaml carries them; cut down to what the test
# objects use (our own, not copied from Flux's)
GOTK = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: kustomizations.kustomize.toolkit.fluxcd.io}
spec:
  group: kustomize.toolkit.fluxcd.io
  names: {kind: Kustomization, plural: kustomizations}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [interval, prune, sourceRef]
              properties:
                interval: {type: string}
                path: {type: string}
                prune: {type: boolean}
                sourceRef:
                  type: object
                  required: [kind, name]
                  properties:
                    kind: {type: string, enum: [OCIRepository, GitRepository, Bucket]}
                    name: {type: string}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: helmreleases.helm.toolkit.fluxcd.io}
spec:
  group: helm.toolkit.fluxcd.io
  names: {kind: HelmRelease, plural: helmreleases}
  scope: Namespaced
  versions:
    - name: v2
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [interval]
              properties:
                interval: {type: string, pattern: '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$'}
                chart:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
                values:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
"""
APPS = {
    "apps/kustomization.yaml": kustomization(
        "deploy.yaml", "release.yaml", "crd.yaml", "widget.yaml"
    ),
    "apps/deploy.yaml": """apiVersion: apps/v1
kind: Deployment
metadata: {name: plex, namespace: media}
spec:
  selector: {matchLabels: {app: plex}}
  template:
    metadata: {labels: {app: plex}}
    spec:
      containers:
        - name: plex
          image: plex
          resourcess: {limits: {memory: 1Gi}}
""",
    "apps/release.yaml": """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: plex, namespace: media}
spec:
  interval: 30
  chart: {spec: {chart: app-template, sourceRef: {kind: HelmRepository, name: bjw}}}
  values: {anything: [1, 2]}
""",
    "apps/crd.yaml": """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.io}
spec:
  group: example.io
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              properties:
                size: {type: integer, minimum: 1}
""",
    "apps/widget.yaml": "apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: w, namespace: media}\nspec: {size: 0}\n",
}


def test_lint_reports_exactly_the_three_rejections(
    make_repo: Callable[[dict[str, str | bytes]], Path], cli: Callable[..., Result]
) -> None:
    """The issue's "done when": a typo'd Deployment field, a wrong-typed HelmRelease spec
    field, a CR its in-repo CRD refuses: three errors naming file and Kustomization, exit 1."""
    repo = make_repo(
        {
            "clusters/dev/kustomization.yaml": kustomization("gotk-components.yaml", "apps.yaml"),
            "clusters/dev/gotk-components.yaml": GOTK,
            "clusters/dev/apps.yaml": FLUX_KS,
            **APPS,
        }
    )
    result = cli("lint", "--repo", repo, "-o", "json")
    assert result.code == 1, result.stdout + result.stderr
    findings = json.loads(result.stdout)["findings"]
    mine = sorted((f["severity"], f["message"]) for f in findings if f["rule"] == "api-reject")
    assert mine == [
        (
            "error",
            "Kustomization apps would fail its dry-run: Deployment/media/plex "
            "spec.template.spec.containers[0].resourcess: unknown field (apps/deploy.yaml)",
        ),
        (
            "error",
            "Kustomization apps would fail its dry-run: HelmRelease/media/plex spec.interval: "
            "wrong type: expected string, got integer (apps/release.yaml)",
        ),
        (
            "error",
            "Kustomization apps would fail its dry-run: Widget/media/w spec.size: below the minimum 1 "
            "(apps/widget.yaml)",
        ),
    ]
    assert [f["rule"] for f in findings if f["severity"] == "error"] == ["api-reject"] * 3
    assert (
        json.loads(result.stdout)["not_judged_schemas"] == []
    )  # Flux's kinds from gotk-components


def test_a_diff_reports_only_the_rejections_a_change_introduces() -> None:
    """As every lint rule in a diff: an object the base already had refused is not new
    (its Kustomization fails either way), one the change breaks is."""
    from harness.hazards import engine

    root = flux("dev", "flux-system", ks("a"))
    clean = snapshot(root, flux("dev", "a", deployment()))
    typo = snapshot(root, flux("dev", "a", deployment(resourcess={})))
    worse = snapshot(root, flux("dev", "a", deployment(resourcess={}, imagee="x")))
    mine = [f.id for f in engine.diff(clean, typo).findings if f.rule == RULE.id]
    assert mine == [
        "api-reject:dev:apps/Deployment/media/plex:spec.template.spec.containers[0].resourcess"
    ]
    assert [f for f in engine.diff(typo, worse).findings if f.rule == RULE.id] == []


def test_flux_kinds_note_is_in_lint_json_and_does_not_fail_on_info(
    make_repo: Callable[[dict[str, str | bytes]], Path], cli: Callable[..., Result]
) -> None:
    """A Flux Operator repo (no gotk-components.yaml): one not-judged line, not a finding."""
    repo = make_repo(
        {
            "clusters/dev/kustomization.yaml": kustomization("apps.yaml"),
            "clusters/dev/apps.yaml": FLUX_KS,
            "apps/kustomization.yaml": kustomization("cm.yaml"),
            "apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: media}\n",
        }
    )
    result = cli("lint", "--repo", repo, "-o", "json", "--fail-on", "info")
    assert result.code == 0, result.stdout + result.stderr
    payload = json.loads(result.stdout)
    assert payload["not_judged_schemas"] == [
        "api-reject did not judge Flux's own kinds (1 object(s)) in cluster dev: no Flux CRDs "
        "rendered in this cluster (gotk-components.yaml)"
    ]
    assert [f["rule"] for f in payload["findings"]] == []
    text = cli("lint", "--repo", repo, "--fail-on", "info")
    assert text.code == 0
    assert "note: api-reject did not judge Flux's own kinds (1 object(s)) in cluster dev" in (
        text.stdout
    )
