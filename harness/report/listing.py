"""`harness get ks|hr`: the Kustomizations or HelmReleases of every cluster as a table (plain
space-aligned columns, whole names, for people and scripts alike) or `harness.get/v1` JSON
(docs/json-schemas.md), with one counts line and the failures' error lines on stderr."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.core.model import RendererInfo
from harness.flux.inventory import STATUSES, HrRow, KsRow
from harness.report import json_out
from harness.report.console import escape, escape_block, stderr, stdout
from harness.report.errors import error_line
from harness.report.text import plain_table
from harness.report.visible import visible

SCHEMA = "harness.get/v1"
KS_COLUMNS = ("cluster", "name", "path", "source", "depends on", "suspend", "documents", "status")
HR_COLUMNS = (
    "cluster",
    "name",
    "chart",
    "source",
    "depends on",
    "suspend",
    "documents",
    "status",
)
DOCUMENTS_COLUMN = 6  # right-aligned in both tables


def _name(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def _cells(values: Sequence[str]) -> list[str]:
    return [value or "-" for value in values]


def _count(documents: int | None) -> str:
    return "-" if documents is None else str(documents)


def ks_cells(row: KsRow) -> list[str]:
    return _cells(
        (
            row.cluster,
            _name(row.namespace, row.name),
            row.path,
            row.source,
            ",".join(_short(d) for d in row.depends_on),
            "yes" if row.suspend else "",
            _count(row.documents),
            row.status,
        )
    )


def _short(key: str) -> str:
    """A Kustomization as findings name it: `name` in flux-system, else `namespace/name`."""
    return key.removeprefix("flux-system/")


def hr_cells(row: HrRow) -> list[str]:
    pinned = row.chart and row.version and row.version != "*"
    chart = f"{row.chart}@{row.version}" if pinned else row.chart
    return _cells(
        (
            row.cluster,
            _name(row.namespace, row.name),
            chart,
            row.source,
            ",".join(row.depends_on),
            "yes" if row.suspend else "",
            _count(row.documents),
            row.status,
        )
    )


def counts(rows: Sequence[KsRow | HrRow]) -> dict[str, int]:
    """Rows per status, every status present (zero included), in STATUSES' order."""
    return {status: sum(1 for r in rows if r.status == status) for status in STATUSES}


def counts_line(rows: Sequence[KsRow | HrRow], noun: str) -> str:
    """`13 Kustomizations in 2 clusters: 12 rendered, 1 failed`; zero counts left out."""
    clusters = len({r.cluster for r in rows})
    plural = noun if len(rows) == 1 else f"{noun}s"
    where = f" in {clusters} cluster{'' if clusters == 1 else 's'}"
    parts = [f"{n} {status}" for status, n in counts(rows).items() if n]
    return f"{len(rows)} {plural}{where}" + (f": {', '.join(parts)}" if parts else "")


def print_table(rows: Sequence[KsRow | HrRow], kind: str, verbose: bool = False) -> None:
    """The table on stdout, then its counts line; on stderr each failed row's error, and with
    `verbose` why each skipped or not-judged row was not rendered."""
    err = stderr()
    for row in rows:
        label = row.target or f"{row.cluster}/{row.namespace}/{row.name}"
        if row.status == "failed":
            err.print(f"[red]{escape(error_line(label, row.reason))}[/red]")
        elif verbose and row.reason:
            err.print(escape(f"info: {label}: {row.status}, {row.reason}"))
    header = KS_COLUMNS if kind == "ks" else HR_COLUMNS
    cells = [ks_cells(r) if isinstance(r, KsRow) else hr_cells(r) for r in rows]
    shown = [[visible(c) for c in row] for row in cells]
    out = stdout()
    if shown:
        out.print(escape_block(plain_table(header, shown, right=DOCUMENTS_COLUMN)), highlight=False)
    out.print(escape(counts_line(rows, "Kustomization" if kind == "ks" else "HelmRelease")))


def _ks_item(row: KsRow) -> dict[str, Any]:
    return {
        "cluster": row.cluster,
        "namespace": row.namespace,
        "name": row.name,
        "target": row.target,
        "path": row.path,
        "source": row.source,
        "depends_on": list(row.depends_on),
        "suspend": row.suspend,
        "documents": row.documents,
        "status": row.status,
        "reason": row.reason,
    }


def _hr_item(row: HrRow) -> dict[str, Any]:
    return {
        "cluster": row.cluster,
        "namespace": row.namespace,
        "name": row.name,
        "target": row.target,
        "chart": row.chart,
        "version": row.version,
        "source": row.source,
        "kustomizations": list(row.kustomizations),
        "depends_on": list(row.depends_on),
        "suspend": row.suspend,
        "documents": row.documents,
        "status": row.status,
        "reason": row.reason,
    }


def payload(rows: Sequence[KsRow | HrRow], kind: str, renderer: RendererInfo) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "kind": "Kustomization" if kind == "ks" else "HelmRelease",
        "renderer": json_out.renderer(renderer),
        "items": [_ks_item(r) if isinstance(r, KsRow) else _hr_item(r) for r in rows],
        "counts": counts(rows),
    }


def print_json(rows: Sequence[KsRow | HrRow], kind: str, renderer: RendererInfo) -> None:
    json_out.emit(payload(rows, kind, renderer))
