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
from dataclasses import dataclass
from pathlib import Path

from harness.compare.analyze import (
    AddedDoc,
    Analysis,
    Location,
    RemovedDoc,
    Repair,
    TargetChange,
)
from harness.compare.counts import Counts, count
from harness.compare.docdiff import DocChange, FieldChange
from harness.compare.gate import Expectation, Verdict, judge
from harness.coverage import BlindSpots
from harness.hazards.engine import HazardReport
from harness.report import markdown_budget as mb
from harness.report.diff_text import blind_lines, field_lines, respecified_phrase
from harness.report.findings import alert_blocks

MOVE_LINES_IN_HEAD = 25
ERRORS_IN_HEAD = 20
TABLE_ROWS_SHORT = 40
FIELD_LIMITS = (60, 60, 30, 10)  # fields shown per rendering level
DIFF_LINES = (None, 800, 200, 40)  # unified-diff lines per rendering level (None = all)
LINE_CHARS = 300
REASONS_IN_HEAD = 10
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
    documents = c.documents_changing
    if documents or not (c.targets_error or c.kustomizations_changed or c.duplicates):
        verb = "changes" if documents == 1 else "change"
        parts.append(
            f"{_plural(documents, 'document')} {verb} in {_plural(c.change_targets, 'target')} "
            f"({c.changed} changed, {c.added} added, {c.removed} removed"
            + (f", {c.moved_with_changes} moved with changes" if c.moved_with_changes else "")
            + ")"
        )
    if c.kustomizations_changed:
        n = c.kustomizations_changed
        parts.append(f"{_plural(n, 'Flux Kustomization')} {'changes' if n == 1 else 'change'}")
    if c.duplicates:
        parts.append(_plural(c.duplicates, "duplicate owner"))
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
        reasons=tuple(r.message for r in verdict.reasons if r.id is not None or r.target is None),
        orchestration=tuple(str(o) for o in verdict.orchestration),
        expectation=expectation,
        hazards=hazard_variants(hazards),
        hazard_notes=hazard_note_variants(hazards),
        counts=count(analysis, verdict),
        respecified=tuple(str(r) for r in verdict.respecified),
        not_judged=tuple(blind_lines(blind)),
    )


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
    return _alert_box(
        "CAUTION",
        f"**{_plural(len(analysis.errors), 'render error')}**: these targets were not compared, "
        "so none of their documents count as added or removed.",
        [(f"{mb.code(e.target)} ({e.side})", e.message) for e in analysis.errors],
        limit,
    )


def _preexisting_block(analysis: Analysis, limit: int | None) -> str:
    """Failures the change did not cause or touch: shown once, not judged."""
    return _alert_box(
        "WARNING",
        f"**{_plural(len(analysis.preexisting), 'pre-existing render error')}**: failing the "
        "same way on both sides with unchanged inputs; not compared and not judged "
        "(`--fail-on-preexisting-error` makes them exit 2).",
        [(mb.code(p.target), p.message) for p in analysis.preexisting],
        limit,
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


def _move_kind(change: DocChange, short: bool = False) -> str:
    if change.identical:
        return "byte-identical"
    if change.reformat_only:
        return "reformatted only"
    if change.ignored_only:
        return "only ignored fields differ"
    if change.pure_ownership:
        return "pure ownership" if short else "pure ownership (owner labels only)"
    return f"with changes: {_plural(len(change.fields), 'field')}"


def move_lines(analysis: Analysis) -> list[str]:
    """Relocations between path targets and moves between Flux Kustomizations, one line each."""
    lines: list[str] = []
    for t in _ordered(analysis.targets):
        if t.kind == "flux":
            continue
        for r in t.removed:
            if r.still_rendered_by:
                loc = _best(r)
                lines.append(
                    f"- {mb.code(str(r.doc.id))}: {mb.code(t.name)} -> {mb.code(loc.target)}, "
                    f"{_move_kind(loc.change)}"
                )
    grouped: dict[tuple[str, str, str, str], list[str]] = {}
    for m in analysis.moves:
        key = (
            str(m.id),
            _local(m.source, m.cluster),
            _local(m.dest, m.cluster),
            _move_kind(m.change),
        )
        grouped.setdefault(key, []).append(m.cluster or "")
    for (doc, source, dest, how), clusters in grouped.items():
        where = f" ({', '.join(c for c in clusters if c)})" if any(clusters) else ""
        lines.append(f"- {mb.code(doc)}: {mb.code(source)} -> {mb.code(dest)}{where}, {how}")
    return lines


def _local(target: str, cluster: str | None) -> str:
    """`dev/flux-system/platform` -> `flux-system/platform`: one line covers every cluster."""
    return target.removeprefix(f"{cluster}/") if cluster else target


def _best(r: RemovedDoc) -> Location:
    """Where it went: same content first, then a target it arrived in (not an aggregating
    parent that rendered it all along)."""
    return sorted(
        r.still_rendered_by, key=lambda loc: (not loc.same_content, not loc.paired, loc.target)
    )[0]


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
    if not items:
        return ""
    shown = items if limit is None else items[:limit]
    lines = [f"- {mb.escape_text(item[:LINE_CHARS])}" for item in shown]
    if len(shown) < len(items):
        lines.append(f"- ... and {len(items) - len(shown)} more")
    return f"**{title}** ({len(items)})\n\n" + "\n".join(lines) + "\n\n"


# The head is a sequence of blocks, each rendered at three levels (0 full, 1 short,
# 2 minimal: what must survive the tightest budget). A new section of the comment is one
# more function in HEAD_BLOCKS (and, for collapsed details, one in DETAIL_SECTIONS).
FULL, SHORT, MINIMAL = 0, 1, 2
HeadBlock = Callable[[Analysis, CommentInput, int], str]


def _hazards_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    return (info.hazards or ("", "", ""))[level]


def _errors_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    return _errors_block(analysis, (None, ERRORS_IN_HEAD, 3)[level])


def _preexisting_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    return _preexisting_block(analysis, (None, ERRORS_IN_HEAD, 3)[level])


def _not_judged_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    """What the run did not look at (changed files no target reads, Kustomizations not
    rendered, charts not fetched): kept at every level, so a short comment never reads as a
    clean bill where harness did not judge."""
    lines = [mb.escape_text(line.removeprefix("not judged: ")) for line in info.not_judged]
    lines += _chart_lines(analysis)
    if not lines:
        return ""
    body = "".join(f"> - {line}\n" for line in lines)
    return f"> [!WARNING]\n> **Not judged**\n>\n{body}\n"


def _repairs_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    return _repairs_block(analysis, (None, ERRORS_IN_HEAD, 3)[level])


def _reasons_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    if level == MINIMAL:
        return ""
    return _bullets("What changes", info.reasons, (REASONS_IN_HEAD, 3)[level])


def _table_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    if level == MINIMAL:
        return ""
    return _table(_shown_targets(analysis), (None, TABLE_ROWS_SHORT)[level])


def _moves_head(analysis: Analysis, info: CommentInput, level: int) -> str:
    if level == MINIMAL:
        return ""
    return _moves_block(move_lines(analysis), (MOVE_LINES_IN_HEAD, 5)[level])


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
    _hazards_head,
    _errors_head,
    _not_judged_head,
    _preexisting_head,
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


# -- per-target details -----------------------------------------------------------------------


def _fields_block(fields: Sequence[FieldChange], limit: int) -> str:
    """dyff-style lines as `diff` prints them, in a plain fence (values need no escaping)."""
    lines = field_lines(fields[:limit], "")
    lines = [ln if len(ln) <= LINE_CHARS else ln[: LINE_CHARS - 3] + "..." for ln in lines]
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


def _changed_title(c: DocChange) -> str:
    if c.reformat_only:
        what = "reformatted only (content equal)"
    elif c.ignored_only:
        what = "only ignored fields differ"
    elif c.pure_ownership:
        what = "owner labels only"
    else:
        what = _plural(len(c.fields), "field")
    return f"~ {mb.code(str(c.id))}: {what}"


def changed_entry(c: DocChange) -> mb.Entry:
    return rich_entry(_changed_title(c), c)


def rich_entry(title: str, c: DocChange) -> mb.Entry:
    """Full fields and diff; fewer fields and a truncated diff; fields only; the title line."""
    variants = []
    for fields, lines in zip(FIELD_LIMITS, DIFF_LINES, strict=True):
        parts = [f"\n**{title}**\n\n"]
        block = _fields_block(c.fields, fields)
        if block:
            parts.append(block + "\n")
        diff = _diff_block(c.unified, lines)
        if diff:
            parts.append(diff + "\n")
        variants.append("".join(parts))
    fields_only = f"\n**{title}**\n\n"
    if c.fields:
        fields_only += _fields_block(c.fields, FIELD_LIMITS[-1]) + "\n"
    if c.unified:
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


def _where(locations: Sequence[Location]) -> str:
    shown = ", ".join(
        f"{mb.code(loc.target)} ({_move_kind(loc.change, short=True)})" for loc in locations[:3]
    )
    more = len(locations) - 3
    return shown + (f" and {more} more" if more > 0 else "")


def removed_entry(r: RemovedDoc) -> mb.Entry:
    """One line; the field changes too when the copy that is still rendered differs."""
    line = f"{mb.code('- ' + str(r.doc.id))}"
    if not r.still_rendered_by:
        return mb.Entry((f"- {line}\n",))
    line += f" still rendered by {_where(r.still_rendered_by)}"
    best = _best(r)
    if best.same_content:
        return mb.Entry((f"- {line}\n",))
    return rich_entry(line, best.change)


def added_entry(a: AddedDoc) -> mb.Entry:
    line = f"{mb.code('+ ' + str(a.doc.id))}"
    if not a.previously_rendered_by:
        return mb.Entry((f"- {line}\n",))
    line += f" previously rendered by {_where(a.previously_rendered_by)}"
    best = sorted(
        a.previously_rendered_by, key=lambda loc: (not loc.same_content, not loc.paired, loc.target)
    )[0]
    if best.same_content:
        return mb.Entry((f"- {line}\n",))
    return rich_entry(line, best.change)


def _list_end() -> mb.Entry:
    """A blank line so the next block does not continue a list."""
    return mb.Entry(("\n",))


def target_section(t: TargetChange) -> mb.Section:
    summary = f"{t.name}: {target_counts(t)}"
    entries: list[mb.Entry] = [changed_entry(c) for c in t.changed]
    if t.removed:
        entries.extend(removed_entry(r) for r in t.removed)
        entries.append(_list_end())
    if t.added:
        entries.extend(added_entry(a) for a in t.added)
        entries.append(_list_end())
    collapsed = (
        f"- {mb.code(t.name)}: {mb.escape_text(target_counts(t))}; "
        "details omitted to fit the comment\n\n"
    )
    return mb.Section(
        key=t.name,
        open=mb.details_open(summary),
        entries=tuple(entries),
        close=mb.DETAILS_CLOSE,
        collapsed=collapsed,
        open_continued=mb.details_open(f"{t.name} (continued)"),
    )


# -- helm targets: their own section, grouped by cluster --------------------------------------


def helm_group(t: TargetChange) -> str:
    """The table's group of a helm target: `helm: <cluster>`, after every Flux cluster."""
    return f"helm: {t.cluster or ''}"


def helm_sections(targets: Sequence[TargetChange]) -> list[mb.Section]:
    """Per cluster, a `Helm releases in <cluster>` heading, then one section per release."""
    out: list[mb.Section] = []
    cluster: str | None = None
    for t in targets:
        if t.cluster != cluster:
            cluster = t.cluster
            title = f"**Helm releases in {mb.escape_text(cluster or '')}**\n\n"
            out.append(
                mb.Section(
                    key=f"(helm {cluster})",
                    open=title,
                    entries=(),
                    close="",
                    collapsed=title,
                    open_continued=title,
                )
            )
        out.append(target_section(t))
    return out


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


def _target_sections(analysis: Analysis, info: CommentInput) -> list[mb.Section]:
    shown = [t for t in _shown_targets(analysis) if t.status != "error"]
    return [target_section(t) for t in shown if t.kind != "helm"]


def _helm_sections(analysis: Analysis, info: CommentInput) -> list[mb.Section]:
    shown = [t for t in _shown_targets(analysis) if t.status != "error"]
    return helm_sections([t for t in shown if t.kind == "helm"])


def _moves_sections(analysis: Analysis, info: CommentInput) -> list[mb.Section]:
    moves = move_lines(analysis)
    return [moves_section(moves)] if len(moves) > MOVE_LINES_IN_HEAD else []


# Collapsed detail sections after the head, in order (see HEAD_BLOCKS).
DETAIL_SECTIONS: list[Callable[[Analysis, CommentInput], list[mb.Section]]] = [
    _target_sections,
    _helm_sections,
    _moves_sections,
]


def layout(
    analysis: Analysis, info: CommentInput, marker_id: str = mb.DEFAULT_MARKER_ID
) -> mb.Layout:
    """The whole comment as budget pieces; `markdown_budget.fit`/`split` turn it into text."""
    sections = [s for build in DETAIL_SECTIONS for s in build(analysis, info)]
    title = "**Details per target**\n\n" if sections else ""
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
        old.unlink()
    written = []
    for n, body in enumerate(bodies, start=1):
        path = directory / part_name(n)
        path.write_text(body, encoding="utf-8")
        written.append(path)
    sys.stdout.write("".join(f"{p}\n" for p in written))
    return written


def print_comment(body: str) -> None:
    sys.stdout.write(body)
