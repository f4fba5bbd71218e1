"""`harness diff --output json`: the `harness.diff/v1` document (docs/json-schemas.md)."""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from harness.compare.analyze import Analysis, Location, Origin, TargetChange, summarize
from harness.compare.counts import count
from harness.compare.coverage import BlindSpots
from harness.compare.docdiff import DocChange, FieldChange
from harness.compare.gate import Expectation, Verdict
from harness.compare.groups import ChangeGroup, group, verdict_reasons
from harness.compare.images import changes as image_changes
from harness.core import redaction
from harness.core.model import RendererInfo, Snapshot
from harness.hazards.engine import HazardReport
from harness.report import image_summary as images
from harness.report.diff_text import blind_suffix, verdict_line
from harness.report.findings import finding_dict, suppressed_dict

SCHEMA = "harness.diff/v1"


def jsonable(value: Any) -> Any:
    """YAML can hold timestamps and non-string keys; JSON cannot."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _renderer(info: RendererInfo) -> dict[str, str]:
    return {"name": info.name, "version": info.version}


def _side(origin: Origin, snapshot: Snapshot) -> dict[str, Any]:
    return {
        "source": origin.source,
        "label": origin.label,
        "ref": origin.ref,
        "sha": origin.sha,
        "path": origin.path,
        "renderer": _renderer(snapshot.renderer),
    }


def _field(f: FieldChange) -> dict[str, Any]:
    return {
        "path": f.path,
        "op": f.op,
        "before": jsonable(f.before),
        "after": jsonable(f.after),
        "masked": f.masked,
    }


def _change(c: DocChange) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(c.id),
        "sha256_before": c.sha256_before,
        "sha256_after": c.sha256_after,
        "reformat_only": c.reformat_only,
        "ignored_only": c.ignored_only,
        "fields": [_field(f) for f in c.fields],
    }
    if c.unified is not None:
        out["unified"] = c.unified
    return out


def change_groups(groups: Sequence[ChangeGroup]) -> list[dict[str, Any]]:
    """Each object's change once (compare/groups.py), with every target it happens in; the
    per-target detail stays in `targets[]`."""
    return [
        {
            "op": g.op,
            "id": str(g.id),
            "real": g.real,
            "moved": g.moved,
            "reformat_only": g.reformat_only,
            "ignored_only": g.ignored_only,
            "note": g.note,
            "fields": [_field(f) for f in g.fields],
            "targets": list(g.targets),
            "clusters": list(g.clusters),
        }
        for g in groups
    ]


def skipped_list(*snapshots: Snapshot) -> list[dict[str, str]]:
    """Flux targets skipped on purpose (their source is external), once for both sides."""
    skipped: dict[str, str] = {}
    for snapshot in snapshots:
        skipped.update(snapshot.skipped)
    return [{"target": name, "reason": reason} for name, reason in sorted(skipped.items())]


def _location(loc: Location) -> dict[str, Any]:
    return {
        "target": loc.target,
        "identical": loc.identical,
        "pure_ownership": loc.change.pure_ownership,
        "same_content": loc.same_content,
    }


def _target(t: TargetChange) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": t.name,
        "kind": t.kind,
        "cluster": t.cluster,
        "status": t.status,
        "documents_before": t.documents_before,
        "documents_after": t.documents_after,
        "unchanged": t.unchanged,
        "added": [str(a.doc.id) for a in t.added],
        "added_from": [
            {
                "id": str(a.doc.id),
                "previously_rendered_by": [_location(loc) for loc in a.previously_rendered_by],
            }
            for a in t.added
        ],
        "removed": [
            {
                "id": str(r.doc.id),
                "sha256": r.doc.sha256,
                "still_rendered_by": [_location(loc) for loc in r.still_rendered_by],
            }
            for r in t.removed
        ],
        "changed": [_change(c) for c in t.changed],
    }
    return out


def payload(
    analysis: Analysis,
    verdict: Verdict,
    base: Origin,
    head: Origin,
    *,
    expect: Expectation | None = None,
    exit_code: int | None = None,
    hazards: HazardReport | None = None,
) -> dict[str, Any]:
    s = summarize(analysis)
    c = count(analysis, verdict)
    return {
        "schema": SCHEMA,
        "base": _side(base, analysis.base),
        "head": _side(head, analysis.head),
        "summary": {
            "targets": s.targets,
            "targets_changed": s.targets_changed,
            "added": s.added,
            "removed": s.removed,
            "changed": s.changed,
            "reformat_only": s.reformat_only,
            "ignored_only": s.ignored_only,
            "relocated": s.relocated,
            "moved": s.moved,
            "moved_identical": s.moved_identical,
            "moved_pure_ownership": s.moved_pure_ownership,
            "duplicates": s.duplicates,
            "errors": s.errors,
            # the counting model of every headline (compare/counts.py, docs/json-schemas.md)
            "counts": c.as_dict(),
        },
        "verdict": verdict.verdict,
        "verdict_line": verdict_line(analysis, verdict),
        "expect": expect,
        "expectation_met": None if expect is None else verdict.holds(expect),
        "exit_code": exit_code,
        "reasons": [
            {"message": r.message, "target": r.target, "id": r.id, "counts_as": r.counter}
            for r in verdict.reasons
        ],
        "orchestration": [
            {
                "kustomization": o.name,
                "id": str(o.id),
                "changes": list(o.changes),
                "targets": list(o.targets),
            }
            for o in verdict.orchestration
        ],
        "notes": list(verdict.notes),
        # image changes, first in the text and the comment (added in v1, additive)
        "images": [images.change_dict(c) for c in image_changes(analysis.base, analysis.head)],
        "targets": [_target(t) for t in analysis.targets],
        "changes": change_groups(group(analysis, verdict_reasons(verdict))),
        "skipped": skipped_list(analysis.base, analysis.head),
        "moves": [
            {
                "id": str(m.id),
                "cluster": m.cluster,
                "from": m.source,
                "to": m.dest,
                "identical": m.identical,
                "pure_ownership": m.pure_ownership,
                "fields": [_field(f) for f in m.change.fields],
            }
            for m in analysis.moves
        ],
        "duplicates": [
            {
                "id": str(d.id),
                "cluster": d.cluster,
                "targets": list(d.targets),
                "in_base": d.in_base,
            }
            for d in analysis.duplicates
        ],
        "errors": [
            {"target": e.target, "side": e.side, "message": e.message} for e in analysis.errors
        ],
        "preexisting_errors": [
            {"target": p.target, "message": p.message} for p in analysis.preexisting
        ],
        # what was not judged: unreachable charts here, the run's blind spots in print_diff
        "not_judged": {
            **blind_dict(None),
            "charts": [
                {
                    "url": n.url,
                    "sources": list(n.sources),
                    "targets": list(n.targets),
                    "message": n.message,
                }
                for n in analysis.not_judged
            ],
        },
        "repairs": [
            {
                "target": r.target,
                "outcome": r.outcome,
                "base_error": r.message,
                "documents_after": r.documents_after,
            }
            for r in analysis.repairs
        ],
        "respecified": [
            {
                "kustomization": r.name,
                "id": str(r.id),
                "fields": list(r.fields),
                "changes": r.changes,
                "outcome": r.outcome,
                "targets": list(r.targets),
            }
            for r in verdict.respecified
        ],
        # hazard findings of the change (issue 6; schema in docs/json-schemas.md)
        "findings": [finding_dict(f) for f in hazards.findings] if hazards else [],
        "suppressed_findings": (
            [suppressed_dict(x) for x in hazards.suppressed] if hazards else []
        ),
    }


def print_diff(
    analysis: Analysis,
    verdict: Verdict,
    base: Origin,
    head: Origin,
    *,
    expect: Expectation | None = None,
    exit_code: int | None = None,
    hazards: HazardReport | None = None,
    extra: Mapping[str, Any] | None = None,
    blind: BlindSpots | None = None,
) -> None:
    """The payload, plus `extra` top-level keys (a shard's block) and what was not judged."""
    data = payload(
        analysis, verdict, base, head, expect=expect, exit_code=exit_code, hazards=hazards
    )
    data["verdict_line"] += blind_suffix(blind)  # as the text's first line has it
    data["not_judged"] = {**data["not_judged"], **blind_dict(blind)}
    shown = redaction.known().scrub_all({**data, **(extra or {})})  # as visible() for text
    sys.stdout.write(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")


def blind_dict(blind: BlindSpots | None) -> dict[str, Any]:
    """`not_judged`: skipped Kustomizations (by name and per reason), the Kustomizations
    failed targets hide, and changed files no rendered target reads; empty when everything
    was judged."""
    if blind is None:
        return {"uncovered_files": [], "skipped": {}, "skipped_reasons": {}, "under_failed": {}}
    return {
        "uncovered_files": list(blind.uncovered),
        "skipped": dict(sorted(blind.skipped.items())),
        "skipped_reasons": blind.skipped_sources,
        "under_failed": dict(blind.under_failed),
    }
