"""Output formats behind one protocol, picked by name from one registry.

A verb computes its result (`CheckResult`, `DiffResult`, `LintResult`: plain data, below),
then asks `emit(verb, output, result)`. Each format is a module here named as the `--output`
value; it exposes one function per verb it supports, named as the verb, taking that verb's
result. A format module is imported only when chosen, so a plain `check` loads no JSON,
JUnit or HTML code. `--html FILE` beside another output is `html.page(verb, result, path, ...)`;
`$GITHUB_STEP_SUMMARY` is `github.step_summary(verb, result)`.

To add a format: a module here with its verb functions, and its name in `FORMATS`.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.config import DEFAULT_CHART_METADATA

if TYPE_CHECKING:
    from harness.compare.analyze import Analysis, Origin
    from harness.compare.coverage import BlindSpots
    from harness.compare.gate import Expectation, Verdict
    from harness.compare.snapshots import Comparison
    from harness.core.config import Config
    from harness.core.model import Snapshot
    from harness.hazards.engine import HazardReport

FORMATS: dict[str, tuple[str, ...]] = {
    "check": ("text", "json", "junit", "github", "html"),
    "diff": ("text", "json", "junit", "github", "html"),
    "lint": ("text", "json", "html"),
}


@dataclass(frozen=True)
class CheckResult:
    """`check`: the goldens (base) against the working tree (head)."""

    cfg: Config
    base: Snapshot
    head: Snapshot
    comparison: Comparison
    hazards: HazardReport | None
    code: int
    elapsed: float
    extra: dict[str, Any] = field(default_factory=dict)  # JSON keys of a shard (its block)
    hidden: int = 0  # Flux Kustomizations failed targets hide (coverage.under_failed)
    verbose: bool = False  # --verbose: list what summary lines count


@dataclass(frozen=True)
class DiffResult:
    """`diff`: the analysis, its verdict and what the user expected of it."""

    analysis: Analysis
    verdict: Verdict
    base: Origin
    head: Origin
    code: int
    elapsed: float
    hazards: HazardReport | None
    expect: Expectation | None = None
    fail_on_diff: bool = False
    fail_on_preexisting_error: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    blind: BlindSpots | None = None  # skipped Kustomizations, changed files nothing reads
    verbose: bool = False
    # labels and annotations of a chart bump, said once per release (compare/chartmeta.py)
    chart_metadata: tuple[str, ...] = DEFAULT_CHART_METADATA


@dataclass(frozen=True)
class LintResult:
    """`lint`: one render and its hazard findings."""

    snapshot: Snapshot
    report: HazardReport
    fail_on: str
    code: int
    verbose: bool = False


Result = CheckResult | DiffResult | LintResult


def _module(name: str) -> Any:
    return importlib.import_module(f"{__name__}.{name}")


def emit(verb: str, output: str, result: Result) -> None:
    """Print `result` in `output`; the name must be one of `FORMATS[verb]` (the CLI's choices)."""
    if output not in FORMATS[verb]:
        raise ValueError(f"{verb}: no output format {output!r}")
    getattr(_module(output), verb)(result)


def report(verb: str, output: str, result: Result, html: Path | None) -> None:
    """Everything a verb prints and writes: the output (the HTML page is built once, whether
    printed, written to `--html FILE` or both), then the GitHub step summary."""
    if output == "html":
        _module("html").page(verb, result, path=html, to_stdout=True)
    else:
        if html is not None:
            _module("html").page(verb, result, path=html, to_stdout=False)
        emit(verb, output, result)
    if verb != "lint" and os.environ.get("GITHUB_STEP_SUMMARY"):
        _module("github").step_summary(verb, result)
