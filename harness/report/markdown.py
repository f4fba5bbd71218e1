"""The pull-request comment: an `Analysis` as a budgeted, GitHub-flavoured Markdown `Layout`.

A reviewer needs one glance (the verdict line, the per-target counts, the moves) and the raw
evidence one click away (a `<details>` per target). Everything here is turned into
`markdown_budget` pieces with several renderings each, so the comment degrades instead of
breaking when a change is large. Values reach this module already masked (docdiff/masking);
added and removed documents are listed by id only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.compare import chartmeta
from harness.compare.analyze import (
    Analysis,
    Repair,
    TargetChange,
)
from harness.compare.counts import Counts, count, objects_breakdown, objects_phrase
from harness.compare.coverage import BlindSpots
from harness.compare.docdiff import FieldChange
from harness.compare.gate import Expectation, Verdict, judge
from harness.compare.groups import (
    ChangeGroup,
    Place,
    by_change,
    group,
    places_text,
    target_order,
    verdict_reasons,
)
from harness.compare.images import ImageChange, version_line
from harness.compare.images import changes as image_changes
from harness.core import atomic, confine
from harness.hazards.engine import HazardReport
from harness.report import image_summary as images
from harness.report import markdown_budget as mb
from harness.report.diff_text import blind_lines, field_lines, respecified_phrase
from harness.report.findings import alert_blocks
from harness.report.values import short_fields, shorten

MOVE_LINES_IN_HEAD = 25
ERRORS_IN_HEAD = 20
TABLE_ROWS_SHORT = 40
FIELD_LIMITS = (60, 60, 30, 10)  # fields shown per rendering level
DIFF_LINES = (None, 800, 200, 40)  # unified-diff lines per rendering level (None = all)
LINE_CHARS = 300
FIELD_LINE_CHARS = 2000  # a field line in the details fence is whole up to this
REASONS_IN_HEAD = 10
IMAGES_IN_HEAD = 30
ERROR_CHARS = 600
PATHS_GROUP = "paths"
RESPECIFIED_TITLE = "Flux Kustomization spec changes with the same output"


@dataclass(frozen=True)
class CommentInput:
    """What the comment says besides the analysis: its first line, why, and the two sides."""

    verdict: str
    base_label: str = "base"
    head_label: str = "head"
    command: str = "harness diff"
    notes: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    orchestration: tuple[str, ...] = ()
    expectation: str = ""
    # hazard alert blocks (report/findings.py): errors and warnings at the top (full, short,
    # minimal), notes at the bottom (full, short)
    hazards: tuple[str, ...] = ()
    hazard_notes: tuple[str, ...] = ()
    counts: Counts | None = None
    respecified: tuple[str, ...] = ()
    not_judged: tuple[str, ...] = ()  # report/diff_text.blind_lines: never left out
    # the analysis's changes grouped (compare/groups.py); None: group them when laid out
    groups: tuple[ChangeGroup, ...] | None = None
    # a helm release's chart metadata, said once after its real changes (chartmeta.py)
    chart_metadata: tuple[str, ...] = chartmeta.DEFAULT_KEYS
    images: tuple[str, ...] = ()  # the "Images" block's bullets (image_bullet), first


def headline(analysis: Analysis, verdict: Verdict) -> str:
    """The comment's first line: a pure move with its counts, no change, or how much changes.

    Every number is a field of compare/counts.py (the JSON `summary.counts`)."""
    c = count(analysis, verdict)
    if verdict.verdict == "no-change":
        line = (
            f"No change: {_plural(c.targets_compared, 'target')}, "
            f"{_plural(c.documents_after, 'document')} unchanged"
        )
        if c.targets_preexisting_error:
            line += f" ({_plural(c.targets_preexisting_error, 'pre-existing render error')})"
        return line
    zeros = "0 changed, 0 added, 0 removed"
    if verdict.verdict == "pure-move":
        groups = verdict.groups
        respec = respecified_phrase(verdict)
        if not groups:
            if respec:
                return f"Pure move: {respec}, {zeros}"
            n = len(verdict.orchestration)
            return (
                f"No document changes content: {_plural(n, 'Flux Kustomization')} "
                f"{'changes' if n == 1 else 'change'} orchestration only, {zeros}"
            )
        ownership = any(g.level == "flux" and not g.identical for g in groups)
        moved = ", ".join(
            f"{_plural(len(g.ids), 'document')} {g.source} -> {g.dest}" for g in groups
        )
        extra = f"; {respec}" if respec else ""
        if ownership:
            return (
                f"Pure ownership move: {moved} (byte-identical modulo owner labels){extra}, {zeros}"
            )
        how = "byte-identical" if all(g.identical for g in groups) else "same content"
        return f"Pure move: {moved} ({how}){extra}, {zeros}"
    parts = []
    if c.targets_error:
        parts.append(f"{_plural(c.targets_error, 'render error')} (not compared)")
    if c.objects or not (c.targets_error or c.kustomizations_changed or c.duplicates):
        phrase = objects_phrase(c)
        parts.append(f"{phrase[0].upper()}{phrase[1:]}: {objects_breakdown(c)}")
    if c.kustomizations_changed:
        n = c.kustomizations_changed
        parts.append(f"{_plural(n, 'Flux Kustomization')} {'changes' if n == 1 else 'change'}")
    if c.duplicates:
        parts.append(_plural(c.duplicates, "new duplicate owner"))
    return "; ".join(parts)


def comment_input(
    analysis: Analysis,
    verdict: Verdict,
    base_label: str,
    head_label: str,
    expect: Expectation | None = None,
    command: str = "harness diff",
    hazards: HazardReport | None = None,
    blind: BlindSpots | None = None,
    chart_metadata: tuple[str, ...] = chartmeta.DEFAULT_KEYS,
) -> CommentInput:
    """Everything the head says, taken from the verdict."""
    expectation = ""
    if expect is not None:
        expectation = f"expected {expect}: {'holds' if verdict.holds(expect) else 'FAILED'}"
    return CommentInput(
        verdict=headline(analysis, verdict),
        base_label=base_label,
        head_label=head_label,
        command=command,
        # pre-existing errors and repairs have boxes of their own: said once
        notes=tuple(
            n
            for n in verdict.notes
            if "pre-existing render error" not in n and " repaired: failed on the base" not in n
        ),
        # what the grouped changes do not say: duplicate owners (errors have their own box)
        reasons=tuple(r.message for r in verdict.reasons if r.counter == "duplicates"),
        orchestration=tuple(str(o) for o in verdict.orchestration),
        expectation=expectation,
        hazards=hazard_variants(hazards),
        hazard_notes=hazard_note_variants(hazards),
        counts=count(analysis, verdict),
        respecified=tuple(str(r) for r in verdict.respecified),
        not_judged=tuple(blind_lines(blind)),
        groups=group(analysis, verdict_reasons(verdict)),
        chart_metadata=chart_metadata,
        images=tuple(image_bullet(c) for c in image_changes(analysis.base, analysis.head)),
    )


def image_bullet(change: ImageChange) -> str:
    """`` - `ghcr.io/org/app`: `1.0` -> `1.1` (apps/Deployment/ns/app in main) ``."""
    places = mb.escape_text(shorten(images.places_phrase(change), LINE_CHARS))
    return f"- {mb.code(change.repository)}: {_version_md(change)} ({places})"


def _version_md(change: ImageChange) -> str:
    """The version line with each side as code (`new`/`gone` and the arrow plain)."""
    line = version_line(change)
    if " -> " in line:
        old, new = line.split(" -> ", 1)
        return f"{mb.code(old)} -> {mb.code(new)}"
    word, _, version = line.partition(" ")
    return f"{word} {mb.code(version)}"


def hazard_variants(hazards: HazardReport | None) -> tuple[str, ...]:
    """Error and warning alert blocks at three sizes (all, 5 each, 2 errors only)."""
    if hazards is None or not (hazards.findings or hazards.suppressed):
        return ()
    loud = ("error", "warning")
    return tuple(
        block + "\n\n" if block else ""
        for block in (
            alert_blocks(hazards, severities=loud),
            alert_blocks(hazards, limit=5, severities=loud),
            alert_blocks(hazards, limit=2, severities=("error",), suppressed_note=False),
        )
    )


def hazard_note_variants(hazards: HazardReport | None) -> tuple[str, ...]:
    """The informational findings (`> [!NOTE]`), all or 3, for the end of the head."""
    if hazards is None or not any(f.severity == "info" for f in hazards.findings):
        return ()
    return tuple(
        alert_blocks(hazards, limit=limit, severities=("info",), suppressed_note=False) + "\n\n"
        for limit in (None, 3)
    )


# -- small formatting helpers ----------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _count(n: int | None) -> str:
    return "-" if n is None else str(n)


def group_of(t: TargetChange) -> str:
    if t.kind == "helm":
        return helm_group(t)
    return t.cluster if t.kind == "flux" and t.cluster else PATHS_GROUP


def _ordered(targets: Iterable[TargetChange]) -> list[TargetChange]:
    """Path targets first, then clusters by name, then helm targets by cluster; targets by
    name within a group."""
    return sorted(
        targets,
        key=lambda t: (group_of(t) != PATHS_GROUP, t.kind == "helm", group_of(t), t.name),
    )


def _shown_targets(analysis: Analysis) -> list[TargetChange]:
    """Targets that differ or failed (pre-existing failures have their own block)."""
    return _ordered(
        t
        for t in analysis.targets
        if t.differs
        or (
            t.status == "error"
            and not analysis.is_preexisting(t.name)
            and not analysis.is_not_judged(t.name)
        )
    )


def target_counts(t: TargetChange) -> str:
    """`88 -> 85 documents (-3, +0, ~0)`: counts people can check by hand."""
    return (
        f"{_count(t.documents_before)} -> {_count(t.documents_after)} documents "
        f"(-{len(t.removed)}, +{len(t.added)}, ~{len(t.changed)})"
    )


# -- head: verdict, context, errors, summary table, moves ---------------------------------------


def _errors_block(analysis: Analysis, limit: int | None) -> str:
    """One line per failed target (the count the headline gives), its sides together when
    they failed alike."""
    by_target: dict[str, list[tuple[str, str]]] = {}
    for e in analysis.errors:
        by_target.setdefault(e.target, []).append((e.side, e.message))
    items: list[tuple[str, str]] = []
    for target, sides in by_target.items():
        if len(sides) == 2 and sides[0][1] == sides[1][1]:
            sides = [("base and head", sides[0][1])]
        items.extend((f"{mb.code(target)} ({side})", message) for side, message in sides)
    return _alert_box(
        "CAUTION",
        f"**{_plural(len(by_target), 'render error')}**: these targets were not compared, "
        "so none of their documents count as added or removed.",
        items,
        limit,
    )


def not_judged(analysis: Analysis) -> list[tuple[str, list[tuple[str, str]]]]:
    """The facts this change neither caused nor touched, as (title, [(name, detail)]):
    pre-existing render errors, Flux Kustomizations skipped on purpose, duplicate owners
    already in base. Said once each, with a count; listed in a collapsed section."""
    out: list[tuple[str, list[tuple[str, str]]]] = []
    if analysis.preexisting:
        out.append(
            (
                _plural(len(analysis.preexisting), "pre-existing render error"),
                [(p.target, p.message) for p in analysis.preexisting],
            )
        )
    skipped = {**analysis.base.skipped, **analysis.head.skipped}
    if skipped:
        noun = "Flux Kustomization" if len(skipped) == 1 else "Flux Kustomizations"
        out.append((f"{len(skipped)} {noun} skipped", sorted(skipped.items())))
    old = [d for d in analysis.duplicates if d.in_base]
    if old:
        out.append(
            (
                _plural(len(old), "duplicate owner") + " already in base",
                [(f"{d.where + ': ' if d.where else ''}{d.id}", ", ".join(d.targets)) for d in old],
            )
        )
    return out


def _preexisting_line(analysis: Analysis) -> str:
    """One line for everything not judged because it was there before (pre-existing errors,
    skips, old duplicates), with their counts; the lists are in the collapsed section at
    the end."""
    facts = not_judged(analysis)
    if not facts:
        return ""
    what = ", ".join(title for title, _items in facts)
    return (
        f"{mb.escape_text(what)} (not caused or touched by this change; listed at the end"
        + (
            "; `--fail-on-preexisting-error` makes pre-existing errors exit 2"
            if analysis.preexisting
            else ""
        )
        + ")."
    )


def _chart_lines(analysis: Analysis) -> list[str]:
    """Helm targets whose chart cannot be fetched on either side, inputs unchanged."""
    return [
        f"Charts not fetched on either side, HelmReleases and values unchanged: "
        f"{mb.code(n.url)} ({len(n.sources)} source object(s)): "
        f"{_plural(len(n.targets), 'helm target')} not judged"
        for n in analysis.not_judged
    ]


def _repairs_block(analysis: Analysis, limit: int | None) -> str:
    """Targets the change repairs: a good thing, so a note, not a caution."""
    fixed = sum(1 for r in analysis.repairs if r.outcome == "fixed")
    return _alert_box(
        "NOTE",
        f"**{_plural(len(analysis.repairs), 'target')} repaired**: failing on the base, "
        f"{fixed} now {'renders' if fixed == 1 else 'render'} (their documents count as "
        "added), the rest are gone.",
        [
            (mb.code(r.target), f"{_repair_outcome(r)}; failed on base: {r.message}")
            for r in analysis.repairs
        ],
        limit,
    )


def _repair_outcome(r: Repair) -> str:
    return f"renders {_plural(r.documents_after, 'document')}" if r.outcome == "fixed" else "gone"


def _alert_box(kind: str, title: str, items: Sequence[tuple[str, str]], limit: int | None) -> str:
    """A GitHub alert listing `where: message` lines (messages cut at ERROR_CHARS), the
    first `limit` of them; empty without items."""
    if not items:
        return ""
    lines = [f"> [!{kind}]", f"> {title}", ">"]
    shown = items if limit is None else items[:limit]
    for where, message in shown:
        if len(message) > ERROR_CHARS:
            message = message[:ERROR_CHARS] + "..."
        lines.append(f"> - {where}: {mb.code(message)}")
    if len(shown) < len(items):
        lines.append(f"> - ... and {len(items) - len(shown)} more")
    return "\n".join(lines) + "\n\n"


def _table(targets: Sequence[TargetChange], limit: int | None) -> str:
    if not targets:
        return ""
    rows = [
        "| cluster | target | documents | added | removed | changed |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    shown = targets if limit is None else targets[:limit]
    previous = None
    for t in shown:
        group = group_of(t)
        cell = mb.escape_text(group) if group != previous else ""
        previous = group
        if t.status == "error":
            docs = "**render error**"
            counts = ["", "", ""]
        else:
            docs = f"{_count(t.documents_before)} -> {_count(t.documents_after)}"
            if t.status == "added":
                docs += " (new target)"
            elif t.status == "removed":
                docs += " (target removed)"
            counts = [f"+{len(t.added)}", f"-{len(t.removed)}", f"~{len(t.changed)}"]
        rows.append(f"| {cell} | {mb.code(t.name)} | {docs} | " + " | ".join(counts) + " |")
    out = "\n".join(rows) + "\n"
    if len(shown) < len(targets):
        out += f"\n_... and {len(targets) - len(shown)} more targets (see below)._\n"
    return out + "\n"


def move_lines(analysis: Analysis, groups: Sequence[ChangeGroup] | None = None) -> list[str]:
    """Relocations between path targets and moves between Flux Kustomizations, one line per
    document, once for all the targets (and clusters) it moved alike in."""
    if groups is None:
        groups = group(analysis, verdict_reasons(judge(analysis)))
    return [
        f"- {mb.code(str(g.id))}: {places_md(g.places)} -> {mb.code(g.copy)}, "
        + ("pure ownership (owner labels only)" if g.how == "pure ownership" else _how(g.how))
        for g in groups
        if g.op == "removed" and g.moved and not g.real
    ]


def _moves_block(lines: Sequence[str], limit: int | None) -> str:
    if not lines:
        return ""
    shown = lines if limit is None else lines[:limit]
    out = f"**Moves and relocations** ({len(lines)})\n\n" + "\n".join(shown) + "\n"
    if len(shown) < len(lines):
        out += f"- ... and {len(lines) - len(shown)} more (listed below)\n"
    return out + "\n"


def _context(analysis: Analysis, info: CommentInput) -> str:
    c = info.counts or count(analysis, judge(analysis))
    return (
        f"{mb.code(info.command)}: {mb.code(info.base_label)} -> {mb.code(info.head_label)}, "
        f"{_plural(c.targets_compared, 'target')} compared, {c.targets_changed} "
        f"{'differs' if c.targets_changed == 1 else 'differ'}"
        + (f", {_plural(c.targets_error, 'render error')}" if c.targets_error else "")
        + (
            f", {_plural(c.targets_preexisting_error, 'pre-existing error')}"
            if c.targets_preexisting_error
            else ""
        )
        + (f", {c.targets_not_judged} not judged" if c.targets_not_judged else "")
        + "\n\n"
    )


def _notes(info: CommentInput) -> str:
    return "".join(f"> [!NOTE]\n> {mb.escape_text(n)}\n\n" for n in info.notes)


def _bullets(title: str, items: Sequence[str], limit: int | None) -> str:
    """Plain-text items as a list; a long one is shortened with a mark (values.shorten)."""
    return list_block(
        title, [f"- {mb.escape_text(shorten(item, LINE_CHARS))}" for item in items], limit
    )


def list_block(title: str, lines: Sequence[str], limit: int | None, more: str = "") -> str:
    """`**Title** (n)`, then the first `limit` lines (None: all) and how many more, or ""."""
    if not lines:
        return ""
    shown = list(lines if limit is None else lines[:limit])
    if len(shown) < len(lines):
        shown.append(f"- ... and {len(lines) - len(shown)} more{more}")
    return f"**{title}** ({len(lines)})\n\n" + "\n".join(shown) + "\n\n"


def places_md(places: Sequence[Place]) -> str:
    """`` `platform`, `platform/cilium`; dev, prod: `flux-system/platform` ``."""
    return places_text(places, mb.code, mb.escape_text)


def change_bullet(g: ChangeGroup) -> str:
    """One object's change, once: what changes (values shortened with a mark, never inside a
    hash; the details below and `--output json` have them whole), then where."""
    if g.op == "changed":
        what = mb.code(short_fields(g.fields)) if g.fields else mb.escape_text(g.what)
    else:
        what = mb.escape_text(g.note)
        if g.fields:
            what += f": {mb.code(short_fields(g.fields))}"
    return f"- {mb.code(g.sign + ' ' + str(g.id))}: {what} in: {places_md(g.places)}"


def groups_of(analysis: Analysis, info: CommentInput) -> tuple[ChangeGroup, ...]:
    if info.groups is not None:
        return info.groups
    return group(analysis, verdict_reasons(judge(analysis)))


# The head is a sequence of blocks, each rendered at three levels (0 full, 1 short,
# 2 minimal: what must survive the tightest budget). A new section of the comment is one
# more function in HEAD_BLOCKS (and, for collapsed details, one in DETAIL_SECTIONS).
FULL, SHORT, MINIMAL = 0, 1, 2
HeadBlock = Callable[[Analysis, CommentInput, int], str]


def _images_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    """What a bump changes, first: every image change at full length, fewer after."""
    return list_block("Images", info.images, (IMAGES_IN_HEAD, 10, 3)[level])


def _hazards_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    return (info.hazards or ("", "", ""))[level]


def _errors_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    return _errors_block(analysis, (None, ERRORS_IN_HEAD, 3)[level])


def _not_judged_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    """Everything the run did not judge, in one box (said once): changed files no target
    reads, Kustomizations not rendered, charts not fetched, and one line for what was there
    before the change. Kept at every level, so a short comment never reads as a clean bill
    where harness did not judge."""
    lines = [mb.escape_text(line.removeprefix("not judged: ")) for line in info.not_judged]
    lines += _chart_lines(analysis)
    before = _preexisting_line(analysis)
    kind = "WARNING" if lines or analysis.preexisting else "NOTE"
    if before and not lines:
        return f"> [!{kind}]\n> **Not judged**: {before}\n\n"
    lines += [before] if before else []
    if not lines:
        return ""
    body = "".join(f"> - {line}\n" for line in lines)
    return f"> [!{kind}]\n> **Not judged**\n>\n{body}\n"


def _repairs_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    return _repairs_block(analysis, (None, ERRORS_IN_HEAD, 3)[level])


def _reasons_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    """Each changed object once, with its field changes and where; then each helm release's
    chart metadata churn in one line (chartmeta.py); then duplicate owners."""
    if level == MINIMAL:
        return ""
    real = [g for g in groups_of(analysis, info) if g.real]
    shown, churn = chartmeta.fold(real, info.chart_metadata)
    lines = [
        change_bullet(first)
        + "".join(
            f"; and in: {places_md(g.places)}, {mb.escape_text(g.note or 'changed')}"
            for g in others
        )
        for first, *others in by_change(shown)
    ]
    lines += [f"- {mb.escape_text(c.line())} in: {places_md(c.places)}" for c in churn]
    lines += [f"- {mb.escape_text(shorten(r, LINE_CHARS))}" for r in info.reasons]
    return list_block("What changes", lines, (REASONS_IN_HEAD, 3)[level], " (see the details)")


def _table_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    if level == MINIMAL:
        return ""
    return _table(_shown_targets(analysis), (None, TABLE_ROWS_SHORT)[level])


def _moves_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    if level == MINIMAL:
        return ""
    return _moves_block(
        move_lines(analysis, groups_of(analysis, info)), (MOVE_LINES_IN_HEAD, 5)[level]
    )


def _orchestration_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    if level == MINIMAL:
        return ""
    limit = (None, 5)[level]
    return _bullets(
        "Flux Kustomization orchestration changes", info.orchestration, limit
    ) + _bullets(RESPECIFIED_TITLE, info.respecified, limit)


def _hazard_notes_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    if level == MINIMAL:
        return ""
    return (info.hazard_notes or ("", ""))[level]


HEAD_BLOCKS: list[HeadBlock] = [
    _images_head,
    _hazards_head,
    _errors_head,
    _not_judged_head,
    _repairs_head,
    _reasons_head,
    _table_head,
    _moves_head,
    _orchestration_head,
    _hazard_notes_head,
]


def head_variants(analysis: Analysis, info: CommentInput) -> tuple[str, ...]:
    """The head from complete to minimal; the verdict line is always its first line."""
    first = f"### {mb.escape_text(info.verdict)}\n\n"
    context = _context(analysis, info)
    expectation = f"**{mb.escape_text(info.expectation)}**\n\n" if info.expectation else ""
    out = []
    for level in (FULL, SHORT, MINIMAL):
        top = first + expectation + context + (_notes(info) if level != MINIMAL else "")
        out.append(top + "".join(block(analysis, info, level) for block in HEAD_BLOCKS))
    return tuple(out)


# -- details: each set of targets that change alike --------------------------------------------


def _fields_block(fields: Sequence[FieldChange], limit: int) -> str:
    """dyff-style lines as `diff` prints them, in a plain fence (values need no escaping);
    whole up to FIELD_LINE_CHARS, then shortened with a mark (never inside a hash)."""
    lines = field_lines(fields[:limit], "")
    lines = [shorten(ln, FIELD_LINE_CHARS) for ln in lines]
    if len(fields) > limit:
        lines.append(f"... and {_plural(len(fields) - limit, 'more field')}")
    return mb.fence("\n".join(lines)) if lines else ""


def _diff_block(unified: str | None, max_lines: int | None) -> str:
    if not unified:
        return ""
    if max_lines is None:
        return mb.fence(unified, "diff")
    text, omitted = mb.truncate_lines(unified, max_lines)
    block = mb.fence(text, "diff")
    if omitted:
        block += f"\n_Diff truncated: {_plural(omitted, 'more line')} not shown._\n"
    return block


def _title(g: ChangeGroup) -> str:
    """`~ `id`: 2 fields`, `` `- id` still rendered by `platform/cilium` (byte-identical) ``."""
    if g.op == "changed":
        return f"~ {mb.code(str(g.id))}: {mb.escape_text(g.what)}"
    line = mb.code(f"{g.sign} {g.id}")
    if g.copy:
        verb = g.note.split(f" {g.copy}", 1)[0]
        return f"{line} {mb.escape_text(verb)} {mb.code(g.copy)} ({mb.escape_text(_how(g.how))})"
    return f"{line} {mb.escape_text(g.note)}"


def _how(how: str) -> str:
    return {"identical": "byte-identical"}.get(how, how)


def group_entry(g: ChangeGroup, shared: bool = False) -> mb.Entry:
    """A changed document: its fields and diff (`rich_entry`); an added or removed one: one
    line, with the fields when its copy elsewhere differs. `shared`: the diff shown is the
    first target's, the others change the same fields."""
    title = _title(g)
    if g.op != "changed" and not g.fields:
        return mb.Entry((f"- {title}\n",))
    unified = g.change.unified if g.change is not None else None
    note = ""
    if shared and unified and len(g.places) > 1:
        note = f"_Diff as {mb.code(g.places[0].target)} renders it._\n\n"
    return rich_entry(title, g.fields, unified, note)


def rich_entry(
    title: str, fields: Sequence[FieldChange], unified: str | None, note: str = ""
) -> mb.Entry:
    """Full fields and diff; fewer fields and a truncated diff; fields only; the title line."""
    variants = []
    for limit, lines in zip(FIELD_LIMITS, DIFF_LINES, strict=True):
        parts = [f"\n**{title}**\n\n"]
        block = _fields_block(fields, limit)
        if block:
            parts.append(block + "\n")
        diff = _diff_block(unified, lines)
        if diff:
            parts.append(note + diff + "\n")
        variants.append("".join(parts))
    fields_only = f"\n**{title}**\n\n"
    if fields:
        fields_only += _fields_block(fields, FIELD_LIMITS[-1]) + "\n"
    if unified:
        fields_only += "_Diff omitted to fit the comment._\n\n"
    variants.append(fields_only)
    variants.append(f"- {title}\n")
    return mb.Entry(_dedupe(variants))


def _dedupe(variants: Sequence[str]) -> tuple[str, ...]:
    """Drop renderings that are not smaller than the one before: degrading must save space."""
    out: list[str] = []
    for v in variants:
        if not out or mb.size(v) < mb.size(out[-1]):
            out.append(v)
    return tuple(out)


def _list_end() -> mb.Entry:
    """A blank line so the next block does not continue a list."""
    return mb.Entry(("\n",))


def _tally(groups: Sequence[ChangeGroup]) -> str:
    n = {op: sum(1 for g in groups if g.op == op) for op in ("removed", "added", "changed")}
    return f"-{n['removed']}, +{n['added']}, ~{n['changed']}"


def place_sections(analysis: Analysis, groups: Sequence[ChangeGroup]) -> list[mb.Section]:
    """One collapsed section per set of targets that share their changes: a target of its
    own in the usual case (`name: counts`, as the table has it), or every target a shared
    base's change lands in, said once (`platform, platform/cilium; dev, prod: ...`)."""
    by_places: dict[tuple[Place, ...], list[ChangeGroup]] = {}
    for g in groups:
        by_places.setdefault(g.places, []).append(g)
    targets = {t.name: t for t in analysis.targets}
    entries_of: dict[str, int] = {}
    for g in groups:
        for p in g.places:
            entries_of[p.target] = entries_of.get(p.target, 0) + 1
    out = []
    for places, members in sorted(by_places.items(), key=lambda kv: target_order(kv[0][0])):
        order = {"changed": 0, "removed": 1, "added": 2}
        members.sort(key=lambda g: order[g.op])
        entries: list[mb.Entry] = []
        for op in ("changed", "removed", "added"):
            of_op = [group_entry(g, shared=True) for g in members if g.op == op]
            entries.extend(of_op)
            if of_op and op != "changed":
                entries.append(_list_end())
        first = targets.get(places[0].target)
        if len(places) == 1 and first is not None:
            counts = target_counts(first)
            if entries_of[first.name] > len(members):
                counts += f"; {entries_of[first.name] - len(members)} shared with other targets"
            key, shown = first.name, mb.code(first.name)
        else:
            counts = f"{_tally(members)} each"
            key, shown = places_text(places), places_md(places)
        summary = f"{key}: {counts}"
        collapsed = f"- {shown}: {mb.escape_text(counts)}; details omitted to fit the comment\n\n"
        out.append(
            mb.Section(
                key=key,
                open=mb.details_open(summary),
                entries=tuple(entries),
                close=mb.DETAILS_CLOSE,
                collapsed=collapsed,
                open_continued=mb.details_open(f"{key} (continued)"),
            )
        )
    return out


def helm_group(t: TargetChange) -> str:
    """The table's group of a helm target: `helm: <cluster>`, after every Flux cluster."""
    return f"helm: {t.cluster or ''}"


def moves_section(lines: Sequence[str]) -> mb.Section:
    """Every move, when the head could only show the first few."""
    entries = [mb.Entry((line + "\n",)) for line in lines]
    return mb.Section(
        key="(moves)",
        open=mb.details_open(f"All {len(lines)} moves and relocations"),
        entries=(*entries, _list_end()),
        close=mb.DETAILS_CLOSE,
        collapsed=f"_{len(lines)} moves and relocations; the list is omitted to fit._\n\n",
        open_continued=mb.details_open("Moves and relocations (continued)"),
    )


def not_judged_section(analysis: Analysis) -> list[mb.Section]:
    """The pre-existing facts, listed: what the head's one `Not judged` line counts."""
    facts = not_judged(analysis)
    if not facts:
        return []
    entries: list[mb.Entry] = []
    for title, items in facts:
        entries.append(mb.Entry((f"\n**{mb.escape_text(title)}**\n\n",)))
        entries.extend(
            mb.Entry((f"- {mb.code(name)}: {mb.code(shorten(detail, ERROR_CHARS))}\n",))
            for name, detail in items
        )
        entries.append(_list_end())
    what = ", ".join(title for title, _items in facts)
    return [
        mb.Section(
            key="(not judged)",
            open=mb.details_open(f"Not judged: {what}"),
            entries=tuple(entries),
            close=mb.DETAILS_CLOSE,
            collapsed=f"_Not judged: {mb.escape_text(what)}; the list is omitted to fit._\n\n",
            open_continued=mb.details_open("Not judged (continued)"),
        )
    ]


def _target_sections(analysis: Analysis, info: CommentInput) -> list[mb.Section]:
    shown = {t.name for t in _shown_targets(analysis) if t.status != "error"}
    groups = [g for g in groups_of(analysis, info) if any(p.target in shown for p in g.places)]
    return place_sections(analysis, groups)


def _moves_sections(analysis: Analysis, info: CommentInput) -> list[mb.Section]:
    moves = move_lines(analysis, groups_of(analysis, info))
    return [moves_section(moves)] if len(moves) > MOVE_LINES_IN_HEAD else []


def _not_judged_sections(analysis: Analysis, info: CommentInput) -> list[mb.Section]:
    return not_judged_section(analysis)


# Collapsed detail sections after the head, in order (see HEAD_BLOCKS).
DETAIL_SECTIONS: list[Callable[[Analysis, CommentInput], list[mb.Section]]] = [
    _target_sections,
    _moves_sections,
    _not_judged_sections,
]


def layout(
    analysis: Analysis, info: CommentInput, marker_id: str = mb.DEFAULT_MARKER_ID
) -> mb.Layout:
    """The whole comment as budget pieces; `markdown_budget.fit`/`split` turn it into text."""
    if info.groups is None:
        info = replace(info, groups=groups_of(analysis, info))
    sections = [s for build in DETAIL_SECTIONS for s in build(analysis, info)]
    title = "**Details**\n\n" if sections else ""
    head = tuple(h + title for h in head_variants(analysis, info))
    return mb.Layout(
        head=head,
        sections=tuple(sections),
        footer="",
        degraded_footer=(
            "\n_Some details were left out to fit the comment size limit; "
            f"run {mb.code(info.command)} locally for all of them._\n"
        ),
        more_note="\n_... and {count} more targets not shown: the comment size limit._\n",
        part_header=f"**harness** part {{n}}/{{m}}, continued: {_brace(info.verdict)}\n\n",
        marker_id=marker_id,
    )


def _brace(text: str) -> str:
    """Escape for use inside a `str.format` template."""
    return mb.escape_text(text).replace("{", "{{").replace("}", "}}")


def comment(
    analysis: Analysis,
    info: CommentInput,
    *,
    budget: int = mb.DEFAULT_BUDGET,
    marker_id: str = mb.DEFAULT_MARKER_ID,
    split: bool = False,
    max_parts: int = mb.DEFAULT_MAX_PARTS,
) -> mb.Fitted:
    """The comment body (or bodies, with `split`), each within `budget`."""
    spec = layout(analysis, info, marker_id)
    if split:
        return mb.split(spec, budget, max_parts)
    return mb.fit(spec, budget)


PART_GLOB = "comment-part-*.md"


def part_name(n: int) -> str:
    return f"comment-part-{n}.md"


def write_parts(directory: Path, bodies: Sequence[str]) -> list[Path]:
    """`comment-part-N.md` per body; parts left from an earlier, longer run are removed so a
    poster never publishes them. Prints the paths written, one per line."""
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob(PART_GLOB):
        old.unlink()  # a planted symlink is removed itself, never followed
    root = directory.resolve()
    written = []
    for n, body in enumerate(bodies, start=1):
        path = directory / part_name(n)
        confine.inside(path, root)
        atomic.write_text(path, body)  # a rename: never through a symlink
        written.append(path)
    sys.stdout.write("".join(f"{p}\n" for p in written))
    return written


def print_comment(body: str) -> None:
    sys.stdout.write(body)
