"""A synthetic tree shaped like public homelab repos, and the saves people make in one: the
random edit sequences of the dependency index's and the findings memo's property tests.

Two clusters share app directories, a component and `substituteFrom` of a cluster
ConfigMap each; `targetNamespace`, a README no build reads. Every write sets a fresh mtime
(a save a second after the last one), so a stat-based index sees each save as an editor's.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

CLUSTERS = ("dev", "prod")
APPS = ("web", "db", "cache", "queue")
_CLOCK = [1_700_000_000.0]


def write(root: Path, rel: str, text: str) -> None:
    """A save: new content with a new mtime a second after the last one."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    _CLOCK[0] += 1.0
    os.utime(path, (_CLOCK[0], _CLOCK[0]))


def _flux_ks(name: str, path: str, namespace: str, *, subst: bool, component: bool) -> str:
    text = (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
        f"  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m\n"
        f"  path: {path}\n  prune: true\n  targetNamespace: {namespace}\n"
        "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
    )
    if component:
        text += "  components:\n    - ../../components/labels\n"
    if subst:
        text += "  postBuild:\n    substituteFrom:\n"
        text += "      - kind: ConfigMap\n        name: cluster-vars\n"
    return text


def tree() -> dict[str, str]:
    files: dict[str, str] = {"README.md": "# homelab\n"}
    files["components/labels/kustomization.yaml"] = (
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
        "labels:\n  - pairs:\n      team: platform\n"
    )
    for app in APPS:
        base = f"apps/{app}"
        files[f"{base}/kustomization.yaml"] = (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources:\n  - deployment.yaml\n  - config.yaml\n"
        )
        files[f"{base}/deployment.yaml"] = (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
            f"  name: {app}\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n"
            f"        - name: {app}\n          image: example/{app}:1.0.0\n"
        )
        files[f"{base}/config.yaml"] = (
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {app}-config\n"
            "data:\n  cluster: ${CLUSTER:=none}\n  level: info\n"
        )
    for cluster in CLUSTERS:
        entry = f"clusters/{cluster}"
        names = ["sync.yaml", "vars.yaml", *(f"{a}.yaml" for a in APPS)]
        files[f"{entry}/kustomization.yaml"] = (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
            + "".join(f"  - {n}\n" for n in names)
        )
        files[f"{entry}/sync.yaml"] = (
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
            "  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n"
            f"  path: ./{entry}\n  prune: true\n"
            "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
        )
        files[f"{entry}/vars.yaml"] = (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n"
            f"  namespace: flux-system\ndata:\n  CLUSTER: {cluster}\n"
        )
        for i, app in enumerate(APPS):
            files[f"{entry}/{app}.yaml"] = _flux_ks(
                app, f"./apps/{app}", app, subst=i % 2 == 0, component=i % 3 == 0
            )
    return files


def _replace(root: Path, rel: str, old: str, new: str) -> bool:
    path = root / rel
    if not path.is_file():
        return False
    text = path.read_text()
    if old not in text:
        return False
    write(root, rel, text.replace(old, new, 1))
    return True


def edit(root: Path, op: str, seed: int) -> str:
    """One save of the kind people make; returns what it did (for the failure message)."""
    app = APPS[seed % len(APPS)]
    cluster = CLUSTERS[seed % len(CLUSTERS)]
    if op == "image":
        rel = f"apps/{app}/deployment.yaml"
        text = re.sub(r":\d+\.", f":{seed % 9 + 2}.", (root / rel).read_text(), count=1)
        write(root, rel, text)
    elif op == "vars":  # a substituteFrom source every substituting app reads
        rel = f"clusters/{cluster}/vars.yaml"
        _replace(root, rel, f"CLUSTER: {cluster}", f"CLUSTER: {cluster}{seed % 5}")
    elif op == "spec":  # a changed Kustomization object
        rel = f"clusters/{cluster}/{app}.yaml"
        _replace(root, rel, f"targetNamespace: {app}", f"targetNamespace: {app}-{seed % 3}")
    elif op == "component":
        rel = "components/labels/kustomization.yaml"
        _replace(root, rel, "team: platform", f"team: t{seed % 4}")
    elif op == "drop":  # a Kustomization removed from its cluster
        rel = f"clusters/{cluster}/kustomization.yaml"
        _replace(root, rel, f"  - {app}.yaml\n", "")
    elif op == "add":  # a new app and its Kustomization
        name = f"extra{seed % 3}"
        rel = f"apps/{name}/kustomization.yaml"
        write(root, f"apps/{name}/config.yaml", tree()[f"apps/{app}/config.yaml"])
        write(
            root, rel, tree()[f"apps/{app}/kustomization.yaml"].replace("  - deployment.yaml\n", "")
        )
        write(
            root,
            f"clusters/{cluster}/{name}.yaml",
            _flux_ks(name, f"./apps/{name}", name, subst=True, component=False),
        )
        _replace(
            root,
            f"clusters/{cluster}/kustomization.yaml",
            "  - sync.yaml\n",
            f"  - sync.yaml\n  - {name}.yaml\n",
        )
    elif op == "break":  # a build that fails: it names a file that does not exist
        rel = f"apps/{app}/kustomization.yaml"
        _replace(root, rel, "  - config.yaml\n", "  - config.yaml\n  - missing.yaml\n")
    elif op == "mend":
        rel = f"apps/{app}/kustomization.yaml"
        _replace(root, rel, "  - missing.yaml\n", "")
    elif op == "restore":  # a dropped Kustomization listed again (no file is added)
        rel = f"clusters/{cluster}/kustomization.yaml"
        if f"  - {app}.yaml\n" not in (root / rel).read_text():
            _replace(root, rel, "  - sync.yaml\n", f"  - sync.yaml\n  - {app}.yaml\n")
    elif op == "inline":  # a new Kustomization in an existing file
        rel = f"clusters/{cluster}/vars.yaml"
        _append_once(root, rel, _again(app))
    elif op == "unline":
        rel = f"clusters/{cluster}/vars.yaml"
        _replace(root, rel, _again(app), "")
    elif op == "readme":
        rel = "README.md"
        write(root, rel, f"# homelab {seed}\n")
    else:  # "none": a save that changes nothing
        rel = "-"
    return f"{op} {rel}"


def _again(app: str) -> str:
    """A second Kustomization of `app`, as a document appended to a cluster's file."""
    ks = _flux_ks(f"{app}-again", f"./apps/{app}", f"{app}-again", subst=True, component=False)
    return "---\n" + ks


def _append_once(root: Path, rel: str, text: str) -> None:
    path = root / rel
    if path.is_file() and text not in path.read_text():
        write(root, rel, path.read_text() + text)


OPS = ("image", "vars", "spec", "component", "drop", "add", "break", "mend", "readme", "none")
# saves that change the set of Kustomizations without adding a file (the dependency index
# answers them incrementally, through the fixed point)
FLUX_OPS = ("restore", "inline", "unline")
