"""The Python API: `render`, `diff` and `lint` over a repo, returning plain frozen
dataclasses (`model.py`) that are semver-stable (docs/python-api.md); `pytest_plugin.py` is
the pytest plugin over them. Above report, below the command line: the CLI's verbs as calls.

Names import lazily (PEP 562 `__getattr__`), so the pytest plugin, which pytest loads in
every session of an environment harness is installed in, costs nothing until it is used.

Imports: core, cache, render, flux, pipeline, compare, hazards, graph, report.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.api.calls import diff, lint, render
    from harness.api.model import (
        Change,
        Diff,
        Document,
        FieldChange,
        Finding,
        HarnessError,
        Image,
        ImageChange,
        Lint,
        Reference,
        Snapshot,
        Target,
    )

__all__ = [
    "Change",
    "Diff",
    "Document",
    "FieldChange",
    "Finding",
    "HarnessError",
    "Image",
    "ImageChange",
    "Lint",
    "Reference",
    "Snapshot",
    "Target",
    "diff",
    "lint",
    "render",
]
_CALLS = frozenset({"render", "diff", "lint"})  # from calls.py; the rest from model.py


def __getattr__(name: str) -> Any:
    """`harness.api.render` and the model's classes, imported when first asked for."""
    if name in _CALLS:
        return getattr(importlib.import_module("harness.api.calls"), name)
    if name in __all__:
        return getattr(importlib.import_module("harness.api.model"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
