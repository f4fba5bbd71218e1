"""Human-readable output: counts people can check by hand, errors that name the place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from harness.core.config import Config
from harness.core.model import Snapshot, TargetResult
from harness.report.console import escape, escape_block, stderr, stdout
from harness.report.visible import visible

if TYPE_CHECKING:  # annotations only: `lint` prints errors without loading the comparison
    from harness.compare.docdiff import DocChange
    from harness.compare.snapshots import Comparison, TargetDiff
    from harness.goldens import WriteReport
    from harness.hazards.engine import HazardReport

KIND_ORDER = ("path", "flux", "helm")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def error_line(name: str, message: str | None) -> str:
    return f"error: {name}: {message}"


def print_errors(results: Iterable[TargetResult]) -> None:
    err = stderr()
    for result in results:
        if not result.ok:
            err.print(f"[red]{escape(error_line(result.name, result.error))}[/red]")


def summary_line(comparison: Comparison, hidden: int = 0) -> str:
    """`render-golden: 41/42 targets match (1 drifted: platform: 1 changed)`."""
    kinds = [k for k in KIND_ORDER if any(t.kind == k for t in comparison.targets)]
    if not kinds:
        return "render-golden: no targets found"
    parts = []
    for kind in kinds:
        of_kind = [t for t in comparison.targets if t.kind == kind]
        matched = sum(1 for t in of_kind if t.status == "match")
        noun = "targets" if kinds == ["path"] else f"{kind} targets"
        parts.append(f"{matched}/{len(of_kind)} {noun}")
    line = "render-golden: " + ", ".join(parts) + " match"
    problems = []
    drifted = [t for t in comparison.targets if t.status == "changed"]
    if drifted:
        problems.append(
            f"{len(drifted)} drifted: "
            + "; ".join(f"{t.name}: {t.counts()}" for t in drifted[:5])
            + ("; ..." if len(drifted) > 5 else "")
        )
    new = [t.name for t in comparison.targets if t.status == "added"]
    if new:
        problems.append(f"{len(new)} without golden: {_names(new)}")
    stale = [t.name for t in comparison.targets if t.status == "removed"]
    if stale:
        problems.append(f"{len(stale)} stale golden: {_names(stale)}")
    errors = [t.name for t in comparison.errors]
    if errors:
        problems.append(f"{_plural(len(errors), 'error')}: {_names(errors)}")
    if problems:
        line += " (" + "; ".join(problems) + ")"
    skipped = len(comparison.head.skipped) + hidden  # external sources, failed parents
    if skipped:  # a match says nothing about what was never rendered
        line += f"; {skipped} Kustomization{'' if skipped == 1 else 's'} not rendered (not judged)"
    return line


def _names(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", +{len(names) - limit} more" if len(names) > limit else "")


def target_header(t: TargetDiff) -> str:
    before = "-" if t.documents_before is None else str(t.documents_before)
    after = "-" if t.documents_after is None else str(t.documents_after)
    return (
        f"{t.name}: {before} -> {after} documents "
        f"(-{len(t.removed)}, +{len(t.added)}, ~{len(t.changed)})"
    )


def print_check(
    comparison: Comparison,
    cfg: Config,
    changes: Mapping[str, Sequence[DocChange]] | None = None,
    hazards: HazardReport | None = None,
    hidden: int = 0,
) -> None:
    """Drift per target; `changes` (target -> field-level diffs, aligned with `changed`)
    adds dyff-style lines under each changed document; `hazards` (issue 6) come last,
    before the summary line; `hidden` counts Kustomizations failed targets hide."""
    from harness.report.findings import print_findings

    out = stdout()
    base_renderer, head_renderer = comparison.base.renderer, comparison.head.renderer
    if comparison.base.results and base_renderer.version != head_renderer.version:
        out.print(
            f"note: goldens were rendered by {base_renderer.name} {base_renderer.version}, "
            f"this run uses {head_renderer.name} {head_renderer.version}"
        )
    for t in comparison.targets:
        if t.status == "changed":
            out.print(escape(target_header(t)))
            details = list((changes or {}).get(t.name, ()))
            for index, (old, new) in enumerate(t.changed):
                out.print(f"  [yellow]~ {escape(str(new.id))}[/yellow]")
                detail = details[index] if index < len(details) else None
                if detail is None:
                    if old.api_version != new.api_version:
                        out.print(f"      apiVersion: {old.api_version} -> {new.api_version}")
                elif detail.reformat_only:
                    out.print("      reformat only (parsed content equal)")
                elif detail.ignored_only:
                    out.print("      only ignore_fields differ")
                else:
                    from harness.report.diff_text import field_lines  # its module: diffs only

                    for line in field_lines(detail.fields, "      "):
                        out.print(escape(line))
            for doc in t.removed:
                out.print(f"  [red]- {escape(str(doc.id))}[/red]")
            for doc in t.added:
                out.print(f"  [green]+ {escape(str(doc.id))}[/green]")
        elif t.status == "added":
            out.print(
                f"{escape(t.name)}: new {t.kind} target without golden "
                f"({_plural(t.documents_after or 0, 'document')}); run harness update"
            )
        elif t.status == "removed":
            out.print(
                f"{escape(t.name)}: stale golden, target no longer exists; run harness update"
            )
    err = stderr()
    for t in comparison.errors:
        where = "goldens" if t.error_side == "base" else t.name
        err.print(f"[red]{escape(error_line(where if where != t.name else t.name, t.error))}[/red]")
    if hazards is not None and (hazards.findings or hazards.suppressed):
        print_findings(out, hazards, heading="[bold]hazards[/bold]")
    out.print(escape(summary_line(comparison, hidden)))
    if not comparison.base.results and comparison.head.results:
        out.print(f"no goldens in {cfg.goldens}: run `harness update` to create them")


def print_update(snapshot: Snapshot, report: WriteReport, cfg: Config) -> None:
    print_errors(snapshot.results.values())
    out = stdout()
    for name in report.deleted:
        out.print(f"deleted stale golden: {escape(name)}")
    for name in report.kept:
        out.print(f"kept previous golden for failed target: {escape(name)}")
    out.print(
        f"goldens: {len(report.written)} written, {len(report.unchanged)} unchanged, "
        f"{len(report.deleted)} deleted, {len(report.kept)} kept ({cfg.goldens})"
    )


RENDER_COLUMNS = ("target", "kind", "documents", "sha256")


def render_rows(snapshot: Snapshot) -> list[tuple[str, str, str, str]]:
    return [
        (
            r.name,
            r.target.kind,
            str(len(r.documents)) if r.ok else "-",
            r.sha256[:16] if r.ok else "error",
        )
        for r in snapshot.results.values()
    ]


def plain_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: int = -1) -> str:
    """Space-aligned columns, nothing truncated (for pipes and files: names stay whole)."""
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]
    lines = []
    for row in (header, *rows):
        cells = [
            cell.rjust(widths[i]) if i == right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def print_render(snapshot: Snapshot) -> None:
    print_errors(snapshot.results.values())
    out = stdout()
    rows = render_rows(snapshot)
    if not out.is_terminal:
        shown_rows = [[visible(cell) for cell in row] for row in rows]  # a name stays one line
        out.print(escape_block(plain_table(RENDER_COLUMNS, shown_rows, right=2)), highlight=False)
    else:
        from rich.table import Table  # only this listing draws a table

        table = Table(box=None, pad_edge=False, show_edge=False)
        for col in RENDER_COLUMNS:
            # target names fold instead of ending in "…": two targets never print alike
            if col == "documents":
                table.add_column(col, justify="right", overflow="fold")
            else:
                table.add_column(col, justify="left", overflow="fold")
        for name, kind, documents, sha in rows:
            shown = "[red]error[/red]" if sha == "error" else sha
            table.add_row(escape(name), kind, documents, shown)
        out.print(table)
    ok = sum(1 for r in snapshot.results.values() if r.ok)
    out.print(
        f"{ok}/{len(snapshot.results)} targets rendered by "
        f"{snapshot.renderer.name} {snapshot.renderer.version}"
    )


def print_documents(result: TargetResult) -> None:
    if not result.ok:
        print_errors([result])
        return
    out = stdout()
    for doc in result.documents:
        out.print(f"# {escape(str(doc.id))}  sha256:{doc.sha256}", style="dim")
        out.print("---")
        out.print(escape_block(doc.text), end="")
    for dup in result.duplicates:
        stderr().print(f"warning: {escape(result.name)}: duplicate identity {escape(str(dup))}")
