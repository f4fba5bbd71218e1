"""`harness images`, laid out: the table (text) and the `harness.images/v1` JSON. The images
come from compare/images.py, each reference shown as written; a diff's "Images" summary is
image_summary.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from harness.compare.images import ImageUse
from harness.core import redaction
from harness.core.model import Snapshot
from harness.report.console import escape_block, stdout
from harness.report.image_summary import ref_dict
from harness.report.text import plain_table, print_errors
from harness.report.visible import visible

SCHEMA = "harness.images/v1"
COLUMNS = ("cluster", "workload", "container", "image")


def _container(use: ImageUse) -> str:
    suffix = {"initContainers": " (init)", "ephemeralContainers": " (ephemeral)"}
    return use.container + suffix.get(use.field, "")


def print_images(snapshot: Snapshot, uses: Sequence[ImageUse]) -> None:
    """The table, then one line of counts; failed targets' errors on stderr first."""
    print_errors(snapshot.results.values())
    out = stdout()
    rows = [
        [visible(cell) for cell in (u.cluster or "-", str(u.workload), _container(u), u.image.text)]
        for u in uses
    ]
    if rows:
        out.print(escape_block(plain_table(COLUMNS, rows)), highlight=False)
    distinct = len({u.image.identity + "\0" + u.image.version for u in uses})
    workloads = len({(u.cluster, u.workload) for u in uses})
    clusters = len({u.cluster for u in uses if u.cluster})
    out.print(
        f"{distinct} image(s) in {workloads} object(s), {clusters} cluster(s)", highlight=False
    )


def use_dict(use: ImageUse) -> dict[str, Any]:
    return {
        "cluster": use.cluster or None,
        "workload": str(use.workload),
        "kind": use.workload.kind,
        "namespace": use.workload.namespace or None,
        "name": use.workload.name,
        "container": use.container,
        "field": use.field,
        **ref_dict(use.image),
        "targets": list(use.targets),
    }


def images_payload(snapshot: Snapshot, uses: Sequence[ImageUse]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "renderer": {"name": snapshot.renderer.name, "version": snapshot.renderer.version},
        "images": [use_dict(u) for u in uses],
        "errors": [{"target": r.name, "message": r.error} for r in snapshot.errors()],
    }


def print_images_json(snapshot: Snapshot, uses: Sequence[ImageUse]) -> None:
    shown = redaction.known().scrub_all(images_payload(snapshot, uses))  # as json_out.emit
    sys.stdout.write(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")
