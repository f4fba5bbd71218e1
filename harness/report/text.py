"""Human-readable output: counts people can check by hand, errors that name the place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from harness.core.config import Config
from harness.core.model import Snapshot, TargetResult
from harness.report.console import Exact, escape, escape_block, stderr, stdout
from harness.report.errors import error_lines, unreachable
from harness.report.visible import visible

if TYPE_CHECKING:  # annotations only: `lint` prints errors without loading the comparison
    from harness.compare.analyze import Analysis
    from harness.compare.snapshots import Comparison, TargetDiff
    from harness.hazards.engine import HazardReport
    from harness.pipeline.goldens import WriteReport

KIND_ORDER = ("path", "flux", "helm")
EXTERNAL = " is external (harness.yaml outside_git)"  # flux/targets.py's reason for a skip


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def skipped_lines(skipped: Mapping[str, str], verbose: bool = False) -> list[str]:
    """`info: 6 Flux Kustomizations not rendered, their source is external (harness.yaml
    outside_git): a, b, c and 3 more (-v lists each)`; every one of them when verbose."""
    if not skipped:
        return []
    if verbose or len(skipped) == 1:
        return [f"info: {name}: skipped, {reason}" for name, reason in skipped.items()]
    names = sorted(skipped)
    external = [r for r in skipped.values() if r.endswith(EXTERNAL)]
    why = (
        "their source is external (harness.yaml outside_git)"
        if len(external) == len(skipped)
        else "skipped on purpose"
    )
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    noun = "Flux Kustomization" if len(names) == 1 else "Flux Kustomizations"
    return [f"info: {len(names)} {noun} not rendered, {why}: {shown} (-v lists each)"]


def print_errors(results: Iterable[TargetResult]) -> None:
    results = list(results)
    err = stderr()
    failed = [(r.name, r.error, "") for r in results if not r.ok]
    for line in error_lines(failed, unreachable(results)):
        err.print(f"[red]{escape(line)}[/red]")


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
        problems.append(f"{len(drifted)} drifted: {drift_phrase(comparison)}")
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


def drift_phrase(comparison: Comparison) -> str:
    """`1 object changes in 2 clusters`: the drift's objects, said once (the same identity
    drifting in several targets is one object; compare/groups.py groups them)."""
    drifted = [t for t in comparison.targets if t.status == "changed"]
    ids = {d.id for t in drifted for d in (*t.added, *t.removed)}
    ids |= {new.id for t in drifted for _old, new in t.changed}
    clusters = {t.cluster for t in drifted if t.cluster}
    verb = "changes" if len(ids) == 1 else "change"
    where = f" in {_plural(len(clusters), 'cluster')}" if clusters else ""
    return f"{_plural(len(ids), 'object')} {verb}{where}"


def print_check(
    comparison: Comparison,
    cfg: Config,
    analysis: Analysis | None = None,
    hazards: HazardReport | None = None,
    verbose: bool = False,
    hidden: int = 0,
) -> None:
    """Drift said once: each changed object with its field changes and the targets it drifts
    in (`analysis`, goldens -> working tree), then one counts line per drifted target (with
    every document under it when `verbose`); `hazards` (issue 6) come last, before the
    summary line; `hidden` counts the Kustomizations failed targets hide."""
    from harness.report.findings import print_findings

    out = stdout()
    base_renderer, head_renderer = comparison.base.renderer, comparison.head.renderer
    if comparison.base.results and base_renderer.version != head_renderer.version:
        out.print(
            f"note: goldens were rendered by {base_renderer.name} {base_renderer.version}, "
            f"this run uses {head_renderer.name} {head_renderer.version}"
        )
    drifted = {t.name for t in comparison.targets if t.status == "changed"}
    if analysis is not None and drifted:
        from harness.compare.groups import group
        from harness.report.diff_text import print_groups, print_target

        changes = [g for g in group(analysis) if any(p.target in drifted for p in g.places)]
        print_groups(out, changes)
        by_name = {t.name: t for t in analysis.targets}
        for t in comparison.targets:
            if t.status != "changed":
                continue
            if verbose and t.name in by_name:
                print_target(out, by_name[t.name])
            else:
                out.print(escape(target_header(t)))
    for t in comparison.targets:
        if t.status == "added":
            out.print(
                f"{escape(t.name)}: new {t.kind} target without golden "
                f"({_plural(t.documents_after or 0, 'document')}); run harness update"
            )
        elif t.status == "removed":
            out.print(
                f"{escape(t.name)}: stale golden, target no longer exists; run harness update"
            )
    err = stderr()
    failed = [
        ("goldens" if t.error_side == "base" else t.name, t.error, "") for t in comparison.errors
    ]
    for line in error_lines(failed, unreachable(comparison.head.results.values())):
        err.print(f"[red]{escape(line)}[/red]")
    if hazards is not None and (hazards.findings or hazards.suppressed):
        print_findings(out, hazards, heading="[bold]hazards[/bold]", verbose=verbose)
    out.print(escape(summary_line(comparison, hidden)))
    if not comparison.base.results and comparison.head.results:
        if cfg.source_file is None:
            out.print(
                f"no goldens in {cfg.goldens} and no harness.yaml: run `harness init` (it "
                "writes a starter harness.yaml and the goldens)"
            )
        else:
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
        out.print(Exact(doc.text, end="", block=True))
    for dup in result.duplicates:
        stderr().print(f"warning: {escape(result.name)}: duplicate identity {escape(str(dup))}")
