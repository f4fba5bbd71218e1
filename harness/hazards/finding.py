"""The one result type every hazard rule produces, and severity ordering."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


def rank(severity: str) -> int:
    """0 for error (most severe) .. 2 for info; unknown strings sort last."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def at_least(severity: str, threshold: str) -> bool:
    """Whether `severity` is `threshold` or worse (error >= warning >= info)."""
    return rank(severity) <= rank(threshold)


@dataclass(frozen=True)
class Finding:
    """One hazard: stable `id` (what suppressions name), one-sentence `message` with the fix.

    `cluster` is None for findings about source directories rather than one cluster;
    `kustomizations` are Flux Kustomization names (`ns/name` outside flux-system);
    `documents` are document ids (`[group/]Kind[/namespace]/name`). `cause` is what several
    findings of one rule can share, said without the Kustomization they are about ("add
    dependsOn storage/kopiur"): reports list the findings of one cause as one entry.
    """

    id: str
    rule: str
    severity: Severity
    cluster: str | None
    kustomizations: tuple[str, ...]
    documents: tuple[str, ...]
    message: str
    cause: str = ""

    def sort_key(self) -> tuple[int, str, str, str]:
        return (rank(self.severity), self.rule, self.cluster or "", self.id)


def and_list(items: list[str] | tuple[str, ...], limit: int = 0) -> str:
    """`a`, `a and b`, `a, b and c`; with `limit`, `a, b and 3 more`."""
    items = list(items)
    if limit and len(items) > limit:
        return ", ".join(items[:limit]) + f" and {len(items) - limit} more"
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
