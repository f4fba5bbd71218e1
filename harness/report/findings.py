"""Hazard findings laid out for every output: text, JSON, Markdown alert blocks, JUnit cases.

`lint` prints them on their own; `diff`, `check` and `comment` append them to their report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console

from harness.hazards.engine import Gate, HazardReport, Suppressed
from harness.hazards.finding import SEVERITIES, Finding, and_list
from harness.report.console import escape

if TYPE_CHECKING:
    from harness.hazards.preinstalled import Provision

LINT_SCHEMA = "harness.lint/v1"
STYLE = {"error": "red", "warning": "yellow", "info": "cyan"}
ALERT = {"error": "CAUTION", "warning": "WARNING", "info": "NOTE"}
WORD = {"error": "error", "warning": "warning", "info": "note"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 or word == 'info' else 's'}"


def counts_line(report: HazardReport) -> str:
    """`3 errors, 1 warning, 8 info` (zeros included, so the line is stable)."""
    counts = report.counts()
    return ", ".join(_plural(counts[s], s) for s in SEVERITIES)


# -- JSON --------------------------------------------------------------------------------------


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "id": f.id,
        "rule": f.rule,
        "severity": f.severity,
        "cluster": f.cluster,
        "kustomizations": list(f.kustomizations),
        "documents": list(f.documents),
        "message": f.message,
        "cause": f.cause,
    }


def suppressed_dict(s: Suppressed) -> dict[str, Any]:
    return {**finding_dict(s.finding), "reason": s.reason}


def gates_dict(gates: Sequence[Gate]) -> dict[str, Any]:
    return {
        g.name: {"assertions": g.assertions, "hazards": g.hazards, "line": g.line} for g in gates
    }


def provision_dict(p: Provision) -> dict[str, Any]:
    return {
        "source": p.source,
        "file": p.file,
        "how": p.how,
        "crds": sorted(f"{g}/{k}" if k else g for g, k in p.crds),
        "release": f"{p.release[0]}/{p.release[1]}" if p.release else None,
        "namespaces": sorted(p.namespaces),
        "clusters": list(p.clusters) if p.clusters is not None else None,
    }


def rule_tallies(
    report: HazardReport, rules: Sequence[tuple[str, str]]
) -> list[tuple[str, str, dict[str, int], int]]:
    """(rule, summary, counts per severity, suppressed) for each (rule id, summary) given."""
    out = []
    for rule, summary in rules:
        counts: dict[str, int] = {
            str(s): sum(1 for f in report.findings if f.rule == rule and f.severity == s)
            for s in SEVERITIES
        }
        silenced = sum(1 for s in report.suppressed if s.finding.rule == rule)
        out.append((rule, summary, counts, silenced))
    return out


def tally_text(counts: dict[str, int], suppressed: int = 0) -> str:
    """`1 error, 5 info`, or `ok`; `(+2 suppressed)` appended."""
    text = ", ".join(_plural(n, s) for s in SEVERITIES if (n := counts.get(s, 0))) or "ok"
    return text + (f" (+{suppressed} suppressed)" if suppressed else "")


def print_rule_summary(
    out: Console, report: HazardReport, rules: Sequence[tuple[str, str]]
) -> None:
    """One line per rule, before the details: what it checks and what it found."""
    rows = rule_tallies(report, rules)
    width = max((len(r) for r, *_rest in rows), default=0)
    texts = [tally_text(c, n) for _r, _s, c, n in rows]
    twidth = max((len(t) for t in texts), default=0)
    for (rule, summary, counts, _n), text in zip(rows, texts, strict=True):
        worst = next((s for s in SEVERITIES if counts.get(s)), "")
        style = STYLE.get(worst, "green")
        out.print(
            f"{escape(rule):<{width}}  [{style}]{escape(text):<{twidth}}[/{style}]  "
            f"[dim]{escape(summary)}[/dim]"
        )


def print_preinstalled(out: Console, provisions: Sequence[Provision]) -> None:
    """What crd-order took as existing before Flux, one line per file."""
    if not provisions:
        return
    by_file: dict[str, list[Provision]] = {}
    for p in provisions:
        by_file.setdefault(p.file, []).append(p)
    out.print(
        f"preinstalled before Flux ({len(by_file)} source{'s' if len(by_file) != 1 else ''}):"
    )
    for file, items in by_file.items():
        parts = []
        releases = [f"{p.release[0]}/{p.release[1]}" for p in items if p.release]
        if releases:
            parts.append(f"releases {and_list(releases, 6)}")
        crds = sorted({f"{g}/{k}" if k else g for p in items for g, k in p.crds})
        if crds:
            parts.append(f"CRDs {and_list(crds, 6)}")
        namespaces = sorted({n for p in items for n in p.namespaces if not p.release})
        if namespaces:
            parts.append(f"Namespaces {and_list(namespaces, 6)}")
        scope = {c for p in items for c in (p.clusters or ())}
        where = f" [{', '.join(sorted(scope))}]" if scope else ""
        head = f"  {escape(file)} ({escape(items[0].source)}){escape(where)}"
        out.print(f"{head}: {escape('; '.join(parts))}")


def report_dict(report: HazardReport) -> dict[str, Any]:
    """The `findings`/`suppressed`/`gates` part shared by the lint and diff documents."""
    return {
        "findings": [finding_dict(f) for f in report.findings],
        "suppressed": [suppressed_dict(s) for s in report.suppressed],
        "gates": gates_dict(report.gates),
    }


# -- grouping ----------------------------------------------------------------------------------


def _cluster_word(cluster: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w/-]){re.escape(cluster)}(?![\w/-])")


def grouped(findings: Sequence[Finding]) -> list[tuple[Finding, str, list[str]]]:
    """Findings that say the same thing in several clusters, once each.

    Returns (first finding, its message naming every cluster, all ids). Overlays usually
    share a base, so one unsafe move is otherwise reported once per cluster, word for word.
    """
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for f in findings:
        message = _cluster_word(f.cluster).sub("\0", f.message) if f.cluster else f.message
        key = (f.rule, f.severity, f.kustomizations, f.documents, message)
        groups.setdefault(key, []).append(f)
    out = []
    for members in groups.values():
        first = members[0]
        clusters = [m.cluster for m in members if m.cluster]
        message = first.message
        if len(members) > 1 and first.cluster and len(set(clusters)) == len(members):
            message = _cluster_word(first.cluster).sub(and_list(clusters), first.message)
        out.append((first, message, [m.id for m in members]))
    return out


def _ids(ids: list[str]) -> str:
    return ids[0] if len(ids) == 1 else f"{ids[0]} (+{len(ids) - 1} alike)"


CAUSE_MIN = 3  # findings of one rule and one cause from which reports list them as one entry
NAMES_SHOWN = 8


@dataclass(frozen=True)
class Entry:
    """What a report lists: one finding (clusters that say the same merged), or every
    finding of one cause (`crd-order`: 72 Kustomizations lacking one dependsOn) as one."""

    first: Finding
    message: str
    ids: tuple[str, ...]
    subjects: tuple[str, ...] = ()  # a cause's Kustomizations (cluster-qualified if mixed)
    members: tuple[tuple[Finding, str, tuple[str, ...]], ...] = ()

    @property
    def severity(self) -> str:
        return self.first.severity

    @property
    def headline(self) -> str:
        """`72 Kustomizations: add dependsOn storage/kopiur (...)` for a cause."""
        noun = "Kustomization" if len(self.subjects) == 1 else "Kustomizations"
        return f"{len(self.subjects)} {noun}: {self.first.cause}"

    def names(self, limit: int = NAMES_SHOWN) -> str:
        return and_list(list(self.subjects), limit)


def entries(findings: Sequence[Finding]) -> list[Entry]:
    """Findings as reports list them: alike clusters merged (`grouped`), then findings of one
    rule, severity and cause merged when there are at least CAUSE_MIN of them."""
    merged = grouped(findings)
    causes: dict[tuple[str, str, str], list[int]] = {}
    for i, (f, _message, _ids) in enumerate(merged):
        if f.cause:
            causes.setdefault((f.rule, f.severity, f.cause), []).append(i)
    big = {i: key for key, members in causes.items() if len(members) >= CAUSE_MIN for i in members}
    out: list[Entry] = []
    done: set[tuple[str, str, str]] = set()
    for i, (f, message, ids) in enumerate(merged):
        key = big.get(i)
        if key is None:
            out.append(Entry(f, message, tuple(ids)))
            continue
        if key in done:
            continue
        done.add(key)
        members = [merged[k] for k in causes[key]]
        clusters = {m[0].cluster for m in members}
        subjects = tuple(
            (m[0].kustomizations[0] if m[0].kustomizations else m[0].id)
            if len(clusters) == 1
            else f"{m[0].cluster}/{m[0].kustomizations[0] if m[0].kustomizations else m[0].id}"
            for m in members
        )
        all_ids = tuple(x for m in members for x in m[2])
        packed = tuple((m[0], m[1], tuple(m[2])) for m in members)
        out.append(Entry(f, message, all_ids, subjects, packed))
    return out


def entries_dict(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The cause groups as JSON: `{"rule", "severity", "cause", "count", "kustomizations",
    "ids"}` (lint's `groups[]`)."""
    return [
        {
            "rule": e.first.rule,
            "severity": e.severity,
            "cause": e.first.cause,
            "count": len(e.subjects),
            "kustomizations": list(e.subjects),
            "ids": list(e.ids),
        }
        for e in entries(findings)
        if e.subjects
    ]


# -- text --------------------------------------------------------------------------------------


def print_findings(
    out: Console, report: HazardReport, *, heading: str = "", verbose: bool = False
) -> None:
    """Findings grouped by rule, each one line (severity and id) plus its message; the
    findings of one cause as one entry listing their Kustomizations (each with `verbose`)."""
    if heading and (report.findings or report.suppressed):
        out.print(heading)
    by_rule: dict[str, list[Finding]] = {}
    for f in report.findings:
        by_rule.setdefault(f.rule, []).append(f)
    for rule, findings in by_rule.items():
        tally = ", ".join(
            _plural(n, s) for s in SEVERITIES if (n := sum(1 for f in findings if f.severity == s))
        )
        out.print(f"[bold]{escape(rule)}[/bold] ({tally})")
        for entry in entries(findings):
            style = STYLE.get(entry.severity, "")
            tag = f"  [{style}]{entry.severity:<7}[/{style}] "
            if not entry.subjects:
                out.print(f"{tag}{escape(_ids(list(entry.ids)))}")
                out.print(f"          {escape(entry.message)}")
                continue
            out.print(f"{tag}{escape(entry.headline)}")
            if verbose:
                for _f, message, ids in entry.members:
                    out.print(f"          {escape(_ids(list(ids)))}")
                    out.print(f"            {escape(message)}")
            else:
                out.print(f"          {escape(entry.names())} (-v lists each finding)")
    for s in report.suppressed:
        out.print(
            f"[dim]  suppressed {escape(s.finding.id)} ({s.finding.severity}): "
            f"{escape(s.reason)}[/dim]"
        )


# -- Markdown ----------------------------------------------------------------------------------


def _md(text: str) -> str:
    """Inline Markdown-safe text: no HTML, no accidental emphasis or tables."""
    return (
        text.replace("\\", "\\\\")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("*", "\\*")
        .replace("_", "\\_")
        .replace("|", "\\|")
        .replace("`", "'")
        .replace("$", "\\$")  # GitHub renders $...$ as math
        .replace("\n", " ")
    )


def alert_blocks(
    report: HazardReport,
    limit: int | None = None,
    severities: Sequence[str] = SEVERITIES,
    suppressed_note: bool = True,
) -> str:
    """One GitHub alert block per severity (`> [!CAUTION]` errors, `> [!WARNING]`, `> [!NOTE]`),
    each finding one bullet: rule, message, id. `limit` caps bullets per block."""
    blocks = []
    for severity in severities:
        findings = [f for f in report.findings if f.severity == severity]
        if not findings:
            continue
        title = f"**{_plural(len(findings), 'hazard ' + WORD[severity])}**"
        lines = [f"> [!{ALERT[severity]}]", f"> {title}"]
        groups = entries(findings)
        shown = groups if limit is None else groups[:limit]
        for e in shown:
            if e.subjects:
                lines.append(f"> - **{e.first.rule}**: {_md(e.headline)}: {_md(e.names(12))}")
            else:
                ids = _ids(list(e.ids)).replace("`", "")
                lines.append(f"> - **{e.first.rule}**: {_md(e.message)} `{ids}`")
        if len(shown) < len(groups):
            hidden = sum(len(e.ids) for e in groups[len(shown) :])
            lines.append(f"> - ... and {hidden} more (see `harness lint`)")
        blocks.append("\n".join(lines))
    if report.suppressed and suppressed_note:
        blocks.append(f"{len(report.suppressed)} hazard finding(s) suppressed by the config file.")
    return "\n\n".join(blocks)


# -- JUnit -------------------------------------------------------------------------------------


def junit_failures(report: HazardReport, threshold: str = "error") -> list[tuple[str, str, str]]:
    """(name, failure message, detail) for each finding at or above `threshold`."""
    return [(f.id, f"{f.severity}: {f.rule}", f.message) for f in report.at_least(threshold)]
