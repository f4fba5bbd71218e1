"""The Python API's data: plain frozen dataclasses of builtins, semver-stable.

Nothing here is an internal type of harness: these classes are what `harness.api` promises
(docs/python-api.md), built from the pipeline's own data by `convert.py`, so the pipeline can
change its shapes without breaking a user's policy tests. Fields are only added in a minor
release; renaming or removing one, or changing what it means, is a major release.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

TargetKind = Literal["path", "flux", "helm"]
Verdict = Literal["no-change", "pure-move", "changed"]
Severity = Literal["error", "warning", "info"]


class HarnessError(Exception):
    """The repo or the call could not be used at all (no such directory, a bad
    `harness.yaml`, an unknown git ref, no kubectl): one line, naming the place. A target
    that fails to render is no exception: its `Target.error` says why."""


@dataclass(frozen=True)
class Document:
    """One rendered object: its identity, its text as rendered (Secret values redacted) and
    that text parsed. `object` is this document's own copy: changing it changes nothing else."""

    id: str  # `[group/]Kind[/namespace]/name`, e.g. `apps/Deployment/media/sonarr`
    api_version: str
    group: str  # "" for the core group
    kind: str
    namespace: str  # "" for a cluster-scoped object, or one a path leaves to Flux
    name: str
    sha256: str
    text: str
    object: Mapping[str, Any] = field(compare=False, repr=False)
    target: str = ""  # the target that rendered it
    cluster: str | None = None  # that target's cluster (None for a path target)


@dataclass(frozen=True)
class Target:
    """Something harness renders: a kustomization directory (`path`), a Flux Kustomization
    (`flux`) or a HelmRelease (`helm`, with `helm=True`); its documents, or its error."""

    name: str
    kind: TargetKind
    cluster: str | None
    path: Path
    documents: tuple[Document, ...] = field(default=(), repr=False)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Reference:
    """An image reference as written, and its parts (`identity`: with Docker's defaults
    `docker.io` and `library/`, what two references compare by)."""

    text: str
    registry: str | None
    repository: str
    identity: str
    tag: str | None
    digest: str | None


@dataclass(frozen=True)
class Image:
    """One container's image in one workload of one cluster (None: only path targets render
    it). `field`: containers, initContainers, ephemeralContainers, values (a HelmRelease's,
    `container` then its values path) or ociRepository."""

    cluster: str | None
    workload: str  # the workload's document id
    kind: str
    container: str
    field: str
    ref: Reference
    targets: tuple[str, ...]


@dataclass(frozen=True)
class Snapshot:
    """One render of a repo: every target, what was skipped on purpose (name -> reason) and
    the run's warnings. `images` are those `harness images` lists."""

    repo: Path
    renderer: str  # `kubectl v1.37.1 (kustomize v5.8.1)`
    targets: tuple[Target, ...] = field(repr=False)
    images: tuple[Image, ...] = field(default=(), repr=False)
    skipped: Mapping[str, str] = field(default_factory=dict, repr=False)
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # frozen: a read-only copy, set once here as dataclasses itself does
        object.__setattr__(self, "skipped", MappingProxyType(dict(self.skipped)))

    @property
    def errors(self) -> tuple[Target, ...]:
        """The targets that failed to render."""
        return tuple(t for t in self.targets if not t.ok)

    @property
    def clusters(self) -> tuple[str, ...]:
        """Every cluster a target belongs to, sorted."""
        return tuple(sorted({t.cluster for t in self.targets if t.cluster}))

    def target(self, name: str) -> Target:
        """The target named `name` (KeyError when there is none)."""
        for t in self.targets:
            if t.name == name:
                return t
        raise KeyError(name)

    def documents(
        self,
        *,
        kind: str | None = None,
        cluster: str | None = None,
        target: str | None = None,
        target_kind: TargetKind | None = None,
    ) -> Iterator[Document]:
        """Every document of every rendered target, in target order, narrowed by the
        document's `kind`, the target's `cluster` (what that cluster receives: its Flux and
        helm targets), the target's name or its kind. A document a path target and the
        Flux Kustomization deploying it both render comes once per target."""
        for t in self.targets:
            if cluster is not None and t.cluster != cluster:
                continue
            if (target is not None and t.name != target) or (
                target_kind is not None and t.kind != target_kind
            ):
                continue
            for doc in t.documents:
                if kind is None or doc.kind == kind:
                    yield doc


@dataclass(frozen=True)
class FieldChange:
    """One changed field, dyff-style path (`spec.template.spec.containers[name=app].image`);
    Secret values masked as `***`."""

    path: str
    op: str  # changed, added, removed or reordered
    before: Any = None
    after: Any = None


@dataclass(frozen=True)
class Change:
    """One object's change said once, with every target it happens in. `real`: the verdict
    counts it (not a reformat, an ignored field or an unchanged move)."""

    op: str  # changed, added or removed
    id: str
    targets: tuple[str, ...]
    clusters: tuple[str, ...]
    fields: tuple[FieldChange, ...] = ()
    real: bool = True
    moved: bool = False
    note: str = ""


@dataclass(frozen=True)
class ImageChange:
    """One image change, with every (cluster, workload, container) it happens in;
    `before`/`after` None for an image new or gone."""

    op: str  # changed, added or removed
    repository: str
    before: Reference | None
    after: Reference | None
    workloads: tuple[tuple[str | None, str, str], ...]  # (cluster, workload id, container)


@dataclass(frozen=True)
class Finding:
    """One hazard finding (`harness lint`'s rules): its stable `id` (what a suppression
    names), rule, severity, where and a one-sentence message with the fix."""

    id: str
    rule: str
    severity: Severity
    cluster: str | None
    kustomizations: tuple[str, ...]
    documents: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class Diff:
    """Two sides and what changed between them, as `harness diff` judges it."""

    verdict: Verdict
    summary: str  # the text output's first line
    base: Snapshot
    head: Snapshot
    changes: tuple[Change, ...]
    images: tuple[ImageChange, ...]
    errors: tuple[tuple[str, str, str], ...]  # (target, side "base"/"head", message)
    findings: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class Lint:
    """One render and its hazard findings (suppressed ones left out, counted)."""

    snapshot: Snapshot
    findings: tuple[Finding, ...]
    suppressed: int = 0

    def at_least(self, severity: Severity) -> tuple[Finding, ...]:
        """The findings at `severity` or worse."""
        rank = {"error": 0, "warning": 1, "info": 2}
        return tuple(f for f in self.findings if rank[f.severity] <= rank[severity])
