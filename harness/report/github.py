"""GitHub Actions output: workflow annotations and the job's step summary.

Annotations (`::error title=...::message`) surface each drifted or failing target on the
run and the PR's checks tab; the step summary gives the run page a short Markdown table.
Escaping follows the runner's own toolkit: `%`, CR and LF in messages; additionally `:` and
`,` in properties, which would otherwise end the property early.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from harness.compare.analyze import Analysis
from harness.compare.gate import Expectation, Verdict
from harness.compare.images import changes as image_changes
from harness.compare.snapshots import Comparison
from harness.core.model import Snapshot
from harness.hazards.engine import HazardReport
from harness.report import markdown_budget as mb
from harness.report.diff_text import verdict_line
from harness.report.junit import Case, check_cases, diff_cases
from harness.report.markdown import image_bullet, list_block
from harness.report.text import summary_line
from harness.report.values import shorten
from harness.report.visible import visible

MAX_MESSAGE = 4000
SUMMARY_ROWS = 50
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def escape_data(text: str) -> str:
    """A workflow command's message: line breaks encoded as the runner decodes them, every
    other control character shown as its escape (a log view would obey an ANSI sequence)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return visible(text)


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    level: str, message: str, *, title: str | None = None, file: str | None = None
) -> str:
    """One workflow command line: `::error file=a,title=b::message`."""
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + "\n... (truncated)"
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
    if title:
        props.append(f"title={escape_property(title)}")
    prefix = f"::{level}" + (" " + ",".join(props) if props else "")
    return f"{prefix}::{escape_data(message)}"


def target_file(snapshot: Snapshot, name: str, workspace: Path | None = None) -> str | None:
    """The target's kustomization file relative to the workspace, when it is inside it."""
    result = snapshot.results.get(name)
    if result is None:
        return None
    root = workspace or Path(os.environ.get("GITHUB_WORKSPACE") or Path.cwd())
    for candidate in KUSTOMIZATION_FILES:
        path = Path(result.target.path) / candidate
        if path.is_file():
            try:
                return path.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                return None
    return None


def _annotations(
    verb: str, cases: Iterable[Case], snapshot: Snapshot, failing: bool = True
) -> list[str]:
    """`failing` False: differences are reported as warnings (the run itself passes)."""
    out = []
    for case in cases:
        problem = case.error or case.failure
        if problem is None:
            continue
        message, _kind, text = problem
        level = "error" if failing or case.error else "warning"
        title = f"harness {verb}: {case.name}" + (": render error" if case.error else "")
        body = text if text.startswith(message) else f"{message}\n{text}"
        out.append(annotation(level, body, title=title, file=target_file(snapshot, case.name)))
    return out


def check_lines(comparison: Comparison) -> list[str]:
    lines = _annotations("check", check_cases(comparison), comparison.head)
    level = "notice" if not lines else "error"
    lines.append(annotation(level, summary_line(comparison), title="harness check"))
    return lines


def diff_lines(
    analysis: Analysis,
    verdict: Verdict,
    expect: Expectation | None = None,
    fail_on_diff: bool = False,
) -> list[str]:
    cases = diff_cases(analysis, verdict, expect, fail_on_diff)
    failed = (
        bool(analysis.errors)
        or (expect is not None and not verdict.holds(expect))
        or (fail_on_diff and verdict.verdict != "no-change")
    )
    lines = _annotations("diff", cases, analysis.head, failing=failed)
    for p in analysis.preexisting:
        lines.append(
            annotation(
                "warning",
                f"pre-existing render error (base and head, inputs unchanged): {p.message}",
                title=f"harness diff: {p.target}",
            )
        )
    for n in analysis.not_judged:
        lines.append(
            annotation(
                "notice",
                f"{len(n.targets)} helm target(s) not judged: chart not fetched on either side, "
                f"HelmReleases and values unchanged: {n.message}",
                title=f"harness diff: {n.url}",
            )
        )
    line = verdict_line(analysis, verdict)
    lines.append(annotation("error" if failed else "notice", line, title="harness diff"))
    return lines


HAZARD_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def hazard_lines(hazards: HazardReport | None) -> list[str]:
    """One annotation per hazard finding: error, warning or notice by severity."""
    return [
        annotation(HAZARD_LEVEL.get(f.severity, "notice"), f.message, title=f"harness {f.id}")
        for f in (hazards.findings if hazards is not None else ())
    ]


def print_check(comparison: Comparison, hazards: HazardReport | None = None) -> None:
    lines = check_lines(comparison) + hazard_lines(hazards)
    sys.stdout.write("".join(line + "\n" for line in lines))


def print_diff(
    analysis: Analysis,
    verdict: Verdict,
    expect: Expectation | None = None,
    fail_on_diff: bool = False,
    hazards: HazardReport | None = None,
) -> None:
    lines = diff_lines(analysis, verdict, expect, fail_on_diff) + hazard_lines(hazards)
    sys.stdout.write("".join(line + "\n" for line in lines))


# -- $GITHUB_STEP_SUMMARY -----------------------------------------------------------------------


def check_summary(comparison: Comparison) -> str:
    """A short Markdown summary of `check` for the run page."""
    out = [f"### {mb.escape_text(summary_line(comparison))}", ""]
    rows = [t for t in comparison.targets if t.status != "match"]
    if rows:
        out += ["| target | status | documents | removed | added | changed |", *_rule(6)]
        for t in rows[:SUMMARY_ROWS]:
            status = "render error" if t.status == "error" else _check_status(t.status)
            out.append(
                f"| {mb.code(t.name)} | {status} | {_n(t.documents_before)} -> "
                f"{_n(t.documents_after)} | {len(t.removed)} | {len(t.added)} | "
                f"{len(t.changed)} |"
            )
        if len(rows) > SUMMARY_ROWS:
            out.append(f"\n_... and {len(rows) - SUMMARY_ROWS} more targets._")
    for t in comparison.errors[:SUMMARY_ROWS]:
        out.append(f"\n- **error** {mb.code(t.name)}: {mb.code(shorten(t.error or '', 500))}")
    if len(comparison.errors) > SUMMARY_ROWS:
        out.append(f"\n_... and {len(comparison.errors) - SUMMARY_ROWS} more errors._")
    return "\n".join(out) + "\n"


def _check_status(status: str) -> str:
    return {"changed": "drift", "added": "no golden", "removed": "stale golden"}.get(status, status)


def diff_summary(analysis: Analysis, verdict: Verdict, body: str | None = None) -> str:
    """The verdict, the image changes and the per-target table; `body` (a rendered comment
    head) if given."""
    if body is not None:
        return body
    out = [f"### {mb.escape_text(verdict_line(analysis, verdict))}", ""]
    rows = [
        t
        for t in analysis.targets
        if t.differs
        or (
            t.status == "error"
            and not analysis.is_preexisting(t.name)
            and not analysis.is_not_judged(t.name)
        )
    ]
    bullets = [image_bullet(c) for c in image_changes(analysis.base, analysis.head)]
    if bullets:  # what a reviewer asks first, as in the comment
        out += [list_block("Images", bullets, SUMMARY_ROWS).rstrip("\n"), ""]
    if rows:
        out += ["| target | documents | removed | added | changed |", *_rule(5)]
        for t in rows[:SUMMARY_ROWS]:
            out.append(
                f"| {mb.code(t.name)} | {_n(t.documents_before)} -> {_n(t.documents_after)} | "
                f"{len(t.removed)} | {len(t.added)} | {len(t.changed)} |"
            )
        if len(rows) > SUMMARY_ROWS:
            out.append(f"\n_... and {len(rows) - SUMMARY_ROWS} more targets._")
    for e in analysis.errors[:SUMMARY_ROWS]:
        message = mb.code(shorten(e.message, 500))
        out.append(f"\n- **error** {mb.code(e.target)} ({e.side}): {message}")
    if len(analysis.errors) > SUMMARY_ROWS:
        out.append(f"\n_... and {len(analysis.errors) - SUMMARY_ROWS} more errors._")
    if analysis.preexisting:  # not judged: one line, with the count
        names = ", ".join(mb.code(p.target) for p in analysis.preexisting[:3])
        more = len(analysis.preexisting) - 3
        out.append(
            f"\n- **{len(analysis.preexisting)} pre-existing render error"
            f"{'' if len(analysis.preexisting) == 1 else 's'}** (not judged): {names}"
            + (f" and {more} more" if more > 0 else "")
        )
    return "\n".join(out) + "\n"


def _rule(columns: int) -> list[str]:
    return ["|" + " --- |" * columns]


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def append_step_summary(markdown: str) -> bool:
    """Append to `$GITHUB_STEP_SUMMARY` when the runner set it; True if written.

    A summary is a courtesy: an unwritable file must not fail the check itself.
    """
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(markdown.rstrip("\n") + "\n\n")
    except OSError as exc:
        sys.stderr.write(f"warning: cannot write GITHUB_STEP_SUMMARY ({path}): {exc}\n")
        return False
    return True
