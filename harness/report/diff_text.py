"""`harness diff` for people: the verdict first, then per target, then moves, then errors.

Values arrive masked (docdiff/masking); this module only lays them out.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console

from harness.compare.analyze import Analysis, Move, Origin, Repair, TargetChange
from harness.compare.counts import count, targets_line
from harness.compare.docdiff import DocChange, FieldChange, show_change, without_owner_labels
from harness.hazards.engine import HazardReport
from harness.report.console import escape, stdout
from harness.report.findings import print_findings

if TYPE_CHECKING:  # annotations only: `check` prints field lines without the diff gate
    from harness.compare.gate import Expectation, MoveGroup, Verdict
    from harness.coverage import BlindSpots

MAX_REASONS = 20
STRING_DIFF_CONTEXT = 1


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict_line(analysis: Analysis, verdict: Verdict) -> str:
    """The one line that answers the reviewer: no change, a pure move, or what changed.

    Every number is a field of compare/counts.py (the JSON `summary`)."""
    c = count(analysis, verdict)
    if verdict.verdict == "no-change":
        line = (
            f"no change: {_plural(c.targets_compared, 'target')}, "
            f"{_plural(c.documents_after, 'document')} unchanged"
        )
        return line + (f" ({'; '.join(verdict.notes)})" if verdict.notes else "")
    if verdict.verdict == "pure-move":
        return _pure_move_line(verdict)
    parts = [f"{c.changed} changed", f"{c.added} added", f"{c.removed} removed"]
    if c.moved_with_changes:
        parts.append(f"{c.moved_with_changes} moved with changes")
    if c.kustomizations_changed:
        parts.append(f"{c.kustomizations_changed} Flux Kustomization changes")
    if c.duplicates:
        parts.append(_plural(c.duplicates, "duplicate owner"))
    if c.targets_error:
        parts.append(_plural(c.targets_error, "render error"))
    return "changed: " + ", ".join(parts)


def respecified_phrase(verdict: Verdict, limit: int = 3) -> str:
    """`media: path moved, output identical`, or `4 Flux Kustomizations: path moved, ...`."""
    items = verdict.respecified
    if len(items) <= limit:
        return "; ".join(f"{r.name}: {r.what}, {r.how}" for r in items)
    kinds: dict[tuple[str, str], int] = {}
    for r in items:
        kinds[(r.what, r.how)] = kinds.get((r.what, r.how), 0) + 1
    return "; ".join(
        f"{_plural(n, 'Flux Kustomization')}: {what}, {how}" for (what, how), n in kinds.items()
    )


def _pure_move_line(verdict: Verdict) -> str:
    groups = verdict.groups
    respec = respecified_phrase(verdict)
    if not groups:
        what = respec or "no document changes content"
        if verdict.orchestration:
            what += f"; {_plural(len(verdict.orchestration), 'orchestration change')}"
        return f"pure move: {what}; 0 changed"
    ownership = any(g.level == "flux" and not g.identical for g in groups)
    head = "pure ownership move" if ownership else "pure move"
    moved = ", ".join(_group(g) for g in groups)
    if ownership:
        how = "byte-identical modulo owner labels"
    elif all(g.identical for g in groups):
        how = "byte-identical"
    else:
        how = "content-identical"
    return f"{head}: {moved}, {how}; {respec + '; ' if respec else ''}0 changed"


def _group(g: MoveGroup) -> str:
    return f"{_plural(len(g.ids), 'document')} {g.source} -> {g.dest}"


def header(t: TargetChange) -> str:
    """`platform: 88 -> 85 documents (-3, +0, ~0)`: counts people can check by hand."""
    before = "-" if t.documents_before is None else str(t.documents_before)
    after = "-" if t.documents_after is None else str(t.documents_after)
    line = (
        f"{t.name}: {before} -> {after} documents "
        f"(-{len(t.removed)}, +{len(t.added)}, ~{len(t.changed)})"
    )
    if t.status == "added":
        line += f" new {t.kind} target"
    elif t.status == "removed":
        line += f" {t.kind} target gone"
    return line


def _location_note(target: str, change: DocChange) -> str:
    if change.identical:
        return f"{target} (identical)"
    if change.equivalent:
        return f"{target} (same content, reformatted)"
    if change.pure_ownership:
        return f"{target} (pure ownership)"
    return f"{target} (with changes)"


def field_lines(fields: Sequence[FieldChange], indent: str) -> list[str]:
    """dyff-style lines: `spec.values.k8sServiceHost: 192.168.1.10 -> 192.168.2.10`."""
    out: list[str] = []
    for f in fields:
        before, after = f.before, f.after
        if (
            f.op == "changed"
            and isinstance(before, str)
            and isinstance(after, str)
            and ("\n" in before or "\n" in after)
        ):
            out.append(f"{indent}{f.path}: (multi-line)")
            out.extend(f"{indent}  {line}" for line in _string_diff(before, after))
            continue
        out.append(indent + show_change(f))
    return out


def _string_diff(before: str, after: str) -> list[str]:
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), lineterm="", n=STRING_DIFF_CONTEXT
    )
    return [line for line in lines if not line.startswith(("---", "+++", "@@"))]


def _print_unified(out: Console, text: str, indent: str) -> None:
    for line in text.splitlines():
        style = ""
        if line.startswith(("---", "+++")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("+"):
            style = "green"
        out.print(indent + escape(line), style=style or None)


def print_target(out: Console, t: TargetChange) -> None:
    out.print(f"[bold]{escape(header(t))}[/bold]")
    for r in t.removed:
        where = ", ".join(_location_note(loc.target, loc.change) for loc in r.still_rendered_by)
        note = f"  still rendered by {where}" if where else ""
        out.print(f"  [red]- {escape(str(r.doc.id))}[/red]{escape(note)}")
    for a in t.added:
        where = ", ".join(
            _location_note(loc.target, loc.change) for loc in a.previously_rendered_by
        )
        note = f"  previously rendered by {where}" if where else ""
        out.print(f"  [green]+ {escape(str(a.doc.id))}[/green]{escape(note)}")
    for c in t.changed:
        if c.reformat_only:
            out.print(f"  [yellow]~ {escape(str(c.id))}[/yellow]  reformat only (content equal)")
        elif c.ignored_only:
            out.print(f"  [yellow]~ {escape(str(c.id))}[/yellow]  only ignore_fields differ")
        else:
            out.print(f"  [yellow]~ {escape(str(c.id))}[/yellow]")
            for line in field_lines(c.fields, "      "):
                out.print(escape(line))
        if c.unified:
            _print_unified(out, c.unified, "      ")


def move_line(m: Move) -> str:
    if m.identical:
        how = "identical"
    elif m.pure_ownership:
        how = "pure ownership"
    else:
        how = "with changes"
    return f"{m.source} -> {m.dest}: {m.id} ({how})"


MAX_BLIND_FILES = 10


def blind_suffix(blind: BlindSpots | None) -> str:
    """`; not judged: 2 changed files` for the verdict line, when something was not."""
    if blind is None or not blind.uncovered:
        return ""
    n = len(blind.uncovered)
    return f"; not judged: {n} changed file{'' if n == 1 else 's'} no target reads"


def blind_lines(blind: BlindSpots | None) -> list[str]:
    """What the run did not judge, each fact once: the changed files no rendered target
    reads, and the Kustomizations not rendered, counted per reason (one per source)."""
    if blind is None:
        return []
    out = []
    if blind.uncovered:
        shown = ", ".join(blind.uncovered[:MAX_BLIND_FILES])
        more = len(blind.uncovered) - MAX_BLIND_FILES
        out.append(
            f"not judged: {len(blind.uncovered)} changed "
            f"file{'' if len(blind.uncovered) == 1 else 's'} not covered by any rendered "
            f"target: {shown}{f' and {more} more' if more > 0 else ''}"
        )
    if blind.skipped:
        n = len(blind.skipped)
        sources = blind.skipped_sources
        reasons = "; ".join(
            reason if len(sources) == 1 else f"{reason} ({count})"
            for reason, count in sources.items()
        )
        out.append(f"not judged: {n} Kustomization{'' if n == 1 else 's'} not rendered: {reasons}")
    if blind.under_failed:
        n = sum(blind.under_failed.values())
        where = ", ".join(f"{t}: {c}" for t, c in list(blind.under_failed.items())[:5])
        more = len(blind.under_failed) - 5
        out.append(
            f"not judged: {n} Kustomization{'' if n == 1 else 's'} declared under failed "
            f"targets, never rendered ({where}{f' and {more} more' if more > 0 else ''})"
        )
    return out


def repair_line(r: Repair) -> str:
    """`fixed: apps/web renders 3 documents (failed on base: ...)`."""
    if r.outcome == "fixed":
        now = f"renders {r.documents_after} document{'' if r.documents_after == 1 else 's'}"
        return f"fixed: {r.target} {now} (failed on base: {r.message})"
    return f"removed: {r.target}, which failed on base ({r.message})"


def print_diff(
    analysis: Analysis,
    verdict: Verdict,
    base: Origin,
    head: Origin,
    *,
    expect: Expectation | None = None,
    hazards: HazardReport | None = None,
    blind: BlindSpots | None = None,
) -> None:
    out = stdout()
    line = verdict_line(analysis, verdict) + blind_suffix(blind)
    colour = {"no-change": "green", "pure-move": "green", "changed": "yellow"}[verdict.verdict]
    out.print(f"[bold {colour}]{escape(line)}[/bold {colour}]")
    if expect is not None:
        held = verdict.holds(expect)
        state = "[green]holds[/green]" if held else "[red]FAILED[/red]"
        out.print(f"expected {expect}: {state}")
    for reason in verdict.reasons[:MAX_REASONS]:
        out.print(f"  {escape(str(reason))}")
    if len(verdict.reasons) > MAX_REASONS:
        out.print(f"  ... and {len(verdict.reasons) - MAX_REASONS} more")
    if verdict.verdict != "no-change":  # a no-change line already carries its notes
        for note in verdict.notes:
            out.print(f"note: {escape(note)}")
    for line in blind_lines(blind):
        out.print(f"[yellow]{escape(line)}[/yellow]")
    out.print(f"base: {escape(base.label)}  head: {escape(head.label)}", style="dim")
    for t in sorted(analysis.targets, key=lambda t: (t.kind != "path", t.name)):
        if t.differs:
            out.print()
            print_target(out, t)
    if analysis.moves:
        out.print()
        out.print("[bold]moves[/bold]")
        for m in analysis.moves:
            out.print(f"  {escape(move_line(m))}")
            if not m.change.same_content:
                for line in field_lines(without_owner_labels(m.change.fields), "      "):
                    out.print(escape(line))
    if verdict.orchestration:
        out.print()
        out.print("[bold]Flux Kustomization orchestration[/bold]")
        for o in verdict.orchestration:
            out.print(f"  {escape(str(o))}")
    if verdict.respecified:
        out.print()
        out.print("[bold]Flux Kustomization spec changes with the same output[/bold]")
        for r in verdict.respecified:
            out.print(f"  {escape(str(r))}")
    if analysis.duplicates:
        out.print()
        out.print("[bold]duplicates[/bold]")
        for d in analysis.duplicates:
            known = " (already in base)" if d.in_base else ""
            where = f"{d.cluster}: " if d.cluster else ""
            out.print(f"  {escape(where + str(d.id))}: {escape(', '.join(d.targets))}{known}")
    if analysis.errors:
        out.print()
        for e in analysis.errors:
            out.print(f"[red]error: {escape(e.target)} ({e.side}): {escape(e.message)}[/red]")
    if analysis.repairs:
        out.print()
        for repair in analysis.repairs:
            out.print(f"[green]{escape(repair_line(repair))}[/green]")
    if analysis.preexisting:
        out.print()
        for p in analysis.preexisting:
            out.print(
                f"[yellow]pre-existing error: {escape(p.target)} (base and head, inputs "
                f"unchanged): {escape(p.message)}[/yellow]"
            )
    if analysis.not_judged:
        out.print()
        for n in analysis.not_judged:
            out.print(
                f"info: not judged: {len(n.targets)} helm target(s) whose chart from "
                f"{escape(n.url)} ({escape(_sources(n.sources))}) cannot be fetched on either "
                f"side, HelmRelease and values unchanged: {escape(n.message)}",
                style="dim",
            )
    if hazards is not None and (hazards.findings or hazards.suppressed):
        out.print()
        print_findings(out, hazards, heading="[bold]hazards[/bold]")
    out.print()
    out.print(escape(targets_line(count(analysis, verdict))), style="dim")


def _sources(sources: tuple[str, ...]) -> str:
    """The source objects of one unreachable chart: all of a few, else a count."""
    return ", ".join(sources) if len(sources) <= 2 else f"{sources[0]} and {len(sources) - 1} more"
