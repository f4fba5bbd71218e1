"""What a rule sees: one snapshot (lint) or two (diff), plus the repo for source files."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.compare import Comparison
from harness.hazards.finding import Finding
from harness.hazards.model import ClusterGraph, graphs
from harness.model import Snapshot

if TYPE_CHECKING:
    from harness.hazards.sources import SourceIndex


@dataclass(frozen=True)
class LintContext:
    """One render. `repo` (when the render is of the working tree) lets rules read source
    files that no target renders verbatim, e.g. the pre-substitution text of a path without
    a kustomization file."""

    snapshot: Snapshot
    repo: Path | None = None
    goldens: Path | None = None
    sources: dict[str, str] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def graphs(self) -> dict[str, ClusterGraph]:
        return graphs(self.snapshot)

    @cached_property
    def source_index(self) -> SourceIndex:
        """Pre-substitution documents (sources.SourceIndex), built on first use."""
        from harness.hazards.sources import SourceIndex

        return SourceIndex(self)


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


class Rule(Protocol):
    """A hazard rule. Lint rules look at one render, diff rules at a change; a rule that
    does not apply to one of the two returns no findings there."""

    id: str
    summary: str

    def check_snapshot(self, ctx: LintContext) -> list[Finding]: ...

    def check_diff(self, ctx: DiffContext) -> list[Finding]: ...
