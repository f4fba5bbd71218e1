"""Placeholder until Flux targets land: no clusters, no flux targets."""

from __future__ import annotations

from collections.abc import Callable

from harness.config import Config
from harness.model import TargetResult
from harness.render import Renderer


def render_flux(
    config: Config,
    renderer: Renderer,
    *,
    jobs: int,
    strict: bool,
    on_plan: Callable[[int], None] | None = None,
    on_done: Callable[[TargetResult], None] | None = None,
) -> dict[str, TargetResult]:
    return {}
