"""A chart bump said once: a release's chart metadata churn is one line after its real
changes, in `diff` text and the PR comment; JSON keeps every field.

The chart is a fixture written here, shaped like stakater/reloader's (7 objects carrying
`helm.sh/chart`, `chart` and `app.kubernetes.io/version` labels, a pod template with the
same labels and a `checksum/values` annotation, the image tag from `appVersion`), bumped
2.2.15 -> 2.2.16 between two commits of a real git repo."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.compare.chartmeta import fold
from harness.compare.docdiff import FieldChange
from harness.compare.groups import ChangeGroup, Place
from harness.core.model import DocId
from tests import gitkit
from tests.conftest import write_tree
from tests.flux.helm.charts import dump, flux_ks, helm_release, kustomization

Cli = Callable[..., Any]
HELM = (Place("prod/kube-system/reloader", "helm", "prod"),)


def _label(name: str, before: str, after: str, *prefix: str) -> FieldChange:
    segments = (*prefix, "metadata", "labels", name)
    return FieldChange(f"metadata.labels.{name}", "changed", before, after, segments)


def _group(name: str, *fields: FieldChange, places: tuple[Place, ...] = HELM) -> ChangeGroup:
    return ChangeGroup("changed", DocId("", "ConfigMap", "kube-system", name), places, fields)


def test_alike_labels_fold_into_one_line_and_the_rest_stays() -> None:
    chart = _label("helm.sh/chart", "reloader-2.2.15", "reloader-2.2.16")
    image = FieldChange("spec.image", "changed", "r:v1.4.1", "r:v1.4.2", ("spec", "image"))
    groups = [_group("a", chart, image), _group("b", chart), _group("c", chart)]
    shown, (churn,) = fold(groups)
    assert [(str(g.id), [f.path for f in g.fields]) for g in shown] == [
        ("ConfigMap/kube-system/a", ["spec.image"])
    ]
    assert churn.line() == "chart reloader 2.2.15 -> 2.2.16: labels on 3 objects"
    assert churn.where() == "helm prod: kube-system/reloader"


def test_a_label_that_differs_between_objects_is_a_real_change() -> None:
    """`app.kubernetes.io/version` moved to two different values: values-driven, shown."""
    groups = [
        _group("a", _label("app.kubernetes.io/version", "1", "2")),
        _group("b", _label("app.kubernetes.io/version", "1", "3")),
    ]
    shown, churn = fold(groups)
    assert [len(g.fields) for g in shown] == [1, 1] and churn == ()


def test_flux_targets_and_an_empty_key_list_fold_nothing() -> None:
    chart = _label("helm.sh/chart", "x-1.0.0", "x-1.0.1")
    flux = (Place("prod/flux-system/apps", "flux", "prod"),)
    shown, churn = fold([_group("a", chart, places=flux)])
    assert len(shown) == 1 and churn == ()
    shown, churn = fold([_group("a", chart)], ())
    assert len(shown) == 1 and churn == ()
    shown, (line,) = fold([_group("a", _label("team", "a", "b"))], ("team",))
    assert shown == () and line.line() == "chart metadata: labels on 1 object"


_HELPERS = """{{- define "reloader.labels" -}}
app: {{ .Release.Name }}-reloader
chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
app.kubernetes.io/name: reloader
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
"""
_META = """metadata:
  name: {{ .Release.Name }}-reloader
  labels:
    {{- include "reloader.labels" . | nindent 4 }}
"""
_TEMPLATES = {
    "serviceaccount.yaml": "apiVersion: v1\nkind: ServiceAccount\n" + _META,
    "clusterrole.yaml": (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n" + _META + "rules:\n"
        '  - apiGroups: [""]\n    resources: [configmaps, secrets]\n'
        "    verbs: [list, get, watch]\n"
    ),
    "clusterrolebinding.yaml": (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
        + _META
        + "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n"
        "  name: {{ .Release.Name }}-reloader\nsubjects:\n  - kind: ServiceAccount\n"
        "    name: {{ .Release.Name }}-reloader\n    namespace: {{ .Release.Namespace }}\n"
    ),
    "role.yaml": (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n" + _META + "rules:\n"
        '  - apiGroups: ["coordination.k8s.io"]\n    resources: [leases]\n'
        "    verbs: [get, create, update]\n"
    ),
    "rolebinding.yaml": (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n"
        + _META
        + "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n"
        "  name: {{ .Release.Name }}-reloader\nsubjects:\n  - kind: ServiceAccount\n"
        "    name: {{ .Release.Name }}-reloader\n"
    ),
    "service.yaml": (
        "apiVersion: v1\nkind: Service\n" + _META + "spec:\n  ports:\n    - port: 9090\n"
        "      name: http\n  selector:\n    app: {{ .Release.Name }}-reloader\n"
    ),
    "deployment.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\n" + _META + "spec:\n  selector:\n"
        "    matchLabels:\n      app: {{ .Release.Name }}-reloader\n  template:\n"
        "    metadata:\n      labels:\n"
        '        {{- include "reloader.labels" . | nindent 8 }}\n'
        "      annotations:\n"
        "        checksum/values: {{ .Values | toJson | sha256sum }}\n"
        "    spec:\n      serviceAccountName: {{ .Release.Name }}-reloader\n"
        "      containers:\n        - name: reloader\n"
        '          image: "ghcr.io/stakater/reloader:v{{ .Chart.AppVersion }}"\n'
        "          args: [--log-format={{ .Values.logFormat }}]\n"
    ),
}


def _chart(version: str, app_version: str, values: str) -> dict[str, str]:
    files = {
        "charts/reloader/Chart.yaml": (
            f"apiVersion: v2\nname: reloader\nversion: {version}\nappVersion: {app_version}\n"
        ),
        "charts/reloader/values.yaml": values,
        "charts/reloader/templates/_helpers.tpl": _HELPERS,
    }
    files.update({f"charts/reloader/templates/{k}": v for k, v in _TEMPLATES.items()})
    return files


def _gitops() -> dict[str, str]:
    release = helm_release(
        "reloader",
        "kube-system",
        chart={
            "chart": "./charts/reloader",
            "sourceRef": {
                "kind": "GitRepository",
                "name": "flux-system",
                "namespace": "flux-system",
            },
        },
    )
    return {
        "harness.yaml": "helm: true\n",
        "clusters/prod/kustomization.yaml": kustomization("apps.yaml"),
        "clusters/prod/apps.yaml": dump(flux_ks("apps", "./apps")),
        "apps/kustomization.yaml": kustomization("release.yaml"),
        "apps/release.yaml": dump(release),
    }


def test_a_real_chart_bump_leads_with_the_image_and_says_the_labels_once(
    tmp_path: Path, cli: Cli
) -> None:
    repo = gitkit.init(tmp_path / "gitops")
    write_tree(repo, {**_gitops(), **_chart("2.2.15", "1.4.1", "logFormat: text\n")})
    gitkit.commit_all(repo, "reloader 2.2.15")
    write_tree(repo, _chart("2.2.16", "1.4.2", "logFormat: text\nreloadOnCreate: false\n"))

    text = cli("diff", "--repo", repo, "--base", "HEAD", "-q")
    assert text.code == 0, text.stderr
    out = text.stdout
    image = (
        "spec.template.spec.containers[name=reloader].image: "
        "ghcr.io/stakater/reloader:v1.4.1 -> ghcr.io/stakater/reloader:v1.4.2"
    )
    bump = "chart reloader 2.2.15 -> 2.2.16: labels on 7 objects, checksum annotations on 1 object"
    assert image in out and bump in out
    assert out.index(image) < out.index(bump)
    assert "helm.sh/chart" not in out and "checksum/values" not in out
    assert "    in: helm prod: kube-system/reloader" in out.split(bump)[1].splitlines()[1]

    comment = cli("comment", "--repo", repo, "--base", "HEAD", "-q")
    assert comment.code == 0, comment.stderr
    head = comment.stdout.split("**Details**")[0]
    assert head.index("ghcr.io/stakater/reloader:v1.4.2") < head.index(
        f"- {bump} in: helm prod: `kube-system/reloader`"
    )
    assert "helm.sh/chart" not in head

    raw = cli("diff", "--repo", repo, "--base", "HEAD", "-q", "-o", "json")
    target = next(
        t for t in json.loads(raw.stdout)["targets"] if t["name"] == "prod/kube-system/reloader"
    )
    paths = {f["path"] for c in target["changed"] for f in c["fields"]}
    assert "metadata.labels.helm.sh/chart" in paths
    assert "spec.template.metadata.annotations.checksum/values" in paths
    assert len(target["changed"]) == 7

    write_tree(repo, {"harness.yaml": "helm:\n  chart_metadata: []\n"})
    every = cli("diff", "--repo", repo, "--base", "HEAD", "-q").stdout
    assert "chart reloader" not in every and every.count("helm.sh/chart") == 8
