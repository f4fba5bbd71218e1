"""Versioned JSON documents (schemas in docs/json-schemas.md)."""

from __future__ import annotations

import json
import sys
from typing import Any

from harness.compare.snapshots import Comparison, TargetDiff
from harness.core import redaction
from harness.core.config import Config
from harness.core.model import HelmInfo, RendererInfo, Snapshot, TargetResult
from harness.hazards.engine import HazardReport
from harness.pipeline.goldens import doc_fields
from harness.report.findings import finding_dict, suppressed_dict
from harness.report.text import summary_line

RENDER_SCHEMA = "harness.render/v1"
CHECK_SCHEMA = "harness.check/v1"


def emit(payload: dict[str, Any]) -> None:
    shown = redaction.known().scrub_all(payload)  # every string, as visible() does for text
    sys.stdout.write(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")


def renderer(info: RendererInfo) -> dict[str, Any]:
    return {"name": info.name, "version": info.version}


def helm_fields(info: HelmInfo) -> dict[str, Any]:
    """A `helm` target's chart fields (schema: docs/json-schemas.md, helm targets)."""
    return {
        "chart": info.chart,
        "version": info.version,
        "source": info.source,
        "release": info.release,
        "namespace": info.namespace,
        "owner": info.owner,
    }


def target(result: TargetResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": result.name,
        "kind": result.target.kind,
    }
    if result.target.cluster is not None:
        out["cluster"] = result.target.cluster
    if result.target.helm is not None:
        out.update(helm_fields(result.target.helm))
    if result.ok:
        out["documents"] = len(result.documents)
        out["sha256"] = result.sha256
        out["docs"] = [doc_fields(d) for d in result.documents]
        out["duplicates"] = [str(d) for d in result.duplicates]
    else:
        out["documents"] = None
        out["sha256"] = None
        out["error"] = result.error
    if result.notes:
        out["notes"] = list(result.notes)
    return out


def render_payload(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "schema": RENDER_SCHEMA,
        "renderer": renderer(snapshot.renderer),
        "targets": [target(r) for r in snapshot.results.values()],
        "errors": [{"target": r.name, "message": r.error} for r in snapshot.errors()],
    }


def print_render(snapshot: Snapshot) -> None:
    emit(render_payload(snapshot))


def _target_diff(t: TargetDiff) -> dict[str, Any]:
    return {
        "name": t.name,
        "kind": t.kind,
        "cluster": t.cluster,
        "status": t.status,
        "documents_before": t.documents_before,
        "documents_after": t.documents_after,
        "added": [str(d.id) for d in t.added],
        "removed": [str(d.id) for d in t.removed],
        "changed": [
            {"id": str(new.id), "sha256_before": old.sha256, "sha256_after": new.sha256}
            for old, new in t.changed
        ],
        "error": t.error,
    }


def check_payload(
    comparison: Comparison, cfg: Config, hazards: HazardReport | None = None
) -> dict[str, Any]:
    from harness.compare.analyze import analyze, ignore_patterns
    from harness.compare.groups import group
    from harness.report.diff_json import change_groups, skipped_list

    targets = comparison.targets
    changes: list[dict[str, Any]] = []
    if comparison.differing:
        analysis = analyze(
            comparison.base, comparison.head, ignore=ignore_patterns(cfg), repairs=False
        )  # a goldens base
        changes = change_groups(group(analysis))
    return {
        "schema": CHECK_SCHEMA,
        "goldens": str(cfg.goldens),
        "renderer": renderer(comparison.head.renderer),
        "golden_renderer": renderer(comparison.base.renderer),
        "summary": {
            "targets": len(targets),
            "match": sum(1 for t in targets if t.status == "match"),
            "drifted": sum(1 for t in targets if t.status == "changed"),
            "without_golden": sum(1 for t in targets if t.status == "added"),
            "stale_golden": sum(1 for t in targets if t.status == "removed"),
            "errors": len(comparison.errors),
            "line": summary_line(comparison),
        },
        "targets": [_target_diff(t) for t in targets],
        # each drifted object once, with the targets it drifts in (compare/groups.py)
        "changes": changes,
        "skipped": skipped_list(comparison.head),
        "errors": [
            {"target": t.name, "side": t.error_side, "message": t.error} for t in comparison.errors
        ],
        # hazard findings of goldens -> working tree (issue 6; docs/json-schemas.md)
        "findings": [finding_dict(f) for f in hazards.findings] if hazards else [],
        "suppressed_findings": (
            [suppressed_dict(x) for x in hazards.suppressed] if hazards else []
        ),
    }


def print_check(comparison: Comparison, cfg: Config, hazards: HazardReport | None = None) -> None:
    emit(check_payload(comparison, cfg, hazards))
