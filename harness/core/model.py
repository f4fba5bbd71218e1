"""Plain data passed between the pipeline stages: discover -> render -> documents -> compare."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

TargetKind = Literal["path", "flux", "helm"]


@dataclass(frozen=True, order=True)
class ObjectRef:
    """`Kind/namespace/name` of a Flux object, the way error messages name it."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass(frozen=True, order=True)
class DocId:
    """Identity of a Kubernetes object; the API version is deliberately not part of it.

    `apps/v1beta1` -> `apps/v1` must read as a change of one object, not remove + add.
    """

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        parts = [self.group] if self.group else []
        parts.append(self.kind)
        if self.namespace:
            parts.append(self.namespace)
        parts.append(self.name)
        return "/".join(parts)


@dataclass(frozen=True)
class Document:
    """One rendered object: its exact (Secret-redacted) bytes and their sha256."""

    id: DocId
    api_version: str
    text: str
    sha256: str


@dataclass(frozen=True)
class HelmInfo:
    """A `helm` target's release and chart: which Flux target renders the HelmRelease, the
    release name and namespace, and the chart, its version and source (harness/flux/helm)."""

    owner: str = ""
    release: str = ""
    namespace: str = ""
    chart: str = ""
    version: str = ""
    source: str = ""
    url: str = ""
    digest: str = ""
    crds: tuple[str, ...] = ()  # ids of the chart's crds/ files (Helm never deletes them)
    upgrade_crds: str = "Skip"  # the HelmRelease's upgrade.crds policy
    unreachable: bool = False  # failed because the chart could not be fetched


@dataclass(frozen=True)
class Target:
    """Something harness renders: a kustomization directory, a Flux Kustomization, or a
    HelmRelease (`helm`)."""

    name: str
    kind: TargetKind
    path: Path
    cluster: str | None = None
    helm: HelmInfo | None = None


@dataclass(frozen=True)
class RendererInfo:
    name: str
    version: str
    argv: tuple[str, ...] = ()


@dataclass(frozen=True)
class TargetResult:
    """A target's render: documents in output order, or the error that stopped it."""

    target: Target
    documents: tuple[Document, ...] = ()
    sha256: str = ""
    error: str | None = None
    duplicates: tuple[DocId, ...] = ()
    notes: tuple[str, ...] = ()
    # repo files a build from an ExternalArtifact read, mapped back from the artifact's
    # copies (absolute paths): what coverage counts as read (never stored in goldens)
    reads: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def name(self) -> str:
        return self.target.name

    def text(self) -> str:
        """The stream as kubectl prints it: documents joined by `---` lines."""
        return "---\n".join(d.text for d in self.documents)


@dataclass(frozen=True)
class Snapshot:
    """All targets of one render of a repo (a working tree, a git ref, or the goldens).

    Immutable like every stage's data: `results` and `skipped` are read-only views of
    private copies made here, so neither the maker's dict nor a reader can change a side
    after it was made (both sides of a diff, watch's held base, a remembered render).
    """

    renderer: RendererInfo
    results: Mapping[str, TargetResult] = field(default_factory=dict)
    label: str = ""
    # flux targets not rendered on purpose (source marked external): name -> reason
    skipped: Mapping[str, str] = field(default_factory=dict)
    # one line each, about the run rather than a target (a `helm:` glob that matches nothing)
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # frozen: set once, here, through object.__setattr__ as dataclasses itself does
        object.__setattr__(self, "results", MappingProxyType(dict(self.results)))
        object.__setattr__(self, "skipped", MappingProxyType(dict(self.skipped)))

    def errors(self) -> list[TargetResult]:
        return [r for r in self.results.values() if not r.ok]
