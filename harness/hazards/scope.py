"""What the support modules read of a lint context, as a protocol.

hazards/context.py builds the source index (sources.py) and the preinstalled scan
(preinstalled.py) on first use; those modules take the context through this protocol
instead of importing it, so no import runs back up to the context.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harness.core.model import Snapshot
    from harness.core.outside import ClusterDecl
    from harness.flux.ksgraph import ClusterGraph


class Scope(Protocol):
    """What the source index reads of a lint context."""

    @property
    def snapshot(self) -> Snapshot: ...
    @property
    def repo(self) -> Path | None: ...
    @property
    def goldens(self) -> Path | None: ...
    @property
    def sources(self) -> dict[str, str]: ...
    @property
    def outside_git(self) -> Mapping[str, ClusterDecl]: ...
    @property
    def graphs(self) -> dict[str, ClusterGraph]: ...
