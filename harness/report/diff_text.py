"""`harness diff` for people: the verdict first, then per target, then moves, then errors.

Values arrive masked (docdiff/masking); this module only lays them out.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console

from harness.compare import chartmeta
from harness.compare.analyze import Analysis, Origin, Repair, TargetChange
from harness.compare.counts import count, objects_breakdown, objects_phrase, plural, targets_line
from harness.compare.groups import (
    ChangeGroup,
    by_change,
    group,
    places_text,
    target_order,
    verdict_reasons,
)
from harness.compare.images import ImageChange
from harness.compare.images import changes as image_changes
from harness.hazards.engine import HazardReport
from harness.report import image_summary as images
from harness.report.console import Exact, escape, stdout
from harness.report.errors import error_lines, unreachable

if TYPE_CHECKING:  # annotations only: `check` prints field lines without the diff gate
    from harness.compare.coverage import BlindSpots
    from harness.compare.docdiff import DocChange, FieldChange  # loaded once a document changed
    from harness.compare.gate import Expectation, MoveGroup, Verdict

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
    parts = []
    if c.objects or not (c.kustomizations_changed or c.duplicates or c.targets_error):
        parts.append(f"{objects_phrase(c)}: {objects_breakdown(c)}")
    if c.kustomizations_changed:
        n = c.kustomizations_changed
        parts.append(f"{plural(n, 'Flux Kustomization')} {'changes' if n == 1 else 'change'}")
    if c.duplicates:
        parts.append(_plural(c.duplicates, "new duplicate owner"))
    if c.targets_error:
        parts.append(_plural(c.targets_error, "render error"))
    return "changed: " + "; ".join(parts)


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
    from harness.compare.docdiff import show_change

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
        out.print(Exact(indent + line, style))


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
                out.print(Exact(line))
        if c.unified:
            _print_unified(out, c.unified, "      ")


def group_lines(g: ChangeGroup, indent: str = "") -> list[str]:
    """One grouped change: `~ id` (with the add/remove note), its field changes once, then
    `in: <places>`."""
    head = f"{indent}{g.sign} {g.id}"
    if g.op != "changed":
        head += f"  {g.note}"
    elif g.reformat_only or g.ignored_only:
        head += f"  {g.what}"
    lines = [head]
    lines.extend(field_lines(g.fields, indent + "    "))
    lines.append(f"{indent}    in: {places_text(g.places)}")
    return lines


def move_group_line(g: ChangeGroup) -> str:
    """`Namespace/kube-system: dev, prod: flux-system/platform -> flux-system/cilium (pure
    ownership)`: a relocation or move, once for every target (and cluster) it happened in."""
    return f"{g.id}: {places_text(g.places)} -> {g.copy} ({g.how})"


def also_line(g: ChangeGroup) -> str:
    """`and in: dev, prod: flux-system/platform, moved to flux-system/cilium (with changes)`:
    the same change of the same object, arrived another way."""
    what = g.note if g.op != "changed" else "changed"
    return f"    and in: {places_text(g.places)}, {what}"


def print_groups(out: Console, groups: Sequence[ChangeGroup]) -> None:
    """Each change once (groups of one object with the same fields merged: `and in:`); with
    `--unified N` its first target's text diff under it."""
    for first_group, *others in by_change(groups):
        colour = {"changed": "yellow", "added": "green", "removed": "red"}[first_group.op]
        first, *rest = group_lines(first_group)
        out.print(f"[{colour}]{escape(first)}[/{colour}]")
        for line in rest:
            out.print(Exact(line))
        for g in others:
            out.print(escape(also_line(g)))
        change = first_group.change
        if change is not None and change.unified:
            _print_unified(out, change.unified, "      ")


MAX_BLIND_FILES = 10


def blind_suffix(blind: BlindSpots | None) -> str:
    """`; not judged: 2 changed files` for the verdict line, when something was not."""
    if blind is None or not blind.uncovered:
        return ""
    n = len(blind.uncovered)
    return f"; not judged: {n} changed file{'' if n == 1 else 's'} no target reads"


def blind_lines(blind: BlindSpots | None) -> list[str]:
    """What the run did not judge, each fact once: the changed files no rendered target
    reads, and the Kustomizations failed parents hide. (Kustomizations skipped on purpose
    have their one `info:` line, cli/context.print_skipped, and the comment's section.)"""
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
    verbose: bool = False,
    chart_metadata: Sequence[str] = chartmeta.DEFAULT_KEYS,
) -> None:
    """The verdict, each real change once (the object, its fields, where; a helm release's
    chart metadata churn after them, one line per release: chartmeta.py), the moves, the
    targets' counts, then what breaks or surrounds the verdict; `verbose` adds every target's
    documents and the pre-existing facts one by one."""
    out = stdout()
    line = verdict_line(analysis, verdict) + blind_suffix(blind)
    colour = {"no-change": "green", "pure-move": "green", "changed": "yellow"}[verdict.verdict]
    out.print(f"[bold {colour}]{escape(line)}[/bold {colour}]")
    if expect is not None:
        held = verdict.holds(expect)
        state = "[green]holds[/green]" if held else "[red]FAILED[/red]"
        out.print(f"expected {expect}: {state}")
    if verdict.verdict != "no-change":  # a no-change line already carries its notes
        for note in verdict.notes:
            out.print(f"note: {escape(note)}")
    for line in blind_lines(blind):
        out.print(f"[yellow]{escape(line)}[/yellow]")
    out.print(f"base: {escape(base.label)}  head: {escape(head.label)}", style="dim")
    print_image_changes(out, image_changes(analysis.base, analysis.head), verbose)
    groups = group(analysis, verdict_reasons(verdict))
    real, churn = chartmeta.fold([g for g in groups if g.real], chart_metadata)
    if real or churn:
        out.print()
        print_groups(out, real)
        for c in churn:
            out.print(f"[yellow]{escape(c.line())}[/yellow]")
            out.print(Exact(f"    in: {c.where()}"))
    moved = [g for g in groups if g.moved and not g.real and g.op == "removed"]
    if moved:
        out.print()
        out.print(f"[bold]moves and relocations[/bold] ({len(moved)})")
        for g in moved:
            out.print(f"  {escape(move_group_line(g))}")
    differing = sorted(analysis.differing, key=target_order)
    if differing:
        out.print()
        for t in differing:
            if verbose:
                print_target(out, t)
            else:
                out.print(escape(header(t)))
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
    new_duplicates = [d for d in analysis.duplicates if not d.in_base]
    old_duplicates = [d for d in analysis.duplicates if d.in_base]
    if new_duplicates or (verbose and old_duplicates):
        out.print()
        out.print("[bold]duplicates[/bold]")
        for d in new_duplicates + (old_duplicates if verbose else []):
            known = " (already in base)" if d.in_base else ""
            where = f"{d.where}: " if d.where else ""
            out.print(f"  {escape(where + str(d.id))}: {escape(', '.join(d.targets))}{known}")
    if analysis.errors:
        out.print()
        unfetched = unreachable(analysis.base.results.values(), "base") | unreachable(
            analysis.head.results.values(), "head"
        )
        failed = [(e.target, e.message, e.side) for e in analysis.errors]
        for line in error_lines(failed, unfetched):
            out.print(f"[red]{escape(line)}[/red]")
    if analysis.repairs:
        out.print()
        for repair in analysis.repairs:
            out.print(f"[green]{escape(repair_line(repair))}[/green]")
    pre = analysis.preexisting
    if pre or (old_duplicates and not verbose):
        out.print()
    if pre and verbose:
        for p in pre:
            out.print(
                f"[yellow]pre-existing error: {escape(p.target)} (base and head, inputs "
                f"unchanged): {escape(p.message)}[/yellow]"
            )
    elif pre:
        out.print(f"[yellow]{escape(preexisting_line([p.target for p in pre]))}[/yellow]")
    if old_duplicates and not verbose:
        out.print(escape(preexisting_duplicates_line(len(old_duplicates))))
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
        from harness.report.findings import print_findings  # a diff with findings loads it

        out.print()
        print_findings(out, hazards, heading="[bold]hazards[/bold]", verbose=verbose)
    out.print()
    out.print(escape(targets_line(count(analysis, verdict))), style="dim")


def print_image_changes(out: Console, changes: Sequence[ImageChange], verbose: bool) -> None:
    """The "Images" summary, first after the verdict: what a reviewer of a bump reads first."""
    if not changes:
        return
    out.print()
    out.print(f"[bold]{escape(images.summary_title(changes))}[/bold]")
    limit = None if verbose else images.PLACES_SHOWN
    for change in changes:
        out.print(f"  {escape(images.change_line(change, limit))}")


def _sources(sources: tuple[str, ...]) -> str:
    """The source objects of one unreachable chart: all of a few, else a count."""
    return ", ".join(sources) if len(sources) <= 2 else f"{sources[0]} and {len(sources) - 1} more"


def names_list(names: Sequence[str], limit: int = 3) -> str:
    """`a, b, c and 4 more`: a few names, never silently fewer than there are."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def preexisting_line(targets: Sequence[str]) -> str:
    """One line for every pre-existing error: how many, which, and where the rest is."""
    return (
        f"{plural(len(targets), 'pre-existing render error')} (failing the same way on both "
        f"sides, inputs unchanged; not judged): {names_list(targets)}; -v shows the messages"
    )


def preexisting_duplicates_line(n: int) -> str:
    return (
        f"{plural(n, 'duplicate owner')} already in base (not a change of this diff; -v lists them)"
    )
