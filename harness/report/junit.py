"""JUnit XML for CI test reports (GitLab `artifacts:reports:junit`, Jenkins `junit`).

One testcase per target, so a CI's test view lists targets and shows what drifted where.
The shape is the common denominator those tools read: `testsuites` > `testsuite` (name,
tests, failures, errors, skipped, time) > `testcase` (name, classname, time) holding at most
one `failure` or `error` (message, type, and the details as text).
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.compare.analyze import Analysis, TargetChange
from harness.compare.docdiff import DocChange
from harness.compare.gate import Expectation, Verdict
from harness.compare.snapshots import Comparison, TargetDiff
from harness.hazards.engine import HazardReport
from harness.report.diff_text import field_lines
from harness.report.text import target_header
from harness.report.visible import visible

MAX_TEXT = 20000
# XML 1.0 forbids most control characters and a CI view would obey ANSI escapes (kustomize
# errors carry them, names and values can): each is shown as its escape (console.visible).
_INVALID_XML = re.compile("[\ufffe\uffff]")


@dataclass(frozen=True)
class Case:
    """One testcase; `failure` and `error` are (message, type, text)."""

    name: str
    classname: str
    failure: tuple[str, str, str] | None = None
    error: tuple[str, str, str] | None = None
    output: str = ""
    skipped: str | None = None  # why the case was not run (a pre-existing render error)


def clean(text: str, limit: int = MAX_TEXT, *, lines: bool = True) -> str:
    """Text for an XML attribute (`lines=False`: one line) or element."""
    text = _INVALID_XML.sub("?", visible(text, newlines=lines))
    return text if len(text) <= limit else text[:limit] + "\n... (truncated)"


def classname(kind: str, cluster: str | None) -> str:
    """`harness.path`, `harness.flux.dev`, `harness.helm.dev`: CI views group by this."""
    parts = ["harness", kind]
    if kind in ("flux", "helm") and cluster:
        parts.append(cluster.replace(".", "_"))
    return ".".join(parts)


def document(suite: str, cases: Sequence[Case], elapsed: float = 0.0) -> str:
    """The XML text: one testsuite per classname, totals on `testsuites` too."""
    root = ET.Element("testsuites", name=suite)
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.classname, []).append(case)
    share = elapsed / len(cases) if cases else 0.0
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for group, members in sorted(groups.items()):
        failures = sum(1 for c in members if c.failure and not c.error)
        errors = sum(1 for c in members if c.error)
        skipped = sum(1 for c in members if c.skipped is not None and not (c.error or c.failure))
        node = ET.SubElement(
            root,
            "testsuite",
            name=clean(f"{suite}: {group.removeprefix('harness.')}", lines=False),
            tests=str(len(members)),
            failures=str(failures),
            errors=str(errors),
            skipped=str(skipped),
            time=f"{share * len(members):.3f}",
        )
        totals["tests"] += len(members)
        totals["failures"] += failures
        totals["errors"] += errors
        totals["skipped"] += skipped
        for case in members:
            tc = ET.SubElement(
                node,
                "testcase",
                name=clean(case.name, lines=False),
                classname=clean(case.classname, lines=False),
                time=f"{share:.3f}",
            )
            problem = ("error", case.error) if case.error else ("failure", case.failure)
            if problem[1] is not None:
                message, kind, text = problem[1]
                child = ET.SubElement(
                    tc, problem[0], message=clean(message, 1000, lines=False), type=kind
                )
                child.text = clean(text)
            elif case.skipped is not None:
                ET.SubElement(tc, "skipped", message=clean(case.skipped, 1000, lines=False))
            if case.output:
                ET.SubElement(tc, "system-out").text = clean(case.output)
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{elapsed:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _diff_lines(t: TargetDiff, changes: Sequence[DocChange] = ()) -> list[str]:
    explained = {c.id: c for c in changes}
    lines = []
    for _, new in t.changed:
        lines.append(f"~ {new.id}")
        change = explained.get(new.id)
        if change is not None:
            lines.extend(field_lines(change.fields, "    "))
    lines += [f"- {d.id}" for d in t.removed]
    lines += [f"+ {d.id}" for d in t.added]
    return lines


def check_cases(
    comparison: Comparison, changes: Mapping[str, Sequence[DocChange]] | None = None
) -> list[Case]:
    """`changes` (target -> explained changed documents) adds field detail to failures."""
    cases = []
    for t in comparison.targets:
        cls = classname(t.kind, t.cluster)
        if t.status == "error":
            where = "goldens" if t.error_side == "base" else "render"
            message = t.error or "failed"
            cases.append(Case(t.name, cls, error=(f"{where}: {message}", "render-error", message)))
        elif t.status == "changed":
            explained = (changes or {}).get(t.name, ())
            text = "\n".join([target_header(t), *_diff_lines(t, explained)])
            cases.append(Case(t.name, cls, failure=(target_header(t), "drift", text)))
        elif t.status == "added":
            message = f"new {t.kind} target without golden; run harness update"
            cases.append(Case(t.name, cls, failure=(message, "no-golden", message)))
        elif t.status == "removed":
            message = "stale golden: the target no longer exists; run harness update"
            cases.append(Case(t.name, cls, failure=(message, "stale-golden", message)))
        else:
            cases.append(Case(t.name, cls))
    return cases


def print_check(
    comparison: Comparison,
    elapsed: float = 0.0,
    changes: Mapping[str, Sequence[DocChange]] | None = None,
    hazards: HazardReport | None = None,
) -> None:
    cases = check_cases(comparison, changes) + hazard_cases(hazards)
    sys.stdout.write(document("harness check", cases, elapsed))


def hazard_cases(hazards: HazardReport | None) -> list[Case]:
    """One testcase per hazard finding (`harness.hazards.<rule>`): errors fail, warnings and
    notes pass with the message as output, suppressed ones are skipped (not listed)."""
    cases = []
    for f in hazards.findings if hazards is not None else ():
        cls = f"harness.hazards.{f.rule}"
        if f.severity == "error":
            cases.append(Case(f.id, cls, failure=(f.message, f"hazard-{f.rule}", f.message)))
        else:
            cases.append(Case(f.id, cls, output=f"{f.severity}: {f.message}"))
    return cases


def _target_text(t: TargetChange) -> str:
    lines = [f"{t.name}: {t.documents_before} -> {t.documents_after} documents"]
    for c in t.changed:
        lines.append(f"~ {c.id}")
        lines.extend(field_lines(c.fields, "    "))
    for r in t.removed:
        where = ", ".join(loc.target for loc in r.still_rendered_by)
        lines.append(f"- {r.doc.id}" + (f"  (still rendered by {where})" if where else ""))
    for a in t.added:
        lines.append(f"+ {a.doc.id}")
    return "\n".join(lines)


def _counts(t: TargetChange) -> str:
    return (
        f"{t.documents_before} -> {t.documents_after} documents "
        f"(-{len(t.removed)}, +{len(t.added)}, ~{len(t.changed)})"
    )


def diff_cases(
    analysis: Analysis,
    verdict: Verdict,
    expect: Expectation | None = None,
    fail_on_diff: bool = False,
    fail_on_preexisting: bool = False,
) -> list[Case]:
    """A target fails when it has a difference the expectation does not allow; a
    pre-existing render error is a skipped case (an error with `fail_on_preexisting`).

    Under `--expect pure-move` that is a target the verdict names as a reason; otherwise
    any difference (without `--expect`/`--fail-on-diff` the report still shows it).
    """
    blamed: dict[str, list[str]] = {}
    for reason in verdict.reasons:
        if reason.target is not None:
            blamed.setdefault(reason.target, []).append(reason.message)
    errors: dict[str, list[str]] = {}
    for e in analysis.errors:
        errors.setdefault(e.target, []).append(f"{e.side}: {e.message}")
    preexisting = {p.target: p.message for p in analysis.preexisting}
    unjudged = {t: n.url for n in analysis.not_judged for t in n.targets}
    cases = []
    for t in analysis.targets:
        cls = classname(t.kind, t.cluster)
        if t.name in unjudged:
            why = f"not judged: chart from {unjudged[t.name]} not fetched on either side"
            cases.append(Case(t.name, cls, skipped=why))
            continue
        if t.name in preexisting and t.name not in errors:
            if fail_on_preexisting:
                text = f"pre-existing (base and head): {preexisting[t.name]}"
                cases.append(Case(t.name, cls, error=(text, "preexisting-render-error", text)))
            else:
                why = f"pre-existing render error, inputs unchanged: {preexisting[t.name]}"
                cases.append(Case(t.name, cls, skipped=why))
            continue
        if t.name in errors:
            text = "\n".join(errors[t.name])
            cases.append(Case(t.name, cls, error=(text.splitlines()[0], "render-error", text)))
            continue
        if not t.differs:
            cases.append(Case(t.name, cls))
            continue
        text = _target_text(t)
        if expect == "pure-move" and not fail_on_diff:
            reasons = blamed.get(t.name)
            if reasons:
                text = "\n".join(reasons) + "\n\n" + text
                cases.append(Case(t.name, cls, failure=(reasons[0], "not-a-pure-move", text)))
            else:
                cases.append(Case(t.name, cls, output=text))
            continue
        cases.append(Case(t.name, cls, failure=(f"{t.name}: {_counts(t)}", "changed", text)))
    return cases


def print_diff(
    analysis: Analysis,
    verdict: Verdict,
    expect: Expectation | None = None,
    fail_on_diff: bool = False,
    elapsed: float = 0.0,
    hazards: HazardReport | None = None,
    fail_on_preexisting: bool = False,
) -> None:
    cases = diff_cases(analysis, verdict, expect, fail_on_diff, fail_on_preexisting)
    cases += hazard_cases(hazards)
    sys.stdout.write(document("harness diff", cases, elapsed))
