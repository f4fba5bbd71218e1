"""What a rule sees: one snapshot (lint) or two (diff), plus the repo for source files."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.core.config import DEFAULT_KUBE_VERSION
from harness.core.model import Document, Snapshot
from harness.flux.ksgraph import ClusterGraph, Key, graphs
from harness.hazards.finding import Finding

if TYPE_CHECKING:
    from harness.cache.store import RenderCache
    from harness.compare.snapshots import Comparison
    from harness.core.config import Preinstalled
    from harness.core.outside import ClusterDecl
    from harness.hazards.facts import Facts
    from harness.hazards.preinstalled import Inventory
    from harness.hazards.sources import SourceIndex


@dataclass(frozen=True)
class LintContext:
    """One render. `repo` (when the render is of the working tree) lets rules read source
    files that no target renders verbatim, e.g. the pre-substitution text of a path without
    a kustomization file. `sources` and `outside_git` are harness.yaml's: rules resolve a
    Kustomization's source and its declared substituteFrom objects the way the renderer
    does (sources.py, core/outside.py)."""

    snapshot: Snapshot
    repo: Path | None = None
    goldens: Path | None = None
    sources: dict[str, str] = field(default_factory=dict)
    outside_git: Mapping[str, ClusterDecl] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    preinstalled_entries: tuple[Preinstalled, ...] = ()
    config_file: str = "harness.yaml"
    inventory: Inventory | None = None
    strict: bool = True  # StrictPostBuildSubstitutions: an unset variable fails the build
    # the clusters' Kubernetes version (`helm.kube_version`): the schemas api-reject uses;
    # `kube_versions` per cluster, over it
    kube_version: str = DEFAULT_KUBE_VERSION
    kube_versions: Mapping[str, str] = field(default_factory=dict)
    # where api-reject keeps its verdicts across runs (None: this run's memo only)
    cache: RenderCache | None = field(default=None, compare=False, repr=False)
    # the graphs of this very snapshot when another context already derived them
    known_graphs: Mapping[str, ClusterGraph] | None = field(default=None, compare=False, repr=False)
    # per-target facts kept by content (facts.py): what a side shares with another is
    # not derived again (None: computed here)
    facts: Facts | None = field(default=None, compare=False, repr=False)
    # where the preinstalled scan keeps what the repo's files gave (preinstalled._Record)
    # when `cache` is not given (a diff's head, whose rules keep their facts elsewhere)
    scan_cache: RenderCache | None = field(default=None, compare=False, repr=False)

    def kube_version_of(self, cluster: str) -> str:
        return self.kube_versions.get(cluster, self.kube_version)

    @cached_property
    def graphs(self) -> dict[str, ClusterGraph]:
        if self.known_graphs is not None:
            return dict(self.known_graphs)
        return graphs(self.snapshot)

    @cached_property
    def source_index(self) -> SourceIndex:
        """Pre-substitution documents (sources.SourceIndex), built on first use."""
        from harness.hazards.sources import SourceIndex

        return SourceIndex(self)

    @cached_property
    def preinstalled(self) -> Inventory:
        """What exists before Flux (preinstalled.py): given, or scanned on first use."""
        if self.inventory is not None:
            return self.inventory
        from harness.hazards.preinstalled import scan

        return scan(
            self,
            self.preinstalled_entries,
            self.config_file,
            self.cache if self.cache is not None else self.scan_cache,
        )


@dataclass(frozen=True)
class DiffContext:
    """Base and head renders; `head_lint` shares the head's graphs and source index."""

    base: Snapshot
    head: Snapshot
    head_lint: LintContext
    comparison: Comparison | None = None

    @cached_property
    def base_graphs(self) -> dict[str, ClusterGraph]:
        return graphs(self.base)

    @property
    def head_graphs(self) -> dict[str, ClusterGraph]:
        return self.head_lint.graphs

    def departures(self) -> Iterator[Departure]:
        """Every base document of a Kustomization that no longer renders it in head; its new
        owners are those applying it to the same applied-to cluster (ksgraph)."""
        return iter(self._departures)

    @cached_property
    def _departures(self) -> list[Departure]:
        """`departures`, found once for the rules that ask (prune-delete, ownership-race)."""
        out: list[Departure] = []
        for cluster, base in self.base_graphs.items():
            head = self.head_graphs.get(cluster)
            if head is None:
                continue
            for key, result in base.ok_results():
                where = base.applied_to(key)
                for doc in result.documents:
                    found = head.find(doc.id, where)
                    if any(k == key for k, _d in found):
                        continue  # still rendered there by its Kustomization: most documents
                    owners = tuple(sorted({k for k, _d in found}))
                    out.append(Departure(cluster, base, head, key, doc, owners, where))
        return out


@dataclass(frozen=True)
class Departure:
    """A document leaving Kustomization `owner`; `new_owners` empty means it is gone."""

    cluster: str
    base: ClusterGraph
    head: ClusterGraph
    owner: Key
    doc: Document
    new_owners: tuple[Key, ...]
    applied_to: str = ""  # the applied-to cluster it left (the cluster itself, or a remote)


class Rule(Protocol):
    """A hazard rule. Lint rules look at one render, diff rules at a change; a rule that
    does not apply to one of the two returns no findings there."""

    id: str
    summary: str
    # Optionally `modes: tuple[str, ...]`, "lint" and/or "diff": where the rule can report
    # anything (lint's per-rule summary lists the lint ones); absent means both.
    # Optionally `unjudged(ctx: DiffContext) -> set[str]`: ids of lint findings that a
    # target failed in head makes unknown; a diff never reports them as introduced.
    # Optionally `view(ctx: LintContext, result: TargetResult) -> object`: what the lint
    # pass reads of one target beyond what every rule reads (engine.same_views); equal
    # views of every target a change touched mean equal lint findings on both sides.

    def check_snapshot(self, ctx: LintContext) -> list[Finding]: ...

    def check_diff(self, ctx: DiffContext) -> list[Finding]: ...
