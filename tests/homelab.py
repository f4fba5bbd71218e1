"""Scenario edits of examples/homelab shared by the diff, comment and hazard tests.

Every edit asserts it applied, so a reshaped example fails loudly instead of silently testing
nothing.
"""

from __future__ import annotations

from pathlib import Path

CILIUM_KS = """\
# Cilium gets its own Kustomization: it is the one component that should gate everything.
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cilium
  namespace: flux-system
spec:
  interval: 1h
  timeout: 10m
  path: ./platform/cilium
  prune: true
  wait: true
  dependsOn:
    - name: flux-system
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: cluster-vars
"""


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path}: example changed shape, {old!r} not found"
    path.write_text(text.replace(old, new, 1))


def split_cilium(repo: Path) -> None:
    """The seeds' Cilium split, unprotected: its own Kustomization, dropped from platform."""
    (repo / "clusters/base/cilium.yaml").write_text(CILIUM_KS)
    edit(
        repo / "clusters/base/kustomization.yaml",
        "  - platform.yaml\n",
        "  - cilium.yaml\n  - platform.yaml\n",
    )
    edit(repo / "platform/kustomization.yaml", "  - cilium\n", "")


def platform_depends_on_cilium(repo: Path) -> None:
    edit(
        repo / "clusters/base/platform.yaml",
        "    - name: flux-system\n",
        "    - name: flux-system\n    - name: cilium\n",
    )


def platform_prune_false(repo: Path) -> None:
    edit(repo / "clusters/base/platform.yaml", "  prune: true\n", "  prune: false\n")


def cilium_transition(repo: Path) -> None:
    """The seeds' merge 1 of 2: the split with both protections (prune: false, dependsOn)."""
    split_cilium(repo)
    platform_prune_false(repo)
    platform_depends_on_cilium(repo)
